package meta

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// What only the leader does: establish its leadership, set the cluster id,
// track broker liveness and fence brokers that miss their session timeout,
// and answer the forwarded requests that must run on the leader.

// runLeadership is the leadership loop, one goroutine owned by the Node,
// stopped by the node's context. On gaining leadership it forgets every
// heartbeat time (a fresh grace period for every broker), waits for a
// barrier (so the state machine holds every entry of earlier terms), sets
// the cluster id if none is set, and then checks liveness on a ticker until
// leadership is lost.
func (n *Node) runLeadership() {
	defer n.wg.Done()
	var tick, balance <-chan time.Time
	var stopTick, stopBalance func()
	stopTicker := func() {
		if stopTick != nil {
			stopTick()
			tick, stopTick = nil, nil
		}
		if stopBalance != nil {
			stopBalance()
			balance, stopBalance = nil, nil
		}
	}
	defer stopTicker()
	for {
		select {
		case <-n.ctx.Done():
			return
		case isLeader := <-n.raft.LeaderCh():
			stopTicker()
			n.established.Store(false)
			n.liveness.reset()
			n.mu.Lock()
			n.mu.rejoined = nil // joins seen while leading before
			n.mu.Unlock()
			if !isLeader {
				continue
			}
			if err := n.raft.Barrier(0).Error(); err != nil {
				n.logger.Warn("could not establish leadership", "error", fromRaftError(err))
				continue
			}
			n.established.Store(true)
			n.logger.Info("leadership established", "term", n.raft.CurrentTerm())
			n.ensureClusterID()
			tick, stopTick = n.liveness.clock.newTicker(livenessPeriod(n.cfg.BrokerSessionTimeout))
			if n.cfg.LeaderImbalanceCheckInterval > 0 {
				balance, stopBalance = wallClock{}.newTicker(n.cfg.LeaderImbalanceCheckInterval)
			}
		case now := <-tick:
			n.ensureClusterID()
			n.fenceExpired(now)
			n.electUnclean()
			n.removeUnregistered()
		case <-balance:
			n.balanceLeaders()
		}
	}
}

// livenessPeriod is how often the leader checks heartbeat times: a tenth of
// the session timeout, within [10ms, 1s].
func livenessPeriod(session time.Duration) time.Duration {
	return min(max(session/10, 10*time.Millisecond), time.Second)
}

// ensureClusterID proposes a cluster id if none is set yet; a failure is
// retried on the next tick.
func (n *Node) ensureClusterID() {
	if n.fsm.current().ClusterID() != "" {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, 10*n.cfg.ElectionTimeout)
	defer cancel()
	_, err := n.propose(ctx, InitCluster{ClusterID: newClusterID()}, true)
	if err != nil && !errors.Is(err, ErrClusterIDExists) {
		n.logger.Warn("could not set the cluster id", "error", err)
	}
}

// newClusterID returns a random id in Kafka's format: 16 random bytes in
// unpadded URL-safe base64.
func newClusterID() string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// fenceExpired proposes FenceBroker for every broker past its session
// timeout. The proposals are leader-only: a leader that lost its leadership
// meanwhile fences nobody.
func (n *Node) fenceExpired(now time.Time) {
	for _, b := range n.liveness.expired(n.fsm.current().Brokers(), now) {
		before := n.fsm.current()
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.BrokerSessionTimeout)
		_, err := n.propose(ctx, FenceBroker{ID: b.ID, Epoch: b.Epoch}, true)
		cancel()
		switch {
		case err == nil:
			n.metrics.brokersFenced.Inc()
			n.metrics.cleanElections.Add(float64(electionsAway(before, n.fsm.current(), b.ID)))
			n.logger.Warn("fenced broker: no heartbeat within the session timeout",
				"broker", b.ID, "epoch", b.Epoch, "session_timeout", n.cfg.BrokerSessionTimeout)
		case errors.Is(err, ErrStaleBrokerEpoch), errors.Is(err, ErrNotLeader):
			// Re-registered, or no longer leader: nothing to do.
		default:
			n.logger.Warn("could not fence broker", "broker", b.ID, "epoch", b.Epoch, "error", err)
		}
	}
}

// proposeAsLeader proposes forwarded commands through this node's batcher,
// which coalesces them with every other proposal. Commands that do not
// decode are answered with their error and never enter the log, so a
// faulty or newer peer cannot stop the group (an unknown optional command
// passes: nodes that know it apply it, the others skip it).
func (n *Node) proposeAsLeader(ctx context.Context, cmds [][]byte) ([]proposalResult, error) {
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	results := make([]proposalResult, len(cmds))
	waiting := make([]*proposal, len(cmds))
	for i, data := range cmds {
		if _, err := decodeCommand(data); err != nil {
			if env, _ := parseEnvelope(data); !errors.Is(err, ErrUnknownCommand) || !env.optional() {
				results[i].err = err
				continue
			}
		}
		p := &proposal{ctx: ctx, data: data, done: make(chan proposalResult, 1)}
		if err := n.enqueue(p); err != nil {
			results[i].err = err
			continue
		}
		waiting[i] = p
	}
	for i, p := range waiting {
		if p != nil {
			results[i] = n.await(p)
		}
	}
	n.kickCommit()
	return results, nil
}

// leaderReadIndex returns an index that a linearizable read must wait for:
// after a barrier commits in this term, every command committed before the
// call is applied here, and the state's index is the last of them.
func (n *Node) leaderReadIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	timeout := forwardDefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		return 0, fromRaftError(err)
	}
	n.kickCommit()
	return n.fsm.current().index, nil
}

