package compact

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// Pass is one cleaning of one log: what to clean and by which rules.
type Pass struct {
	Log *hotlog.Log
	// FirstDirty is where the last pass stopped mapping keys (the cleaner
	// checkpoint): below it every key's latest version is known to the
	// segments' contents, above it keys are mapped afresh.
	FirstDirty int64
	// End bounds the pass: only sealed segments wholly below it are read
	// or rewritten (the cleaner takes the least of the high watermark,
	// the active segment's base and min.compaction.lag.ms's bound); Clean
	// also stops at the log's RewritableEnd.
	End int64
	// Now is the clock tombstones are aged by.
	Now time.Time
	// DeleteRetention is delete.retention.ms: a tombstone is kept until its
	// segment was last written that long ago.
	DeleteRetention time.Duration
	// MaxKeys bounds the offset map (log.cleaner.dedupe.buffer.size): a
	// pass maps keys from FirstDirty until the map is full and cleans up
	// to there; the next pass goes on from where it stopped.
	MaxKeys int
	// Throttle is called with the bytes the pass read or wrote since the
	// last call and returns once they may be spent
	// (log.cleaner.io.max.bytes.per.second), or with the context's error.
	Throttle func(ctx context.Context, bytes int) error
	// DecompressLimit caps one batch's decompressed records.
	DecompressLimit int
}

// Result is what a pass did.
type Result struct {
	// NextDirty is the FirstDirty of the next pass.
	NextDirty int64
	// BytesRead and BytesWritten count log bytes read (both readings:
	// mapping and rewriting) and rewritten.
	BytesRead, BytesWritten int64
	// RecordsRemoved counts superseded records, expired tombstones and
	// keyless records dropped.
	RecordsRemoved int64
	// SegmentsRewritten counts segments swapped for cleaned ones.
	SegmentsRewritten int
}

// ErrMapTooSmall means the offset map could not hold even one batch's keys:
// log.cleaner.dedupe.buffer.size is too small for the log.
var ErrMapTooSmall = errors.New("compact: the offset map cannot hold one batch's keys")

// readChunk is how much of a segment one read takes.
const readChunk = 1 << 20

// keyHash identifies a key in the offset map by 128 bits, as Kafka's
// cleaner keys its map by a 16-byte MD5: two 64-bit maphash sums under
// independent random seeds (the map lives for one pass in one process, so
// the hash need not be stable; SHA-256 cost a tenth of a pass). A
// collision would drop a live record of another key; at about 2^-128 per
// pair it is not a concern.
type keyHash [2]uint64

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashKey(key []byte) keyHash {
	return keyHash{maphash.Bytes(keySeeds[0], key), maphash.Bytes(keySeeds[1], key)}
}

// Clean runs one pass: it maps the latest offset of every key from
// FirstDirty up to as far as the map holds, then rewrites every cleanable
// segment below that point, from the log start, keeping of each key only
// its latest version (and every record at or above the mapped end), and of
// tombstones only those whose segment was written within DeleteRetention.
// Each batch keeps its offsets; a batch that loses every record stays as
// an empty batch (or joins a run of them: one empty batch for a run of
// removed batches of one leader epoch), so offsets stay dense and readers
// move past what was removed.
func Clean(ctx context.Context, p Pass) (Result, error) {
	res := Result{NextDirty: p.FirstDirty}
	segments := cleanable(p.Log.Segments(), min(p.End, p.Log.RewritableEnd()))
	if len(segments) == 0 {
		return res, nil
	}
	end := segments[len(segments)-1].NextOffset
	firstDirty := max(p.FirstDirty, p.Log.LogStartOffset())
	if firstDirty >= end {
		res.NextDirty = firstDirty
		return res, nil
	}
	c := &cleaner{p: p, ctx: ctx, res: &res}
	offsets, mapped, err := c.buildMap(firstDirty, end)
	if err != nil {
		return res, err
	}
	logStart := p.Log.LogStartOffset()
	for _, s := range segments {
		if s.BaseOffset >= mapped {
			break
		}
		if s.BaseOffset < logStart {
			// DeleteRecords, or a follower taking its leader's start,
			// put the log start inside this segment: what lies below it
			// cannot be read, so the segment is left as it is until
			// retention takes it.
			continue
		}
		if err := c.cleanSegment(s, offsets, mapped); err != nil {
			return res, err
		}
	}
	res.NextDirty = mapped
	return res, nil
}

