package ingest

// AlterPartitionReassignments: v0-1
//
// Behavior:
//   - Each partition with replicas starts (or replaces) its reassignment
//     through the metadata group, as Kafka's controller does: the new
//     replicas join as followers and copy the hot tail from the leader's
//     local log start (what is below it stays in the bucket); once every
//     target is in the ISR the reassignment completes, the leader moves if
//     it is leaving, and the replicas that left delete their copy. Null
//     replicas cancel the partition's reassignment, restoring the replicas
//     it started from.
//   - The answer comes once the reassignment is started (or cancelled);
//     ListPartitionReassignments follows it.
//   - A target naming an unregistered or fenced broker, a broker twice, or
//     no broker is INVALID_REPLICA_ASSIGNMENT; cancelling where none is in
//     progress is NO_REASSIGNMENT_IN_PROGRESS; an unknown topic or
//     partition is UNKNOWN_TOPIC_OR_PARTITION; a partition named twice is
//     INVALID_REQUEST; a change that would leave no in-sync replica is
//     INELIGIBLE_REPLICA. Each error comes with a message.
//
// Version notes:
//   - v0 is flexible. v1 (KIP-860): AllowReplicationFactorChange; false
//     refuses a target whose length differs from the partition's
//     replication factor with INVALID_REPLICATION_FACTOR.

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(ctx context.Context, b *Broker, r *request, req *kmsg.AlterPartitionAssignmentsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !b.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	st, err := b.meta.LinearizableState(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return replyWith(resp), nil
	}
	seen := map[meta.TopicPartition]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[meta.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]++
		}
	}
	var wg sync.WaitGroup
	resp.Topics = make([]kmsg.AlterPartitionAssignmentsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		t := &resp.Topics[i]
		*t = kmsg.NewAlterPartitionAssignmentsResponseTopic()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			p := &t.Partitions[j]
			*p = kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			p.Partition = rp.Partition
			cmd, err := reassignment(st, rt.Topic, rp, req.Version >= 1 && !req.AllowReplicationFactorChange)
			if err == nil && seen[meta.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] > 1 {
				err = fmt.Errorf("%w: %s-%d named more than once", ErrInvalidRequest, rt.Topic, rp.Partition)
			}
			if err != nil {
				b.reassignmentAnswer(p, err)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.meta.Propose(ctx, cmd)
				b.reassignmentAnswer(p, err)
				if err == nil {
					b.log.Info("partition reassignment", "topic", cmd.Topic, "partition", cmd.Partition, "replicas", cmd.Replicas, "cancel", cmd.Replicas == nil)
				}
			}()
		}
	}
	wg.Wait()
	return replyWith(resp), nil
}

// reassignment is the command for one partition of the request, or why
// there is none.
func reassignment(st *meta.State, topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, keepFactor bool) (*meta.ReassignPartition, error) {
	t, err := topicByName(st, topic)
	if err != nil {
		return nil, err
	}
	p, ok := st.Partition(topic, rp.Partition)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", meta.ErrUnknownPartition, topic, rp.Partition)
	}
	if keepFactor && rp.Replicas != nil && len(rp.Replicas) != len(p.TargetReplicas()) {
		return nil, fmt.Errorf("%w: %d replicas for %s-%d, whose replication factor is %d, and the request does not allow a change",
			ErrInvalidReplicationFactor, len(rp.Replicas), topic, rp.Partition, len(p.TargetReplicas()))
	}
	return &meta.ReassignPartition{Topic: topic, TopicID: t.ID, Partition: rp.Partition, Replicas: rp.Replicas}, nil
}

func (b *Broker) reassignmentAnswer(p *kmsg.AlterPartitionAssignmentsResponseTopicPartition, err error) {
	if err == nil {
		return
	}
	p.ErrorCode, p.ErrorMessage = errorCode(err), errorMessage(err)
	b.metrics.partitionErrors.WithLabelValues("AlterPartitionReassignments", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
}
