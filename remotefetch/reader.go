package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// Reader serves reads of a partition's tiered log, the offsets below the
// broker's local log start, from segment objects in the bucket. It is safe
// for concurrent use. Its background work (block loads, prefetches) belongs
// to it and stops in Close.
type Reader struct {
	cfg       Config
	bucket    Bucket
	source    ManifestSource
	clock     Clock
	log       *slog.Logger
	life      *lifecycle
	retry     *retrier
	blocks    *blockCache
	indexes   *indexCache
	readAhead *readAhead
	metrics   *metrics
}

// Request asks for the batches of a partition from Offset on.
type Request struct {
	Partition Partition
	Offset    int64
	// MaxBytes bounds the batches returned, except that the first batch is
	// returned whole however large it is (Kafka's KIP-74), so a read always
	// makes progress. A read may return less: it ends at its segment's end,
	// and before a batch that lies in another block than the ones before
	// it (see collect).
	MaxBytes int
	// SkipEmpty, for a compacted topic, moves a read that finds only
	// batches without records (where the cleaner removed every record) on
	// past them, block by block and segment by segment, as far as a batch
	// with records or the end of the remote data: handed only empty
	// batches, some clients (librdkafka) report a message too large to
	// fetch.
	SkipEmpty bool
}

// Result is what a read returns.
type Result struct {
	// Records holds whole record batches, byte for byte as stored, each
	// verified against its CRC-32C. The first is the batch holding the
	// requested offset (it may start before it), or the first batch after
	// it when the offset fell in a gap. Never empty. It may share memory
	// with the block cache, so it must not be modified.
	Records []byte
	// NextOffset is the offset after the last batch: where a consumer's
	// next read continues.
	NextOffset int64
	// OnlyEmpty is set by a SkipEmpty read that found nothing but batches
	// compaction emptied up to the end of the tiered data: the hot log
	// goes on from NextOffset, and its records belong beside them (a
	// response of empty batches alone, librdkafka takes for a message too
	// large to fetch).
	OnlyEmpty bool

	shared *sharedMemory // what Records slices, if it is shared; nil for a copy
}

// NewResult returns a Result of records whose Release calls release (if
// not nil) once: for stand-ins of a Reader in the tests of code that reads
// through one (a Reader's own Results release their block).
func NewResult(records []byte, nextOffset int64, release func()) Result {
	return Result{Records: records, NextOffset: nextOffset, shared: &sharedMemory{release: release}}
}

// Release lets the Reader reuse the memory Records shares with its block
// cache, once nothing else holds that block: Records must not be read
// after. It is optional (memory not released is left to the garbage
// collector, and a read into a fresh buffer costs more CPU: docs/bench.md,
// "Cold reads"), and calling it again does nothing.
func (r Result) Release() {
	if r.shared != nil && r.shared.release != nil && r.shared.released.CompareAndSwap(false, true) {
		r.shared.release()
	}
}

// sharedMemory is a Result's reference to the memory its Records slice (a
// block's), given back once however often Release is called.
type sharedMemory struct {
	release  func()
	released atomic.Bool
}

// errBeyondLog is the error of a planned prefetch past the end of a
// segment's log; nobody reads that block, so nobody sees the error.
var errBeyondLog = errors.New("remotefetch: block past the end of the log")

// New returns a Reader of segment objects in bucket, finding segments
// through source.
func New(bucket Bucket, source ManifestSource, cfg Config) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	life := newLifecycle()
	m := newMetrics()
	blocks, err := newBlockCache(cfg, life)
	if err != nil {
		return nil, fmt.Errorf("remotefetch: block cache: %w", err)
	}
	r := &Reader{
		cfg:       cfg,
		bucket:    bucket,
		source:    source,
		clock:     cfg.clock(),
		log:       cfg.logger(),
		life:      life,
		retry:     newRetrier(cfg, m),
		blocks:    blocks,
		indexes:   newIndexCache(cfg.IndexCacheBytes, life),
		readAhead: newReadAhead(cfg),
		metrics:   m,
	}
	m.register(cfg.Registerer, r.Metrics)
	return r, nil
}

// Close stops the Reader's background loads and waits for them, and lets
// go of the cache's and the read-ahead windows' blocks. Reads in progress
// fail with ErrClosed or a cancellation error; later ones with ErrClosed.
func (r *Reader) Close() error {
	r.life.close()
	r.readAhead.close()
	r.blocks.close()
	return nil
}

