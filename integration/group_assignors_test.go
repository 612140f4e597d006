package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEagerAssignors: franz-go groups using each eager client-side
// assignor, which the coordinator runs without knowing: round-robin and
// range over three members, sticky over two. Each assigns every partition
// to exactly one member, every member consumes, and every record is
// consumed exactly once across the group, before and after a member
// leaves. After the leave the leader assigned from what each member sent
// when it rejoined, not from an older join; with sticky, the member that
// stays keeps what it had: the eager protocol revokes everything and
// reassigns, and its new assignment is a superset of its old one.
//
// Sticky runs with two members because franz-go's eager sticky balancer
// forgets its partitions when it revokes them (kgo clears lastAssigned),
// so it rejoins with an empty current assignment and the leader has
// nothing to be sticky with: with three members the two that stay may
// swap partitions whatever the coordinator does. Cooperative-sticky, which
// does keep partitions, is TestCooperativeStickyGroup's.
func TestEagerAssignors(t *testing.T) {
	t.Parallel()
	s := groupServer(t)
	for _, tc := range []struct {
		protocol string
		balancer kgo.GroupBalancer
		members  int
		// sticky: the members that stay keep their partitions.
		sticky bool
	}{
		{"roundrobin", kgo.RoundRobinBalancer(), 3, false},
		{"range", kgo.RangeBalancer(), 3, false},
		{"sticky", kgo.StickyBalancer(), 2, true},
	} {
		// One after another: the machine is small and the cases share
		// the server.
		t.Run(tc.protocol, func(t *testing.T) {
			topic, group := "assign-"+tc.protocol, "assign-"+tc.protocol+"-group"
			const partitions = int32(6)
			createTopic(t, s, topic, partitions, nil)
			ch := newChanges()
			var (
				logs      []*memberLog
				consumers []*groupConsumer
			)
			for i := range tc.members {
				l := newMemberLog(fmt.Sprintf("m%d", i+1), ch)
				logs = append(logs, l)
				consumers = append(consumers, startConsumer(t, s, l, group, topic, kgo.Balancers(tc.balancer)))
			}
			ch.waitFor(t, 30*time.Second, balanced(partitions, logs...))
			checkDescribedAssignment(t, s, group, tc.protocol, partitions, tc.members)

			producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			want := produceAll(t, producer, topic, recordsToEvery(partitions, 5, "before"))
			ch.waitFor(t, 30*time.Second, consumedAll(want, logs...))
			checkConsumedOnce(t, want, logs...)
			for _, l := range logs {
				if !consumedAny(l, want) {
					t.Fatalf("%s consumed nothing", l.name)
				}
			}
			// Everything consumed is committed before the membership
			// changes, so nothing is delivered twice after it.
			waitCommittedAtEnd(t, s, group, topic)

			// The second member leaves; the others take its partitions.
			stay := slices.Delete(slices.Clone(logs), 1, 2)
			stayers := slices.Delete(slices.Clone(consumers), 1, 2)
			var ownedBefore [][]int32
			var generationBefore []int32
			for i, l := range stay {
				owned, _ := l.snapshot()
				ownedBefore = append(ownedBefore, owned)
				_, generation := stayers[i].client.GroupMetadata()
				generationBefore = append(generationBefore, generation)
			}
			consumers[1].stop()
			ch.waitFor(t, 30*time.Second, balanced(partitions, stay...))
			described := checkDescribedAssignment(t, s, group, tc.protocol, partitions, tc.members-1)
			for i, c := range stayers {
				// The metadata the leader assigned from is what the
				// member sent when it rejoined: it names the generation
				// the leave ended.
				memberID, _ := c.client.GroupMetadata()
				m, ok := described[memberID]
				if !ok {
					t.Fatalf("%s (%s) not among the members described", stay[i].name, memberID)
				}
				if md, ok := m.Join.AsConsumer(); !ok || md.Generation != generationBefore[i] {
					t.Fatalf("%s joined with metadata %+v, want generation %d", stay[i].name, md, generationBefore[i])
				}
			}
			if tc.sticky {
				for i, l := range stay {
					owned, events := l.snapshot()
					for _, p := range ownedBefore[i] {
						if !slices.Contains(owned, p) {
							t.Fatalf("%s owned %v before the leave and %v after: partition %d moved (events %+v)", l.name, ownedBefore[i], owned, p, events)
						}
					}
				}
			}

			after := produceAll(t, producer, topic, recordsToEvery(partitions, 5, "after"))
			ch.waitFor(t, 30*time.Second, consumedAll(after, stay...))
			// Once across the group, the member that left included, over
			// both rounds: the rebalance delivered nothing again.
			checkConsumedOnce(t, append(slices.Clone(want), after...), logs...)
			for _, l := range stay {
				if !consumedAny(l, after) {
					t.Fatalf("%s consumed nothing after the leave", l.name)
				}
			}
		})
	}
}

// recordsToEvery makes n records for each of partitions, for a manual
// partitioner.
func recordsToEvery(partitions int32, n int, what string) []*kgo.Record {
	var out []*kgo.Record
	for p := range partitions {
		for i := range n {
			out = append(out, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s %d-%d", what, p, i)})
		}
	}
	return out
}

// consumedAny reports whether the member consumed one of records.
func consumedAny(l *memberLog, records []testRecord) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range records {
		if l.consumed[[2]int64{int64(r.partition), r.offset}] > 0 {
			return true
		}
	}
	return false
}

