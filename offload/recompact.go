package offload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// Remote recompaction: the log cleaner's work (package compact) done on a
// compacted topic's segments in the bucket, which the hot log's cleaner
// never sees again once they are uploaded. It runs in the expiry task, so
// it never races the partition's retention, and only on the leader.
//
// A pass, like a hot-log cleaning pass, maps the latest offset of every key
// from the remote cleaner's checkpoint (meta's Manifest.CleanedOffset)
// through the cleanable committed segments, as far as the map holds
// (RecompactMapKeys), then rewrites every cleanable segment below that
// point, from the remote log start: superseded and keyless records go;
// tombstones go from batches the previous passes mapped whose newest
// record is older than delete.retention.ms. Segments are rewritten in runs
// of consecutive ones whose surviving batches add up to at most
// segment.bytes, each run into one new object over the same offsets (runs
// of emptied batches become one empty batch, as in the hot log), so the
// bucket shrinks to about the live key set in bytes and in objects in one
// pass. (Kafka groups segments by their sizes before cleaning, which
// merges nothing the first time.) A single segment from which nothing goes
// is left alone.
//
// Each run is swapped in with the upload protocol's discipline:
//
//  1. meta BeginSegmentReplace: a copying entry naming the segments it
//     replaces;
//  2. PUT of the new object, written beforehand to an unlinked temporary
//     file with its indexes (segmentobject.Indexer);
//  3. meta CommitSegmentReplace: the new segment committed and the old
//     ones deleting in one step, so readers see the old run or the new
//     segment, never both, never a gap; the old objects stay until
//     RetireDelay has passed, for readers that found them before;
//  4. the bucket manifest republished; finishDeletes deletes the old
//     objects once they are due.
//
// A crash leaves a copying replacement, which the next pass abandons
// (deleting its object, if any, as any abandoned upload's), or a committed
// one whose old objects await deletion. Then SetRemoteCleaned moves the
// checkpoint to where the map ended.
//
// Cleanable segments are the leading committed ones whose newest record
// is at least min.compaction.lag.ms old. A pass is due when the dirty
// bytes (those at or above the checkpoint) are at least
// min.cleanable.dirty.ratio of the cleanable bytes, or the first dirty
// segment's newest record is older than max.compaction.lag.ms.

// Steps of a recompaction at which a test may stop a pass (crashAt).
const (
	stepReplaceBegun     = stepCount + 1 + iota // BeginSegmentReplace committed
	stepReplacePut                              // the new object is in the store
	stepReplaceCommitted                        // CommitSegmentReplace committed
)

// errReplaceAbandoned ends a pass whose replacement could not commit.
var errReplaceAbandoned = errors.New("offload: recompaction's replacement abandoned")

// spoolPattern names the temporary files replacements are written to.
// The spool directory is the broker's data directory, beside partition
// directories and purge markers named after topics: '+' is in no topic
// name, so a stale spool file's removal never takes one of those.
const spoolPattern = "strata+recompact-*"

// recompactPolicy is the topic configs a pass follows.
type recompactPolicy struct {
	minLag, maxLag, deleteRetention time.Duration
	minRatio                        float64
	segmentBytes, indexInterval     int64
	// decompressLimit caps a batch's decompressed records as produce
	// capped them: DecompressLimit or max.message.bytes, the larger.
	decompressLimit int
}

func recompactPolicyOf(t meta.Topic, decompressLimit int) recompactPolicy {
	ratio, _ := t.Config("min.cleanable.dirty.ratio")
	minRatio, _ := strconv.ParseFloat(ratio, 64)
	ms := func(name string) time.Duration {
		n := topicLong(t, name)
		if n > math.MaxInt64/int64(time.Millisecond) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(n) * time.Millisecond
	}
	return recompactPolicy{
		minLag: ms("min.compaction.lag.ms"), maxLag: ms("max.compaction.lag.ms"), deleteRetention: ms("delete.retention.ms"),
		minRatio: minRatio, segmentBytes: topicLong(t, "segment.bytes"), indexInterval: topicLong(t, "index.interval.bytes"),
		decompressLimit: max(decompressLimit, int(topicLong(t, "max.message.bytes"))),
	}
}