// Metrics returns the Reader's counters and its caches' figures.
func (r *Reader) Metrics() Metrics {
	m := r.metrics
	return Metrics{
		Reads:            m.reads.Load(),
		ReadBytes:        m.readBytes.Load(),
		BlockGets:        m.bucketGets[kindBlock].Load(),
		BlockGetBytes:    m.bucketBytes[kindBlock].Load(),
		IndexGets:        m.bucketGets[kindIndex].Load(),
		IndexGetBytes:    m.bucketBytes[kindIndex].Load(),
		Retries:          m.retries[kindBlock].Load() + m.retries[kindIndex].Load(),
		Prefetches:       m.prefetches.Load(),
		CorruptRecovered: m.corruptRecovered.Load(),
		CorruptFailed:    m.corruptFailed.Load(),
		FetchTimeouts:    m.fetchTimeouts.Load(),
		Blocks:           r.blocks.Metrics(),
		Indexes:          r.indexes.Metrics(),
	}
}

// Read returns the verified batches of req.Partition from req.Offset, up to
// req.MaxBytes, from one segment object. It fails with ErrOffsetOutOfRange
// outside the tiered log, ErrUnknownPartition, ErrSegmentMissing,
// ErrCorrupt, ErrUnavailable, or ctx's error; on failure no bytes return.
// Reads that continue where the last read of a partition ended are
// sequential: the blocks that follow are prefetched.
func (r *Reader) Read(ctx context.Context, req Request) (Result, error) {
	for {
		res, err := r.read(ctx, req, false)
		if err != nil || !req.SkipEmpty || !onlyEmptyBatches(res.Records) {
			return res, err
		}
		m, err := r.source.Manifest(ctx, req.Partition)
		if err != nil {
			return res, nil // the next read goes on from here
		}
		if res.NextOffset >= m.NextOffset() {
			// The remote data ends here; the hot log goes on.
			res.OnlyEmpty = true
			return res, nil
		}
		res.Release()
		req.Offset = res.NextOffset
	}
}

// gone explains a segment object found missing: when the manifest no
// longer holds offset, remote retention or DeleteRecords deleted the
// segment after this read took the manifest, and the read is out of
// range, as one a moment later would be; else err stands.
func (r *Reader) gone(ctx context.Context, p Partition, offset int64, err error) error {
	m, merr := r.source.Manifest(ctx, p)
	if merr != nil {
		return err
	}
	if _, ok := m.SegmentFor(offset); !ok {
		return outOfRange(m, p, offset)
	}
	return err
}

// onlyEmptyBatches reports whether every batch of whole, verified batches
// holds no record.
func onlyEmptyBatches(batches []byte) bool {
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil || h.NumRecords > 0 {
			return false
		}
		batches = batches[h.Size():]
	}
	return true
}

// read is Read; sequential marks the read's stream as sequential from the
// start, for callers that know they scan (BucketReader).
func (r *Reader) read(ctx context.Context, req Request, sequential bool) (res Result, err error) {
	start := r.clock.Now()
	defer func() { r.metrics.read(r.clock.Now().Sub(start), len(res.Records), err) }()
	defer func() {
		if errors.Is(err, ErrSegmentMissing) {
			err = r.gone(ctx, req.Partition, req.Offset, err)
		}
	}()
	if r.life.closed() {
		return Result{}, ErrClosed
	}
	m, err := r.source.Manifest(ctx, req.Partition)
	if err != nil {
		return Result{}, err
	}
	si, ok := m.SegmentFor(req.Offset)
	if !ok {
		return Result{}, outOfRange(m, req.Partition, req.Offset)
	}
	seg := m.Segments[si]
	ix, err := r.index(ctx, seg)
	if err != nil {
		return Result{}, err
	}
	offset := max(req.Offset, seg.BaseOffset)
	// Resuming, the batch at pos is the one the stream's last read stopped
	// before: it starts at the offset that read ended at, req.Offset.
	st, pos, resume := r.readAhead.begin(req.Partition, req.Offset, seg.Key, sequential)
	base := req.Offset
	if !resume {
		if pos, base, err = ix.StartPosition(offset); err != nil {
			return Result{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, seg.Key, err)
		}
	}
	var end int64
	err = r.verifiedScan(ctx, seg, ix, st, pos, base, func(s *scanner) error {
		res.Release() // what a first scan verified, if this is the second
		res, err = collect(ctx, s, offset, req.MaxBytes)
		end = s.pos
		return err
	})
	if errors.Is(err, ErrCorrupt) && len(res.Records) > 0 {
		// The batches before the bad one passed: return them, and let the
		// next read, which starts at the bad batch, fail.
		err = nil
	}
	if err != nil {
		res.Release()
		return Result{}, err
	}
	r.readAhead.finish(st, res.NextOffset, seg.Key, end, plan(m, si, ix, end, r.cfg.BlockSize, r.cfg.ReadAheadBlocks), r.prefetch)
	return res, nil
}

