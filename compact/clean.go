package compact

import (
	"context"
	"errors"
	"fmt"
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
	// segment was last written that long ago, and through the pass that
	// maps it first (KeyMap.keeps).
	DeleteRetention time.Duration
	// KeepTombstones keeps every tombstone, however old (Policy).
	KeepTombstones bool
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

// Clean runs one pass: it maps the latest offset of every key from
// FirstDirty up to as far as the map holds, then rewrites every cleanable
// segment below that point, from the log start, keeping of each key only
// its latest version (and every record at or above the mapped end), and of
// tombstones those whose segment was written within DeleteRetention and
// those this pass maps first.
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
	keys, err := c.buildMap(firstDirty, end)
	if err != nil {
		return res, err
	}
	mapped := keys.End()
	logStart := p.Log.LogStartOffset()
	for _, s := range segments {
		if s.BaseOffset >= mapped {
			break
		}
		if s.NextOffset <= logStart {
			continue // retention deletes it next
		}
		// DeleteRecords, or a follower taking its leader's start, may
		// have put the log start inside s: it is cleaned whole all the
		// same (hotlog.ReadSegmentBytes). Left as it was, an older value
		// of a key above the start stayed readable after the key's
		// tombstone expired, and the deleted key came back.
		if err := c.cleanSegment(s, keys); err != nil {
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
	return c.batchesOf(c.p.Log.ReadBytes, from, end, check, fn)
}

// segmentBatches is batches over the whole of sealed segment s, the part
// below the log start included.
func (c *cleaner) segmentBatches(s hotlog.SegmentInfo, check bool, fn func(h record.Header, batch []byte) (bool, error)) error {
	read := func(offset int64, maxBytes int) ([]byte, error) {
		return c.p.Log.ReadSegmentBytes(s.BaseOffset, offset, maxBytes)
	}
	return c.batchesOf(read, s.BaseOffset, s.NextOffset, check, fn)
}

// batchesOf is batches reading with read.
func (c *cleaner) batchesOf(read func(offset int64, maxBytes int) ([]byte, error), from, end int64, check bool, fn func(h record.Header, batch []byte) (bool, error)) error {
	for offset := from; offset < end; {
		chunk, err := read(offset, readChunk)
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
// batch, until the map is full or end.
func (c *cleaner) buildMap(firstDirty, end int64) (*KeyMap, error) {
	m := NewKeyMap(firstDirty, c.p.MaxKeys)
	err := c.batches(firstDirty, end, true, func(h record.Header, batch []byte) (bool, error) {
		return m.Add(h, batch, c.p.DecompressLimit)
	})
	if err != nil {
		return nil, err
	}
	if m.End() == firstDirty {
		return nil, fmt.Errorf("%w (at offset %d, %d keys allowed)", ErrMapTooSmall, firstDirty, c.p.MaxKeys)
	}
	return m, nil
}

// cleanSegment rewrites segment s without the records the map supersedes
// and the tombstones that have expired, keeping every record at or above
// mapped. A segment in which nothing changes is left as it is, unwritten.
func (c *cleaner) cleanSegment(s hotlog.SegmentInfo, keys *KeyMap) error {
	modified, err := c.p.Log.SegmentModified(s.BaseOffset)
	if err != nil {
		return err
	}
	expireTombstones := !c.p.KeepTombstones && modified.Before(c.p.Now.Add(-c.p.DeleteRetention))
	drops, lastOfProducer, err := c.survey(s, keys, expireTombstones)
	if err != nil || !drops {
		return err
	}
	w, err := c.p.Log.RewriteSegment(s.BaseOffset)
	if err != nil {
		return err
	}
	defer w.Abort()
	out := NewWriter(w.Append)
	// Checked by the survey just before; the segment is sealed.
	err = c.segmentBatches(s, false, func(h record.Header, batch []byte) (bool, error) {
		// An empty batch that is its producer's last in the segment keeps
		// the producer's sequence for whoever rebuilds producer state
		// from the log.
		keepEmpty := lastOfProducer[h.ProducerID] == h.BaseOffset && h.ProducerID >= 0
		removed, err := out.Filter(h, batch, keys, expireTombstones, keepEmpty, c.p.DecompressLimit)
		c.res.RecordsRemoved += int64(removed)
		return err == nil, err
	})
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		return err
	}
	if err := w.Commit(modified); err != nil {
		return err
	}
	c.res.BytesWritten += out.Written()
	c.res.SegmentsRewritten++
	return c.spend(int(out.Written()))
}

// survey reads segment s once to find whether the pass drops anything
// from it (decoding batches only until one loses a record) and, for
// each producer with a batch there, the base offset of its last batch, so
// that a segment with nothing to drop is not rewritten.
func (c *cleaner) survey(s hotlog.SegmentInfo, keys *KeyMap, expireTombstones bool) (drops bool, lastOfProducer map[int64]int64, err error) {
	lastOfProducer = map[int64]int64{}
	err = c.segmentBatches(s, true, func(h record.Header, batch []byte) (bool, error) {
		if h.ProducerID >= 0 {
			lastOfProducer[h.ProducerID] = h.BaseOffset
		}
		if drops {
			return true, nil
		}
		drops, err = keys.Drops(h, batch, expireTombstones, c.p.DecompressLimit)
		return err == nil, err
	})
	return drops, lastOfProducer, err
}
