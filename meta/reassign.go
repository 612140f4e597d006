package meta

import (
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Partition reassignment, Kafka's way (KIP-455): the new replicas are added
// to the replica list and catch up as followers; once every target replica
// is in the ISR the reassignment completes in the same command that put the
// last one there: the replica list becomes the target, the ISR keeps only
// targets, and the leader moves to the first target in the ISR if it is
// leaving. The replicas that left close their copy when they see it. A
// reassignment can be replaced by another or cancelled, which restores the
// replicas it started from.

func init() {
	registerCommand(cmdReassignPartition, "ReassignPartition", 1, (*ReassignPartition).apply)
}

// ReassignPartition starts, replaces or cancels (Replicas nil) the
// reassignment of one partition. Replicas must be registered, unfenced
// brokers without repeats (else ErrInvalidReplicaAssignment); cancelling a
// partition with no reassignment in progress is ErrNoReassignment. A
// change that would leave the partition no in-sync replica is
// ErrIneligibleReplica. Result.Epoch is the new partition epoch.
type ReassignPartition struct {
	Topic     string    `json:"topic"`
	TopicID   uuid.UUID `json:"topic_id"`
	Partition int32     `json:"partition"`
	Replicas  []int32   `json:"replicas"`
}

func (ReassignPartition) commandType() CommandType { return cmdReassignPartition }

func (c *ReassignPartition) apply(tx *txn) (int64, error) {
	p, err := lookupPartition(tx, c.Topic, c.TopicID, c.Partition)
	if err != nil {
		return 0, err
	}
	// What the partition had before any reassignment in progress.
	original := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	target := c.Replicas
	if target == nil {
		if !p.Reassigning() {
			return 0, fmt.Errorf("%w: %s-%d", ErrNoReassignment, c.Topic, c.Partition)
		}
		target = original
	} else if err := checkTarget(tx, target); err != nil {
		return 0, fmt.Errorf("%w (%s-%d)", err, c.Topic, c.Partition)
	}
	next := p.clone()
	next.AddingReplicas = without(target, original)
	next.RemovingReplicas = without(original, target)
	next.Replicas = append(slices.Clone(target), next.RemovingReplicas...)
	next.ISR = slices.DeleteFunc(next.ISR, func(r int32) bool { return !slices.Contains(next.Replicas, r) })
	if len(next.ISR) == 0 {
		return 0, fmt.Errorf("%w: no replica of %s-%d in the ISR %v would be left", ErrIneligibleReplica, c.Topic, c.Partition, p.ISR)
	}
	if !slices.Contains(next.Replicas, next.Leader) {
		next.Leader = electFrom(tx, next.Replicas, next.ISR)
	}
	completeReassignment(tx, &next)
	if next.Leader != p.Leader {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	tx.putPartition(&next)
	return int64(next.PartitionEpoch), nil
}

// checkTarget checks a reassignment's target replicas.
func checkTarget(tx *txn, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: no replicas", ErrInvalidReplicaAssignment)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, r)
		}
		b, ok := tx.broker(r)
		if !ok {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidReplicaAssignment, r)
		}
		if b.Fenced {
			return fmt.Errorf("%w: broker %d is fenced (not alive)", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// completeReassignment completes p's reassignment if every target replica
// is in its ISR: the replica list becomes the target and the ISR keeps only
// targets; a leader that is leaving hands over to the first target in the
// ISR. The caller bumps the epochs.
func completeReassignment(tx *txn, p *Partition) {
	if !p.Reassigning() {
		return
	}
	target := p.TargetReplicas()
	for _, r := range target {
		if !slices.Contains(p.ISR, r) {
			return
		}
	}
	p.Replicas = target
	p.ISR = slices.DeleteFunc(p.ISR, func(r int32) bool { return !slices.Contains(target, r) })
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	if !slices.Contains(target, p.Leader) {
		p.Leader = electFrom(tx, target, p.ISR)
	}
}

// electFrom returns the first of replicas that is in isr, not fenced and
// not draining; failing that the first in isr and not fenced; or NoLeader.
func electFrom(tx *txn, replicas, isr []int32) int32 {
	fallback := NoLeader
	for _, r := range replicas {
		if !slices.Contains(isr, r) {
			continue
		}
		b, ok := tx.broker(r)
		switch {
		case !ok || b.Fenced:
		case !b.Draining:
			return r
		case fallback == NoLeader:
			fallback = r
		}
	}
	return fallback
}

// without returns the members of a that are not in b, in a's order.
func without(a, b []int32) []int32 {
	var out []int32
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}
