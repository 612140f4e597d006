package group

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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

// withShortMember runs group g to generation 2 with two members: a
// leader with a minute's session, and a member whose session is 50 ms,
// whose join it returns with the leader's.
func withShortMember(t *testing.T, c *Coordinator) (leader, short JoinResult) {
	t.Helper()
	ctx := testContext(t)
	leader = joinNew(t, c, joinRequest("g", "", "", time.Minute))
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: leader.MemberID})
	// The short-lived member joins as before v4, without the member id
	// round trip (whose pending id would expire after its short session).
	shortJoin := joinRequest("g", "", "", 50*time.Millisecond)
	shortJoin.RequireKnownMemberID = false
	joined := joinAsync(t, c, shortJoin)
	heartbeatUntilRebalance(t, c, 1, leader.MemberID)
	if r, err := c.Join(ctx, joinRequest("g", leader.MemberID, "", time.Minute)); err != nil || r.Err != nil || r.Generation != 2 {
		t.Fatalf("leader's rejoin: %+v %v", r, err)
	}
	return leader, <-joined
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	stays, expiring := withShortMember(t, c)
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

// TestAMemberWaitingInSyncIsAlive: a follower waiting in its SyncGroup
// for a slow leader's assignment cannot heartbeat (a connection answers
// one request at a time), so, as one waiting in a join, it is alive
// however long the wait: its session ending there failed the sync with
// UNKNOWN_MEMBER_ID and rebalanced the group again, for ever with a
// leader slower than the follower's session.
func TestAMemberWaitingInSyncIsAlive(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	leader, follower := withShortMember(t, c)
	synced := make(chan SyncResult, 1)
	go func() {
		r, _ := c.Sync(ctx, SyncRequest{Group: "g", Generation: 2, MemberID: follower.MemberID})
		synced <- r
	}()
	// The leader assigns after ten of the follower's sessions.
	time.Sleep(500 * time.Millisecond)
	mustSync(t, c, SyncRequest{Group: "g", Generation: 2, MemberID: leader.MemberID,
		Assignments: map[string][]byte{leader.MemberID: []byte("half"), follower.MemberID: []byte("other half")}})
	if r := <-synced; r.Err != nil || string(r.Assignment) != "other half" {
		t.Fatalf("the follower's sync after a slow leader: %+v, want its assignment", r)
	}
}

