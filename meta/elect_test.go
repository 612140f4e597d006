package meta

import (
	"errors"
	"slices"
	"testing"
)

// TestElectLeader: a preferred election moves leadership to the first
// replica when it is alive and in sync, and says why when it does not; an
// unclean one prefers a live ISR member and otherwise takes the first live
// replica with an ISR of itself.
func TestElectLeader(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), topicCmd("t", 1, 1, 2, 3))
	part := func() Partition { p, _ := h.f.current().Partition("t", 0); return p }
	preferred := &ElectLeader{Topic: "t", Partition: 0, Type: ElectPreferred}
	unclean := &ElectLeader{Topic: "t", Partition: 0, Type: ElectUnclean}

	if err := h.apply(preferred)[0]; !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("preferred election of a partition its preferred replica leads: %v", err)
	}
	h.mustApply(FenceBroker{ID: 1, Epoch: 1})
	if err := h.apply(preferred)[0]; !errors.Is(err, ErrPreferredLeaderDown) {
		t.Fatalf("preferred replica fenced: %v", err)
	}
	h.mustApply(brokerCmd(1)) // back, but not in the ISR until it catches up
	if err := h.apply(preferred)[0]; !errors.Is(err, ErrPreferredLeaderDown) {
		t.Fatalf("preferred replica out of the ISR: %v", err)
	}
	p := part()
	h.mustApply(&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: p.PartitionEpoch, Leader: p.Leader, ISR: []int32{2, 3, 1}})
	h.mustApply(preferred)
	if p := part(); p.Leader != 1 || p.LeaderEpoch != 2 || !slices.Equal(p.ISR, []int32{2, 3, 1}) || p.UncleanLeaderEpoch != 0 {
		t.Fatalf("after the preferred election: %+v", p)
	}
	if err := h.apply(unclean)[0]; !errors.Is(err, ErrElectionNotNeeded) {
		t.Fatalf("unclean election with a leader: %v", err)
	}

	// Every ISR member fenced but broker 3 (the last), then broker 3 too:
	// broker 1, alive, is elected uncleanly.
	h.mustApply(FenceBroker{ID: 1, Epoch: 4}, FenceBroker{ID: 2, Epoch: 2}, brokerCmd(1), FenceBroker{ID: 3, Epoch: 3})
	if p := part(); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("before the unclean election: %+v", p)
	}
	if !h.f.current().Unclean(*unclean) {
		t.Fatal("an election outside a fenced ISR is not reported unclean")
	}
	h.mustApply(unclean)
	elected := part()
	if elected.Leader != 1 || !slices.Equal(elected.ISR, []int32{1}) || elected.UncleanLeaderEpoch != elected.LeaderEpoch {
		t.Fatalf("after the unclean election: %+v, want broker 1 alone, its epoch recorded as unclean", elected)
	}
	// A clean election after it keeps the record of the unclean one.
	fence := func(id int32) FenceBroker {
		b, _ := h.f.current().Broker(id)
		return FenceBroker{ID: id, Epoch: b.Epoch}
	}
	h.mustApply(brokerCmd(2))
	h.mustApply(&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: elected.PartitionEpoch, Leader: 1, ISR: []int32{1, 2}})
	h.mustApply(fence(1))
	if p := part(); p.Leader != 2 || p.LeaderEpoch <= elected.LeaderEpoch || p.UncleanLeaderEpoch != elected.LeaderEpoch {
		t.Fatalf("after a clean election: %+v, want broker 2 leading, unclean epoch still %d", p, elected.LeaderEpoch)
	}
	h.mustApply(fence(2))
	if err := h.apply(unclean)[0]; !errors.Is(err, ErrNoEligibleLeader) {
		t.Fatalf("unclean election with no live replica: %v", err)
	}
}

// TestImbalancedLeaders: only brokers over the percentage get their
// partitions back, and only those where they are in sync.
func TestImbalancedLeaders(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3),
		topicCmd("a", 10, 1, 2), // broker 1 prefers 10
		topicCmd("b", 10, 2, 1), // broker 2 prefers 10
	)
	move := func(topic string, partition int32, leader int32) {
		p, _ := h.f.current().Partition(topic, partition)
		h.mustApply(&AlterPartition{Topic: topic, Partition: partition, PartitionEpoch: p.PartitionEpoch, Leader: leader, ISR: p.ISR})
	}
	move("a", 0, 2) // broker 1: 1 of 10 led elsewhere, 10%: not over
	if got := imbalancedLeaders(h.f.current(), 10); len(got) != 0 {
		t.Fatalf("at the percentage: %v", got)
	}
	move("a", 1, 2) // 20%
	move("b", 0, 1) // broker 2: 10%
	p, _ := h.f.current().Partition("a", 2)
	h.mustApply(&AlterPartition{Topic: "a", Partition: 2, PartitionEpoch: p.PartitionEpoch, Leader: 2, ISR: []int32{2}}) // 30%, one out of sync
	var got []string
	for _, p := range imbalancedLeaders(h.f.current(), 10) {
		got = append(got, p.Topic+"-"+string(rune('0'+p.Partition)))
	}
	if !slices.Equal(got, []string{"a-0", "a-1"}) {
		t.Fatalf("imbalanced: %v, want a-0 and a-1 (a-2's preferred replica is out of sync)", got)
	}
}