// recompact runs remote recompaction on p if its topic is compacted and a
// pass is due. It first abandons replacements earlier passes left
// unfinished, on any topic.
func (m *Manager) recompact(ctx context.Context, p *partition, topic meta.Topic) error {
	man, _ := m.meta.State().Manifest(p.Topic, p.Partition)
	for _, s := range man.Segments {
		if s.State == meta.SegmentCopying && len(s.Replaces) > 0 {
			if err := m.abandon(ctx, p, s); err != nil {
				return err
			}
		}
	}
	if !meta.Compacted(topic.Configs) {
		return nil
	}
	pol := recompactPolicyOf(topic, m.cfg.DecompressLimit)
	now := m.clock.Now()
	segments := cleanableRemote(man, pol.minLag, now)
	firstDirty := max(man.CleanedOffset, man.RemoteLogStartOffset)
	if !recompactDue(segments, firstDirty, pol, now) {
		return nil
	}
	keys, err := m.mapRemoteKeys(ctx, segments, firstDirty, pol.decompressLimit)
	if err != nil {
		return err
	}
	if err := m.rewriteSegments(ctx, p, segments, keys, firstDirty, pol, now); err != nil {
		return err
	}
	err = m.propose(ctx, meta.SetRemoteCleaned{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(),
		Previous: man.CleanedOffset, Offset: keys.End(),
	})
	if err != nil {
		return fmt.Errorf("recompaction checkpoint at %d: %w", keys.End(), err)
	}
	return nil
}

// cleanableRemote is the leading run of committed segments at or above the
// remote log start whose newest record is at least minLag old (a segment
// without timestamps has no known age, and ends the run unless minLag is
// 0).
func cleanableRemote(man meta.Manifest, minLag time.Duration, now time.Time) []meta.RemoteSegment {
	var out []meta.RemoteSegment
	for _, s := range man.Segments {
		if s.State != meta.SegmentCommitted || s.EndOffset < man.RemoteLogStartOffset {
			continue
		}
		if minLag > 0 && (s.MaxTimestamp < 0 || now.Sub(time.UnixMilli(s.MaxTimestamp)) < minLag) {
			break
		}
		out = append(out, s)
	}
	return out
}

// recompactDue reports whether the cleanable segments hold dirty bytes
// enough, or old enough, for a pass.
func recompactDue(segments []meta.RemoteSegment, firstDirty int64, pol recompactPolicy, now time.Time) bool {
	var dirty, total int64
	var oldestDirty *meta.RemoteSegment
	for i, s := range segments {
		total += s.SizeBytes
		if s.EndOffset >= firstDirty {
			dirty += s.SizeBytes
			if oldestDirty == nil {
				oldestDirty = &segments[i]
			}
		}
	}
	if oldestDirty == nil {
		return false
	}
	if float64(dirty) >= pol.minRatio*float64(total) {
		return true
	}
	return oldestDirty.MaxTimestamp >= 0 && now.Sub(time.UnixMilli(oldestDirty.MaxTimestamp)) > pol.maxLag
}

// mapRemoteKeys maps the keys of the segments from firstDirty on, until
// the map is full. A batch that does not decode fails the pass, naming
// its object.
func (m *Manager) mapRemoteKeys(ctx context.Context, segments []meta.RemoteSegment, firstDirty int64, decompressLimit int) (*compact.KeyMap, error) {
	keys := compact.NewKeyMap(firstDirty, m.cfg.RecompactMapKeys)
	for _, s := range segments {
		if s.EndOffset < firstDirty {
			continue
		}
		full := false
		// Another attempt skips the batches mapped already. A batch that
		// holds firstDirty (the remote log start, which DeleteRecords may
		// put inside one) is mapped whole: skipped, a last batch would
		// leave the map empty, taken for a map too small, on every pass.
		err := m.readObject(ctx, s, func(ctx context.Context) error {
			return m.scanObject(ctx, s, func(h record.Header, batch []byte) (bool, error) {
				if h.NextOffset() <= keys.End() {
					return true, nil
				}
				ok, err := keys.Add(h, batch, decompressLimit)
				if err != nil {
					return false, fmt.Errorf("%w: %s: %w", ErrCorruptObject, s.ObjectKey, err)
				}
				full = !ok
				return ok, nil
			})
		})
		if err != nil {
			return nil, err
		}
		if full {
			break
		}
	}
	if keys.End() == firstDirty && len(segments) > 0 {
		return nil, fmt.Errorf("%w (at offset %d, %d keys allowed)", compact.ErrMapTooSmall, firstDirty, m.cfg.RecompactMapKeys)
	}
	return keys, nil
}