// TestALeaderThatNeverSyncsIsRemoved: a leader that heartbeats but never
// sends its SyncGroup held the group in CompletingRebalance, its follower
// waiting in a sync, for ever. As in Kafka, a member that has not synced
// a rebalance timeout after the join phase ended is removed, and the
// group rebalances without it.
func TestALeaderThatNeverSyncsIsRemoved(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	join := func(member string) JoinRequest {
		r := joinRequest("g", member, "", time.Minute)
		r.RebalanceTimeout = time.Second
		return r
	}
	leader := joinNew(t, c, join(""))
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: leader.MemberID})
	followerJoin := join("")
	followerJoin.RequireKnownMemberID = false
	joined := joinAsync(t, c, followerJoin)
	heartbeatUntilRebalance(t, c, 1, leader.MemberID)
	if r, err := c.Join(ctx, join(leader.MemberID)); err != nil || r.Err != nil || r.Generation != 2 || r.Leader != leader.MemberID {
		t.Fatalf("leader's rejoin: %+v %v", r, err)
	}
	follower := <-joined
	synced := make(chan SyncResult, 1)
	go func() {
		r, _ := c.Sync(ctx, SyncRequest{Group: "g", Generation: 2, MemberID: follower.MemberID})
		synced <- r
	}()
	// The leader heartbeats and never syncs.
	var heartbeat error
	for heartbeat == nil {
		time.Sleep(20 * time.Millisecond)
		heartbeat = c.Heartbeat(ctx, "g", 2, leader.MemberID, "")
	}
	if !errors.Is(heartbeat, ErrUnknownMember) {
		t.Fatalf("the leader's heartbeat after it did not sync: %v, want UNKNOWN_MEMBER_ID", heartbeat)
	}
	if r := <-synced; !errors.Is(r.Err, ErrRebalanceInProgress) {
		t.Fatalf("the follower's sync: %+v, want REBALANCE_IN_PROGRESS", r)
	}
	r, err := c.Join(ctx, join(follower.MemberID))
	if err != nil || r.Err != nil || r.Generation != 3 || r.Leader != follower.MemberID || len(r.Members) != 1 {
		t.Fatalf("the follower's rejoin: %+v %v, want generation 3 led by it alone", r, err)
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
	// A partition named twice: the last one wins, as in Kafka, and both
	// are answered.
	twice := []meta.OffsetCommit{{Topic: "t", Partition: 1, Offset: 4, LeaderEpoch: -1}, {Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: -1}, {Topic: "t", Partition: 1, Offset: 6, LeaderEpoch: -1}}
	if errs, err := c.Commit(ctx, CommitRequest{Group: "g", Generation: -1, Offsets: twice}); err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("a commit naming a partition twice: %v %v", errs, err)
	}
	if got := c.FetchOffsets("g", []meta.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}); got[0].Offset != 5 || got[1].Offset != 6 {
		t.Fatalf("after a commit naming partition 1 twice: fetched %+v, want 5 and 6", got)
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

// TestShortLivedGroupsAreForgotten: groups that come and go, the way
// console consumers with random group ids do, leave nothing in memory
// once they are empty, while one live group stays. For those with
// committed offsets, DescribeGroups, ListGroups and OffsetFetch answer
// from the offsets what they answered while the group was in memory;
// those without are Dead, as unknown groups are.
func TestShortLivedGroupsAreForgotten(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 2), nil, nil)
	ctx := testContext(t)
	live := joinNew(t, c, joinRequest("live", "", "", time.Minute))
	mustSync(t, c, SyncRequest{Group: "live", Generation: 1, MemberID: live.MemberID})

	commit := func(g string, generation int32, member string, offset int64) {
		t.Helper()
		req := CommitRequest{Group: g, Generation: generation, MemberID: member, Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 1, Offset: offset, LeaderEpoch: -1}}}
		if errs, err := c.Commit(ctx, req); err != nil || errs[0] != nil {
			t.Fatalf("commit to %s: %v %v", g, errs, err)
		}
	}
	leave := func(g, member string) {
		t.Helper()
		if errs, err := c.Leave(ctx, g, []Leaver{{MemberID: member}}); err != nil || errs[0] != nil {
			t.Fatalf("leave %s: %v %v", g, errs, err)
		}
	}
	const rounds = 10
	committed := map[string]int64{}
	var uncommitted []string
	for i := range rounds {
		// A member joins, consumes, commits and leaves (kcat -G).
		g := fmt.Sprintf("console-%d", i)
		m := joinNew(t, c, joinRequest(g, "", "", time.Minute))
		mustSync(t, c, SyncRequest{Group: g, Generation: m.Generation, MemberID: m.MemberID})
		commit(g, m.Generation, m.MemberID, int64(i+1))
		leave(g, m.MemberID)
		committed[g] = int64(i + 1)

		// A member joins and leaves without committing.
		g = fmt.Sprintf("idle-%d", i)
		m = joinNew(t, c, joinRequest(g, "", "", time.Minute))
		mustSync(t, c, SyncRequest{Group: g, Generation: m.Generation, MemberID: m.MemberID})
		leave(g, m.MemberID)
		uncommitted = append(uncommitted, g)

		// An admin tool commits to a group nobody joins.
		g = fmt.Sprintf("admin-%d", i)
		commit(g, -1, "", int64(100+i))
		committed[g] = int64(100 + i)

		// Joins that fail validation.
		g = fmt.Sprintf("failed-%d", i)
		if r, err := c.Join(ctx, joinRequest(g, "nobody", "", time.Minute)); err != nil || !errors.Is(r.Err, ErrUnknownMember) {
			t.Fatalf("join with an unknown member id: %+v %v", r, err)
		}
		if r, err := c.Join(ctx, joinRequest(g, "nobody", "static", time.Minute)); err != nil || !errors.Is(r.Err, ErrUnknownMember) {
			t.Fatalf("static join with an unknown member id: %+v %v", r, err)
		}
		uncommitted = append(uncommitted, g)

		// A member id handed out and given back by LeaveGroup.
		g = fmt.Sprintf("pending-%d", i)
		first, err := c.Join(ctx, joinRequest(g, "", "", time.Minute))
		if err != nil || !errors.Is(first.Err, ErrMemberIDRequired) {
			t.Fatalf("first join: %+v %v", first, err)
		}
		leave(g, first.MemberID)
		uncommitted = append(uncommitted, g)

		// A member id handed out and never used, and a member that never
		// heartbeats: both expire.
		g = fmt.Sprintf("expired-%d", i)
		if first, err := c.Join(ctx, joinRequest(g, "", "", 20*time.Millisecond)); err != nil || !errors.Is(first.Err, ErrMemberIDRequired) {
			t.Fatalf("first join: %+v %v", first, err)
		}
		short := joinRequest(g, "", "", 20*time.Millisecond)
		short.RequireKnownMemberID = false
		if r, err := c.Join(ctx, short); err != nil || r.Err != nil {
			t.Fatalf("join: %+v %v", r, err)
		}
		uncommitted = append(uncommitted, g)
	}
	waitGroupsInMemory(t, c, 1)

	var ids []string
	for g := range committed {
		ids = append(ids, g)
	}
	ids = append(ids, uncommitted...)
	described, err := c.Describe(ctx, append(ids, "live"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range described {
		var want Description
		switch _, ok := committed[d.Group]; {
		case d.Group == "live":
			if d.State != Stable || len(d.Members) != 1 {
				t.Errorf("live group described as %+v", d)
			}
			continue
		case ok:
			want = Description{Group: d.Group, State: Empty, ProtocolType: "consumer"}
		default:
			want = Description{Group: d.Group, State: Dead}
		}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("described as %+v, want %+v", d, want)
		}
	}
	listed, err := c.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(committed)+1 {
		t.Errorf("listed %d groups, want %d: %+v", len(listed), len(committed)+1, listed)
	}
	for _, l := range listed {
		want := Listing{Group: l.Group, ProtocolType: "consumer", State: Empty}
		if l.Group == "live" {
			want.State = Stable
		} else if _, ok := committed[l.Group]; !ok {
			t.Errorf("listed %+v, which has no committed offsets", l)
		}
		if l != want {
			t.Errorf("listed %+v, want %+v", l, want)
		}
	}
	for g, offset := range committed {
		got := c.FetchOffsets(g, []meta.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}})
		if got[0].Offset != -1 || got[1].Offset != offset || got[1].LeaderEpoch != -1 {
			t.Errorf("%s fetched %+v, want partition 1 at %d", g, got, offset)
		}
	}
	if err := c.Heartbeat(ctx, "live", 1, live.MemberID, ""); err != nil {
		t.Fatalf("the live member's heartbeat: %v", err)
	}
}

