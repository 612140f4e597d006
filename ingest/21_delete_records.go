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
//     error), so the bucket stops serving below it at once; on a tiered
//     one, remote retention then deletes the segments wholly below it, and
//     a segment not yet uploaded uploads from the batch that holds it (a
//     topic that turned tiering off leaves its bucket's objects as they
//     are).
//   - Unknown topics and partitions this broker does not lead are reported
//     per partition. The partitions are deleted concurrently, within the
//     request's timeout (REQUEST_TIMED_OUT past it); a leadership that
//     moves meanwhile is NOT_LEADER_OR_FOLLOWER.
//
// Version notes:
//   - v1 differs only in throttling. v2: flexible.

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/replica"
)

func init() { register(0, 2, handleDeleteRecords) }

func handleDeleteRecords(ctx context.Context, b *Broker, r *request, req *kmsg.DeleteRecordsRequest) (reply, error) {
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	st := b.meta.State()
	// A tiered partition's deletion is a metadata proposal: the partitions
	// go at once, so a purge of many (Kafka Streams') pays one round, and
	// the proposals share Raft entries.
	var wg sync.WaitGroup
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		allowed := b.authorize(r, acl.OpDelete, acl.Topic, rt.Topic)
		t.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		for i, rp := range rt.Partitions {
			p := &t.Partitions[i]
			*p = kmsg.NewDeleteRecordsResponseTopicPartition()
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
			if err != nil {
				b.deleteRecordsFailed(p, err)
				continue
			}
			wg.Go(func() {
				low, err := target.DeleteBefore(ctx, rp.Offset)
				p.LowWatermark = low
				if err != nil {
					b.deleteRecordsFailed(p, err)
				}
			})
		}
		resp.Topics = append(resp.Topics, t)
	}
	wg.Wait()
	return replyWith(resp), nil
}

// deleteRecordsFailed answers a partition of DeleteRecords with err.
func (b *Broker) deleteRecordsFailed(p *kmsg.DeleteRecordsResponseTopicPartition, err error) {
	p.ErrorCode = errorCode(err)
	b.metrics.partitionErrors.WithLabelValues("DeleteRecords", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
}