// readObject runs scan, a read of segment s's object from its start,
// under a timeout sized for the object (the upload's allowance), and again
// after a failed attempt, as every other call to the store is retried.
// scan must give the same result when run again.
func (m *Manager) readObject(ctx context.Context, s meta.RemoteSegment, scan func(context.Context) error) error {
	timeout := m.cfg.AttemptTimeout + time.Duration(float64(s.SizeBytes)/float64(m.cfg.MinUploadRate)*float64(time.Second))
	_, err := m.retry(ctx, timeout, scan, func(attempt int, err error) {
		m.metrics.failures.WithLabelValues("read").Inc()
		m.logger.Warn("offload: reading a segment object to recompact it failed", "key", s.ObjectKey, "attempt", attempt, "err", err)
	})
	return err
}

// run is a run of consecutive segments being rewritten into one object:
// their filtered batches, written one after the other into an unlinked
// spool file.
type run struct {
	segments []meta.RemoteSegment
	spool    *os.File
	size     int64 // bytes in the spool
	removed  int   // records filtered out
}

// newRun starts a run in a new spool file, unlinked at once so that a
// crash leaves nothing behind.
func (m *Manager) newRun() (*run, error) {
	spool, err := os.CreateTemp(m.cfg.SpoolDir, spoolPattern)
	if err != nil {
		return nil, fmt.Errorf("recompaction spool: %w", err)
	}
	if err := os.Remove(spool.Name()); err != nil {
		spool.Close()
		return nil, fmt.Errorf("recompaction spool: %w", err)
	}
	return &run{spool: spool}, nil
}

// rewriteSegments filters every cleanable segment that begins below the
// map's end, in order, and rewrites them in runs: a run takes segments
// while their filtered batches add up to at most segment.bytes (and 2^31
// offsets), so a pass merges what it shrinks. Each run becomes one object
// (swapIn), unless it is one segment that lost nothing.
func (m *Manager) rewriteSegments(ctx context.Context, p *partition, segments []meta.RemoteSegment, keys *compact.KeyMap, firstDirty int64, pol recompactPolicy, now time.Time) error {
	var cur *run
	defer func() {
		if cur != nil {
			cur.spool.Close()
		}
	}()
	for _, s := range segments {
		if s.BaseOffset >= keys.End() {
			break
		}
		if cur == nil {
			var err error
			if cur, err = m.newRun(); err != nil {
				return err
			}
		}
		start := cur.size
		removed, err := m.filterInto(ctx, cur, s, keys, firstDirty, pol, now)
		if err != nil {
			return err
		}
		if len(cur.segments) == 0 || cur.size <= pol.segmentBytes && s.EndOffset-cur.segments[0].BaseOffset < math.MaxInt32 {
			cur.segments = append(cur.segments, s)
			cur.removed += removed
			continue
		}
		// The segment overflows the run: it starts the next one.
		next, err := m.newRun()
		if err != nil {
			return err
		}
		if _, err := io.Copy(next.spool, io.NewSectionReader(cur.spool, start, cur.size-start)); err != nil {
			next.spool.Close()
			return fmt.Errorf("recompaction spool: %w", err)
		}
		next.size, next.segments, next.removed = cur.size-start, []meta.RemoteSegment{s}, removed
		cur.size = start
		err = m.finishRun(ctx, p, cur, pol)
		cur.spool.Close()
		cur = next
		if err != nil {
			return err
		}
	}
	if cur == nil || len(cur.segments) == 0 {
		return nil
	}
	return m.finishRun(ctx, p, cur, pol)
}

