package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupConsumer is a running group member: its client and the goroutine
// polling it.
type groupConsumer struct {
	log    *memberLog
	client *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startConsumer starts a member of group consuming topic with opts.
func startConsumer(t testing.TB, s *server, log *memberLog, group, topic string, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200 * time.Millisecond),
	}, append(log.opts(topic), opts...)...)
	c := &groupConsumer{log: log, client: newClient(t, s, opts...), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		log.consume(ctx, c.client)
	}()
	t.Cleanup(c.stop)
	return c
}

// stop ends polling and closes the client, which leaves the group (but not
// for a static member) after revoking and committing.
func (c *groupConsumer) stop() {
	c.cancel()
	<-c.done
	c.client.Close()
}

// eventsSince are the events a member logged after the first n.
func eventsSince(l *memberLog, n int) []assignmentEvent {
	_, events := l.snapshot()
	return events[n:]
}

// checkRevokedMovedTo fails the test if the member revoked (or lost) a
// partition in events that the gainer does not own now: a partition that
// did not need to move was taken away.
func checkRevokedMovedTo(t *testing.T, l *memberLog, events []assignmentEvent, gainers ...*memberLog) {
	t.Helper()
	var gained []int32
	for _, g := range gainers {
		owned, _ := g.snapshot()
		gained = append(gained, owned...)
	}
	for _, e := range events {
		if e.kind == "lost" {
			t.Fatalf("%s lost partitions %v", l.name, e.partitions)
		}
		if e.kind != "revoked" {
			continue
		}
		for _, p := range e.partitions {
			if !slices.Contains(gained, p) {
				t.Fatalf("%s revoked partition %d, which did not move to a new member (events %+v)", l.name, p, events)
			}
		}
	}
}

