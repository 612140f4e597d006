package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// joinNew joins as a new member through the member-id-required round trip.
func joinNew(t *testing.T, c *Coordinator, req JoinRequest) JoinResult {
	t.Helper()
	ctx := testContext(t)
	first, err := c.Join(ctx, req)
	if err != nil || !errors.Is(first.Err, ErrMemberIDRequired) || first.MemberID == "" {
		t.Fatalf("first join: %+v %v", first, err)
	}
	req.MemberID = first.MemberID
	r, err := c.Join(ctx, req)
	if err != nil || r.Err != nil {
		t.Fatalf("join: %+v %v", r, err)
	}
	return r
}

// joinAsync joins in a goroutine; the result arrives once the rebalance
// completes.
func joinAsync(t *testing.T, c *Coordinator, req JoinRequest) <-chan JoinResult {
	out := make(chan JoinResult, 1)
	go func() {
		r, err := c.Join(testContext(t), req)
		if err != nil {
			r.Err = err
		}
		out <- r
	}()
	return out
}

// heartbeatUntilRebalance heartbeats as member until the coordinator says
// to rejoin, failing on any other answer than "keep going".
func heartbeatUntilRebalance(t *testing.T, c *Coordinator, generation int32, member string) {
	t.Helper()
	ctx := testContext(t)
	for {
		err := c.Heartbeat(ctx, "g", generation, member, "")
		if errors.Is(err, ErrRebalanceInProgress) {
			return
		}
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
}

func mustSync(t *testing.T, c *Coordinator, req SyncRequest) []byte {
	t.Helper()
	r, err := c.Sync(testContext(t), req)
	if err != nil || r.Err != nil {
		t.Fatalf("sync %+v: %+v %v", req, r, err)
	}
	return r.Assignment
}

func TestTwoMembersRebalance(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	one := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	if one.Generation != 1 || one.Leader != one.MemberID || len(one.Members) != 1 {
		t.Fatalf("first member: %+v", one)
	}
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: one.MemberID, Assignments: map[string][]byte{one.MemberID: []byte("all")}})

	first, _ := c.Join(ctx, joinRequest("g", "", "", time.Minute))
	second := joinAsync(t, c, joinRequest("g", first.MemberID, "", time.Minute))
	// The first member learns of the rebalance from its heartbeat.
	heartbeatUntilRebalance(t, c, 1, one.MemberID)
	again, err := c.Join(ctx, joinRequest("g", one.MemberID, "", time.Minute))
	if err != nil || again.Err != nil || again.Generation != 2 || len(again.Members) != 2 {
		t.Fatalf("leader rejoin: %+v %v", again, err)
	}
	two := <-second
	if two.Err != nil || two.Generation != 2 || two.Leader != one.MemberID || len(two.Members) != 0 {
		t.Fatalf("second member: %+v", two)
	}
	synced := make(chan []byte, 1)
	go func() {
		r, _ := c.Sync(ctx, SyncRequest{Group: "g", Generation: 2, MemberID: two.MemberID})
		synced <- r.Assignment
	}()
	mustSync(t, c, SyncRequest{Group: "g", Generation: 2, MemberID: one.MemberID,
		Assignments: map[string][]byte{one.MemberID: []byte("half"), two.MemberID: []byte("other half")}})
	if got := <-synced; string(got) != "other half" {
		t.Fatalf("second member's assignment %q", got)
	}
	if err := c.Heartbeat(ctx, "g", 1, one.MemberID, ""); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("heartbeat with the old generation: %v", err)
	}
	d, err := c.Describe(ctx, []string{"g"})
	if err != nil || d[0].State != Stable || len(d[0].Members) != 2 {
		t.Fatalf("described %+v %v", d, err)
	}
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	// A static member gets its member id without the round trip.
	a, err := c.Join(ctx, joinRequest("g", "", "a", time.Minute))
	if err != nil || a.Err != nil || a.Generation != 1 {
		t.Fatalf("static join: %+v %v", a, err)
	}
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: a.MemberID, InstanceID: "a", Assignments: map[string][]byte{a.MemberID: []byte("a's")}})

	// A restart: the same instance joins without a member id.
	again, err := c.Join(ctx, joinRequest("g", "", "a", time.Minute))
	if err != nil || again.Err != nil || again.Generation != 1 || again.MemberID == a.MemberID || !again.SkipAssignment || again.Leader != again.MemberID {
		t.Fatalf("static rejoin: %+v %v", again, err)
	}
	if got := mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: again.MemberID, InstanceID: "a"}); string(got) != "a's" {
		t.Fatalf("assignment after the restart %q", got)
	}
	if err := c.Heartbeat(ctx, "g", 1, a.MemberID, "a"); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("the old member's heartbeat: %v", err)
	}
	if err := c.Heartbeat(ctx, "g", 1, again.MemberID, "a"); err != nil {
		t.Fatalf("the new member's heartbeat: %v", err)
	}
	errs, err := c.Leave(ctx, "g", []Leaver{{InstanceID: "a", MemberID: a.MemberID}, {InstanceID: "a"}})
	if err != nil || !errors.Is(errs[0], ErrFencedInstanceID) || errs[1] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	stays := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: stays.MemberID})
	// The short-lived member joins as before v4, without the member id
	// round trip (whose pending id would expire after its short session).
	shortJoin := joinRequest("g", "", "", 50*time.Millisecond)
	shortJoin.RequireKnownMemberID = false
	short := joinAsync(t, c, shortJoin)
	heartbeatUntilRebalance(t, c, 1, stays.MemberID)
	if r, err := c.Join(ctx, joinRequest("g", stays.MemberID, "", time.Minute)); err != nil || r.Generation != 2 {
		t.Fatalf("rejoin: %+v %v", r, err)
	}
	expiring := <-short
	// The short member never syncs nor heartbeats: its session ends and the
	// group rebalances without it.
	heartbeatUntilRebalance(t, c, 2, stays.MemberID)
	r, err := c.Join(ctx, joinRequest("g", stays.MemberID, "", time.Minute))
	if err != nil || r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("rejoin after the expiry: %+v %v", r, err)
	}
	if err := c.Heartbeat(ctx, "g", 3, expiring.MemberID, ""); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("expired member's heartbeat: %v", err)
	}
}

