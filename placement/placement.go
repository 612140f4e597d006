// Package placement decides which brokers hold a partition's replicas and
// which of them is preferred as leader: for new partitions (topic
// creation, partition increases) and for plans that move existing ones
// (`strata partition reassign --generate`, `strata cluster rebalance`,
// `strata broker drain`). It only computes; the caller proposes.
//
// Both spread replicas evenly over the brokers given, then over racks
// (availability zones) within each partition, and spread preferred
// leaders evenly. Balance also moves as few replicas as it can: a replica
// stays where it is unless its broker is not among those given or holds
// more than its share, which is what lets a broker join or leave by
// copying its share of hot tails and nothing more.
package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// Broker is a broker replicas may be placed on.
type Broker struct {
	ID   int32
	Rack string // "" when the broker has none
}

// Partition names a partition.
type Partition struct {
	Topic string
	Index int32
}

// Compare orders partitions by topic, then index.
func (p Partition) Compare(q Partition) int {
	return cmp.Or(cmp.Compare(p.Topic, q.Topic), cmp.Compare(p.Index, q.Index))
}

// spread is the count of replicas and preferred leaders per broker while a
// placement is built.
type spread struct {
	brokers  []Broker
	rack     map[int32]string
	replicas map[int32]int
	leaders  map[int32]int
}

func newSpread(brokers []Broker) *spread {
	s := &spread{brokers: slices.Clone(brokers), rack: map[int32]string{}, replicas: map[int32]int{}, leaders: map[int32]int{}}
	slices.SortFunc(s.brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	for _, b := range s.brokers {
		s.rack[b.ID] = b.Rack
		s.replicas[b.ID] = 0
	}
	return s
}

func (s *spread) has(id int32) bool { _, ok := s.rack[id]; return ok }

// racksOf is the racks the replicas hold, with a count each.
func (s *spread) racksOf(replicas []int32) map[string]int {
	racks := map[string]int{}
	for _, r := range replicas {
		racks[s.rack[r]]++
	}
	return racks
}

// pick returns the broker to add to replicas: not already in it, on a
// rack it does not use if there is one, then the least loaded, then the
// lowest id.
func (s *spread) pick(replicas []int32) int32 {
	racks := s.racksOf(replicas)
	best, bestKey := int32(-1), [3]int{}
	for _, b := range s.brokers {
		if slices.Contains(replicas, b.ID) {
			continue
		}
		key := [3]int{racks[b.Rack], s.replicas[b.ID], int(b.ID)}
		if best < 0 || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = b.ID, key
		}
	}
	return best
}

// fill adds brokers to replicas until it has factor of them.
func (s *spread) fill(replicas []int32, factor int) []int32 {
	for len(replicas) < factor {
		b := s.pick(replicas)
		replicas = append(replicas, b)
		s.replicas[b]++
	}
	return replicas
}

// Place returns the replica lists of count new partitions of factor
// replicas on brokers, each list's first replica being its preferred
// leader. load is what the brokers already hold (replicas and preferred
// leaderships per broker), so new partitions go first to the brokers that
// hold least: a newly added broker takes them until it has its share.
func Place(brokers []Broker, count, factor int, replicas, leaders map[int32]int) ([][]int32, error) {
	if factor < 1 || factor > len(brokers) {
		return nil, fmt.Errorf("placement: %d replicas on %d brokers", factor, len(brokers))
	}
	s := newSpread(brokers)
	for id := range s.rack {
		s.replicas[id], s.leaders[id] = replicas[id], leaders[id]
	}
	keys := make([]Partition, count)
	next := make(map[Partition][]int32, count)
	for i := range keys {
		keys[i] = Partition{Index: int32(i)}
		next[keys[i]] = s.fill(nil, factor)
	}
	s.spreadLeaders(keys, nil, next)
	out := make([][]int32, count)
	for i, k := range keys {
		out[i] = next[k]
	}
	return out, nil
}

