package meta

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// The API brokers use: propose, read the committed state, wait for an
// index, read linearizably, heartbeat and watch. Every call works on any
// node; what must run on the leader is forwarded to it.

// Result is the outcome of a committed command.
type Result struct {
	// Index is the Raft index the command was committed at. When Propose
	// returns, this node's State has applied it.
	Index uint64
	// Epoch is what the command's apply returned: RegisterBroker's
	// incarnation epoch, AlterPartition's new partition epoch,
	// RegisterSchema's schema id, DeleteSchemaVersion's count of versions
	// deleted; 0 for other commands.
	Epoch int64
}

// Propose proposes a command and waits until it is committed and applied on
// this node, so the caller reads its own write in State. The error is the
// command's precondition error (a sentinel such as ErrTopicExists; nothing
// was applied), or why it did not commit: ErrOutcomeUnknown if it may have,
// the context's error, ErrClosed, ErrStopped. Proposals that certainly did
// not reach a leader are retried until ctx ends.
//
// Concurrent proposals, from this node and others, are coalesced into few
// Raft entries; each caller still gets its own result.
func (n *Node) Propose(ctx context.Context, cmd Command) (Result, error) {
	return n.propose(ctx, cmd, false)
}

func (n *Node) propose(ctx context.Context, cmd Command, leaderOnly bool) (Result, error) {
	start := time.Now()
	data, err := encodeCommand(cmd)
	if err != nil {
		return Result{}, err
	}
	res, verdict, err := n.proposeData(ctx, data, leaderOnly)
	switch {
	case err == nil:
		n.metrics.proposalsOK.Inc()
		n.metrics.commitLatency.Observe(time.Since(start).Seconds())
	case verdict:
		n.metrics.proposalsRejected.Inc()
	default:
		n.metrics.proposalsFailed.Inc()
	}
	return res, err
}

// proposeData proposes one encoded command, retrying while it certainly
// did not reach a leader. verdict reports that err, if any, is the state
// machine's answer (a failed precondition) rather than a failure to commit.
func (n *Node) proposeData(ctx context.Context, data []byte, leaderOnly bool) (res Result, verdict bool, err error) {
	backoff := retryBackoff{}
	for {
		if err := n.usable(); err != nil {
			return Result{}, false, err
		}
		changed := n.leaderChanged()
		p := &proposal{ctx: ctx, data: data, leaderOnly: leaderOnly, done: make(chan proposalResult, 1)}
		var out proposalResult
		if err := n.enqueue(p); err != nil {
			out.err = err
		} else {
			out = n.await(p)
		}
		if out.index != 0 {
			if err := n.WaitIndex(ctx, out.index); err != nil {
				return Result{Index: out.index}, false, err
			}
			return Result{Index: out.index, Epoch: out.epoch}, true, out.err
		}
		if leaderOnly || !retryable(out.err) {
			if err := n.usable(); err != nil && errors.Is(out.err, ErrClosed) {
				return Result{}, false, err
			}
			return Result{}, false, out.err
		}
		if err := n.waitRetry(ctx, changed, &backoff, out.err); err != nil {
			return Result{}, false, err
		}
	}
}

// retryable reports an error after which the request certainly did not act.
func retryable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader)
}

// retryBackoff grows from 5ms to 250ms.
type retryBackoff struct{ d time.Duration }

func (b *retryBackoff) next() time.Duration {
	b.d = min(max(2*b.d, 5*time.Millisecond), 250*time.Millisecond)
	return b.d
}

// waitRetry waits for a leader change or the next backoff step before a
// retry. It returns an error when the retry should not happen.
func (n *Node) waitRetry(ctx context.Context, changed <-chan struct{}, b *retryBackoff, last error) error {
	timer := time.NewTimer(b.next())
	defer timer.Stop()
	select {
	case <-changed:
	case <-timer.C:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", last, ctx.Err())
	case <-n.ctx.Done():
		return ErrClosed
	}
	return nil
}

// enqueue hands a proposal to the batcher.
func (n *Node) enqueue(p *proposal) error {
	select {
	case n.batcher.in <- p:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	case <-n.ctx.Done():
		return ErrClosed
	}
}

// await waits for an enqueued proposal's result.
func (n *Node) await(p *proposal) proposalResult {
	select {
	case res := <-p.done:
		return res
	case <-p.ctx.Done():
		return proposalResult{err: fmt.Errorf("%w: %w", ErrOutcomeUnknown, p.ctx.Err())}
	case <-n.ctx.Done():
		return proposalResult{err: ErrClosed}
	}
}

// State returns the latest state applied on this node. It is cheap, never
// blocks, and may be behind the leader; see LinearizableState.
func (n *Node) State() *State { return n.fsm.current() }

// WaitIndex waits until this node's state has applied the command at index.
func (n *Node) WaitIndex(ctx context.Context, index uint64) error {
	for {
		st := n.fsm.current()
		if st.index >= index {
			return nil
		}
		if err := n.usable(); err != nil {
			return err
		}
		select {
		case <-st.superseded:
		case <-ctx.Done():
			return fmt.Errorf("meta: waiting for index %d (at %d): %w", index, st.index, ctx.Err())
		case <-n.ctx.Done():
		case <-n.fsm.fatalCh:
		}
	}
}

// LinearizableState returns a state that holds every command committed
// before the call: the leader commits a barrier (proving it still leads) and
// reports the index of its last applied command, and this node waits until
// it has applied that index. It costs one Raft entry on the leader.
func (n *Node) LinearizableState(ctx context.Context) (*State, error) {
	backoff := retryBackoff{}
	for {
		if err := n.usable(); err != nil {
			return nil, err
		}
		changed := n.leaderChanged()
		index, err := n.readIndex(ctx)
		if err == nil {
			if err := n.WaitIndex(ctx, index); err != nil {
				return nil, err
			}
			return n.fsm.current(), nil
		}
		// A read acts on nothing, so an unknown outcome is retried too.
		if !retryable(err) && !errors.Is(err, ErrOutcomeUnknown) {
			return nil, err
		}
		if err := n.waitRetry(ctx, changed, &backoff, err); err != nil {
			return nil, err
		}
	}
}

func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.leaderReadIndex(ctx)
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return 0, ErrNoLeader
	}
	return n.fwd.readIndex(ctx, string(addr))
}

// Heartbeat tells the leader that a broker incarnation is alive. Brokers
// call it well within BrokerSessionTimeout (Kafka uses 2s against 9s). It
// fails with ErrUnknownBroker or ErrStaleBrokerEpoch when the incarnation is
// not the registered one, and ErrBrokerFenced once it was fenced: the broker
// then registers again, which unfences it under a new epoch.
func (n *Node) Heartbeat(ctx context.Context, brokerID int32, epoch int64) error {
	backoff := retryBackoff{}
	for {
		if err := n.usable(); err != nil {
			return err
		}
		changed := n.leaderChanged()
		var err error
		if n.raft.State() == raft.Leader {
			err = n.leaderHeartbeat(brokerID, epoch)
		} else if addr, _ := n.raft.LeaderWithID(); addr == "" {
			err = ErrNoLeader
		} else {
			err = n.fwd.heartbeat(ctx, string(addr), brokerID, epoch)
		}
		if err == nil || !retryable(err) && !errors.Is(err, ErrOutcomeUnknown) {
			return err
		}
		if err := n.waitRetry(ctx, changed, &backoff, err); err != nil {
			return err
		}
	}
}

// Watch subscribes to applied changes; see Watch and WatchOptions. Cancel
// it when done.
func (n *Node) Watch(opts WatchOptions) *Watch {
	return n.watches.watch(n.fsm.current, opts)
}
