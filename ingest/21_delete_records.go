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
//   - A tiered partition whose bucket already holds data is refused with
//     POLICY_VIOLATION: meta has no command yet that moves the remote log
//     start offset, so the records would still be served from the bucket.
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

	"github.com/stratalog/strata/hotlog"
)

func init() { register(0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, b *Broker, _ *request, req *kmsg.DeleteRecordsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	st := b.meta.State()
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteRecordsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDeleteRecordsResponseTopicPartition()
			p.Partition = rp.Partition
			p.LowWatermark = -1
			target, err := b.partitions.get(st, rt.Topic, rp.Partition)
			if err == nil && target.tiered {
				if _, _, tiered := remoteRange(st, target.topic, target.index); tiered {
					err = fmt.Errorf("%w: %s-%d has tiered data", ErrDeleteRecordsTiered, target.topic, target.index)
				}
			}
			if err == nil {
				p.LowWatermark, err = target.deleteBefore(rp.Offset)
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

// deleteBefore moves the log start offset up to offset (-1: the high
// watermark) and returns the new log start.
func (p *partition) deleteBefore(offset int64) (int64, error) {
	hwm := p.highWatermark.Load()
	if offset == -1 {
		offset = hwm
	}
	if offset < 0 || offset > hwm {
		return -1, fmt.Errorf("%w: delete before %d, high watermark %d", hotlog.ErrOffsetOutOfRange, offset, hwm)
	}
	deleted, err := p.log.DeleteBefore(offset)
	if err != nil {
		return -1, err
	}
	if len(deleted) > 0 {
		p.manager.broker.log.Info("deleted records", "topic", p.topic, "partition", p.index, "before", offset, "segments", len(deleted))
	}
	return p.log.LogStartOffset(), nil
}