func TestCommitChecks(t *testing.T) {
	t.Parallel()
	node := newTestMeta(t, 2)
	c := newTestCoordinator(t, node, nil, nil)
	ctx := testContext(t)
	offsets := []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}, {Topic: "t", Partition: 9, Offset: 3, LeaderEpoch: -1}}
	errs, err := c.Commit(ctx, CommitRequest{Group: "g", Generation: -1, Offsets: offsets})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrUnknownPartition) {
		t.Fatalf("simple commit: %v %v", errs, err)
	}
	if got := c.FetchOffsets("g", []meta.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}); got[0].Offset != 3 || got[1].Offset != -1 {
		t.Fatalf("fetched %+v", got)
	}
	m := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	if _, err := c.Commit(ctx, CommitRequest{Group: "g", Generation: 1, MemberID: m.MemberID, Offsets: offsets[:1]}); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("commit before the sync: %v", err)
	}
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: m.MemberID})
	for _, tc := range []struct {
		req  CommitRequest
		want error
	}{
		{CommitRequest{Group: "g", Generation: -1}, ErrUnknownMember},
		{CommitRequest{Group: "g", Generation: 2, MemberID: m.MemberID}, ErrIllegalGeneration},
		{CommitRequest{Group: "g", Generation: 1, MemberID: "nobody"}, ErrUnknownMember},
		{CommitRequest{Group: "g", Generation: 1, MemberID: m.MemberID}, nil},
	} {
		tc.req.Offsets = offsets[:1]
		if _, err := c.Commit(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("commit %+v: %v, want %v", tc.req, err, tc.want)
		}
	}
	if err := c.DeleteGroup(ctx, "g"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete with a member: %v", err)
	}
}

func TestStalledPartition(t *testing.T) {
	t.Parallel()
	node := newTestMeta(t, 1)
	clock := &testClock{now: time.UnixMilli(time.Now().UnixMilli())}
	logs := &fakeLogs{hwm: map[int32]int64{0: 10}, timestamps: map[int32]int64{0: clock.Now().UnixMilli()}}
	c := newTestCoordinator(t, node, logs, clock.Now)
	ctx := testContext(t)
	m := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: m.MemberID})
	commit := func(offset int64) {
		t.Helper()
		req := CommitRequest{Group: "g", Generation: 1, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: offset, LeaderEpoch: -1}}}
		if errs, err := c.Commit(ctx, req); err != nil || errs[0] != nil {
			t.Fatalf("commit: %v %v", errs, err)
		}
	}
	lag := func() PartitionLag {
		t.Helper()
		l, err := c.Lag(ctx, "g")
		if err != nil || len(l) != 1 {
			t.Fatalf("lag: %+v %v", l, err)
		}
		return l[0]
	}
	commit(5)
	clock.advance(30 * time.Second)
	if l := lag(); l.Records != 5 || l.Age != 30*time.Second || l.Stalled {
		t.Fatalf("after 30 s: %+v", l)
	}
	// The member keeps committing the same offset: still stalled.
	commit(5)
	clock.advance(31 * time.Second)
	if l := lag(); !l.Stalled || l.StalledFor != 61*time.Second {
		t.Fatalf("after 61 s without progress: %+v", l)
	}
	commit(6)
	if l := lag(); l.Stalled || l.Records != 4 {
		t.Fatalf("after progress: %+v", l)
	}
	commit(10)
	clock.advance(time.Hour)
	if l := lag(); l.Stalled || l.Records != 0 || l.Age != 0 {
		t.Fatalf("caught up: %+v", l)
	}
}