// filterInto appends segment s's batches, filtered by keys, to the run's
// spool and returns how many records it removed. A tombstone goes once a
// pass before this one mapped it (its batch lies below the checkpoint)
// and delete.retention.ms has passed since its batch's newest timestamp:
// the batch's own clock, not its segment's, since a run merges old
// batches with new ones. (That clock is the producer's on a CreateTime
// topic; see docs/architecture.md.)
func (m *Manager) filterInto(ctx context.Context, r *run, s meta.RemoteSegment, keys *compact.KeyMap, firstDirty int64, pol recompactPolicy, now time.Time) (int, error) {
	var removed int
	var written int64
	// Each attempt writes the segment's output afresh from r.size.
	err := m.readObject(ctx, s, func(ctx context.Context) error {
		buf := bufio.NewWriterSize(io.NewOffsetWriter(r.spool, r.size), 1<<20)
		out := compact.NewWriter(func(b []byte) error {
			_, err := buf.Write(b)
			return err
		})
		removed = 0
		err := m.scanObject(ctx, s, func(h record.Header, batch []byte) (bool, error) {
			expire := h.LastOffset() < firstDirty && h.MaxTimestamp >= 0 && now.Sub(time.UnixMilli(h.MaxTimestamp)) > pol.deleteRetention
			n, err := out.Filter(h, batch, keys, expire, false, pol.decompressLimit)
			if err != nil {
				return false, fmt.Errorf("%w: %s: %w", ErrCorruptObject, s.ObjectKey, err)
			}
			removed += n
			return true, nil
		})
		if err == nil {
			err = out.Flush()
		}
		if err == nil {
			err = buf.Flush()
		}
		written = out.Written()
		return err
	})
	if err != nil {
		return 0, err
	}
	r.size += written
	return removed, nil
}

// finishRun swaps a run's object in, unless the run is one segment from
// which nothing went.
func (m *Manager) finishRun(ctx context.Context, p *partition, r *run, pol recompactPolicy) error {
	if len(r.segments) == 1 && r.removed == 0 {
		return nil
	}
	base := r.segments[0].BaseOffset
	ix := segmentobject.NewIndexer(base, pol.indexInterval)
	if err := addBatches(ix, r.spool, 0, r.size); err != nil {
		return fmt.Errorf("recompaction spool: %w", err)
	}
	offsetIndex, timeIndex, _, maxTimestamp := ix.Finish()
	src := segmentobject.Source{
		BaseOffset: base, NextOffset: r.segments[len(r.segments)-1].EndOffset + 1, MaxTimestamp: maxTimestamp,
		Log: io.NewSectionReader(r.spool, 0, r.size), LogSize: r.size,
		OffsetIndex: offsetIndex, TimeIndex: timeIndex, Epochs: runEpochs(r.segments),
	}
	return m.swapIn(ctx, p, r.segments, r.spool, src, r.removed)
}