// consumedAll checks that the members between them consumed every record
// of want.
func consumedAll(want []testRecord, members ...*memberLog) func() error {
	return func() error {
		for _, r := range want {
			key := [2]int64{int64(r.partition), r.offset}
			found := false
			for _, m := range members {
				m.mu.Lock()
				found = found || m.consumed[key] > 0
				m.mu.Unlock()
			}
			if !found {
				return fmt.Errorf("record %d@%d not consumed", r.partition, r.offset)
			}
		}
		return nil
	}
}

// checkConsumedOnce fails the test unless the members between them
// consumed each record of want once and nothing else.
func checkConsumedOnce(t *testing.T, want []testRecord, members ...*memberLog) {
	t.Helper()
	counts := map[[2]int64]int{}
	for _, m := range members {
		m.mu.Lock()
		for key, n := range m.consumed {
			counts[key] += n
		}
		m.mu.Unlock()
	}
	for _, r := range want {
		if n := counts[[2]int64{int64(r.partition), r.offset}]; n != 1 {
			t.Fatalf("record %d@%d consumed %d times", r.partition, r.offset, n)
		}
	}
	if len(counts) != len(want) {
		t.Fatalf("%d records consumed, %d produced", len(counts), len(want))
	}
}

// checkDescribedAssignment fails the test unless DescribeGroups shows the
// group Stable with members members on protocol, each partition assigned
// to exactly one of them: what the leader's assignor computed, as the
// coordinator stored and serves it. It returns the members by member id.
func checkDescribedAssignment(t *testing.T, s *server, group, protocol string, partitions int32, members int) map[string]kadm.DescribedGroupMember {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := kadm.NewClient(newClient(t, s)).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	g := described[group]
	if g.Err != nil || g.State != "Stable" || g.Protocol != protocol || len(g.Members) != members {
		t.Fatalf("group %s described as %v, %s, protocol %q, %d members: want Stable, %q, %d members", group, g.Err, g.State, g.Protocol, len(g.Members), protocol, members)
	}
	owner := map[int32]string{}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s has no consumer assignment", m.MemberID)
		}
		for _, topic := range a.Topics {
			for _, p := range topic.Partitions {
				if other, dup := owner[p]; dup {
					t.Fatalf("partition %d assigned to %s and %s", p, other, m.MemberID)
				}
				owner[p] = m.MemberID
			}
		}
	}
	if len(owner) != int(partitions) {
		t.Fatalf("%d of %d partitions assigned: %v", len(owner), partitions, owner)
	}
	out := map[string]kadm.DescribedGroupMember{}
	for _, m := range g.Members {
		out[m.MemberID] = m
	}
	return out
}

// TestUncommittedAssignmentDescribed: partitions assigned to a member that
// has committed nothing show in `strata group describe` with committed
// offset "-" and lag counted from the log start, so a member that consumes
// nothing is visible; they are not stalled.
func TestUncommittedAssignmentDescribed(t *testing.T) {
	t.Parallel()
	s := groupServer(t)
	const topic, group, partitions = "uncommitted", "uncommitted-group", int32(2)
	createTopic(t, s, topic, partitions, nil)
	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, producer, topic, recordsToEvery(1, 10, "old"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deleteBelow := kadm.Offsets{}
	deleteBelow.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3})
	if resp, err := kadm.NewClient(newClient(t, s)).DeleteRecords(ctx, deleteBelow); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}

	// The member consumes but does not commit within the test.
	ch := newChanges()
	l := newMemberLog("no commits", ch)
	startConsumer(t, s, l, group, topic, kgo.AutoCommitInterval(time.Hour))
	ch.waitFor(t, 30*time.Second, balanced(partitions, l))

	out, err := s.strata(ctx, "", "group", "describe", group, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var described []struct {
		State      string `json:"state"`
		Partitions []struct {
			Partition       int32  `json:"partition"`
			CommittedOffset int64  `json:"committed_offset"`
			HighWatermark   int64  `json:"high_watermark"`
			LagRecords      int64  `json:"lag_records"`
			Member          string `json:"member"`
			Stalled         bool   `json:"stalled"`
			Error           string `json:"error"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(out), &described); err != nil || len(described) != 1 || described[0].State != "Stable" || len(described[0].Partitions) != 2 {
		t.Fatalf("group describe --json: %v\n%s", err, out)
	}
	for _, p := range described[0].Partitions {
		wantEnd, wantLag := int64(0), int64(0)
		if p.Partition == 0 {
			wantEnd, wantLag = 10, 7
		}
		if p.CommittedOffset != -1 || p.HighWatermark != wantEnd || p.LagRecords != wantLag || p.Member == "" || p.Stalled || p.Error != "" {
			t.Fatalf("partition %+v: want committed -1, end %d, lag %d from the log start, a member", p, wantEnd, wantLag)
		}
	}
	table, err := s.strata(ctx, "", "group", "describe", group)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == topic && f[1] == "0" {
			found = true
			if f[2] != "-" || f[3] != "10" || f[4] != "7" {
				t.Fatalf("partition 0 printed as %q, want committed -, end 10, lag 7:\n%s", line, table)
			}
		}
	}
	if !found {
		t.Fatalf("no row for partition 0:\n%s", table)
	}
}
