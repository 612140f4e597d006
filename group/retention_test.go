package group

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

const week = 7 * 24 * time.Hour

// retentionCoordinator is a coordinator on a hand-moved clock with Kafka's
// default offsets.retention.minutes (7 days), over topic "t" (2
// partitions) and topic "u" (1), that coordinates the groups coordinates
// allows (nil: all).
func retentionCoordinator(t *testing.T, coordinates func(string) bool) (*Coordinator, *testClock, *meta.Node) {
	t.Helper()
	node := newTestMeta(t, 2)
	if _, err := node.Propose(testContext(t), &meta.CreateTopic{ID: uuid.New(), Name: "u", Replicas: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = 10 * time.Millisecond
	if cfg.OffsetsRetention != week {
		t.Fatalf("default offsets.retention.minutes is %v, want Kafka's 7 days", cfg.OffsetsRetention)
	}
	c, err := New(cfg, Deps{Offsets: node, Logs: &fakeLogs{}, Now: clock.Now, Coordinates: coordinates})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, clock, node
}

// consumerJoin is a join of a consumer subscribed to topics, with the
// consumer protocol's metadata, as kgo sends it.
func consumerJoin(g string, topics ...string) JoinRequest {
	req := joinRequest(g, "", "", time.Minute)
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = topics
	req.Protocols = []Protocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	return req
}

func mustCommit(t *testing.T, c *Coordinator, req CommitRequest) {
	t.Helper()
	errs, err := c.Commit(testContext(t), req)
	if err != nil {
		t.Fatalf("commit %+v: %v", req, err)
	}
	for _, e := range errs {
		if e != nil {
			t.Fatalf("commit %+v: %v", req, errs)
		}
	}
}

func offsetAt(topic string, partition int32, offset int64) meta.OffsetCommit {
	return meta.OffsetCommit{Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: -1}
}

// expire runs one retention pass and checks how many offsets it expired.
func expire(t *testing.T, c *Coordinator, want int) {
	t.Helper()
	n, err := c.expireOffsets(testContext(t))
	if err != nil || n != want {
		t.Fatalf("retention pass expired %d offsets (%v), want %d", n, err, want)
	}
}

func describeState(t *testing.T, c *Coordinator, g string) State {
	t.Helper()
	d, err := c.Describe(testContext(t), []string{g})
	if err != nil {
		t.Fatal(err)
	}
	return d[0].State
}

func listed(t *testing.T, c *Coordinator, g string) bool {
	t.Helper()
	all, err := c.List(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Group == g {
			return true
		}
	}
	return false
}

// TestOffsetsExpireAfterTheGroupIsEmptyForTheRetention: as Kafka since 2.1
// (KIP-211), a group's offsets do not age while it has members, however old
// the commit; once the last member leaves the group is listed Empty, keeps
// its offsets for offsets.retention.minutes counted from then, and is gone
// (Dead, unlisted, nothing to delete) once they expire.
func TestOffsetsExpireAfterTheGroupIsEmptyForTheRetention(t *testing.T) {
	t.Parallel()
	c, clock, _ := retentionCoordinator(t, nil)
	ctx := testContext(t)
	m := joinNew(t, c, consumerJoin("g", "t"))
	mustSync(t, c, SyncRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID})
	mustCommit(t, c, CommitRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 5), offsetAt("t", 1, 6)}})

	clock.advance(2 * week)
	expire(t, c, 0) // a live member, however old its commit

	if errs, err := c.Leave(ctx, "g", []Leaver{{MemberID: m.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	clock.advance(week - time.Minute)
	expire(t, c, 0)
	if s := describeState(t, c, "g"); s != Empty || !listed(t, c, "g") {
		t.Fatalf("a minute before expiry the group is %s (listed %v), want a listed Empty group", s, listed(t, c, "g"))
	}
	if got := c.FetchOffsets("g", nil); len(got) != 2 {
		t.Fatalf("offsets before expiry: %+v", got)
	}

	clock.advance(time.Minute)
	expire(t, c, 2)
	if s := describeState(t, c, "g"); s != Dead || listed(t, c, "g") {
		t.Fatalf("after expiry the group is %s (listed %v), want Dead and unlisted", s, listed(t, c, "g"))
	}
	if got := c.FetchOffsets("g", []meta.TopicPartition{{Topic: "t", Partition: 0}}); got[0].Offset != -1 {
		t.Fatalf("offset after expiry: %+v", got)
	}
	if err := c.DeleteGroup(ctx, "g"); err == nil {
		t.Fatal("deleting the expired group succeeded")
	}
	expire(t, c, 0)
}

// TestCommitToAnEmptyGroupKeepsThatOffsetAFullPeriod: an admin tool that
// resets one offset of an Empty group restarts that offset's clock; the
// group's other offsets expire on the group's clock.
func TestCommitToAnEmptyGroupKeepsThatOffsetAFullPeriod(t *testing.T) {
	t.Parallel()
	c, clock, _ := retentionCoordinator(t, nil)
	ctx := testContext(t)
	m := joinNew(t, c, consumerJoin("g", "t"))
	mustSync(t, c, SyncRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID})
	mustCommit(t, c, CommitRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 5), offsetAt("t", 1, 6)}})
	if errs, err := c.Leave(ctx, "g", []Leaver{{MemberID: m.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	clock.advance(3 * 24 * time.Hour)
	mustCommit(t, c, CommitRequest{Group: "g", Generation: -1, Offsets: []meta.OffsetCommit{offsetAt("t", 1, 2)}})

	clock.advance(week - 3*24*time.Hour)
	expire(t, c, 1)
	if got := c.FetchOffsets("g", nil); len(got) != 1 || got[0].Partition != 1 || got[0].Offset != 2 {
		t.Fatalf("after the group's period: %+v, want only the reset offset of partition 1", got)
	}
	if s := describeState(t, c, "g"); s != Empty {
		t.Fatalf("group is %s with an offset left, want Empty", s)
	}
	clock.advance(3 * 24 * time.Hour)
	expire(t, c, 1)
	if got := c.FetchOffsets("g", nil); len(got) != 0 {
		t.Fatalf("after the reset offset's period: %+v", got)
	}
}

// TestOffsetsOfGroupsNeverSeenEmptyStartTheirClockAtTheFirstCheck: a group
// only admin tools commit to, or whose members left before a restart, has
// no time it became Empty in memory; its clock starts at the first check
// that finds it without members, so it expires no earlier than Kafka's.
func TestOffsetsOfGroupsNeverSeenEmptyStartTheirClockAtTheFirstCheck(t *testing.T) {
	t.Parallel()
	c, clock, _ := retentionCoordinator(t, nil)
	mustCommit(t, c, CommitRequest{Group: "admin", Generation: -1, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 1)}})
	clock.advance(24 * time.Hour)
	expire(t, c, 0) // the first check: the clock starts now
	clock.advance(week - time.Minute)
	expire(t, c, 0)
	clock.advance(time.Minute)
	expire(t, c, 1)
}