// TestForgottenGroupRejoins: a group forgotten once empty comes back fresh
// on the next join, with its committed offsets; its old member is unknown,
// and deleting it deletes its offsets.
func TestForgottenGroupRejoins(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	ctx := testContext(t)
	old := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: old.MemberID})
	offsets := []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 7, LeaderEpoch: -1}}
	if errs, err := c.Commit(ctx, CommitRequest{Group: "g", Generation: 1, MemberID: old.MemberID, Offsets: offsets}); err != nil || errs[0] != nil {
		t.Fatalf("commit: %v %v", errs, err)
	}
	if errs, err := c.Leave(ctx, "g", []Leaver{{MemberID: old.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	if n := groupsInMemory(t, c); n != 0 {
		t.Fatalf("%d groups in memory after the last member left", n)
	}

	again := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	if again.Generation != 1 || again.Leader != again.MemberID || len(again.Members) != 1 {
		t.Fatalf("join of the forgotten group: %+v", again)
	}
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: again.MemberID})
	if err := c.Heartbeat(ctx, "g", 1, old.MemberID, ""); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("the old member's heartbeat: %v", err)
	}
	if got := c.FetchOffsets("g", []meta.TopicPartition{{Topic: "t", Partition: 0}}); got[0].Offset != 7 {
		t.Fatalf("fetched %+v after rejoining", got)
	}
	if errs, err := c.Leave(ctx, "g", []Leaver{{MemberID: again.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	if err := c.DeleteGroup(ctx, "g"); err != nil {
		t.Fatalf("delete the forgotten group: %v", err)
	}
	if err := c.DeleteGroup(ctx, "g"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("delete it again: %v", err)
	}
	if d, err := c.Describe(ctx, []string{"g"}); err != nil || d[0].State != Dead {
		t.Fatalf("described after the delete: %+v %v", d, err)
	}
}

// TestCommitBadOffsetFailsAlone: a negative offset or leader epoch fails
// its partition only; the others commit.
func TestCommitBadOffsetFailsAlone(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 3), nil, nil)
	ctx := testContext(t)
	offsets := []meta.OffsetCommit{
		{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 2},
		{Topic: "t", Partition: 1, Offset: -1, LeaderEpoch: -1},
		{Topic: "t", Partition: 2, Offset: 6, LeaderEpoch: -2},
	}
	errs, err := c.Commit(ctx, CommitRequest{Group: "g", Generation: -1, Offsets: offsets})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrInvalidOffset) || !errors.Is(errs[2], ErrInvalidOffset) {
		t.Fatalf("commit: %v %v", errs, err)
	}
	got := c.FetchOffsets("g", []meta.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}})
	if got[0].Offset != 5 || got[0].LeaderEpoch != 2 || got[1].Offset != -1 || got[2].Offset != -1 {
		t.Fatalf("fetched %+v", got)
	}
	// Nothing valid: nothing proposed, every partition answered.
	errs, err = c.Commit(ctx, CommitRequest{Group: "g", Generation: -1, Offsets: offsets[1:2]})
	if err != nil || len(errs) != 1 || !errors.Is(errs[0], ErrInvalidOffset) {
		t.Fatalf("commit of a negative offset alone: %v %v", errs, err)
	}
}

