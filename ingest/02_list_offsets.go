package ingest

// ListOffsets: v1-10
//
// Behavior (timestamps as Kafka defines them):
//   - -1 (latest): the high watermark, which is also the last stable offset
//     (no transactions), with the latest leader epoch.
//   - -2 (earliest): the log start offset: the remote log start while the
//     bucket holds data below the local log start and up to it.
//   - -3 (max timestamp, v7+): the first record carrying the largest
//     timestamp below the high watermark, with that timestamp.
//   - -4 (earliest local, v8+): the local log start offset (the hot log's),
//     never below -2's (DeleteRecords moves the remote log start first).
//   - -5 (latest tiered, v9+): the highest offset committed to the bucket per
//     the partition's manifest in the metadata, -1 while nothing is tiered.
//   - a timestamp >= 0: the first record at or after it (the time index finds
//     the batch; the batch's records give the exact record), -1 with
//     timestamp -1 when there is none below the high watermark. While the
//     bucket holds data below the local log start, it is searched first
//     (remotefetch.OffsetForTimestamp), then the local log from -2's
//     offset, past a batch across it whose matching records lie below it.
//   - __consumer_offsets is an empty log (internal_topic.go): 0 for latest,
//     earliest and earliest local, no offset for a timestamp.
//   - A client's (v2+) -1, and -3 or a timestamp that find nothing below
//     the high watermark, are OFFSET_NOT_AVAILABLE (retried by clients)
//     while the leader's high watermark is below the start of its leader
//     epoch, as in Kafka (KIP-207; replica.Partition.CheckOffsetsAvailable):
//     a new leader learns the ISR's progress from its first fetches.
//   - CurrentLeaderEpoch (v4+) older or newer than ours is
//     FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH; unknown topics and
//     partitions this broker does not lead are reported per partition.
//   - A partition named twice is INVALID_REQUEST at each mention (after
//     authorization), as in Kafka: which answer a client keeps is not
//     defined.
//
// Version notes:
//   - v1: one offset per partition. v2: isolation level. v4: leader epochs.
//   - v6: flexible. v7: -3. v8: -4. v9: -5. v10: timeout (answers here
//     never wait). v11 (-6, earliest pending upload) is not answered.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

func init() { register(1, 10, handleListOffsets) }

// Kafka's special ListOffsets timestamps.
const (
	timestampLatest        = -1
	timestampEarliest      = -2
	timestampMax           = -3
	timestampEarliestLocal = -4
	timestampLatestTiered  = -5
)

// timestampOffset is a ListOffsets answer for one partition.
type timestampOffset struct {
	timestamp   int64
	offset      int64
	leaderEpoch int32
}

var notFound = timestampOffset{timestamp: -1, offset: -1, leaderEpoch: -1}