// cleanable is the leading run of sealed segments that end at or below
// end.
func cleanable(segments []hotlog.SegmentInfo, end int64) []hotlog.SegmentInfo {
	n := 0
	for n < len(segments) && segments[n].Sealed && segments[n].NextOffset <= end {
		n++
	}
	return segments[:n]
}

type cleaner struct {
	p   Pass
	ctx context.Context
	res *Result
}

// batches calls fn with each batch of the log from offset to end, in
// order, reading a chunk at a time; fn returns false to stop. With check,
// each batch is validated (record.Validate) first; without, only its
// header is read.
func (c *cleaner) batches(from, end int64, check bool, fn func(h record.Header, batch []byte) (bool, error)) error {
	for offset := from; offset < end; {
		chunk, err := c.p.Log.ReadBytes(offset, readChunk)
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			return fmt.Errorf("compact: no batch at offset %d below %d", offset, end)
		}
		if err := c.spend(len(chunk)); err != nil {
			return err
		}
		c.res.BytesRead += int64(len(chunk))
		for len(chunk) > 0 && offset < end {
			h, err := record.ParseHeader(chunk)
			if err == nil && h.Size() > len(chunk) {
				err = record.ErrTruncated
			}
			if err == nil && check {
				_, err = record.Validate(chunk[:h.Size()])
			}
			if err != nil {
				return fmt.Errorf("compact: batch at offset %d: %w", offset, err)
			}
			more, err := fn(h, chunk[:h.Size()])
			if err != nil || !more {
				return err
			}
			offset = h.NextOffset()
			chunk = chunk[h.Size():]
		}
	}
	return nil
}

func (c *cleaner) spend(n int) error {
	if c.p.Throttle == nil {
		return c.ctx.Err()
	}
	return c.p.Throttle(c.ctx, n)
}

