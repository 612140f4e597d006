package meta

import (
	"errors"
	"slices"
	"testing"
)

// TestReassignmentAddsCatchesUpAndRemoves walks one partition through
// Kafka's reassignment: the targets join the replica list, the leader's
// ISR expansion that admits the last target completes it in the same
// command, the leaving leader hands over, and the epochs move as a
// follower expects.
func TestReassignmentAddsCatchesUpAndRemoves(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), brokerCmd(4), topicCmd("t", 1, 1, 2))
	part := func() Partition { p, _ := h.f.current().Partition("t", 0); return p }

	h.mustApply(&ReassignPartition{Topic: "t", Partition: 0, Replicas: []int32{3, 4}})
	p := part()
	if !slices.Equal(p.Replicas, []int32{3, 4, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{3, 4}) ||
		!slices.Equal(p.RemovingReplicas, []int32{1, 2}) || p.Leader != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
		t.Fatalf("started: %+v", p)
	}
	if !p.Reassigning() || !slices.Equal(p.TargetReplicas(), []int32{3, 4}) {
		t.Fatalf("started: reassigning %v, target %v", p.Reassigning(), p.TargetReplicas())
	}
	// The first target catches up: still in progress.
	h.mustApply(&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: 1, Leader: 1, ISR: []int32{1, 2, 3}})
	if p := part(); !p.Reassigning() || p.Leader != 1 {
		t.Fatalf("one target in the ISR: %+v", p)
	}
	// The second one completes it and moves the leadership to broker 3.
	h.mustApply(&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: 2, Leader: 1, ISR: []int32{1, 2, 3, 4}})
	p = part()
	if p.Reassigning() || !slices.Equal(p.Replicas, []int32{3, 4}) || !slices.Equal(p.ISR, []int32{3, 4}) ||
		p.Leader != 3 || p.LeaderEpoch != 1 || p.PartitionEpoch != 3 {
		t.Fatalf("completed: %+v", p)
	}
	if err := h.apply(&ReassignPartition{Topic: "t", Partition: 0})[0]; !errors.Is(err, ErrNoReassignment) {
		t.Fatalf("cancel after completion: %v", err)
	}
}

// TestReassignmentWithinTheISRCompletesAtOnce: reordering or shrinking to
// replicas already in sync needs no catch-up.
func TestReassignmentWithinTheISRCompletesAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), topicCmd("t", 1, 1, 2, 3))
	h.mustApply(&ReassignPartition{Topic: "t", Partition: 0, Replicas: []int32{2, 3}})
	p, _ := h.f.current().Partition("t", 0)
	if p.Reassigning() || !slices.Equal(p.Replicas, []int32{2, 3}) || !slices.Equal(p.ISR, []int32{2, 3}) ||
		p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("%+v", p)
	}
}

// TestReassignmentCancelRestoresTheOriginalReplicas: cancelling drops the
// added replicas from the replica list and the ISR, and a replacement
// reassignment is computed from the original replicas, not the union.
func TestReassignmentCancelRestoresTheOriginalReplicas(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), brokerCmd(4), topicCmd("t", 1, 1, 2))
	part := func() Partition { p, _ := h.f.current().Partition("t", 0); return p }
	h.mustApply(&ReassignPartition{Topic: "t", Partition: 0, Replicas: []int32{1, 3}},
		&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: 1, Leader: 1, ISR: []int32{1}})
	// Replaced before broker 3 caught up: broker 4 instead.
	h.mustApply(&ReassignPartition{Topic: "t", Partition: 0, Replicas: []int32{4, 1}})
	if p := part(); !slices.Equal(p.Replicas, []int32{4, 1, 2}) || !slices.Equal(p.AddingReplicas, []int32{4}) ||
		!slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("replaced: %+v", p)
	}
	h.mustApply(&ReassignPartition{Topic: "t", Partition: 0})
	if p := part(); p.Reassigning() || !slices.Equal(p.Replicas, []int32{1, 2}) || !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 {
		t.Fatalf("cancelled: %+v", p)
	}
}

// TestReassignmentCancelNeedsAnOriginalReplicaInSync: once only added
// replicas are in sync, cancelling would leave the partition without an
// in-sync replica, so it is refused and the reassignment goes on.
func TestReassignmentCancelNeedsAnOriginalReplicaInSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), brokerCmd(3), brokerCmd(4), topicCmd("t", 1, 1, 2),
		&ReassignPartition{Topic: "t", Partition: 0, Replicas: []int32{3, 4}},
		&AlterPartition{Topic: "t", Partition: 0, PartitionEpoch: 1, Leader: 1, ISR: []int32{1, 3}},
		FenceBroker{ID: 1, Epoch: 1})
	if p, _ := h.f.current().Partition("t", 0); p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
		t.Fatalf("after fencing the old leader: %+v", p)
	}
	if err := h.apply(&ReassignPartition{Topic: "t", Partition: 0})[0]; !errors.Is(err, ErrIneligibleReplica) {
		t.Fatalf("cancel with only added replicas in sync: %v", err)
	}
}
