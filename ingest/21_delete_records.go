package ingest

// DeleteRecords: v0-2
//
// Behavior:
//   - Advances a partition's log start offset to the offset given (-1: the
//     high watermark) and deletes the segments wholly below it; reads below
//     the new start fail with OFFSET_OUT_OF_RANGE. The answer's low watermark
//     is the new log start offset.
//   - An offset above the high watermark is OFFSET_OUT_OF_RANGE; an offset
//     at or below the current log start changes nothing.
//   - A topic whose cleanup.policy lacks delete (compact only) is refused
//     with POLICY_VIOLATION, as Kafka refuses it.
//   - On a tiered partition, or one whose bucket holds data, the remote log
//     start moves first (a meta command; its failure is the partition's
//     error), so the bucket stops serving below it at once; remote
//     retention then deletes the segments wholly below it, and the part of
//     a segment above it uploads from the batch that holds it.
//   - Unknown topics and partitions this broker does not lead are reported
//     per partition.
//
// Version notes:
//   - v1 differs only in throttling. v2: flexible.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/replica"
)

func init() { register(0, 2, handleDeleteRecords) }

func handleDeleteRecords(ctx context.Context, b *Broker, r *request, req *kmsg.DeleteRecordsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	st := b.meta.State()
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		allowed := b.authorize(r, acl.OpDelete, acl.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition = rp.Partition
			p.LowWatermark = -1
			var target *replica.Partition
			err := error(ErrTopicAuthorization)
			if allowed {
				target, err = b.partitions.Leader(st, rt.Topic, rp.Partition)
			}
			if t, ok := st.Topic(rt.Topic); err == nil && ok && !meta.Deletes(t.Configs) {
				err = fmt.Errorf("%w: %s has cleanup.policy=%s", ErrDeleteRecordsCompacted, rt.Topic, t.Configs["cleanup.policy"])
			}
			if err == nil {
				p.LowWatermark, err = target.DeleteBefore(ctx, rp.Offset)
			}
			if err != nil {
				p.ErrorCode = errorCode(err)
				b.metrics.partitionErrors.WithLabelValues("DeleteRecords", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}
