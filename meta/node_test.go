package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// embedded opens a single-voter node and waits until it is ready.
func embedded(t *testing.T, tweak func(*Config)) (*Node, Config) {
	t.Helper()
	cfg := testConfig(t, "solo")
	if tweak != nil {
		tweak(&cfg)
	}
	n := openNode(t, cfg)
	if err := n.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return n, cfg
}

func TestEmbeddedBootstrapsAndRestartsFromItsData(t *testing.T) {
	n, cfg := embedded(t, func(c *Config) { c.SnapshotThreshold = 4; c.TrailingLogs = 2 })
	ctx := testCtx(t)
	clusterID := n.State().ClusterID()
	if len(clusterID) != 22 {
		t.Fatalf("cluster id %q is not Kafka's 22-character form", clusterID)
	}
	epoch := registerBroker(t, n, 1)
	if epoch != 1 {
		t.Fatalf("first broker epoch %d", epoch)
	}
	for i := range 10 {
		if _, err := n.Propose(ctx, topicCmd("t"+string(rune('a'+i)), 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := n.Propose(ctx, commit("g", "ta", 1, 42))
	if err != nil {
		t.Fatal(err)
	}
	// Read your own write: applied locally when Propose returns.
	if o, ok := n.State().CommittedOffset("g", "ta", 1); !ok || o.Offset != 42 || n.State().Index() < res.Index {
		t.Fatalf("offset %+v, state index %d, result index %d", o, n.State().Index(), res.Index)
	}
	waitFor(t, 10*time.Second, "a snapshot", func() bool { return n.Status().LastSnapshotIndex > 0 })
	before := snapshotBytes(t, n.State())
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose(ctx, commit("g", "ta", 1, 43)); !errors.Is(err, ErrClosed) {
		t.Fatalf("propose after close: %v", err)
	}

	again := openNode(t, reopenConfig(cfg))
	if err := again.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// The restart restored the snapshot and replayed the log after it.
	if got := snapshotBytes(t, again.State()); !bytes.Equal(got, before) {
		t.Fatal("state after restart differs")
	}
	if again.State().ClusterID() != clusterID {
		t.Fatal("cluster id changed on restart")
	}
	if epoch := registerBroker(t, again, 1); epoch != 2 {
		t.Fatalf("re-registration epoch %d, want 2", epoch)
	}
}

func TestOpenRefusesCorruptSnapshot(t *testing.T) {
	n, cfg := embedded(t, nil)
	registerBroker(t, n, 1)
	if _, err := n.Propose(testCtx(t), topicCmd("t", 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*"))
	if len(dirs) != 1 {
		t.Fatalf("snapshot dirs %v", dirs)
	}
	state := filepath.Join(dirs[0], "state.bin")
	good, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	reopen := func() error {
		t.Helper()
		m, err := Open(reopenConfig(cfg))
		if err == nil {
			m.Close()
		}
		return err
	}

	// Truncated: Raft's own CRC-64 fails.
	if err := os.WriteFile(state, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reopen(); !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), filepath.Base(dirs[0])) {
		t.Fatalf("truncated snapshot: %v", err)
	}

	// Changed inside, with Raft's size and CRC-64 fixed up so that only the
	// snapshot format's own checks can catch it.
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x20
	if err := os.WriteFile(state, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	rewriteSnapshotMeta(t, filepath.Join(dirs[0], "meta.json"), bad)
	if err := reopen(); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("corrupt snapshot: %v", err)
	}

	// Restored, it opens again.
	if err := os.WriteFile(state, good, 0o644); err != nil {
		t.Fatal(err)
	}
	rewriteSnapshotMeta(t, filepath.Join(dirs[0], "meta.json"), good)
	if err := reopen(); err != nil {
		t.Fatalf("good snapshot: %v", err)
	}
}

// rewriteSnapshotMeta sets the size and CRC-64 in Raft's meta.json to match
// state.
func rewriteSnapshotMeta(t *testing.T, path string, state []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	sum := crc64.Checksum(state, crc64.MakeTable(crc64.ECMA))
	meta["Size"] = len(state)
	meta["CRC"] = []byte{byte(sum >> 56), byte(sum >> 48), byte(sum >> 40), byte(sum >> 32), byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)}
	out, _ := json.Marshal(meta)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownCommandInTheLogStopsTheNode(t *testing.T) {
	n, _ := embedded(t, nil)
	registerBroker(t, n, 1)
	w := n.Watch(WatchOptions{})
	defer w.Cancel()
	if err := n.raft.Apply([]byte{200, 1, 0, '{', '}'}, 0).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("Failed not closed 5s after an unknown command was applied")
	}
	err := n.Err()
	if !errors.Is(err, ErrStopped) || !errors.Is(err, ErrUnknownCommand) || !strings.Contains(err.Error(), "type 200") {
		t.Fatalf("Err() = %v", err)
	}
	if _, err := n.Propose(testCtx(t), topicCmd("t", 1, 1)); !errors.Is(err, ErrStopped) {
		t.Fatalf("propose after the fatal error: %v", err)
	}
	waitFor(t, 5*time.Second, "raft to stop", func() bool { return n.raft.State() == raft.Shutdown })
	if st := n.Status(); !strings.Contains(st.Error, "unknown command") {
		t.Fatalf("status error %q", st.Error)
	}
	for range w.C {
	}
	if !errors.Is(w.Err(), ErrUnknownCommand) {
		t.Fatalf("watch ended with %v", w.Err())
	}
	if err := n.Close(); err != nil {
		t.Fatalf("close after a fatal error: %v", err)
	}
}

func TestMetricsAreRegisteredAndReleased(t *testing.T) {
	reg := prometheus.NewRegistry()
	n, cfg := embedded(t, func(c *Config) { c.Registerer = reg })
	registerBroker(t, n, 1)
	if _, err := n.Propose(testCtx(t), topicCmd("orders", 1, 9)); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(n.metrics.proposals.WithLabelValues("rejected")); got != 1 {
		t.Fatalf("rejected proposals %v", got)
	}
	if got := testutil.ToFloat64(n.metrics.commandsApplied.WithLabelValues("ok")); got < 2 {
		t.Fatalf("applied commands %v", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{"strata_meta_proposals_total", "strata_meta_commands_applied_total", "strata_meta_is_leader",
		"strata_meta_apply_duration_seconds", "strata_meta_commit_latency_seconds", "strata_meta_batch_commands"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s not registered (have %v)", want, names)
		}
		if !slices.Contains(MetricNames, want) {
			t.Errorf("metric %s missing from MetricNames", want)
		}
	}
	if _, err := Open(reopenConfig(cfg)); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("a second node on the same registry: %v", err)
	}
	n.Close()
	if families, _ := reg.Gather(); len(families) != 0 {
		t.Fatalf("%d metric families left after Close", len(families))
	}
	m := openNode(t, reopenConfig(cfg))
	if err := m.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestStatusOfEmbeddedNode(t *testing.T) {
	n, _ := embedded(t, nil)
	ctx := testCtx(t)
	epoch := registerBroker(t, n, 3)
	if err := n.Heartbeat(ctx, 3, epoch); err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	if st.RaftState != "Leader" || st.LeaderID != "solo" || st.LeaderAddress != n.Addr() || st.Term == 0 || st.CommitIndex == 0 || st.ClusterID == "" {
		t.Fatalf("status %+v", st)
	}
	if len(st.Servers) != 1 || st.Servers[0] != (ServerStatus{ID: "solo", Address: n.Addr(), Suffrage: "voter", Leader: true}) {
		t.Fatalf("servers %+v", st.Servers)
	}
	if len(st.Brokers) != 1 || st.Brokers[0].State != "active" || st.Brokers[0].Epoch != epoch || st.Brokers[0].LastHeartbeatAgoMs == nil {
		t.Fatalf("brokers %+v", st.Brokers)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"leader_id"`, `"commit_index"`, `"servers"`, `"suffrage":"voter"`, `"brokers"`, `"state":"active"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("status JSON lacks %s: %s", key, raw)
		}
	}
}

func TestWatchDeliversAppliedChanges(t *testing.T) {
	n, _ := embedded(t, nil)
	ctx := testCtx(t)
	registerBroker(t, n, 1)
	w := n.Watch(WatchOptions{Kinds: []ChangeKind{ChangeTopic, ChangePartition}})
	first := <-w.C
	if first.State != n.State() || len(first.Changes) != 1 || first.Changes[0].Kind != ChangeSnapshot {
		t.Fatalf("first update %+v", first)
	}
	if _, err := n.Propose(ctx, commit("g", "nope", 0, 1)); !errors.Is(err, ErrUnknownTopic) {
		t.Fatal(err)
	}
	res, err := n.Propose(ctx, topicCmd("orders", 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose(ctx, commit("g", "orders", 0, 1)); err != nil {
		t.Fatal(err)
	}
	up := <-w.C
	var kinds []ChangeKind
	for _, c := range up.Changes {
		kinds = append(kinds, c.Kind)
		if c.Index != res.Index || c.Topic != "orders" {
			t.Errorf("change %+v", c)
		}
	}
	if !slices.Equal(kinds, []ChangeKind{ChangeTopic, ChangePartition, ChangePartition}) {
		t.Fatalf("kinds %v", kinds)
	}
	if _, ok := up.State.Topic("orders"); !ok {
		t.Fatal("the update's state lacks the topic")
	}
	w.Cancel()
	if _, open := <-w.C; open {
		t.Fatal("an update after the offsets commit, which is not watched, or C not closed")
	}
	if w.Err() != nil {
		t.Fatalf("Err after Cancel: %v", w.Err())
	}
}