// Commit kicks. hashicorp/raft tells followers a new commit index only in
// the next AppendEntries, which, when no new entries follow, waits for
// CommitTimeout (up to twice it). A proposal made on a follower waits until
// its own node applies it, so it would pay that wait on every forwarded
// proposal, and the proposers on followers, waiting, would propose nothing
// that could carry the index sooner. So after answering a forwarded request
// the leader kicks: runKicks appends a Barrier (an entry the state machine
// never sees), whose AppendEntries carries the new commit index at once.
// At most one kick barrier is outstanding and one more is queued; kicks
// arriving meanwhile merge into it, so the cost is bounded by one extra
// entry per commit round trip, and nothing while idle.

// kickCommit asks for a kick; it never blocks.
func (n *Node) kickCommit() {
	select {
	case n.kicks <- struct{}{}:
	default:
	}
}

// runKicks is the kick loop, one goroutine owned by the Node, stopped by the
// node's context; it never keeps Close waiting on a barrier (see below).
func (n *Node) runKicks() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.kicks:
			if n.raft.State() != raft.Leader {
				continue
			}
			// An error means leadership was lost or Raft stopped: then
			// there is nobody to tell. The wait also ends with the
			// node: a barrier queued as Raft shuts down may never be
			// answered, and Close must not wait for it (its waiter is
			// then left behind, once, at close).
			barrier := n.raft.Barrier(0)
			answered := make(chan struct{})
			go func() {
				_ = barrier.Error()
				close(answered)
			}()
			select {
			case <-answered:
			case <-n.ctx.Done():
				return
			}
		}
	}
}

// leaderHeartbeat records a broker heartbeat. It answers only once this
// node's leadership is established, so that it judges the broker against a
// state holding every earlier registration.
func (n *Node) leaderHeartbeat(id int32, epoch int64) error {
	if n.raft.State() != raft.Leader || !n.established.Load() {
		return ErrNotLeader
	}
	b, ok := n.fsm.current().brokers.Get(brokerKey(id))
	switch {
	case !ok:
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	case b.Epoch != epoch:
		return fmt.Errorf("%w: broker %d is at epoch %d, not %d", ErrStaleBrokerEpoch, id, b.Epoch, epoch)
	case b.Fenced:
		return fmt.Errorf("%w: broker %d epoch %d; register again", ErrBrokerFenced, id, epoch)
	}
	n.liveness.heard(id, epoch, n.liveness.clock.now())
	return nil
}

// leaderAddNonvoter adds a node as a non-voting member, which Raft then
// brings up to date (by snapshot if need be). Asking again is harmless; a
// voter's id is refused.
func (n *Node) leaderAddNonvoter(ctx context.Context, id, addr string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	if id == "" {
		return fmt.Errorf("%w: join without a node id", ErrInvalidCommand)
	}
	if err := checkDialAddr(addr); err != nil {
		return fmt.Errorf("%w: join of %q: %v", ErrInvalidCommand, id, err)
	}
	future := n.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return fromRaftError(err)
	}
	n.noteJoin(raft.ServerID(id))
	for _, s := range future.Configuration().Servers {
		if s.ID != raft.ServerID(id) {
			continue
		}
		if s.Suffrage == raft.Voter {
			return fmt.Errorf("%w: %q is a voter; voters come from the peer list", ErrInvalidCommand, id)
		}
		if s.Address == raft.ServerAddress(addr) {
			return nil
		}
	}
	timeout := forwardDefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout).Error(); err != nil {
		return fromRaftError(err)
	}
	n.logger.Info("added non-voting member", "id", id, "address", addr)
	return nil
}

// noteJoin records that non-voter id asked to join while this node leads
// and its broker is unregistered: it is coming back (removeUnregistered).
func (n *Node) noteJoin(id raft.ServerID) {
	broker, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return
	}
	if b, ok := n.fsm.current().Broker(int32(broker)); !ok || !b.Unregistered {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.rejoined == nil {
		n.mu.rejoined = map[raft.ServerID]bool{}
	}
	n.mu.rejoined[id] = true
}

// removeUnregistered removes from the Raft group the non-voters whose
// brokers were unregistered (UnregisterBroker), so the leader stops
// replicating to a node that will not come back. A node that joined
// while its broker was unregistered is coming back: its broker registers
// again once the node has caught up, so it stays (it was removed again
// at the next tick, before it could; and removed, it never caught up),
// until that registration clears the mark. Voters change only with
// --meta-peers.
func (n *Node) removeUnregistered() {
	future := n.raft.GetConfiguration()
	if future.Error() != nil {
		return
	}
	st := n.fsm.current()
	for _, srv := range future.Configuration().Servers {
		if srv.Suffrage != raft.Nonvoter {
			continue
		}
		id, err := strconv.ParseInt(string(srv.ID), 10, 32)
		if err != nil {
			continue
		}
		b, ok := st.Broker(int32(id))
		n.mu.Lock()
		rejoined := n.mu.rejoined[srv.ID]
		if ok && !b.Unregistered {
			delete(n.mu.rejoined, srv.ID) // registered again: the next unregistration counts
		}
		n.mu.Unlock()
		if !ok || !b.Unregistered || rejoined {
			continue
		}
		if err := n.raft.RemoveServer(srv.ID, 0, 0).Error(); err != nil {
			n.logger.Warn("could not remove an unregistered broker from the metadata group", "broker", id, "error", fromRaftError(err))
			continue
		}
		n.logger.Info("removed an unregistered broker from the metadata group", "broker", id)
	}
}
