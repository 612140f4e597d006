package remotefetch

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// scanner walks the batches of one segment's log forward from a position,
// reading the log through the Reader's blocks. It hands out a batch's bytes
// only after record.Validate has checked them (length, CRC-32C, codec,
// record count), itself or as their block arrived (block.verifiedAt), and
// it checks what the CRC does not cover: that every batch lies inside the
// log and inside the segment's offsets, and that its base offset is the
// one the chain from a trusted anchor gives. The anchor
// is the base offset the checksummed offset index records for the starting
// position (or, resuming a sequential read, the offset the read before
// ended at, itself reached by such a chain); from there each batch must
// start where the one before ended, as the hot log writes them, densely.
// So a base offset damaged in transit, which no CRC covers, cannot make a
// read skip or renumber records. Anything that fails is a *corruptError;
// verifiedScan decides what to do about it. Batches within one block are
// handed out as slices of it, without a copy (see gathered). The scanner
// holds a reference to its current block until it moves to another or
// verifiedScan closes it.
type scanner struct {
	// blocks returns a block of the log, with a reference for the scanner:
	// Reader.block, through the caches.
	blocks    func(ctx context.Context, t target, st *stream) (*block, error)
	blockSize int64
	seg       segmentobject.ManifestSegment
	ix        *segmentobject.Index
	st        *stream // nil: a lookup, not a consumer's read
	pos       int64   // log position of the next batch
	wantBase  int64   // the base offset the next batch must have

	blockIndex int64 // the block last read, -1 for none
	block      *block
	touched    []blockID // every block read, for eviction if verification fails
}

// corruptError locates bytes that failed verification.
type corruptError struct {
	pos int64 // log position of the batch
	err error
}

func (e *corruptError) Error() string { return fmt.Sprintf("at log position %d: %v", e.pos, e.err) }
func (e *corruptError) Unwrap() error { return e.err }

// newScanner returns a scanner at log position pos, where the batch must
// start at offset base.
func newScanner(r *Reader, seg segmentobject.ManifestSegment, ix *segmentobject.Index, st *stream, pos, base int64) *scanner {
	return &scanner{blocks: r.block, blockSize: r.cfg.BlockSize, seg: seg, ix: ix, st: st, pos: pos, wantBase: base, blockIndex: -1}
}

// next reads the header of the batch at the scanner's position and moves
// past the batch. ok is false at the end of the log. The header is checked
// against the segment but the batch is not yet verified: only appendBatch
// hands out bytes.
func (s *scanner) next(ctx context.Context) (h record.Header, pos int64, ok bool, err error) {
	pos, logLength := s.pos, s.ix.LogLength()
	if pos >= logLength {
		return h, pos, false, nil
	}
	fail := func(format string, args ...any) (record.Header, int64, bool, error) {
		return h, pos, false, &corruptError{pos: pos, err: fmt.Errorf(format, args...)}
	}
	if logLength-pos < record.HeaderSize {
		return fail("the log ends %d bytes into a batch header", logLength-pos)
	}
	var header [record.HeaderSize]byte
	if err := s.read(ctx, header[:], pos); err != nil {
		return h, pos, false, err
	}
	if h, err = record.ParseHeader(header[:]); err != nil {
		return fail("%w", err)
	}
	size := int64(h.Size())
	switch {
	case size > logLength-pos:
		return fail("batch of %d bytes runs past the log's end at %d", size, logLength)
	case h.BaseOffset != s.wantBase || h.NextOffset() > s.seg.NextOffset() || h.LastOffsetDelta < 0:
		return fail("batch offsets [%d, %d) do not follow on from offset %d within the segment's [%d, %d)", h.BaseOffset, h.NextOffset(), s.wantBase, s.seg.BaseOffset, s.seg.NextOffset())
	}
	s.pos += size
	s.wantBase = h.NextOffset()
	return h, pos, true, nil
}

// gathered is a run of verified batches that follow one another in the
// log and lie in one block. It only notes where, holding a reference to
// the block: the bytes are a slice of the cached block, not a copy. The
// one exception is a batch that spans blocks, which is copied and runs
// alone (takes).
type gathered struct {
	block      *block // the block holding the run
	blockIndex int64
	from, to   int64  // the run's bytes in block
	copied     []byte // a lone batch that spans blocks
}

// takes reports whether the batch of size bytes at log position pos may
// join the run: the run is empty, or both lie in one block.
func (g *gathered) takes(pos int64, size int, blockSize int64) bool {
	return g.mayGrow(pos, blockSize) && (g.len() == 0 || (pos+int64(size)-1)/blockSize == g.blockIndex)
}

// mayGrow reports whether a batch starting at log position pos could join
// the run, before its header is read: a read that stops at a block's end
// must not wait for the next block's GET to learn that it stops. A batch
// whose header runs past the block's end spans blocks.
func (g *gathered) mayGrow(pos, blockSize int64) bool {
	if g.len() == 0 {
		return true
	}
	return g.copied == nil && pos/blockSize == g.blockIndex && (pos+record.HeaderSize-1)/blockSize == g.blockIndex
}

func (g *gathered) len() int {
	if g.copied != nil {
		return len(g.copied)
	}
	return int(g.to - g.from)
}

