package ingest

// CreatePartitions: v0-3
//
// Behavior:
//   - Each topic grows to Count partitions through the metadata group; the
//     answer comes once this broker has opened the new partitions it leads.
//   - Without an assignment the new partitions get the topic's replication
//     factor, placed on the live brokers as CreateTopics places them. An assignment gives
//     one replica list per new partition, each as long as the topic's
//     replication factor, on registered brokers, not all fenced.
//   - Count not above the current count is INVALID_PARTITIONS; an unknown
//     topic is UNKNOWN_TOPIC_OR_PARTITION; a bad assignment is
//     INVALID_REPLICA_ASSIGNMENT; a topic named twice in one request is
//     INVALID_REQUEST for each. Every error comes with a message.
//   - New partitions get the topic's replication factor (that of partition
//     0); more than the live brokers is INVALID_REPLICATION_FACTOR. An
//     increase that would take any broker past max.broker.partitions is
//     POLICY_VIOLATION, as CreateTopics answers.
//   - Counts are checked against a linearizable read of the metadata, so a
//     broker whose copy lags neither refuses a valid count nor places the
//     wrong number of partitions.
//   - ValidateOnly checks everything as the metadata group would and answers
//     as if done, but changes nothing.
//
// Version notes:
//   - v0-1 differ only in throttling behaviour. v2: flexible. v3: same as v2.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 3, handleCreatePartitions) }

func handleCreatePartitions(ctx context.Context, b *Broker, r *request, req *kmsg.CreatePartitionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, rt := range req.Topics {
		t := kmsg.NewCreatePartitionsResponseTopic()
		t.Topic = rt.Topic
		var err error
		switch {
		case seen[rt.Topic] > 1:
			err = fmt.Errorf("%w: topic %q named more than once", ErrInvalidRequest, rt.Topic)
		case !b.authorize(r, acl.OpAlter, acl.Topic, rt.Topic):
			err = ErrTopicAuthorization
		default:
			var assignment [][]int32
			if rt.Assignment != nil { // null: the broker places them
				assignment = make([][]int32, len(rt.Assignment))
				for i, a := range rt.Assignment {
					assignment[i] = a.Replicas
				}
			}
			err = b.createPartitions(ctx, rt.Topic, rt.Count, assignment, req.ValidateOnly)
		}
		if err != nil {
			t.ErrorCode = errorCode(err)
			t.ErrorMessage = errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("CreatePartitions", kerr.ErrorForCode(t.ErrorCode).Error()).Inc()
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}

// createPartitions grows topic name to count partitions, with assignment
// as the new partitions' replicas or, when nil, the default placement.
// Unless validateOnly, it proposes the change and waits (up to
// topicOpenWait) until this broker has opened the new partitions it leads.
func (b *Broker) createPartitions(ctx context.Context, name string, count int32, assignment [][]int32, validateOnly bool) error {
	st, err := b.meta.LinearizableState(ctx)
	if err != nil {
		return err
	}
	topic, err := topicByName(st, name)
	if err != nil {
		return err
	}
	// A count that is no increase, or too large, is left for the metadata
	// group to refuse with its own message.
	if assignment == nil && count > topic.Partitions && count <= maxTopicPartitions {
		first, _ := st.Partition(name, 0)
		assignment, err = b.assignReplicas(st, count-topic.Partitions, int16(len(first.TargetReplicas())))
		if err != nil {
			return err
		}
	}
	if err := b.checkPartitionLimit(st, assignment); err != nil {
		return err
	}
	cmd := &meta.CreatePartitions{Topic: name, TopicID: topic.ID, Count: count, Replicas: assignment}
	if validateOnly {
		return st.Check(cmd)
	}
	result, err := b.meta.Propose(ctx, cmd)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, topicOpenWait)
	defer cancel()
	b.partitions.WaitReconciled(waitCtx, result.Index)
	b.log.Info("added partitions", "topic", name, "from", topic.Partitions, "to", count)
	return nil
}