func handleListOffsets(ctx context.Context, b *Broker, r *request, req *kmsg.ListOffsetsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	st := b.meta.State()
	named := make(map[meta.TopicPartition]int)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			named[meta.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]++
		}
	}
	for _, rt := range req.Topics {
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		allowed := b.authorize(r, acl.OpDescribe, acl.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			answer, err := notFound, error(ErrTopicAuthorization)
			switch {
			case !allowed:
			case named[meta.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] > 1:
				err = fmt.Errorf("%w: partition %s-%d named twice", ErrInvalidRequest, rt.Topic, rp.Partition)
			default:
				answer, err = listOffset(ctx, b, st, req.Version, req.ReplicaID < 0, rt.Topic, rp)
			}
			if err != nil {
				p.ErrorCode = errorCode(err)
				answer = notFound
				b.metrics.partitionErrors.WithLabelValues("ListOffsets", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
			}
			p.Timestamp, p.Offset, p.LeaderEpoch = answer.timestamp, answer.offset, answer.leaderEpoch
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}

// listOffset answers one partition; client is a client's request (not a
// replica's), whose answers wait for a new leader's high watermark.
func listOffset(ctx context.Context, b *Broker, st *meta.State, version int16, client bool, topic string, rp kmsg.ListOffsetsRequestTopicPartition) (timestampOffset, error) {
	if isInternalTopic(topic) {
		return listInternalOffset(rp.Partition, rp.Timestamp)
	}
	p, err := b.partitions.Leader(st, topic, rp.Partition)
	if err != nil {
		return notFound, err
	}
	if version >= 4 {
		if err := checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch()); err != nil {
			return notFound, err
		}
	}
	// As Kafka (KIP-207), for a client's request (with an isolation
	// level, v2+): latest is OFFSET_NOT_AVAILABLE while the leader's high
	// watermark is below its epoch's start, and so is a timestamp lookup
	// that finds nothing below it.
	answer, err := lookupOffset(ctx, b, st, version, topic, rp, p)
	waits := rp.Timestamp == timestampLatest || answer == notFound && (rp.Timestamp >= 0 || rp.Timestamp == timestampMax)
	if err == nil && waits && client && version >= 2 {
		if err := p.CheckOffsetsAvailable(); err != nil {
			return notFound, err
		}
	}
	return answer, err
}

// lookupOffset is listOffset's answer from p's log and bucket.
func lookupOffset(ctx context.Context, b *Broker, st *meta.State, version int16, topic string, rp kmsg.ListOffsetsRequestTopicPartition, p *replica.Partition) (timestampOffset, error) {
	hwm := p.HighWatermark()
	switch ts := rp.Timestamp; {
	case ts == timestampLatest:
		return timestampOffset{timestamp: -1, offset: hwm, leaderEpoch: p.LatestEpoch()}, nil
	case ts == timestampEarliest:
		start := p.LogStartOffset()
		return timestampOffset{timestamp: -1, offset: start, leaderEpoch: p.EpochAt(start)}, nil
	case ts == timestampEarliestLocal && version >= 8:
		// Never below the log start: DeleteRecords moves the remote one
		// first, and the hot log's follows.
		start := max(p.Log().LogStartOffset(), p.LogStartOffset())
		return timestampOffset{timestamp: -1, offset: start, leaderEpoch: p.EpochAt(start)}, nil
	case ts == timestampLatestTiered && version >= 9:
		manifest, _ := st.Manifest(topic, rp.Partition)
		tiered := manifest.HighestTieredOffset()
		return timestampOffset{timestamp: -1, offset: tiered, leaderEpoch: p.EpochAt(tiered)}, nil
	case ts == timestampMax && version >= 7:
		found, ok := p.Log().MaxTimestamp()
		if !ok || found.Offset >= hwm {
			return notFound, nil
		}
		answer, _, err := exactOffset(p.Log(), found.Offset, p.LogStartOffset(), hwm, func(t int64) bool { return t == found.Timestamp })
		return answer, err
	case ts >= 0:
		if answer, ok, err := b.remoteOffsetForTimestamp(ctx, p, ts); ok || err != nil {
			return answer, err
		}
		// A batch across the log start may hold its only records at or
		// after ts below it: the search goes on past that batch.
		for from := p.LogStartOffset(); ; {
			found, ok, err := p.Log().OffsetForTimestamp(ts, from)
			if err != nil || !ok || found.Offset >= hwm {
				return notFound, err
			}
			answer, next, err := exactOffset(p.Log(), found.Offset, from, hwm, func(t int64) bool { return t >= ts })
			if err != nil || answer != notFound {
				return answer, err
			}
			from = next
		}
	default:
		return notFound, nil
	}
}

// maxTimestampScanBytes caps the decompressed records read to find the
// exact record in a batch; a larger batch is answered at its base offset.
const maxTimestampScanBytes = 64 << 20

// exactOffset finds, in the batch at batchOffset, the first record at or
// above the log start whose timestamp satisfies want (DeleteRecords may
// put the start inside the batch), and the offset after the batch. The
// time index only knows batches; Kafka answers with the record.
func exactOffset(log *hotlog.Log, batchOffset, logStart, hwm int64, want func(int64) bool) (_ timestampOffset, next int64, _ error) {
	batch, err := log.ReadBytes(batchOffset, 1)
	if err != nil {
		return notFound, 0, err
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return notFound, 0, err
	}
	batch = batch[:min(len(batch), h.Size())]
	records, err := record.Records(batch, maxTimestampScanBytes)
	if errors.Is(err, record.ErrTooLarge) {
		return timestampOffset{timestamp: h.MaxTimestamp, offset: max(h.BaseOffset, logStart), leaderEpoch: h.PartitionLeaderEpoch}, h.NextOffset(), nil
	}
	if err != nil {
		return notFound, 0, fmt.Errorf("ingest: reading batch %d for a timestamp: %w", h.BaseOffset, err)
	}
	for _, r := range records {
		timestamp := h.FirstTimestamp + r.TimestampDelta
		if h.Attributes.LogAppendTime() {
			timestamp = h.MaxTimestamp
		}
		offset := h.BaseOffset + int64(r.OffsetDelta)
		if want(timestamp) && offset >= logStart && offset < hwm {
			return timestampOffset{timestamp: timestamp, offset: offset, leaderEpoch: h.PartitionLeaderEpoch}, h.NextOffset(), nil
		}
	}
	return notFound, h.NextOffset(), nil
}

// remoteOffsetForTimestamp answers a timestamp lookup from the bucket when
// it holds data below the local log start: ok is false when it does not, or
// when every tiered record below that start is older than ts (the local
// log answers then). The bucket searches only its segments that start
// below the local start, which the hot log holds no further; should local
// retention move that start during the search, the offsets it passed are
// searched in the bucket again, so that they are not searched nowhere
// (each search again needs the start to have moved up, so this ends).
func (b *Broker) remoteOffsetForTimestamp(ctx context.Context, p *replica.Partition, ts int64) (timestampOffset, bool, error) {
	if b.tiering == nil || b.tiering.Remote == nil {
		return notFound, false, nil
	}
	for {
		local := p.Log().LogStartOffset()
		if start, next, ok := p.RemoteRange(); !ok || start >= local || next < local {
			// Nothing below the local start, or only past a gap, which
			// the log start clients are told excludes (readsRemote).
			return notFound, false, nil
		}
		found, ok, err := b.tiering.Remote.OffsetForTimestamp(ctx, p.RemotePartition(), ts, local)
		switch {
		case err != nil:
			return notFound, false, err
		case ok && found.Offset < local:
			return timestampOffset{timestamp: found.Timestamp, offset: found.Offset, leaderEpoch: found.LeaderEpoch}, true, nil
		case p.Log().LogStartOffset() == local:
			// At or above the local start the local log has the same
			// record, and knows the high watermark.
			return notFound, false, nil
		}
	}
}
