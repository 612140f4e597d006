package placement

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func drawBrokers(t *rapid.T, label string) []Broker {
	n := rapid.IntRange(1, 9).Draw(t, label)
	racks := rapid.IntRange(0, 3).Draw(t, label+" racks")
	ids := rapid.Permutation([]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}).Draw(t, label+" ids")[:n]
	out := make([]Broker, n)
	for i, id := range ids {
		out[i].ID = id
		if racks > 0 {
			out[i].Rack = fmt.Sprintf("az%d", int(id)%racks)
		}
	}
	return out
}

func loads(assignment map[Partition][]int32, brokers []Broker) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, b := range brokers {
		replicas[b.ID], leaders[b.ID] = 0, 0
	}
	for _, r := range assignment {
		for _, b := range r {
			replicas[b]++
		}
		leaders[r[0]]++
	}
	return replicas, leaders
}

func spreadOf(counts map[int32]int) int {
	values := slices.Collect(maps.Values(counts))
	return slices.Max(values) - slices.Min(values)
}

func checkValid(t *rapid.T, what string, replicas []int32, factor int, brokers []Broker) {
	if len(replicas) != factor {
		t.Fatalf("%s: %v has %d replicas, want %d", what, replicas, len(replicas), factor)
	}
	for i, r := range replicas {
		if slices.Contains(replicas[:i], r) {
			t.Fatalf("%s: %v lists %d twice", what, replicas, r)
		}
		if !slices.ContainsFunc(brokers, func(b Broker) bool { return b.ID == r }) {
			t.Fatalf("%s: %v uses %d, not one of %v", what, replicas, r, brokers)
		}
	}
}

// TestBalance: every partition keeps its replica count on the brokers
// given, without repeats; replica counts per broker differ by at most
// one; a partition whose replicas were already on the brokers of a
// balanced assignment does not move; and where every broker holds every
// partition, preferred leaders differ by at most one.
func TestBalance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before := drawBrokers(t, "brokers before")
		after := drawBrokers(t, "brokers after")
		factor := rapid.IntRange(1, min(len(before), len(after))).Draw(t, "factor")
		partitions := rapid.IntRange(1, 40).Draw(t, "partitions")
		initial, err := Place(before, partitions, factor, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		current := map[Partition][]int32{}
		for i, r := range initial {
			current[Partition{"t", int32(i)}] = r
		}
		next, err := Balance(current, after)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range next {
			checkValid(t, fmt.Sprint(k), r, factor, after)
		}
		replicas, leaders := loads(next, after)
		if spreadOf(replicas) > 1 {
			t.Fatalf("replica counts %v differ by more than one", replicas)
		}
		if factor == len(after) && spreadOf(leaders) > 1 {
			t.Fatalf("preferred leaders %v differ by more than one with every broker in every partition", leaders)
		}
		again, err := Balance(next, after)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range next {
			if !slices.Equal(again[k], r) {
				t.Fatalf("balancing a balanced assignment moved %v from %v to %v", k, r, again[k])
			}
		}
	})
}

// TestPlace: each new partition uses as many racks as it can and, without
// racks, replicas and preferred leaders spread evenly.
func TestPlace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		brokers := drawBrokers(t, "brokers")
		factor := rapid.IntRange(1, len(brokers)).Draw(t, "factor")
		count := rapid.IntRange(1, 40).Draw(t, "partitions")
		out, err := Place(brokers, count, factor, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		racks := map[string]bool{}
		for _, b := range brokers {
			racks[b.Rack] = true
		}
		assignment := map[Partition][]int32{}
		for i, r := range out {
			checkValid(t, fmt.Sprint(i), r, factor, brokers)
			used := map[string]bool{}
			for _, id := range r {
				used[brokers[slices.IndexFunc(brokers, func(b Broker) bool { return b.ID == id })].Rack] = true
			}
			if len(used) != min(factor, len(racks)) {
				t.Fatalf("partition %d on %v uses %d racks of %d", i, r, len(used), len(racks))
			}
			assignment[Partition{"t", int32(i)}] = r
		}
		// Racks come first: one broker alone in its rack is in every
		// partition's replicas. Without racks, the spread is even.
		if replicas, leaders := loads(assignment, brokers); len(racks) == 1 && (spreadOf(replicas) > 1 || spreadOf(leaders) > 1) {
			t.Fatalf("replicas %v, leaders %v: not even", replicas, leaders)
		}
	})
}

// TestBalanceMovesOnlyTheNewBrokersShare: three brokers holding twelve
// partitions of three replicas, and a fourth added empty: it takes nine
// replicas (its share) and nothing else moves; a broker drained (left
// out) has its replicas moved and no other.
func TestBalanceMovesOnlyTheNewBrokersShare(t *testing.T) {
	three := []Broker{{ID: 1}, {ID: 2}, {ID: 3}}
	initial, err := Place(three, 12, 3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	current := map[Partition][]int32{}
	for i, r := range initial {
		current[Partition{"t", int32(i)}] = r
	}
	moved := func(next map[Partition][]int32) (n int) {
		for k, r := range next {
			for _, b := range r {
				if !slices.Contains(current[k], b) {
					n++
				}
			}
		}
		return n
	}
	next, err := Balance(current, append(slices.Clone(three), Broker{ID: 4}))
	if err != nil {
		t.Fatal(err)
	}
	if n := moved(next); n != 9 {
		t.Fatalf("%d replicas moved to add a fourth broker, want its share of 9", n)
	}
	next, err = Balance(next, []Broker{{ID: 1}, {ID: 2}, {ID: 4}})
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range next {
		if slices.Contains(r, 3) {
			t.Fatalf("%v still on the drained broker 3: %v", k, r)
		}
	}
}