// collect gathers the batches from the one holding offset, up to maxBytes
// but at least one, within one block: it stops before a batch that would
// take the run into the next block, where the consumer's next read goes on,
// so that Records is a slice of the block rather than a copy (copying the
// runs that crossed a block's end, up to maxBytes each, cost the cold read
// about 8% of its CPU at 8 MiB blocks and 1 MiB fetches; docs/bench.md). A
// first batch that spans two blocks comes alone, copied. If it meets bytes
// that fail verification it returns them as an error, with the verified
// batches before them, and leaves the scanner at the failing batch.
func collect(ctx context.Context, s *scanner, offset int64, maxBytes int) (Result, error) {
	var next int64
	var g gathered
	done := func(err error) (Result, error) {
		return Result{Records: g.bytes(), NextOffset: next, shared: g.share()}, err
	}
	for {
		if !g.mayGrow(s.pos, s.blockSize) {
			break // the next batch, or its header, lies in another block
		}
		h, pos, ok, err := s.next(ctx)
		if err != nil {
			s.pos = pos
			return done(err)
		}
		if !ok {
			break
		}
		if h.NextOffset() <= offset {
			continue
		}
		if g.len() > 0 && (g.len()+h.Size() > maxBytes || !g.takes(pos, h.Size(), s.blockSize)) {
			s.pos = pos // the batch is the next read's
			break
		}
		if err := s.appendBatch(ctx, &g, h, pos); err != nil {
			s.pos = pos
			return done(err)
		}
		next = h.NextOffset()
		if g.len() >= maxBytes {
			break
		}
	}
	if g.len() == 0 {
		return done(&corruptError{pos: s.pos, err: fmt.Errorf("the log ends before offset %d, which the footer says it holds", offset)})
	}
	return done(nil)
}

// index returns a segment's verified index, from the index cache or the
// bucket.
func (r *Reader) index(ctx context.Context, seg segmentobject.ManifestSegment) (*segmentobject.Index, error) {
	return r.indexes.get(ctx, seg.Key, func(ctx context.Context) (*segmentobject.Index, error) {
		return r.loadIndex(ctx, seg)
	})
}

// block returns a block for a read of stream st (nil for none), with a
// reference for the caller: from the stream's read-ahead window, the block
// cache, or a GET shared with every concurrent reader of the block.
func (r *Reader) block(ctx context.Context, t target, st *stream) (*block, error) {
	if f := r.readAhead.held(st, t.id); f != nil {
		b, err := r.blocks.flights.await(ctx, f)
		if err == nil {
			r.blocks.stats.readAheadHits.Add(1)
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		r.readAhead.release(t.id) // the prefetch failed: load it on demand
	}
	if b, ok := r.blocks.get(t.id); ok {
		r.blocks.stats.hits.Add(1)
		b.hold() // the window's
		r.readAhead.hold(st, t.id, completed(b, blockRefs))
		return b, nil
	}
	f, joined, err := r.blocks.flights.join(t.id, r.blockLoader(t))
	if err != nil {
		return nil, err
	}
	if joined {
		r.blocks.stats.merged.Add(1)
	} else {
		r.blocks.stats.misses.Add(1)
	}
	f.hold() // the window's
	r.readAhead.hold(st, t.id, f)
	return r.blocks.flights.wait(ctx, f)
}

// blockLoader returns the load of one block: its index if the target lacks
// it, one ranged GET (retried) into a buffer from the pool, its batches
// checked as they arrive (checker), then the block cache. Each attempt
// takes its buffer once it holds its GET slot and gives it back if it
// fails, so that loads waiting for a slot or backing off (as a slow
// bucket's pile up, pinned by fetches that timed out) hold none: the
// buffers of loads stay within MaxConcurrentGets. The block it returns
// holds one reference, the flight's.
func (r *Reader) blockLoader(t target) func(context.Context) (*block, error) {
	return func(ctx context.Context) (*block, error) {
		ix := t.ix
		if ix == nil {
			var err error
			if ix, err = r.index(ctx, t.seg); err != nil {
				return nil, err
			}
		}
		start := t.id.index * r.cfg.BlockSize
		if start >= ix.LogLength() {
			return nil, errBeyondLog
		}
		size := min(r.cfg.BlockSize, ix.LogLength()-start)
		var b *block
		err := r.retry.do(ctx, kindBlock, t.seg.Key, func() int { return len(b.data) }, func(ctx context.Context) error {
			b = r.blocks.pool.get(size)
			err := r.bucket.ReadAt(ctx, t.seg.Key, b.data, start, newChecker(b, start, ix).filled)
			if err != nil {
				b.release()
				b = nil
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		r.blocks.put(t.id, b)
		return b, nil
	}
}

// prefetch starts loading a block for read-ahead, unless it is cached or
// already loading, and returns what the stream's window should hold, held
// once for it.
func (r *Reader) prefetch(t target) *flight[*block] {
	if b, ok := r.blocks.get(t.id); ok {
		return completed(b, blockRefs)
	}
	f, started, err := r.blocks.flights.pin(t.id, r.blockLoader(t))
	if err != nil {
		return nil
	}
	if started {
		r.metrics.prefetches.Add(1)
	}
	return f
}
