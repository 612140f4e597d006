package meta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Three voters over the real TCP transport on loopback: topics survive the
// leader's loss, a new leader takes over, and the old leader, restarted
// after the log was compacted past it, catches up by snapshot to the same
// state.
func TestThreeVotersSurviveLeaderLoss(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold = 8
		cfg.TrailingLogs = 4
	})
	ctx := testCtx(t)
	registerBroker(t, c.nodes[0], 1)
	var committed []string
	create := func(via *Node, name string) {
		t.Helper()
		if _, err := via.Propose(ctx, topicCmd(name, 1, 1)); err != nil {
			t.Fatalf("creating %s via %s: %v", name, via.ID(), err)
		}
		committed = append(committed, name)
	}
	for i := range 12 {
		create(c.nodes[i%3], fmt.Sprintf("before-%d", i))
	}

	// A follower's linearizable read sees what was just committed
	// elsewhere.
	old := c.leader()
	create(old, "just-now")
	follower := c.nodes[(c.index(old)+1)%3]
	st, err := follower.LinearizableState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Topic("just-now"); !ok {
		t.Fatal("a linearizable read on a follower missed a committed topic")
	}

	// Its log may hold entries past what it applied: catching up starts
	// from the last of them.
	oldLast := old.raft.LastIndex()
	c.stop(c.index(old))
	leader := c.leader()
	if leader == old {
		t.Fatal("the stopped node is still leader")
	}
	for i := range 30 {
		create(c.running()[i%2], fmt.Sprintf("after-%d", i))
	}
	for _, n := range c.running() {
		st, err := n.LinearizableState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range committed {
			if _, ok := st.Topic(name); !ok {
				t.Fatalf("%s lost committed topic %s", n.ID(), name)
			}
		}
	}
	// Compaction: neither running node's log starts early enough for the
	// restarted node to catch up from it alone, whichever of them leads
	// by then.
	waitFor(t, 10*time.Second, "log compaction", func() bool {
		for _, n := range c.running() {
			if first, err := n.store.FirstIndex(); err != nil || first <= oldLast+1 {
				return false
			}
		}
		return true
	})

	restarted := c.start(slicesIndex(c.cfgs, old.ID()))
	want := c.converged()
	if got := snapshotBytes(t, restarted.State()); string(got) != string(want) {
		t.Fatal("the restarted node's state differs")
	}
	// The snapshot the leader sent, restored into the state (Raft's own
	// last_snapshot_index is set only after the restore, which the state
	// shows first, and a node that caught up from the log would soon
	// take a snapshot of its own past oldLast too).
	if restarted.Status().RestoredSnapshotIndex <= oldLast {
		t.Fatal("the restarted node caught up without installing a snapshot")
	}
	if _, err := restarted.Propose(ctx, topicCmd("last", 1, 1)); err != nil {
		t.Fatal(err)
	}
	c.converged()
}

func slicesIndex(cfgs []Config, id string) int {
	for i, cfg := range cfgs {
		if cfg.NodeID == id {
			return i
		}
	}
	return -1
}

