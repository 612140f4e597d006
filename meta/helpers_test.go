package meta

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
)

// Shared test helpers: nodes and clusters on loopback with short Raft
// timeouts, a state machine harness fed log entries directly, and polling
// with a deadline.

// testLogger discards logs unless META_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("META_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testConfig is a node config with short timeouts, a temporary data dir and
// a listener on a port the OS picks.
func testConfig(t testing.TB, id string) Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = id
	cfg.Listener = l
	cfg.BindAddr = l.Addr().String()
	cfg.DataDir = filepath.Join(t.TempDir(), "meta-"+id)
	// Short enough for quick failover, long enough that a loaded machine
	// running the race detector does not lose leaders spuriously.
	cfg.HeartbeatTimeout = 400 * time.Millisecond
	cfg.ElectionTimeout = 400 * time.Millisecond
	cfg.LeaderLeaseTimeout = 400 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	cfg.SnapshotInterval = 50 * time.Millisecond
	cfg.Logger = testLogger()
	return cfg
}

// openNode opens a node and closes it when the test ends.
func openNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.NodeID, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// reopenConfig is cfg for a restart on the same address and data.
func reopenConfig(cfg Config) Config {
	cfg.Listener = nil
	return cfg
}

// testCtx is a context bounded well within the package's time budget.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cluster is a group of voters on loopback.
type cluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Node // nil while stopped
}

// newCluster starts n voters with the same peer list.
func newCluster(t testing.TB, size int, tweak func(*Config)) *cluster {
	t.Helper()
	c := &cluster{t: t}
	var peers []Peer
	for i := range size {
		cfg := testConfig(t, fmt.Sprintf("n%d", i+1))
		peers = append(peers, Peer{ID: cfg.NodeID, Address: cfg.BindAddr})
		c.cfgs = append(c.cfgs, cfg)
	}
	for i := range c.cfgs {
		c.cfgs[i].Peers = peers
		if tweak != nil {
			tweak(&c.cfgs[i])
		}
		c.nodes = append(c.nodes, openNode(t, c.cfgs[i]))
	}
	for _, n := range c.nodes {
		if err := n.WaitReady(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// leader waits for one running node to be an established leader.
func (c *cluster) leader() *Node {
	c.t.Helper()
	var leader *Node
	waitFor(c.t, 10*time.Second, "a leader", func() bool {
		for _, n := range c.nodes {
			if n != nil && n.raft.State() == raft.Leader && n.established.Load() {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func (c *cluster) index(n *Node) int {
	for i, m := range c.nodes {
		if m == n {
			return i
		}
	}
	c.t.Fatalf("node %s not in cluster", n.ID())
	return -1
}

func (c *cluster) stop(i int) {
	c.t.Helper()
	if err := c.nodes[i].Close(); err != nil {
		c.t.Fatalf("closing %s: %v", c.cfgs[i].NodeID, err)
	}
	c.nodes[i] = nil
}

func (c *cluster) start(i int) *Node {
	c.t.Helper()
	c.nodes[i] = openNode(c.t, reopenConfig(c.cfgs[i]))
	return c.nodes[i]
}

// running returns the nodes that are up.
func (c *cluster) running() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// converged waits until every running node has applied the leader's state
// and they all snapshot to the same bytes.
func (c *cluster) converged() []byte {
	c.t.Helper()
	var want []byte
	waitFor(c.t, 10*time.Second, "every node to hold the same state", func() bool {
		var first []byte
		for _, n := range c.running() {
			b := snapshotBytes(c.t, n.State())
			if first == nil {
				first = b
			} else if !bytes.Equal(first, b) {
				return false
			}
		}
		want = first
		return true
	})
	return want
}

// snapshotBytes encodes a state in the snapshot format.
func snapshotBytes(t testing.TB, st *State) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, st); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// registerBroker registers a broker with one PLAINTEXT listener.
func registerBroker(t testing.TB, n *Node, id int32) int64 {
	t.Helper()
	res, err := n.Propose(testCtx(t), brokerCmd(id))
	if err != nil {
		t.Fatalf("registering broker %d: %v", id, err)
	}
	return res.Epoch
}

func brokerCmd(id int32) RegisterBroker {
	return RegisterBroker{ID: id, Rack: "r1", Listeners: []Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}}
}

// topicCmd is a CreateTopic with a deterministic id derived from the name.
func topicCmd(name string, partitions int, replicas ...int32) CreateTopic {
	c := CreateTopic{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)), Name: name}
	for range partitions {
		c.Replicas = append(c.Replicas, replicas)
	}
	return c
}

// fsmHarness feeds log entries straight to a state machine.
type fsmHarness struct {
	t     testing.TB
	f     *fsm
	index uint64
}

func newHarness(t testing.TB) *fsmHarness {
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fsmHarness{t: t, f: newFSM(slog.New(slog.DiscardHandler), m)}
}

// entry encodes commands as one log entry.
func entry(t testing.TB, cmds ...Command) []byte {
	t.Helper()
	var encoded [][]byte
	for _, c := range cmds {
		data, err := encodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, data)
	}
	return encodeBatch(encoded)
}

// applyRaw applies raw log entries as one ApplyBatch call.
func (h *fsmHarness) applyRaw(entries ...[]byte) []any {
	logs := make([]*raft.Log, len(entries))
	for i, data := range entries {
		h.index++
		logs[i] = &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: data}
	}
	return h.f.ApplyBatch(logs)
}

// apply applies commands as one entry and returns each command's error.
func (h *fsmHarness) apply(cmds ...Command) []error {
	h.t.Helper()
	resp := h.applyRaw(entry(h.t, cmds...))[0]
	switch r := resp.(type) {
	case applyResult:
		return []error{r.err}
	case []applyResult:
		errs := make([]error, len(r))
		for i, res := range r {
			errs[i] = res.err
		}
		return errs
	default:
		h.t.Fatalf("unexpected response %T: %v", resp, resp)
		return nil
	}
}

// mustApply applies commands one entry each and fails on any error.
func (h *fsmHarness) mustApply(cmds ...Command) {
	h.t.Helper()
	for _, c := range cmds {
		if err := h.apply(c)[0]; err != nil {
			h.t.Fatalf("%T: %v", c, err)
		}
	}
}