// Balance returns, for each partition of current (its replicas, the
// preferred leader first), the replicas it should have on brokers, as
// many as it has now. Replicas on brokers not given move; then, while one
// broker holds two or more replicas more than another, one replica moves
// from the first to the second; then preferred leaders are spread the same
// way, among each partition's replicas.
// It fails if a partition has more replicas than there are brokers.
func Balance(current map[Partition][]int32, brokers []Broker) (map[Partition][]int32, error) {
	s := newSpread(brokers)
	keys := make([]Partition, 0, len(current))
	for k := range current {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, Partition.Compare)
	next := make(map[Partition][]int32, len(current))
	for _, k := range keys {
		if len(current[k]) > len(brokers) {
			return nil, fmt.Errorf("placement: %s-%d has %d replicas, more than the %d brokers", k.Topic, k.Index, len(current[k]), len(brokers))
		}
		var kept []int32
		for _, r := range current[k] {
			if s.has(r) && !slices.Contains(kept, r) {
				kept = append(kept, r)
				s.replicas[r]++
			}
		}
		next[k] = kept
	}
	for _, k := range keys {
		next[k] = s.fill(next[k], len(current[k]))
	}
	for s.moveOne(keys, next) {
	}
	s.spreadLeaders(keys, current, next)
	return next, nil
}

// moveOne moves one replica from the most loaded broker to a less loaded
// one when their loads differ by two or more, preferring a partition the
// move does not leave with two replicas on one rack. It reports whether
// it moved one.
func (s *spread) moveOne(keys []Partition, next map[Partition][]int32) bool {
	byLoad := slices.Clone(s.brokers)
	slices.SortStableFunc(byLoad, func(a, b Broker) int { return cmp.Compare(s.replicas[a.ID], s.replicas[b.ID]) })
	from := byLoad[len(byLoad)-1].ID
	for _, to := range byLoad {
		if s.replicas[from]-s.replicas[to.ID] < 2 {
			return false
		}
		for _, rackSafe := range []bool{true, false} {
			for _, k := range keys {
				replicas := next[k]
				i := slices.Index(replicas, from)
				if i < 0 || slices.Contains(replicas, to.ID) {
					continue
				}
				if rackSafe {
					racks := s.racksOf(replicas)
					racks[s.rack[from]]--
					if racks[to.Rack] > 0 {
						continue
					}
				}
				replicas[i] = to.ID
				s.replicas[from]--
				s.replicas[to.ID]++
				return true
			}
		}
	}
	return false
}

// spreadLeaders orders each partition's replicas so preferred leaders are
// spread: each partition starts with its current preferred leader (or, if
// that broker no longer holds it, the member preferred least so far), then
// while a partition's preferred leader has two or more preferred
// leaderships more than another of its replicas, that one takes it. The
// result is a fixed point: balancing it again changes nothing.
func (s *spread) spreadLeaders(keys []Partition, current, next map[Partition][]int32) {
	leader := make(map[Partition]int32, len(keys))
	for _, k := range keys {
		replicas := next[k]
		if len(replicas) == 0 {
			continue
		}
		l := replicas[0]
		if len(current[k]) > 0 && slices.Contains(replicas, current[k][0]) {
			l = current[k][0]
		} else {
			for _, r := range replicas {
				if c, lc := s.leaders[r], s.leaders[l]; c < lc || (c == lc && r < l) {
					l = r
				}
			}
		}
		leader[k] = l
		s.leaders[l]++
	}
	for s.moveLeader(keys, leader, next) {
	}
	for k, l := range leader {
		replicas := next[k]
		i := slices.Index(replicas, l)
		copy(replicas[1:i+1], replicas[:i])
		replicas[0] = l
	}
}

// moveLeader moves one preferred leadership from the broker with the most
// to another replica of the same partition with two or fewer less, and
// reports whether it moved one.
func (s *spread) moveLeader(keys []Partition, leader map[Partition]int32, next map[Partition][]int32) bool {
	byLeaders := slices.Clone(s.brokers)
	slices.SortStableFunc(byLeaders, func(a, b Broker) int { return cmp.Compare(s.leaders[b.ID], s.leaders[a.ID]) })
	for _, from := range byLeaders {
		for _, k := range keys {
			if l, ok := leader[k]; !ok || l != from.ID {
				continue
			}
			for _, r := range next[k] {
				if s.leaders[r] <= s.leaders[from.ID]-2 {
					leader[k] = r
					s.leaders[from.ID]--
					s.leaders[r]++
					return true
				}
			}
		}
	}
	return false
}
