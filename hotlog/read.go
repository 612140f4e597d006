package hotlog

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Section is a byte range of a segment's .log holding whole batches, for a
// caller to send with sendfile(2) or pread(2) at the explicit Position:
// never through the file's shared offset, and never by closing File. The
// file stays open, and the bytes unchanged, until Release. A Section is not
// safe for concurrent use; Release it exactly once.
type Section struct {
	File     *os.File
	Position int64
	Length   int64
	// FirstOffset is the base offset of the first batch, which may be below
	// the offset asked for; NextOffset is the offset after the last batch.
	FirstOffset int64
	NextOffset  int64

	state *state
	files *segmentFiles
}

// Release lets the log close or change the section's file again.
func (s *Section) Release() {
	if s.files != nil {
		s.files.release()
		s.files = nil
	}
	if s.state != nil {
		s.state.release()
		s.state = nil
	}
}

// ReadAll returns a copy of the section's bytes.
func (s *Section) ReadAll() ([]byte, error) {
	b := make([]byte, s.Length)
	if s.Length == 0 {
		return b, nil
	}
	n, err := s.File.ReadAt(b, s.Position)
	if int64(n) < s.Length {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("hotlog: read section of %s: %w", s.File.Name(), err)
	}
	return b, nil
}

// Read returns whole batches starting with the one that holds offset, as
// many as fit in maxBytes, but always at least that one batch, however
// large (Kafka's KIP-74 rule). Batches come from one segment; the caller
// reads the next ones at NextOffset. Reading at the log end returns an
// empty Section; below the log start or past the log end it fails with an
// *OffsetOutOfRangeError. Read never blocks on the writer, and never
// returns bytes of a batch that is not completely written.
func (l *Log) Read(offset int64, maxBytes int) (*Section, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	st := l.acquireState()
	section, err := l.readState(st, offset, maxBytes)
	if err != nil || section.files == nil {
		st.release()
		return section, err
	}
	section.state = st
	return section, nil
}

// ReadBytes is Read followed by ReadAll and Release.
func (l *Log) ReadBytes(offset int64, maxBytes int) ([]byte, error) {
	section, err := l.Read(offset, maxBytes)
	if err != nil {
		return nil, err
	}
	defer section.Release()
	return section.ReadAll()
}

// ReadSegmentBytes is ReadBytes within the sealed segment whose base
// offset is base, from offset on, below the log start too: the log
// cleaner rewrites whole a segment that DeleteRecords, or a follower
// taking its leader's start, put the log start inside (what lies below
// the start cannot be read, but a key's older value above it can, and
// must go before the key's tombstone may).
func (l *Log) ReadSegmentBytes(base, offset int64, maxBytes int) ([]byte, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	st := l.acquireState()
	defer st.release()
	i := st.segmentFor(base)
	if i < 0 || i == len(st.segments)-1 || st.segments[i].baseOffset != base || offset < base {
		return nil, outOfRange(offset, st.logStartOffset, st.logEndOffset())
	}
	section, err := l.readSegment(st, st.segments[i], offset, maxBytes)
	if err != nil {
		return nil, err
	}
	defer section.Release()
	return section.ReadAll()
}

func (l *Log) readState(st *state, offset int64, maxBytes int) (*Section, error) {
	logEnd := st.logEndOffset()
	if offset < st.logStartOffset || offset > logEnd {
		return nil, outOfRange(offset, st.logStartOffset, logEnd)
	}
	if offset == logEnd {
		return &Section{FirstOffset: offset, NextOffset: offset}, nil
	}
	return l.readSegment(st, st.segments[st.segmentFor(offset)], offset, maxBytes)
}

// readSegment reads from offset in segment s of state st.
func (l *Log) readSegment(st *state, s *segment, offset int64, maxBytes int) (*Section, error) {
	tail := s.tail.Load()
	if offset >= tail.nextOffset {
		// TruncateTo lowered this segment's end after the state was taken.
		return nil, outOfRange(offset, st.logStartOffset, tail.nextOffset)
	}
	for attempt := 0; ; attempt++ {
		files, err := s.acquireFiles()
		if errors.Is(err, errSegmentGone) {
			if l.closed.Load() {
				return nil, ErrClosed
			}
			// Retention deleted the segment after the state was taken.
			return nil, outOfRange(offset, l.LogStartOffset(), l.LogEndOffset())
		}
		if err != nil {
			return nil, fmt.Errorf("hotlog: open segment %d: %w", s.baseOffset, err)
		}
		position, end, first, next, err := s.section(files, tail, offset, maxBytes)
		if err == nil {
			return &Section{File: files.log, Position: position, Length: end - position, FirstOffset: first, NextOffset: next, files: files}, nil
		}
		files.release()
		if attempt == 0 && s.repairAfter(err) {
			tail = s.tail.Load()
			continue
		}
		return nil, fmt.Errorf("hotlog: read offset %d: %w", offset, err)
	}
}

// section finds the bytes to return for a read of offset: the batch that
// holds it (segment.locate), then whole batches up to start+maxBytes, found
// the same way from the last index entry at or below that position.
func (s *segment) section(files *segmentFiles, tail *segmentTail, offset int64, maxBytes int) (start, end, first, next int64, err error) {
	r := newHeaderReader(files.log, tail.size)
	defer r.close()
	start, h, err := s.locate(files, tail, r, offset)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	first = h.BaseOffset
	firstEnd := start + int64(h.Size())
	limit := tail.size
	if int64(maxBytes) < tail.size-start {
		limit = max(start+int64(maxBytes), firstEnd)
	}
	if limit >= tail.size {
		return start, tail.size, first, tail.nextOffset, nil
	}
	if limit == firstEnd {
		return start, firstEnd, first, h.NextOffset(), nil
	}
	rel, end := files.index.lookupPosition(min(tail.indexEntries, files.index.capacity()), limit)
	if end > firstEnd {
		h, err = s.entryHeader(r, rel, end)
	} else {
		end = firstEnd
		h, err = r.at(end)
	}
	for err == nil && end+int64(h.Size()) <= limit {
		end += int64(h.Size())
		h, err = r.at(end)
	}
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return start, end, first, h.BaseOffset, nil
}
