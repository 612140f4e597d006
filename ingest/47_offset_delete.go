package ingest

// OffsetDelete: v0
//
// Behavior:
//   - Deletes a group's committed offsets for the listed partitions. A
//     partition of a topic the group's members subscribe to is
//     GROUP_SUBSCRIBED_TO_TOPIC and kept; a group with neither members nor
//     offsets is GROUP_ID_NOT_FOUND. Partitions without a committed offset
//     succeed.
//   - A group another broker coordinates is NOT_COORDINATOR.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, b *Broker, r *request, body *kmsg.OffsetDeleteRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// Deleting needs Delete on the group and Read on each topic; a topic
	// not allowed is answered TOPIC_AUTHORIZATION_FAILED and kept.
	var partitions []meta.TopicPartition
	denied := map[string]bool{}
	for _, t := range body.Topics {
		if !b.authorize(r, acl.OpRead, acl.Topic, t.Topic) {
			denied[t.Topic] = true
			continue
		}
		for _, p := range t.Partitions {
			partitions = append(partitions, meta.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	err := b.groupAccess(r, acl.OpDelete, body.Group)
	var errs []error
	if err == nil {
		errs, err = b.groups.DeleteOffsets(ctx, body.Group, partitions)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	i := 0
	for _, t := range body.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if denied[t.Topic] {
				rp.ErrorCode = errorCode(ErrTopicAuthorization)
			} else {
				rp.ErrorCode = errorCode(errs[i])
				i++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return replyWith(resp), nil
}