// TestStableGroupKeepsOnlySubscribedTopicsOffsets: as Kafka does for a
// Stable consumer group, offsets of topics no member subscribes to expire
// a period after their commit; the subscribed topics' never do while the
// group has members.
func TestStableGroupKeepsOnlySubscribedTopicsOffsets(t *testing.T) {
	t.Parallel()
	c, clock, _ := retentionCoordinator(t, nil)
	m := joinNew(t, c, consumerJoin("g", "t"))
	mustSync(t, c, SyncRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID})
	mustCommit(t, c, CommitRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 5), offsetAt("u", 0, 9)}})
	clock.advance(week)
	expire(t, c, 1)
	got := c.FetchOffsets("g", nil)
	if len(got) != 1 || got[0].Topic != "t" {
		t.Fatalf("offsets left: %+v, want only the subscribed topic t's", got)
	}
	if err := c.Heartbeat(testContext(t), "g", m.Generation, m.MemberID, ""); err != nil {
		t.Fatalf("the member after the pass: %v", err)
	}
}

// TestOnlyTheCoordinatorExpiresAGroupsOffsets: a broker that does not
// coordinate a group cannot know whether it has members and expires
// nothing of it; when the group's coordination comes to it, its clock
// starts then.
func TestOnlyTheCoordinatorExpiresAGroupsOffsets(t *testing.T) {
	t.Parallel()
	var mine atomic.Bool
	c, clock, _ := retentionCoordinator(t, func(string) bool { return mine.Load() })
	mustCommit(t, c, CommitRequest{Group: "elsewhere", Generation: -1, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 1)}})
	expire(t, c, 0)
	clock.advance(2 * week)
	expire(t, c, 0)

	mine.Store(true)
	expire(t, c, 0) // coordinated here from now on: the clock starts
	clock.advance(week)
	expire(t, c, 1)
}

