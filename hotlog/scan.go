package hotlog

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/stratalog/strata/record"
)

// A headerReader's first read at a position stops at the end of its page
// (copying a second page costs more than the header a lookup of a large
// batch needs); reads that follow a walk over small batches are one index
// interval's worth, so a walk from an index entry costs one or two preads.
const (
	pageSize       = 4096
	headerReadSize = 4096
)

var headerBuffers = sync.Pool{New: func() any {
	b := make([]byte, headerReadSize)
	return &b
}}

// headerReader reads batch headers (not records) from a .log through a
// small buffer, so walking forward over small batches costs one pread per
// buffer rather than per batch. It never reads at or past limit.
type headerReader struct {
	file  *os.File
	limit int64
	buf   *[]byte
	start int64 // file position of (*buf)[0]
	n     int   // valid bytes in *buf
}

func newHeaderReader(file *os.File, limit int64) *headerReader {
	return &headerReader{file: file, limit: limit, buf: headerBuffers.Get().(*[]byte)}
}

// close returns the buffer to the pool.
func (r *headerReader) close() { headerBuffers.Put(r.buf) }

// at returns the header of the batch at pos, which must lie wholly below
// the limit.
func (r *headerReader) at(pos int64) (record.Header, error) {
	if pos < 0 || pos+record.HeaderSize > r.limit {
		return record.Header{}, fmt.Errorf("%w: %s: batch header at %d runs past %d", ErrCorruptFile, r.file.Name(), pos, r.limit)
	}
	if pos < r.start || pos+record.HeaderSize > r.start+int64(r.n) {
		buf := *r.buf
		want := max(record.HeaderSize, pageSize-pos%pageSize)
		if r.n > 0 && pos-r.start < headerReadSize {
			want = int64(len(buf)) // walking over small batches
		}
		want = min(want, r.limit-pos)
		n, err := r.file.ReadAt(buf[:want], pos)
		if n < record.HeaderSize {
			return record.Header{}, fmt.Errorf("read %s at %d: %w", r.file.Name(), pos, err)
		}
		r.start, r.n = pos, n
	}
	h, err := record.ParseHeader((*r.buf)[pos-r.start : r.n])
	if err != nil {
		return h, fmt.Errorf("%w: %s: batch at %d: %w", ErrCorruptFile, r.file.Name(), pos, err)
	}
	if pos+int64(h.Size()) > r.limit {
		return h, fmt.Errorf("%w: %s: batch at %d of %d bytes runs past %d", ErrCorruptFile, r.file.Name(), pos, h.Size(), r.limit)
	}
	return h, nil
}

// errIndexMismatch means an index entry names a batch the log does not
// have where the entry says. A sealed segment's indexes are then rebuilt
// from its log (segment.repairAfter).
var errIndexMismatch = fmt.Errorf("%w: index entry does not match the log", ErrCorruptFile)

// entryHeader reads the header at an offset-index entry's position and
// checks that it is the batch the entry names. Position 0 is the segment
// start, not an entry.
func (s *segment) entryHeader(r *headerReader, relativeOffset uint32, position int64) (record.Header, error) {
	h, err := r.at(position)
	if err == nil && h.BaseOffset != s.baseOffset+int64(relativeOffset) {
		err = fmt.Errorf("batch there has base offset %d", h.BaseOffset)
	}
	if err != nil && position > 0 {
		return h, fmt.Errorf("%w: entry (%d, %d) of segment %d: %w", errIndexMismatch, relativeOffset, position, s.baseOffset, err)
	}
	return h, err
}

// locate returns the position and header of the batch holding offset: a
// binary search in the mapped index for the last entry at or below it,
// then a walk over batch headers, checking the entry and the continuity of
// offsets on the way. The walk covers about one index interval.
func (s *segment) locate(files *segmentFiles, tail *segmentTail, r *headerReader, offset int64) (int64, record.Header, error) {
	rel, pos := files.index.lookupOffset(min(tail.indexEntries, files.index.capacity()), uint32(offset-s.baseOffset))
	h, err := s.entryHeader(r, rel, pos)
	for err == nil && h.LastOffset() < offset {
		next := h.NextOffset()
		pos += int64(h.Size())
		if h, err = r.at(pos); err == nil && h.BaseOffset != next {
			err = fmt.Errorf("%w: %s: batch at %d has base offset %d, want %d", ErrCorruptFile, r.file.Name(), pos, h.BaseOffset, next)
		}
	}
	return pos, h, err
}