// TestAssignedPartitionWithoutCommitHasLag: a partition assigned to a
// member that the group never committed has a lag row, counted from the
// log start, so a member that consumes nothing shows; it is not reported
// stalled.
func TestAssignedPartitionWithoutCommitHasLag(t *testing.T) {
	t.Parallel()
	node := newTestMeta(t, 3)
	clock := &testClock{now: time.UnixMilli(time.Now().UnixMilli())}
	logs := &fakeLogs{
		hwm:        map[int32]int64{0: 10, 1: 20, 2: 30},
		logStart:   map[int32]int64{1: 4},
		timestamps: map[int32]int64{0: clock.Now().UnixMilli(), 1: clock.Now().Add(-30 * time.Second).UnixMilli()},
	}
	c := newTestCoordinator(t, node, logs, clock.Now)
	ctx := testContext(t)
	m := joinNew(t, c, joinRequest("g", "", "", time.Minute))
	assignment := kmsg.NewConsumerMemberAssignment()
	assigned := kmsg.NewConsumerMemberAssignmentTopic()
	assigned.Topic, assigned.Partitions = "t", []int32{1, 0}
	assignment.Topics = append(assignment.Topics, assigned)
	mustSync(t, c, SyncRequest{Group: "g", Generation: 1, MemberID: m.MemberID, Assignments: map[string][]byte{m.MemberID: assignment.AppendTo(nil)}})
	req := CommitRequest{Group: "g", Generation: 1, MemberID: m.MemberID, Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: -1}}}
	if errs, err := c.Commit(ctx, req); err != nil || errs[0] != nil {
		t.Fatalf("commit: %v %v", errs, err)
	}
	clock.advance(2 * time.Minute)
	lags, err := c.Lag(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := []PartitionLag{
		{Topic: "t", Partition: 0, CommittedOffset: 5, HighWatermark: 10, Records: 5, Age: 2 * time.Minute, Member: m.MemberID, Stalled: true, StalledFor: 2 * time.Minute},
		{Topic: "t", Partition: 1, CommittedOffset: -1, HighWatermark: 20, Records: 16, Age: 150 * time.Second, Member: m.MemberID},
	}
	if !reflect.DeepEqual(lags, want) {
		t.Fatalf("lag\n%+v\nwant\n%+v", lags, want)
	}
	// Once the member leaves, only the committed partition is left.
	if errs, err := c.Leave(ctx, "g", []Leaver{{MemberID: m.MemberID}}); err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", errs, err)
	}
	if lags, err := c.Lag(ctx, "g"); err != nil || len(lags) != 1 || lags[0].Partition != 0 || lags[0].Stalled {
		t.Fatalf("lag of the empty group: %+v %v", lags, err)
	}
}

