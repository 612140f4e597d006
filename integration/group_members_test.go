package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupServer starts a server with group timeouts short enough for tests:
// no initial rebalance delay, sessions from 500 ms.
func groupServer(t testing.TB) *server {
	t.Helper()
	return startServer(t, "--group.initial.rebalance.delay.ms", "0", "--group.min.session.timeout.ms", "500")
}

// assignmentEvent is one callback a member's client made.
type assignmentEvent struct {
	kind       string // "assigned", "revoked" or "lost"
	partitions []int32
}

// changes wakes tests waiting for a condition on member logs: every log
// of a test shares one, and signals it on every change.
type changes struct {
	mu      sync.Mutex
	changed chan struct{}
}

func newChanges() *changes { return &changes{changed: make(chan struct{})} }

func (c *changes) signal() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *changes) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// waitFor waits until check passes, checking again after every change. It
// fails the test after timeout with what check last said.
func (c *changes) waitFor(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		next := c.next()
		err := check()
		if err == nil {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("after %v: %v", timeout, err)
		}
	}
}

// memberLog records one group member's assignment callbacks and the
// records it consumed.
type memberLog struct {
	name    string
	changes *changes
	mu      sync.Mutex
	// owned is the member's current assignment.
	owned  map[int32]bool
	events []assignmentEvent
	// consumed counts records by partition and offset.
	consumed map[[2]int64]int
}

func newMemberLog(name string, c *changes) *memberLog {
	return &memberLog{name: name, changes: c, owned: map[int32]bool{}, consumed: map[[2]int64]int{}}
}

func (l *memberLog) record(kind string, topic string, assigned map[string][]int32) {
	ps := slices.Clone(assigned[topic])
	slices.Sort(ps)
	if len(ps) == 0 {
		return
	}
	l.mu.Lock()
	l.events = append(l.events, assignmentEvent{kind: kind, partitions: ps})
	for _, p := range ps {
		l.owned[p] = kind == "assigned"
	}
	l.mu.Unlock()
	l.changes.signal()
}

// opts are the kgo options that feed the log.
func (l *memberLog) opts(topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { l.record("assigned", topic, m) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			l.record("revoked", topic, m)
			// What the default does: commit what was consumed before the
			// partitions go.
			cl.CommitMarkedOffsets(ctx)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { l.record("lost", topic, m) }),
	}
}

// consume polls cl until ctx ends, recording records and marking them for
// commit.
func (l *memberLog) consume(ctx context.Context, cl *kgo.Client) {
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		l.mu.Lock()
		fetches.EachRecord(func(r *kgo.Record) { l.consumed[[2]int64{int64(r.Partition), r.Offset}]++ })
		l.mu.Unlock()
		cl.MarkCommitRecords(fetches.Records()...)
		l.changes.signal()
	}
}

// snapshot returns the member's owned partitions and events so far.
func (l *memberLog) snapshot() (owned []int32, events []assignmentEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, ok := range l.owned {
		if ok {
			owned = append(owned, p)
		}
	}
	slices.Sort(owned)
	return owned, slices.Clone(l.events)
}

// balanced checks that the members own every one of partitions between
// them, without overlap, as evenly as possible.
func balanced(partitions int32, members ...*memberLog) func() error {
	return func() error {
		seen := map[int32]string{}
		for _, m := range members {
			owned, _ := m.snapshot()
			fair := int(partitions) / len(members)
			if len(owned) < fair || len(owned) > fair+1 {
				return fmt.Errorf("%s owns %v, want %d or %d partitions", m.name, owned, fair, fair+1)
			}
			for _, p := range owned {
				if other, dup := seen[p]; dup {
					return fmt.Errorf("partition %d owned by %s and %s", p, other, m.name)
				}
				seen[p] = m.name
			}
		}
		if len(seen) != int(partitions) {
			return fmt.Errorf("%d of %d partitions owned", len(seen), partitions)
		}
		return nil
	}
}
