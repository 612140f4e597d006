package group

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/internal/metatest"
	"github.com/stratalog/strata/meta"
)

// newTestMeta starts a single-voter metadata node in t's temporary
// directory with topic "t" of partitions partitions.
func newTestMeta(t testing.TB, partitions int) *meta.Node {
	t.Helper()
	node := metatest.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listener := meta.Listener{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}
	if _, err := node.Propose(ctx, &meta.RegisterBroker{ID: 1, Listeners: []meta.Listener{listener}}); err != nil {
		t.Fatal(err)
	}
	replicas := make([][]int32, partitions)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	if _, err := node.Propose(ctx, &meta.CreateTopic{ID: uuid.New(), Name: "t", Replicas: replicas}); err != nil {
		t.Fatal(err)
	}
	return node
}

// fakeLogs serves high watermarks, log start offsets and batch timestamps
// from maps.
type fakeLogs struct {
	mu         sync.Mutex
	hwm        map[int32]int64
	logStart   map[int32]int64
	timestamps map[int32]int64
}

func (l *fakeLogs) LogStartOffset(_ string, p int32) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart[p], nil
}

func (l *fakeLogs) HighWatermark(_ string, p int32) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hwm[p], nil
}

func (l *fakeLogs) TimestampAt(_ string, p int32, _ int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.timestamps[p], nil
}

// testClock is a clock tests move by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newTestCoordinator starts a coordinator over node with no initial
// rebalance delay and sessions from 10 ms.
func newTestCoordinator(t testing.TB, node *meta.Node, logs Logs, now func() time.Time) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = 10 * time.Millisecond
	cfg.StallThreshold = time.Minute
	if logs == nil {
		logs = &fakeLogs{}
	}
	c, err := New(cfg, Deps{Offsets: node, Logs: logs, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// joinRequest is a consumer join of group g with a range protocol.
func joinRequest(g, member, instance string, session time.Duration) JoinRequest {
	return JoinRequest{
		Group: g, MemberID: member, InstanceID: instance, ClientID: "test",
		ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte("sub")}},
		SessionTimeout: session, RebalanceTimeout: time.Minute, RequireKnownMemberID: true,
	}
}

// groupsInMemory is how many groups the coordinator holds, read on its
// loop.
func groupsInMemory(t testing.TB, c *Coordinator) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := call(ctx, c, func(future chan<- int) { future <- len(c.groups) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitGroupsInMemory waits until the coordinator holds want groups. Session
// and pending-member timers have no event to wait on, so it polls.
func waitGroupsInMemory(t testing.TB, c *Coordinator, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		n := groupsInMemory(t, c)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d groups in memory, want %d", n, want)
		}
		<-tick.C
	}
}
