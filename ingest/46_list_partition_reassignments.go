package ingest

// ListPartitionReassignments: v0
//
// Behavior:
//   - Lists the partitions whose reassignment is in progress, with their
//     replicas (targets first, then those leaving), the replicas being
//     added and those being removed, from a linearizable read of the
//     metadata. Null topics list every such partition; named partitions
//     without a reassignment are left out, as Kafka does.
//   - A named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION for
//     the whole request, with a message naming it.
//
// Version notes:
//   - v0 is flexible.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(ctx context.Context, b *Broker, r *request, req *kmsg.ListPartitionReassignmentsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	st, err := b.meta.LinearizableState(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return replyWith(resp), nil
	}
	type wanted struct {
		topic      string
		partitions []int32 // nil: all
	}
	var topics []wanted
	if req.Topics == nil {
		for _, t := range st.Topics() {
			topics = append(topics, wanted{topic: t.Name})
		}
	}
	for _, rt := range req.Topics {
		if _, err := topicByName(st, rt.Topic); err != nil {
			resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
			return replyWith(resp), nil
		}
		topics = append(topics, wanted{rt.Topic, rt.Partitions})
	}
	for _, w := range topics {
		t := kmsg.NewListPartitionReassignmentsResponseTopic()
		t.Topic = w.topic
		for _, p := range st.Partitions(w.topic) {
			if !p.Reassigning() || (w.partitions != nil && !slices.Contains(w.partitions, p.Partition)) {
				continue
			}
			t.Partitions = append(t.Partitions, reassignmentOf(p))
		}
		if len(t.Partitions) > 0 {
			resp.Topics = append(resp.Topics, t)
		}
	}
	return replyWith(resp), nil
}

func reassignmentOf(p meta.Partition) kmsg.ListPartitionReassignmentsResponseTopicPartition {
	rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
	rp.Partition = p.Partition
	rp.Replicas = slices.Clone(p.Replicas)
	rp.AddingReplicas = append([]int32{}, p.AddingReplicas...)
	rp.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
	return rp
}