// 1,000 concurrent proposals spread over all three nodes are each applied
// exactly once, in few Raft entries.
func TestConcurrentProposalsAppliedExactlyOnce(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := testCtx(t)
	registerBroker(t, c.nodes[0], 1)
	if _, err := c.nodes[0].Propose(ctx, topicCmd("t", 4, 1)); err != nil {
		t.Fatal(err)
	}
	c.converged()
	leader := c.leader()
	okBefore := make([]float64, 3)
	for i, n := range c.nodes {
		okBefore[i] = testutil.ToFloat64(n.metrics.commandsApplied.WithLabelValues("ok"))
	}
	lastBefore := leader.raft.LastIndex()

	const proposals = 1000
	var wg sync.WaitGroup
	errs := make(chan error, proposals)
	for i := range proposals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cmd Command = commit(fmt.Sprintf("g-%d", i), "t", int32(i%4), int64(i))
			if i%2 == 0 {
				cmd = topicCmd(fmt.Sprintf("topic-%d", i), 1, 1)
			}
			if _, err := c.nodes[i%3].Propose(ctx, cmd); err != nil {
				errs <- fmt.Errorf("proposal %d via %s: %w", i, c.nodes[i%3].ID(), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c.converged()
	for i, n := range c.nodes {
		got := testutil.ToFloat64(n.metrics.commandsApplied.WithLabelValues("ok")) - okBefore[i]
		if got != proposals {
			t.Errorf("%s applied %v commands, want exactly %d", n.ID(), got, proposals)
		}
	}
	st := c.nodes[2].State()
	if got := len(st.Topics()); got != proposals/2+1 {
		t.Errorf("%d topics", got)
	}
	if got := len(st.Groups()); got != proposals/2 {
		t.Errorf("%d groups", got)
	}
	entries := leader.raft.LastIndex() - lastBefore
	t.Logf("%d proposals in %d raft entries", proposals, entries)
	if entries >= proposals {
		t.Errorf("no batching: %d entries for %d proposals", entries, proposals)
	}
}

// A node outside the voter list joins as a non-voter, follows the log, and
// forwards its proposals to the leader.
func TestNonVoterFollowsAndForwards(t *testing.T) {
	v := soleVoter(t, "v1", nil)
	ctx := testCtx(t)
	registerBroker(t, v, 1)
	if _, err := v.Propose(ctx, topicCmd("early", 1, 1)); err != nil {
		t.Fatal(err)
	}

	follower, _ := nonVoter(t, v, "b1")
	waitFor(t, 10*time.Second, "the non-voter in the configuration", func() bool {
		for _, s := range v.Status().Servers {
			if s.ID == "b1" {
				return s.Suffrage == "nonvoter" && s.Address == follower.Addr()
			}
		}
		return false
	})
	if _, err := follower.Propose(ctx, topicCmd("late", 1, 1)); err != nil {
		t.Fatal(err)
	}
	st := follower.State()
	for _, name := range []string{"early", "late"} {
		if _, ok := st.Topic(name); !ok {
			t.Fatalf("the non-voter lacks %s", name)
		}
	}
	if follower.raft.State() != raft.Follower {
		t.Fatalf("non-voter in state %v", follower.raft.State())
	}
	// Joining again (a restart) is harmless.
	if err := follower.fwd.join(ctx, v.Addr(), "b1", follower.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := follower.fwd.join(ctx, v.Addr(), "v1", follower.Addr()); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a non-voter claiming a voter's id: %v", err)
	}
}

// TestAnUnregisteredBrokerComesBack: a broker unregistered (its node taken
// out of the Raft group as a non-voter) starts again. Its node joins, and
// must stay in the group until its broker registers again, which happens
// only once the node has caught up: the leader used to remove it again at
// its next liveness check, and the node, having joined once, never asked
// again, so the registration committed but was never applied there.
func TestAnUnregisteredBrokerComesBack(t *testing.T) {
	v := soleVoter(t, "1", func(c *Config) { c.BrokerSessionTimeout = time.Second }) // a liveness check every 100 ms
	ctx := testCtx(t)
	broker, cfg := nonVoter(t, v, "7")
	epoch := registerBroker(t, broker, 7)
	member := func() bool { return inConfiguration(v, "7") }
	waitFor(t, 10*time.Second, "the non-voter in the configuration", member)
	if _, err := v.Propose(ctx, FenceBroker{ID: 7, Epoch: epoch}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Propose(ctx, &UnregisterBroker{ID: 7}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the unregistered broker's node out of the configuration", func() bool { return !member() })
	broker.Close()

	broker = openNode(t, reopenConfig(cfg))
	if err := broker.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Starting a broker takes a while before it registers: the node stays
	// in the group through several of the leader's liveness checks.
	waitFor(t, 10*time.Second, "the restarted node in the configuration", member)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !member() {
			t.Fatal("the restarted node, its broker not registered yet, was taken out of the group again")
		}
	}
	registerCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := broker.Propose(registerCtx, brokerCmd(7)); err != nil {
		t.Fatalf("registering again after a restart: %v", err)
	}
	if b, ok := broker.State().Broker(7); !ok || b.Unregistered {
		t.Fatalf("the restarted node's state has broker 7 as %+v, %v; want registered", b, ok)
	}
}

// TestANonVoterTakenOutJoinsAgain: a non-voter removed from the group by
// a leader (one that did not know it had joined again, say) hears from no
// leader any more; it joins again rather than stay behind for good.
func TestANonVoterTakenOutJoinsAgain(t *testing.T) {
	v := soleVoter(t, "1", nil)
	broker, _ := nonVoter(t, v, "7")
	member := func() bool { return inConfiguration(v, "7") }
	waitFor(t, 10*time.Second, "the non-voter in the configuration", member)
	if err := v.raft.RemoveServer("7", 0, 0).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the non-voter out", func() bool { return !member() })
	waitFor(t, 4*broker.lostContactAfter(), "the non-voter back in the configuration", member)
	if _, err := broker.Propose(testCtx(t), brokerCmd(7)); err != nil {
		t.Fatal(err)
	}
	if _, ok := broker.State().Broker(7); !ok {
		t.Fatal("the non-voter did not apply what it proposed")
	}
}

// soleVoter opens a voter alone in its group, with tweak applied to its
// config, and waits until it leads.
func soleVoter(t *testing.T, id string, tweak func(*Config)) *Node {
	t.Helper()
	cfg := testConfig(t, id)
	cfg.Peers = []Peer{{ID: id, Address: cfg.BindAddr}}
	if tweak != nil {
		tweak(&cfg)
	}
	v := openNode(t, cfg)
	if err := v.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return v
}

// nonVoter opens node id outside voter's peer list, waits until it is
// ready, and returns it with its config.
func nonVoter(t *testing.T, voter *Node, id string) (*Node, Config) {
	t.Helper()
	cfg := testConfig(t, id)
	cfg.Peers = voter.cfg.Peers
	n := openNode(t, cfg)
	if err := n.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return n, cfg
}

// inConfiguration reports whether node id is in v's Raft configuration.
func inConfiguration(v *Node, id string) bool {
	for _, s := range v.Status().Servers {
		if s.ID == id {
			return true
		}
	}
	return false
}