// bytes is the run. It may share memory with the block cache: read only,
// and only while g, or whoever share passed its reference to, holds it.
func (g *gathered) bytes() []byte {
	if g.copied != nil || g.block == nil {
		return g.copied
	}
	return g.block.data[g.from:g.to:g.to]
}

// share passes g's reference to its block, if the run is a slice of one, to
// a Result.
func (g *gathered) share() *sharedMemory {
	if g.copied != nil || g.block == nil {
		return nil
	}
	b := g.block
	g.block = nil
	return &sharedMemory{release: b.release}
}

// release gives back g's reference to its block, if it holds one: for a
// run that goes nowhere.
func (g *gathered) release() {
	if g.copied == nil && g.block != nil {
		g.block.release()
		g.block = nil
	}
}

// appendBatch verifies the batch next returned and adds it to g, which
// must take it (takes). On failure g is left as it was.
func (s *scanner) appendBatch(ctx context.Context, g *gathered, h record.Header, pos int64) error {
	size := int64(h.Size())
	first := pos / s.blockSize
	if g.copied == nil && first == (pos+size-1)/s.blockSize && (g.block == nil || first == g.blockIndex) {
		if err := s.load(ctx, first); err != nil {
			return err
		}
		off := pos - first*s.blockSize
		if off+size > int64(len(s.block.data)) {
			return &corruptError{pos: pos, err: fmt.Errorf("block %d holds %d bytes, the batch needs %d", first, len(s.block.data), off+size)}
		}
		if !s.block.verifiedAt(off) {
			if _, err := record.Validate(s.block.data[off : off+size]); err != nil {
				return &corruptError{pos: pos, err: err}
			}
		}
		if g.block == nil {
			s.block.hold()
			g.block, g.blockIndex, g.from = s.block, first, off
		}
		g.to = off + size
		return nil
	}
	run := make([]byte, size)
	if err := s.read(ctx, run, pos); err != nil {
		return err
	}
	got, err := record.Validate(run)
	if err != nil {
		return &corruptError{pos: pos, err: err}
	}
	if got != h {
		// Read again from blocks loaded anew (the first evicted
		// meanwhile): the CRC does not cover the base offset and the
		// leader epoch next checked.
		return &corruptError{pos: pos, err: fmt.Errorf("the batch's header changed between reads: %+v, then %+v", h, got)}
	}
	g.copied = run
	return nil
}

// load makes block b of the log the scanner's current block, letting go
// of the one before.
func (s *scanner) load(ctx context.Context, b int64) error {
	if b == s.blockIndex {
		return nil
	}
	id := blockID{s.seg.Key, b}
	block, err := s.blocks(ctx, target{id: id, seg: s.seg, ix: s.ix}, s.st)
	if err != nil {
		return err
	}
	s.close()
	s.block, s.blockIndex = block, b
	s.touched = append(s.touched, id)
	return nil
}

// close lets go of the scanner's current block.
func (s *scanner) close() {
	if s.block != nil {
		s.block.release()
		s.block, s.blockIndex = nil, -1
	}
}

// read copies the log bytes at pos into p, block by block.
func (s *scanner) read(ctx context.Context, p []byte, pos int64) error {
	for len(p) > 0 {
		if err := s.load(ctx, pos/s.blockSize); err != nil {
			return err
		}
		off := pos - s.blockIndex*s.blockSize
		if off >= int64(len(s.block.data)) {
			return &corruptError{pos: pos, err: fmt.Errorf("block %d holds %d bytes, position %d is past them", s.blockIndex, len(s.block.data), pos)}
		}
		n := copy(p, s.block.data[off:])
		p, pos = p[n:], pos+int64(n)
	}
	return nil
}

// verifiedScan runs scan over a scanner from pos, where the batch must
// start at offset base (see scanner). If scan meets bytes that
// fail verification, every block the scanner touched is evicted (from the
// cache and from every read-ahead window) and scan runs once more on
// blocks fetched afresh; if that fails too, the blocks are evicted again
// and the result is ErrCorrupt: no unverified byte leaves, though what
// scan verified before the bad bytes may.
func (r *Reader) verifiedScan(ctx context.Context, seg segmentobject.ManifestSegment, ix *segmentobject.Index, st *stream, pos, base int64, scan func(*scanner) error) error {
	for attempt := 1; ; attempt++ {
		s := newScanner(r, seg, ix, st, pos, base)
		err := scan(s)
		s.close()
		var corrupt *corruptError
		if !errors.As(err, &corrupt) {
			if attempt > 1 && err == nil {
				r.metrics.corruptRecovered.Add(1)
			}
			return err
		}
		for _, id := range s.touched {
			r.blocks.evict(id)
			r.readAhead.release(id)
		}
		if attempt > 1 {
			r.metrics.corruptFailed.Add(1)
			r.log.Error("segment bytes failed verification twice", "key", seg.Key, "pos", corrupt.pos, "err", corrupt.err)
			return fmt.Errorf("%w: %s %w", ErrCorrupt, seg.Key, corrupt)
		}
		r.log.Warn("segment bytes failed verification, fetching them again", "key", seg.Key, "pos", corrupt.pos, "err", corrupt.err)
	}
}