// TestCooperativeStickyGroup: three franz-go members with the
// cooperative-sticky balancer join one at a time and one leaves while a
// producer writes. Only partitions that move are revoked, every
// acknowledged record is consumed, and the commits reach the end offsets.
func TestCooperativeStickyGroup(t *testing.T) {
	t.Parallel()
	s := groupServer(t)
	const topic, group, partitions = "coop", "coop-group", int32(12)
	createTopic(t, s, topic, partitions, nil)
	ch := newChanges()

	producer := newClient(t, s)
	var (
		ackedMu sync.Mutex
		acked   []testRecord
	)
	produceCtx, stopProducing := context.WithCancel(context.Background())
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			records := make([]*kgo.Record, 10)
			for j := range records {
				records[j] = &kgo.Record{Value: fmt.Appendf(nil, "record %d-%d", i, j)}
			}
			results := produce(producer, topic, records)
			if err := results.FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			ackedMu.Lock()
			for _, r := range results {
				acked = append(acked, testRecord{partition: r.Record.Partition, offset: r.Record.Offset})
			}
			ackedMu.Unlock()
			select {
			case <-produceCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	coop := kgo.Balancers(kgo.CooperativeStickyBalancer())
	m1, m2, m3 := newMemberLog("m1", ch), newMemberLog("m2", ch), newMemberLog("m3", ch)
	startConsumer(t, s, m1, group, topic, coop)
	ch.waitFor(t, 30*time.Second, balanced(partitions, m1))

	_, before1 := m1.snapshot()
	startConsumer(t, s, m2, group, topic, coop)
	ch.waitFor(t, 30*time.Second, balanced(partitions, m1, m2))
	checkRevokedMovedTo(t, m1, eventsSince(m1, len(before1)), m2)

	_, before1 = m1.snapshot()
	_, before2 := m2.snapshot()
	c3 := startConsumer(t, s, m3, group, topic, coop)
	ch.waitFor(t, 30*time.Second, balanced(partitions, m1, m2, m3))
	checkRevokedMovedTo(t, m1, eventsSince(m1, len(before1)), m3)
	checkRevokedMovedTo(t, m2, eventsSince(m2, len(before2)), m3)

	_, before1 = m1.snapshot()
	_, before2 = m2.snapshot()
	c3.stop()
	ch.waitFor(t, 30*time.Second, balanced(partitions, m1, m2))
	// The members that stay only gain partitions.
	checkRevokedMovedTo(t, m1, eventsSince(m1, len(before1)))
	checkRevokedMovedTo(t, m2, eventsSince(m2, len(before2)))

	stopProducing()
	<-produced
	ackedMu.Lock()
	want := slices.Clone(acked)
	ackedMu.Unlock()
	ch.waitFor(t, 30*time.Second, func() error {
		for _, r := range want {
			key := [2]int64{int64(r.partition), r.offset}
			found := false
			for _, m := range []*memberLog{m1, m2, m3} {
				m.mu.Lock()
				found = found || m.consumed[key] > 0
				m.mu.Unlock()
			}
			if !found {
				return fmt.Errorf("acknowledged record %d@%d not consumed", r.partition, r.offset)
			}
		}
		return nil
	})
	waitCommittedAtEnd(t, s, group, topic)
}

// waitCommittedAtEnd waits until group's committed offsets equal topic's
// end offsets. Commits happen on the members' timers, which have no event
// to wait on, so it polls.
func waitCommittedAtEnd(t *testing.T, s *server, group, topic string) {
	t.Helper()
	admin := kadm.NewClient(newClient(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ends, err := admin.ListEndOffsets(ctx, topic)
		if err == nil {
			var committed kadm.OffsetResponses
			if committed, err = admin.FetchOffsets(ctx, group); err == nil {
				err = sameOffsets(ends, committed)
			}
		}
		if err == nil {
			return
		}
		if ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("commits did not reach the end offsets: %v", last)
		case <-tick.C:
		}
	}
}

func sameOffsets(ends kadm.ListedOffsets, committed kadm.OffsetResponses) error {
	var err error
	ends.Each(func(end kadm.ListedOffset) {
		c, ok := committed.Lookup(end.Topic, end.Partition)
		if !ok && end.Offset == 0 {
			// Nothing to consume, nothing to commit.
			return
		}
		if err == nil && (!ok || c.At != end.Offset) {
			err = fmt.Errorf("%s-%d committed %d, end %d", end.Topic, end.Partition, c.At, end.Offset)
		}
	})
	return err
}

// TestStaticMemberRestartKeepsAssignment: a static member that restarts
// inside its session timeout gets its partitions back, and the other
// member sees no rebalance.
func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	t.Parallel()
	s := groupServer(t)
	const topic, group, partitions = "static", "static-group", int32(6)
	createTopic(t, s, topic, partitions, nil)
	ch := newChanges()
	static := func(instance string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(instance), kgo.SessionTimeout(20 * time.Second), kgo.Balancers(kgo.RangeBalancer())}
	}
	// b joins first and stays the leader; a restarts.
	b, a := newMemberLog("b", ch), newMemberLog("a", ch)
	startConsumer(t, s, b, group, topic, static("b")...)
	ch.waitFor(t, 30*time.Second, balanced(partitions, b))
	ca := startConsumer(t, s, a, group, topic, static("a")...)
	ch.waitFor(t, 30*time.Second, balanced(partitions, b, a))
	ownedA, _ := a.snapshot()
	_, eventsB := b.snapshot()
	membersBefore := describeMembers(t, s, group)

	ca.stop()
	a2 := newMemberLog("a again", ch)
	startConsumer(t, s, a2, group, topic, static("a")...)
	ch.waitFor(t, 30*time.Second, func() error {
		if owned, _ := a2.snapshot(); !slices.Equal(owned, ownedA) {
			return fmt.Errorf("restarted member owns %v, before it owned %v", owned, ownedA)
		}
		return nil
	})
	// Records produced now reach both members without any rebalance.
	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var records []*kgo.Record
	for p := range partitions {
		records = append(records, &kgo.Record{Partition: p, Value: []byte("after restart")})
	}
	want := produceAll(t, producer, topic, records)
	ch.waitFor(t, 30*time.Second, func() error {
		for _, r := range want {
			m := b
			if slices.Contains(ownedA, r.partition) {
				m = a2
			}
			m.mu.Lock()
			n := m.consumed[[2]int64{int64(r.partition), r.offset}]
			m.mu.Unlock()
			if n == 0 {
				return fmt.Errorf("%s has not consumed %d@%d", m.name, r.partition, r.offset)
			}
		}
		return nil
	})
	if _, events := b.snapshot(); len(events) != len(eventsB) {
		t.Fatalf("the other member saw a rebalance: %+v", events[len(eventsB):])
	}
	membersAfter := describeMembers(t, s, group)
	if membersAfter["b"] != membersBefore["b"] || membersAfter["a"] == membersBefore["a"] || len(membersAfter) != 2 {
		t.Fatalf("members before %v, after %v: want b unchanged and a with a new member id", membersBefore, membersAfter)
	}
}

// describeMembers maps a stable group's instance ids to member ids.
func describeMembers(t *testing.T, s *server, group string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := kadm.NewClient(newClient(t, s)).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	g := described[group]
	if g.Err != nil || g.State != "Stable" {
		t.Fatalf("group %s: %v, state %s", group, g.Err, g.State)
	}
	out := map[string]string{}
	for _, m := range g.Members {
		if m.InstanceID != nil {
			out[*m.InstanceID] = m.MemberID
		}
	}
	return out
}