// TestChooseCoordinatorMovesFewGroups: the choice does not depend on the
// order brokers are listed in, spreads groups evenly, and when a fourth
// broker joins only the groups it takes move, about a quarter of them;
// when one of four leaves, only its groups move.
func TestChooseCoordinatorMovesFewGroups(t *testing.T) {
	t.Parallel()
	const groups = 4000
	three, four := []int32{1, 2, 3}, []int32{4, 2, 3, 1}
	perBroker := map[int32]int{}
	moved, leftMoved := 0, 0
	for i := range groups {
		id := fmt.Sprintf("group-%d", i)
		before, after := ChooseCoordinator(id, three), ChooseCoordinator(id, four)
		if again := ChooseCoordinator(id, []int32{3, 1, 2}); again != before {
			t.Fatalf("%s: %d or %d depending on the order of the brokers", id, before, again)
		}
		perBroker[after]++
		if before != after {
			moved++
			if after != 4 {
				t.Fatalf("%s moved from %d to %d when broker 4 joined: only the newcomer may take groups", id, before, after)
			}
		}
		if without2 := ChooseCoordinator(id, []int32{1, 3, 4}); without2 != after && after != 2 {
			leftMoved++
		}
	}
	if moved < groups/4-groups/20 || moved > groups/4+groups/20 {
		t.Errorf("%d of %d groups moved when a fourth broker joined, want about a quarter", moved, groups)
	}
	if leftMoved != 0 {
		t.Errorf("%d groups of other brokers moved when broker 2 left", leftMoved)
	}
	for b, n := range perBroker {
		if n < groups/4-groups/20 || n > groups/4+groups/20 {
			t.Errorf("broker %d coordinates %d of %d groups, want about a quarter: %v", b, n, groups, perBroker)
		}
	}
}

// failingOffsets is the metadata group failing every proposal with err.
type failingOffsets struct {
	*meta.Node
	err error
}

func (f failingOffsets) Propose(context.Context, meta.Command) (meta.Result, error) {
	return meta.Result{}, f.err
}

// TestACommitTheMetadataGroupFailsIsAnsweredAsKafkaDoes: a commit the
// metadata group does not take is answered with the codes Kafka's
// coordinator gives, which clients handle: COORDINATOR_NOT_AVAILABLE
// without a leader (they find the coordinator again and retry),
// REQUEST_TIMED_OUT when it was not confirmed in time. They were the
// metadata group's own errors, NOT_CONTROLLER (a timeout without a
// leader wraps both) and UNKNOWN_SERVER_ERROR, which clients fail on.
func TestACommitTheMetadataGroupFailsIsAnsweredAsKafkaDoes(t *testing.T) {
	t.Parallel()
	node := newTestMeta(t, 1)
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fmt.Errorf("%w: waiting: %w", meta.ErrNoLeader, context.DeadlineExceeded), ErrCommitTimedOut},
		{meta.ErrOutcomeUnknown, ErrCommitTimedOut},
		{meta.ErrNoLeader, ErrOffsetsUnavailable},
		{meta.ErrClosed, ErrOffsetsUnavailable},
		{meta.ErrStopped, ErrOffsetsUnavailable},
	} {
		c, err := New(DefaultConfig(), Deps{Offsets: failingOffsets{node, tc.err}, Logs: &fakeLogs{}})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := c.Commit(testContext(t), CommitRequest{Group: "g", Generation: -1,
			Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}})
		c.Close()
		if err != nil || !errors.Is(errs[0], tc.want) || errors.Is(errs[0], meta.ErrNoLeader) {
			t.Errorf("the metadata group failing with %v: %v, %v; want %v alone", tc.err, errs, err, tc.want)
		}
	}
}

// TestAMemberCommitToAGroupNotHeldHereIsAnIllegalGeneration: membership
// lives in the coordinator's memory, so after the coordinator moves a
// member's next commit names a group the new one does not hold. Kafka
// answers ILLEGAL_GENERATION (the member rejoins, keeping its id); it was
// UNKNOWN_MEMBER_ID, which has clients drop their member id.
func TestAMemberCommitToAGroupNotHeldHereIsAnIllegalGeneration(t *testing.T) {
	t.Parallel()
	c := newTestCoordinator(t, newTestMeta(t, 1), nil, nil)
	_, err := c.Commit(testContext(t), CommitRequest{Group: "moved", Generation: 4, MemberID: "consumer-1-abc",
		Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}})
	if !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("a member's commit to a group not held here: %v, want ILLEGAL_GENERATION", err)
	}
	// Without a generation it is a simple commit, member id or not, as in
	// Kafka.
	errs, err := c.Commit(testContext(t), CommitRequest{Group: "moved", Generation: -1, MemberID: "consumer-1-abc",
		Offsets: []meta.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("a commit with generation -1 and a member id to a group not held here: %v %v, want it taken", errs, err)
	}
}
