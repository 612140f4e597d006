package ingest

import "fmt"

// maxReplicationFactor is the most replicas a partition may have. Until
// replication is built, a partition has one replica, its leader: a topic
// created with more would be acknowledged on the leader alone and lose
// every acknowledged record when that broker's disk does, while claiming
// redundancy it does not have. CreateTopics and CreatePartitions refuse
// more, with INVALID_REPLICATION_FACTOR; the replication work lifts this.
const maxReplicationFactor = 1

// checkReplicationFactor refuses a replication factor above
// maxReplicationFactor, saying why.
func checkReplicationFactor(factor int) error {
	if factor <= maxReplicationFactor {
		return nil
	}
	return fmt.Errorf("%w: replication factor %d: replication is not built yet, so strata serves one replica per partition; use a replication factor of 1 (the replication work lifts this limit)",
		ErrInvalidReplicationFactor, factor)
}

// checkAssignmentReplicas refuses an assignment with more than
// maxReplicationFactor replicas for any partition.
func checkAssignmentReplicas(assignment [][]int32) error {
	for i, replicas := range assignment {
		if err := checkReplicationFactor(len(replicas)); err != nil {
			return fmt.Errorf("partition %d of the assignment: %w", i, err)
		}
	}
	return nil
}