// repairAfter rebuilds a sealed segment's indexes when err says they
// disagree with its log, and reports whether the caller should try again.
func (s *segment) repairAfter(err error) bool {
	if !errors.Is(err, errIndexMismatch) || !s.tail.Load().sealed {
		return false
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	tail := s.tail.Load()
	if s.detached || !tail.sealed { // TruncateTo made it active meanwhile
		return false
	}
	s.log.logger.Warn("hotlog: rebuilding indexes of sealed segment", "segment", s.baseOffset, "err", err)
	s.dropFilesLocked()
	rebuilt, rebuildErr := s.log.rebuildSealedIndexes(s, tail.size, tail.nextOffset)
	if rebuildErr != nil {
		s.log.logger.Error("hotlog: rebuilding indexes failed", "segment", s.baseOffset, "err", rebuildErr)
		return false
	}
	s.tail.Store(rebuilt)
	return true
}

// batchReader reads whole batches forward through a .log of size bytes in
// large chunks, for recovery's CRC checks.
type batchReader struct {
	file  *os.File
	size  int64
	buf   []byte
	start int64
	n     int
}

// recoveryReadSize is recovery's read chunk.
const recoveryReadSize = 1 << 20

// batch returns the bytes of the batch at pos as its header declares them,
// or an error when they are not all present (a torn tail) or the header
// cannot be parsed. The slice is valid until the next call. The length
// comes from the file, but a batch is never read past the end of the file,
// so a corrupt length cannot make it allocate more than the file holds.
func (r *batchReader) batch(pos int64) ([]byte, error) {
	if err := r.fill(pos, record.HeaderSize); err != nil {
		return nil, err
	}
	h, err := record.ParseHeader(r.buf[pos-r.start : r.n])
	if err != nil {
		return nil, err
	}
	if err := r.fill(pos, int64(h.Size())); err != nil {
		return nil, err
	}
	off := pos - r.start
	return r.buf[off : off+int64(h.Size())], nil
}

// fill makes [pos, pos+length) buffered.
func (r *batchReader) fill(pos, length int64) error {
	if pos+length > r.size {
		return fmt.Errorf("%w: %d bytes at %d, file ends at %d", record.ErrTruncated, length, pos, r.size)
	}
	if pos >= r.start && pos+length <= r.start+int64(r.n) {
		return nil
	}
	want := min(max(length, recoveryReadSize), r.size-pos)
	if int64(len(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	n, err := r.file.ReadAt(r.buf[:want], pos)
	if int64(n) < length {
		return fmt.Errorf("read %s at %d: %w", r.file.Name(), pos, err)
	}
	r.start, r.n = pos, n
	return nil
}

// restoreTail rebuilds the writer's bookkeeping for a segment whose first
// size bytes (ending just before nextOffset) and first indexEntries and
// timeIndexEntries index entries are valid: the index counts, where the
// last index entry points, and the max timestamp, which the time index
// holds up to the last index entry and a short header walk supplies for
// the batches after it.
func restoreTail(s *segment, files *segmentFiles, size, nextOffset int64, indexEntries, timeIndexEntries int) (*segmentTail, error) {
	t := emptyTail(s.baseOffset)
	t.size, t.nextOffset = size, nextOffset
	t.indexEntries, t.timeIndexEntries = indexEntries, timeIndexEntries
	if indexEntries > 0 {
		_, pos := files.index.entry(indexEntries - 1)
		t.lastIndexedPosition = int64(pos)
	}
	if timeIndexEntries > 0 {
		ts, rel := files.timeIndex.entry(timeIndexEntries - 1)
		t.maxTimestamp, t.offsetOfMaxTimestamp = ts, s.baseOffset+int64(rel)
	}
	r := newHeaderReader(files.log, size)
	defer r.close()
	for pos := t.lastIndexedPosition; pos < size; {
		h, err := r.at(pos)
		if err != nil {
			return nil, err
		}
		if h.MaxTimestamp > t.maxTimestamp {
			t.maxTimestamp, t.offsetOfMaxTimestamp = h.MaxTimestamp, h.BaseOffset
		}
		pos += int64(h.Size())
		if pos == size && h.NextOffset() != nextOffset {
			return nil, fmt.Errorf("%w: %s: last batch ends at offset %d, want %d", ErrCorruptFile, files.log.Name(), h.NextOffset(), nextOffset)
		}
	}
	return t, nil
}
