package remotefetch

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratalog/strata/record"
)

// TimestampOffset is the answer to a timestamp lookup: the first record
// whose timestamp is at or after the one asked for.
type TimestampOffset struct {
	Offset    int64
	Timestamp int64
	// LeaderEpoch is the partitionLeaderEpoch of the record's batch, as
	// Kafka's ListOffsets returns it.
	LeaderEpoch int32
}

// OffsetForTimestamp finds, in the tiered log, the first record (in offset
// order) with a timestamp at or after ts: what ListOffsets by timestamp
// returns. Segments are tried in offset order, skipping those whose
// manifest max timestamp is older than ts; inside a segment the time index
// narrows the scan to one index interval, and the batches there are
// verified and their records decoded (up to MaxUncompressedSize; a batch
// larger than that answers at its base offset, as the broker's hot log
// lookup does, with the batch's max timestamp). found is
// false when every tiered record is older than ts: the broker goes on to
// its local log. Only segments that start below below are searched: the
// broker's hot log holds the offsets from its start on, and answers for
// them without a GET (math.MaxInt64 searches every segment).
func (r *Reader) OffsetForTimestamp(ctx context.Context, p Partition, ts, below int64) (res TimestampOffset, found bool, err error) {
	res, found, err = r.offsetForTimestamp(ctx, p, ts, below)
	if errors.Is(err, ErrSegmentMissing) {
		// Remote retention or DeleteRecords deleted a segment after the
		// lookup took the manifest: the next segments answer now.
		res, found, err = r.offsetForTimestamp(ctx, p, ts, below)
	}
	return res, found, err
}

func (r *Reader) offsetForTimestamp(ctx context.Context, p Partition, ts, below int64) (res TimestampOffset, found bool, err error) {
	if r.life.closed() {
		return res, false, ErrClosed
	}
	m, err := r.source.Manifest(ctx, p)
	if err != nil {
		return res, false, err
	}
	for _, seg := range m.Segments {
		if seg.BaseOffset >= below {
			break // sorted by offset
		}
		if seg.NextOffset() <= m.LogStartOffset || seg.MaxTimestamp < ts {
			continue
		}
		ix, err := r.index(ctx, seg)
		if err != nil {
			return res, false, err
		}
		from, ok := ix.OffsetForTimestamp(ts)
		if !ok {
			continue
		}
		pos, base, err := ix.StartPosition(max(from, m.LogStartOffset, seg.BaseOffset))
		if err != nil {
			return res, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, seg.Key, err)
		}
		err = r.verifiedScan(ctx, seg, ix, nil, pos, base, func(s *scanner) error {
			res, found, err = firstAtOrAfter(ctx, s, ts, m.LogStartOffset, r.cfg.MaxUncompressedSize)
			return err
		})
		if err != nil || found {
			return res, found, err
		}
	}
	return res, false, nil
}

// firstAtOrAfter scans for the first record, at or above the log start
// offset, whose timestamp is at or after ts.
func firstAtOrAfter(ctx context.Context, s *scanner, ts, logStart int64, limit int) (TimestampOffset, bool, error) {
	for {
		h, pos, ok, err := s.next(ctx)
		if err != nil || !ok {
			return TimestampOffset{}, false, err
		}
		if h.MaxTimestamp < ts || h.NextOffset() <= logStart {
			continue
		}
		var batch gathered
		if err := s.appendBatch(ctx, &batch, h, pos); err != nil {
			return TimestampOffset{}, false, err
		}
		records, err := record.Records(batch.bytes(), limit)
		batch.release() // below, only the records' offsets and times are read
		if errors.Is(err, record.ErrTooLarge) {
			// The record is in this batch, which is too large to decode
			// here: its base (or the log start) answers, as the hot log's
			// lookup answers then (ingest's exactOffset).
			return TimestampOffset{Offset: max(h.BaseOffset, logStart), Timestamp: h.MaxTimestamp, LeaderEpoch: h.PartitionLeaderEpoch}, true, nil
		}
		if err != nil {
			return TimestampOffset{}, false, fmt.Errorf("remotefetch: %s batch at offset %d: %w", s.seg.Key, h.BaseOffset, err)
		}
		for _, rec := range records {
			offset, timestamp := h.BaseOffset+int64(rec.OffsetDelta), h.FirstTimestamp+rec.TimestampDelta
			if h.Attributes.LogAppendTime() {
				timestamp = h.MaxTimestamp
			}
			if offset >= logStart && timestamp >= ts {
				return TimestampOffset{Offset: offset, Timestamp: timestamp, LeaderEpoch: h.PartitionLeaderEpoch}, true, nil
			}
		}
	}
}