// TestDrainBroker: draining moves the broker's leaderships to other live
// ISR members, keeps preferred elections and new elections off it while
// another replica can lead, survives its re-registration, and ends with
// undrain.
func TestDrainBroker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), topicCmd("a", 1, 1, 2), topicCmd("b", 1, 1))
	part := func(topic string) Partition { p, _ := h.f.current().Partition(topic, 0); return p }
	if err := h.apply(&DrainBroker{ID: 9, Draining: true})[0]; !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("draining an unknown broker: %v", err)
	}
	h.mustApply(&DrainBroker{ID: 1, Draining: true})
	if p := part("a"); p.Leader != 2 || p.LeaderEpoch != 1 {
		t.Fatalf("a drained leader kept its partition: %+v", p)
	}
	if p := part("b"); p.Leader != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("the only replica must keep leading: %+v", p)
	}
	if err := h.apply(&ElectLeader{Topic: "a", Type: ElectPreferred})[0]; !errors.Is(err, ErrPreferredLeaderDown) {
		t.Fatalf("preferred election onto a draining broker: %v", err)
	}
	if got := imbalancedLeaders(h.f.current(), 0); len(got) != 0 {
		t.Fatalf("leader balancing would move leadership back onto a draining broker: %v", got)
	}
	h.mustApply(brokerCmd(1))
	if b, _ := h.f.current().Broker(1); !b.Draining {
		t.Fatal("a new incarnation forgot that its broker drains")
	}
	p := part("a") // the new incarnation caught up again
	h.mustApply(&AlterPartition{Topic: "a", PartitionEpoch: p.PartitionEpoch, Leader: 2, ISR: []int32{2, 1}}, FenceBroker{ID: 2, Epoch: 2})
	if p := part("a"); p.Leader != 1 {
		t.Fatalf("with no other replica left the draining broker must lead: %+v", p)
	}
	h.mustApply(brokerCmd(2), &DrainBroker{ID: 1, Draining: false})
	if b, _ := h.f.current().Broker(1); b.Draining {
		t.Fatal("undrain did not end draining")
	}
}

// TestUnregisterBroker: a fenced broker is unregistered, stays an offline
// replica of its partitions, cannot be unregistered twice, and is a
// broker again once it registers.
func TestUnregisterBroker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), topicCmd("t", 1, 1, 2), &DrainBroker{ID: 2, Draining: true}, FenceBroker{ID: 2, Epoch: 2}, &UnregisterBroker{ID: 2})
	b, _ := h.f.current().Broker(2)
	if !b.Unregistered || !b.Fenced || b.Draining {
		t.Fatalf("after unregistering: %+v", b)
	}
	if p, _ := h.f.current().Partition("t", 0); !slices.Equal(p.Replicas, []int32{1, 2}) {
		t.Fatalf("unregistering changed the replicas: %+v", p)
	}
	if err := h.apply(&UnregisterBroker{ID: 2})[0]; !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("unregistering twice: %v", err)
	}
	h.mustApply(brokerCmd(2))
	if b, _ := h.f.current().Broker(2); b.Unregistered || b.Fenced || b.Draining {
		t.Fatalf("registered again: %+v", b)
	}
}

// TestUncleanEpochClearedOnceTheISRIsFull: the record of an unclean
// election stays while a replica may still hold what it gave up, and goes
// once the ISR holds every replica (each has truncated to the new log to
// get there), so the state reads as a release without the field reads it.
func TestUncleanEpochClearedOnceTheISRIsFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), topicCmd("t", 1, 1, 2))
	part := func() Partition { p, _ := h.f.current().Partition("t", 0); return p }
	fence := func(id int32) FenceBroker {
		b, _ := h.f.current().Broker(id)
		return FenceBroker{ID: id, Epoch: b.Epoch}
	}
	h.mustApply(fence(2))
	h.mustApply(fence(1), brokerCmd(2)) // broker 1, alone in the ISR, gone; 2 is back
	h.mustApply(&ElectLeader{Topic: "t", Partition: 0, Type: ElectUnclean})
	if p := part(); p.Leader != 2 || p.UncleanLeaderEpoch != p.LeaderEpoch {
		t.Fatalf("after the unclean election: %+v", p)
	}
	h.mustApply(brokerCmd(1))
	p := part()
	h.mustApply(&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: p.PartitionEpoch, Leader: 2, ISR: []int32{2, 1}})
	if p := part(); p.UncleanLeaderEpoch != 0 || len(p.ISR) != 2 {
		t.Fatalf("with every replica in the ISR again: %+v, want the unclean epoch cleared", p)
	}
}