// runEpochs joins the leader epochs of consecutive segments, dropping an
// entry that only repeats the epoch before it.
func runEpochs(run []meta.RemoteSegment) []segmentobject.EpochEntry {
	var out []segmentobject.EpochEntry
	for _, s := range run {
		for _, e := range s.LeaderEpochs {
			if n := len(out); n > 0 && out[n-1].Epoch == e.Epoch {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// swapIn uploads a run's replacement from spool and commits it in place of
// the run, holding an upload slot (takeUploadSlot) until its PUT is done.
func (m *Manager) swapIn(ctx context.Context, p *partition, run []meta.RemoteSegment, spool *os.File, src segmentobject.Source, removed int) error {
	id := uuid.New()
	key := segmentobject.SegmentKey(p.prefix, src.BaseOffset, id)
	replaces := make([]uuid.UUID, len(run))
	for i, s := range run {
		replaces[i] = s.ID
	}
	// The slot is held from before the replacement begins (no begun
	// replacement waits for one) to the end of its PUT.
	release, err := m.takeUploadSlot(ctx)
	if err != nil {
		return err
	}
	release = sync.OnceFunc(release)
	defer release()
	err = m.propose(ctx, meta.BeginSegmentReplace{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(),
		SegmentID: id, Replaces: replaces, MaxTimestamp: src.MaxTimestamp, SizeBytes: src.LogSize,
		LeaderEpochs: src.Epochs, ObjectKey: key,
	})
	if err != nil {
		m.metrics.failures.WithLabelValues("begin").Inc()
		return fmt.Errorf("begin replacement of %d segments from %d: %w", len(run), src.BaseOffset, err)
	}
	if err := m.reached(stepReplaceBegun); err != nil {
		return err
	}
	size := src.ObjectSize()
	timeout := m.cfg.AttemptTimeout + time.Duration(float64(size)/float64(m.cfg.MinUploadRate)*float64(time.Second))
	_, err = m.retry(ctx, timeout, func(ctx context.Context) error {
		src.Log = io.NewSectionReader(spool, 0, src.LogSize)
		return m.putObject(ctx, key, src)
	}, func(attempt int, err error) {
		m.metrics.failures.WithLabelValues("put").Inc()
		m.logger.Warn("offload: recompacted segment put failed", "topic", p.Topic, "partition", p.Partition,
			"base_offset", src.BaseOffset, "key", key, "attempt", attempt, "err", err)
	})
	release()
	if err != nil {
		return fmt.Errorf("put recompacted segment %d as %s: %w", src.BaseOffset, key, err)
	}
	if err := m.reached(stepReplacePut); err != nil {
		return err
	}
	err = m.commit(ctx, p, id, meta.CommitSegmentReplace{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(),
		SegmentID: id, RetireAtMs: m.clock.Now().Add(m.cfg.RetireDelay).UnixMilli(),
	})
	if errors.Is(err, meta.ErrSegmentState) {
		// Retention deleted a segment of the run meanwhile, or another
		// leader's pass abandoned the replacement: it can never commit,
		// and the pass ends without moving the checkpoint past a run
		// it did not rewrite.
		if aerr := m.abandon(ctx, p, meta.RemoteSegment{ID: id, BaseOffset: src.BaseOffset, EndOffset: src.NextOffset - 1, ObjectKey: key}); aerr != nil {
			return aerr
		}
		return fmt.Errorf("%w: %d segments from %d: %w", errReplaceAbandoned, len(run), src.BaseOffset, err)
	}
	if err != nil {
		m.metrics.failures.WithLabelValues("commit").Inc()
		return fmt.Errorf("commit replacement of %d segments from %d: %w", len(run), src.BaseOffset, err)
	}
	p.publisher.noteTail(id, size-src.LogSize)
	m.metrics.recompactBytes.WithLabelValues("written").Add(float64(size))
	m.metrics.recompactRecords.Add(float64(removed))
	for range run {
		m.metrics.remoteDeletes.WithLabelValues("recompacted").Inc()
	}
	m.logger.Info("offload: segments recompacted", "topic", p.Topic, "partition", p.Partition,
		"base_offset", src.BaseOffset, "end_offset", src.NextOffset-1, "segments", len(run),
		"records_removed", removed, "bytes", size, "key", key)
	if err := m.reached(stepReplaceCommitted); err != nil {
		return err
	}
	return m.publish(ctx, p, false)
}

// scanObject reads the log of a segment's object from the start, batch by
// batch, each checked (record.Validate), and calls fn with each until it
// returns false. One GET streams the whole log.
func (m *Manager) scanObject(ctx context.Context, s meta.RemoteSegment, fn func(record.Header, []byte) (bool, error)) error {
	rc, err := m.store.Get(ctx, s.ObjectKey, 0, s.SizeBytes)
	if err != nil {
		m.metrics.failures.WithLabelValues("read").Inc()
		return fmt.Errorf("read %s: %w", s.ObjectKey, err)
	}
	defer rc.Close()
	m.metrics.recompactBytes.WithLabelValues("read").Add(float64(s.SizeBytes))
	r := bufio.NewReaderSize(rc, 1<<20)
	var batch []byte
	for offset, read := s.BaseOffset, int64(0); read < s.SizeBytes; {
		head, err := r.Peek(record.HeaderSize)
		if err != nil {
			return fmt.Errorf("read %s at byte %d: %w", s.ObjectKey, read, err)
		}
		h, err := record.ParseHeader(head)
		if err != nil || h.BaseOffset != offset || read+int64(h.Size()) > s.SizeBytes {
			return fmt.Errorf("%w: %s: batch at byte %d (offset %d, want %d): %v", ErrCorruptObject, s.ObjectKey, read, h.BaseOffset, offset, err)
		}
		if cap(batch) < h.Size() {
			batch = make([]byte, h.Size())
		}
		batch = batch[:h.Size()]
		if _, err := io.ReadFull(r, batch); err != nil {
			return fmt.Errorf("read %s at byte %d: %w", s.ObjectKey, read, err)
		}
		if _, err := record.Validate(batch); err != nil {
			return fmt.Errorf("%w: %s: batch at offset %d: %w", ErrCorruptObject, s.ObjectKey, offset, err)
		}
		more, err := fn(h, batch)
		if err != nil || !more {
			return err
		}
		offset, read = h.NextOffset(), read+int64(h.Size())
	}
	return nil
}