// buildMap maps each key from firstDirty to its latest offset, batch by
// batch, until the map is full or end. It returns the map and the offset
// it reached (a batch boundary).
func (c *cleaner) buildMap(firstDirty, end int64) (map[keyHash]int64, int64, error) {
	offsets := make(map[keyHash]int64)
	mapped := firstDirty
	err := c.batches(firstDirty, end, true, func(h record.Header, batch []byte) (bool, error) {
		if len(offsets)+int(h.NumRecords) > c.p.MaxKeys {
			return false, nil
		}
		records, err := record.Records(batch, c.p.DecompressLimit)
		if err != nil {
			return false, fmt.Errorf("compact: batch at offset %d: %w", h.BaseOffset, err)
		}
		for _, r := range records {
			if r.Key != nil {
				offsets[hashKey(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
			}
		}
		mapped = h.NextOffset()
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	if mapped == firstDirty {
		return nil, 0, fmt.Errorf("%w (at offset %d, %d keys allowed)", ErrMapTooSmall, firstDirty, c.p.MaxKeys)
	}
	return offsets, mapped, nil
}

// cleanSegment rewrites segment s without the records the map supersedes
// and the tombstones that have expired, keeping every record at or above
// mapped. A segment in which nothing changes is left as it is, unwritten.
func (c *cleaner) cleanSegment(s hotlog.SegmentInfo, offsets map[keyHash]int64, mapped int64) error {
	modified, err := c.p.Log.SegmentModified(s.BaseOffset)
	if err != nil {
		return err
	}
	expireTombstones := modified.Before(c.p.Now.Add(-c.p.DeleteRetention))
	drops, lastOfProducer, err := c.survey(s, offsets, mapped, expireTombstones)
	if err != nil || !drops {
		return err
	}
	w, err := c.p.Log.RewriteSegment(s.BaseOffset)
	if err != nil {
		return err
	}
	defer w.Abort()
	out := &segmentWriter{w: w}
	// Checked by the survey just before; the segment is sealed.
	err = c.batches(s.BaseOffset, s.NextOffset, false, func(h record.Header, batch []byte) (bool, error) {
		if h.BaseOffset < mapped {
			records, kept, err := c.filter(h, batch, offsets, mapped, expireTombstones)
			if err != nil {
				return false, err
			}
			if removed := len(records) - len(kept); removed > 0 {
				c.res.RecordsRemoved += int64(removed)
				switch {
				case len(kept) > 0 || lastOfProducer[h.ProducerID] == h.BaseOffset && h.ProducerID >= 0:
					// An empty batch that is its producer's last in the
					// segment keeps the producer's sequence for whoever
					// rebuilds producer state from the log.
					rebuilt, err := record.Rebuild(h, kept)
					if err != nil {
						return false, err
					}
					return true, out.batch(rebuilt)
				default:
					return true, out.removed(h)
				}
			}
		}
		return true, out.batch(batch)
	})
	if err == nil {
		err = out.flush()
	}
	if err != nil {
		return err
	}
	if err := w.Commit(modified); err != nil {
		return err
	}
	c.res.BytesWritten += out.written
	c.res.SegmentsRewritten++
	return c.spend(int(out.written))
}

// filter decodes a batch's records and returns them with those the pass
// keeps.
func (c *cleaner) filter(h record.Header, batch []byte, offsets map[keyHash]int64, mapped int64, expireTombstones bool) (records, kept []record.Record, err error) {
	records, err = record.Records(batch, c.p.DecompressLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("compact: batch at offset %d: %w", h.BaseOffset, err)
	}
	kept = records[:0:0]
	for _, r := range records {
		if keep(r, h.BaseOffset+int64(r.OffsetDelta), offsets, mapped, expireTombstones) {
			kept = append(kept, r)
		}
	}
	return records, kept, nil
}

// keep decides one record: a record at or above mapped is not the pass's
// business; a keyless record cannot be compacted and goes, as Kafka's
// cleaner drops it; a record a later one of its key supersedes goes; a
// tombstone goes once expired.
func keep(r record.Record, offset int64, offsets map[keyHash]int64, mapped int64, expireTombstones bool) bool {
	if offset >= mapped {
		return true
	}
	if r.Key == nil {
		return false
	}
	if latest, ok := offsets[hashKey(r.Key)]; ok && latest > offset {
		return false
	}
	return r.Value != nil || !expireTombstones
}

// survey reads segment s once to find whether the pass drops anything
// from it (decoding batches only until one loses a record) and, for
// each producer with a batch there, the base offset of its last batch, so
// that a segment with nothing to drop is not rewritten.
func (c *cleaner) survey(s hotlog.SegmentInfo, offsets map[keyHash]int64, mapped int64, expireTombstones bool) (drops bool, lastOfProducer map[int64]int64, err error) {
	lastOfProducer = map[int64]int64{}
	err = c.batches(s.BaseOffset, s.NextOffset, true, func(h record.Header, batch []byte) (bool, error) {
		if h.ProducerID >= 0 {
			lastOfProducer[h.ProducerID] = h.BaseOffset
		}
		if drops || h.BaseOffset >= mapped {
			return true, nil
		}
		records, kept, err := c.filter(h, batch, offsets, mapped, expireTombstones)
		drops = len(kept) < len(records)
		return err == nil, err
	})
	return drops, lastOfProducer, err
}

// segmentWriter writes a segment's cleaned batches, joining runs of batches
// that lost every record into one empty batch per leader epoch.
type segmentWriter struct {
	w       *hotlog.Rewrite
	pending *record.Header // a run of removed batches not yet written
	written int64
}

func (s *segmentWriter) batch(b []byte) error {
	if err := s.flush(); err != nil {
		return err
	}
	s.written += int64(len(b))
	return s.w.Append(b)
}

// removed adds a batch that lost every record to the pending run.
func (s *segmentWriter) removed(h record.Header) error {
	if p := s.pending; p != nil && p.PartitionLeaderEpoch == h.PartitionLeaderEpoch && h.LastOffset()-p.BaseOffset <= math.MaxInt32 {
		p.LastOffsetDelta = int32(h.LastOffset() - p.BaseOffset)
		p.MaxTimestamp = max(p.MaxTimestamp, h.MaxTimestamp)
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	s.pending = &record.Header{
		BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes: h.Attributes, LastOffsetDelta: h.LastOffsetDelta,
		FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}
	return nil
}

// flush writes the pending run as one empty batch.
func (s *segmentWriter) flush() error {
	if s.pending == nil {
		return nil
	}
	h := *s.pending
	s.pending = nil
	h.Attributes &^= 0x10 // not transactional: it stands for no producer
	b, err := record.Rebuild(h, nil)
	if err != nil {
		return err
	}
	s.written += int64(len(b))
	return s.w.Append(b)
}