// TestOnlyTheCoordinatorListsAGroup: every broker sees every group's
// committed offsets (they live in the metadata group), but ListGroups on
// one lists only the groups it coordinates, as Kafka's does; admin clients
// merge the brokers' answers by group id, and another broker's listing
// of an active group as Empty could replace its coordinator's.
func TestOnlyTheCoordinatorListsAGroup(t *testing.T) {
	t.Parallel()
	c, _, _ := retentionCoordinator(t, func(g string) bool { return g == "here" })
	for _, g := range []string{"here", "elsewhere"} {
		mustCommit(t, c, CommitRequest{Group: g, Generation: -1, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 1)}})
	}
	// Members of a group that moved away are still in this broker's
	// memory until their sessions end.
	m := joinNew(t, c, consumerJoin("moved", "t"))
	mustSync(t, c, SyncRequest{Group: "moved", Generation: m.Generation, MemberID: m.MemberID})
	for g, want := range map[string]bool{"here": true, "elsewhere": false, "moved": false} {
		if got := listed(t, c, g); got != want {
			t.Errorf("group %s listed: %v, want %v", g, got, want)
		}
	}
}

func TestRetentionSettingsAreChecked(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(*Config){
		"offsets.retention.minutes 0":           func(c *Config) { c.OffsetsRetention = 0 },
		"offsets.retention.minutes 30s":         func(c *Config) { c.OffsetsRetention = 30 * time.Second },
		"offsets.retention.check.interval.ms 0": func(c *Config) { c.OffsetsRetentionCheckInterval = 0 },
	} {
		cfg := DefaultConfig()
		set(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRetentionPassesRunOnTheirInterval: the coordinator runs passes by
// itself every offsets.retention.check.interval.ms; the clock they judge
// by is the injected one, so the test waits for the pass's effect, an
// expired offset, not for time.
func TestRetentionPassesRunOnTheirInterval(t *testing.T) {
	t.Parallel()
	node := newTestMeta(t, 1)
	clock := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = 10 * time.Millisecond
	cfg.OffsetsRetentionCheckInterval = time.Millisecond
	c, err := New(cfg, Deps{Offsets: node, Logs: &fakeLogs{}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := node.Watch(meta.WatchOptions{Kinds: []meta.ChangeKind{meta.ChangeOffsets}})
	defer w.Cancel()
	m := joinNew(t, c, consumerJoin("g", "t"))
	mustSync(t, c, SyncRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID})
	mustCommit(t, c, CommitRequest{Group: "g", Generation: m.Generation, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{offsetAt("t", 0, 5)}})
	// Leaving starts the group's clock on the loop, before Leave returns.
	if errs, err := c.Leave(testContext(t), "g", []Leaver{{MemberID: m.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	ctx := testContext(t)
	clock.advance(week)
	for {
		select {
		case up, ok := <-w.C:
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if len(up.State.GroupOffsets("g")) == 0 {
				return
			}
		case <-ctx.Done():
			t.Fatal("no retention pass expired the offset")
		}
	}
}
