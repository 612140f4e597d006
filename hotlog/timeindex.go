package hotlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// timeIndex is a segment's sparse time index: the mapped .timeindex file
// (format.go). Like offsetIndex, its valid entry count lives in the tail.
type timeIndex []byte

// capacity is the number of entries the mapping holds.
func (x timeIndex) capacity() int { return len(x) / timeIndexEntrySize }

func (x timeIndex) entry(i int) (maxTimestamp int64, relativeOffset uint32) {
	b := x[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint32(b[8:])
}

func (x timeIndex) put(i int, maxTimestamp int64, relativeOffset uint32) {
	b := x[i*timeIndexEntrySize:]
	binary.BigEndian.PutUint64(b, uint64(maxTimestamp))
	binary.BigEndian.PutUint32(b[8:], relativeOffset)
}

// lastBelow returns the last of the first n entries whose timestamp is
// below timestamp. Every batch up to and including the one at that entry's
// offset has a max timestamp below timestamp, so a search for the first
// batch at or above timestamp may start there. ok=false means no entry
// qualifies and the search starts at the segment start.
func (x timeIndex) lastBelow(n int, timestamp int64) (maxTimestamp int64, relativeOffset uint32, ok bool) {
	i := sort.Search(n, func(i int) bool {
		ts, _ := x.entry(i)
		return ts >= timestamp
	})
	if i == 0 {
		return 0, 0, false
	}
	ts, rel := x.entry(i - 1)
	return ts, rel, true
}

// countBelow returns how many of the first n entries point below
// relativeOffset.
func (x timeIndex) countBelow(n int, relativeOffset uint32) int {
	return sort.Search(n, func(i int) bool {
		_, rel := x.entry(i)
		return rel >= relativeOffset
	})
}

// check verifies that the first n entries fit the mapping, have strictly
// increasing timestamps and non-decreasing offsets below nextRelative.
func (x timeIndex) check(n int, nextRelative int64) error {
	if n > x.capacity() {
		return fmt.Errorf("%w: %d time index entries in room for %d", ErrCorruptFile, n, x.capacity())
	}
	var prevTimestamp, prevRel int64 = -1 << 63, 0
	for i := range n {
		ts, rel := x.entry(i)
		if (i > 0 && ts <= prevTimestamp) || int64(rel) < prevRel || int64(rel) >= nextRelative {
			return fmt.Errorf("%w: time index entry %d (%d, %d) after (%d, %d), next relative offset %d",
				ErrCorruptFile, i, ts, rel, prevTimestamp, prevRel, nextRelative)
		}
		prevTimestamp, prevRel = ts, int64(rel)
	}
	return nil
}

// TimestampOffset pairs a timestamp with an offset.
type TimestampOffset struct {
	Timestamp int64
	Offset    int64
}

// OffsetForTimestamp finds the first batch holding an offset at or after
// from and the log start whose max timestamp is at or above timestamp
// (Kafka's ListOffsets by timestamp) and returns its base offset, raised
// to that start if the batch straddles it, with the batch's max
// timestamp. from is the caller's start when it is above the log's (a
// remote log start DeleteRecords moved first); 0 for the log's own. The
// answer has batch granularity: the exact record is inside that batch, and
// a caller that needs it (ListOffsets answers with the first record at or
// above timestamp) reads that one batch.
// ok=false means no batch qualifies.
//
// It scans the segments' in-memory max timestamps for the first segment
// that can hold the answer, then searches that segment's time index for the
// last entry below timestamp and walks batch headers from there.
func (l *Log) OffsetForTimestamp(timestamp, from int64) (result TimestampOffset, ok bool, err error) {
	if timestamp < 0 {
		return TimestampOffset{}, false, fmt.Errorf("%w: timestamp %d (special timestamps are the caller's)", ErrInvalidArgument, timestamp)
	}
	if l.closed.Load() {
		return TimestampOffset{}, false, ErrClosed
	}
	st := l.acquireState()
	defer st.release()
	start := max(from, st.logStartOffset)
	for _, s := range st.segments {
		tail := s.tail.Load()
		if tail.maxTimestamp < timestamp || tail.nextOffset <= start {
			continue
		}
		result, ok, err := s.firstBatchAtOrAfter(timestamp, start)
		if errors.Is(err, errSegmentGone) {
			continue // deleted by retention since the state was taken
		}
		if err != nil || ok {
			result.Offset = max(result.Offset, start)
			return result, ok, err
		}
	}
	return TimestampOffset{}, false, nil
}

// firstBatchAtOrAfter finds the segment's first batch with a max timestamp
// at or above timestamp that holds an offset at or above logStart.
func (s *segment) firstBatchAtOrAfter(timestamp, logStart int64) (result TimestampOffset, ok bool, err error) {
	for attempt := 0; ; attempt++ {
		result, ok, err = s.searchTimestamp(timestamp, logStart)
		if err != nil && attempt == 0 && s.repairAfter(err) {
			continue
		}
		return result, ok, err
	}
}

func (s *segment) searchTimestamp(timestamp, logStart int64) (TimestampOffset, bool, error) {
	tail := s.tail.Load()
	files, err := s.acquireFiles()
	if err != nil {
		return TimestampOffset{}, false, err
	}
	defer files.release()
	r := newHeaderReader(files.log, tail.size)
	defer r.close()
	position := int64(0)
	timeIndexEntries := min(tail.timeIndexEntries, files.timeIndex.capacity())
	if maxTimestamp, rel, ok := files.timeIndex.lastBelow(timeIndexEntries, timestamp); ok {
		// The entry names the batch that carries its timestamp: check it.
		pos, h, err := s.locate(files, tail, r, s.baseOffset+int64(rel))
		if err == nil && (h.BaseOffset != s.baseOffset+int64(rel) || h.MaxTimestamp != maxTimestamp) {
			err = fmt.Errorf("%w: time index entry (%d, %d) of segment %d names a batch at %d with max timestamp %d",
				errIndexMismatch, maxTimestamp, rel, s.baseOffset, h.BaseOffset, h.MaxTimestamp)
		}
		if err != nil {
			return TimestampOffset{}, false, err
		}
		position = pos
	}
	for position < tail.size {
		h, err := r.at(position)
		if err != nil {
			return TimestampOffset{}, false, err
		}
		if h.MaxTimestamp >= timestamp && h.LastOffset() >= logStart {
			return TimestampOffset{Timestamp: h.MaxTimestamp, Offset: h.BaseOffset}, true, nil
		}
		position += int64(h.Size())
	}
	return TimestampOffset{}, false, nil
}

// MaxTimestamp returns the largest batch max timestamp in the log and the
// base offset of the first batch that carries it (ListOffsets -3, at batch
// granularity like OffsetForTimestamp). ok=false means no batch carries a
// timestamp.
func (l *Log) MaxTimestamp() (result TimestampOffset, ok bool) {
	st := l.state.Load()
	result.Timestamp = NoTimestamp
	for _, s := range st.segments {
		if tail := s.tail.Load(); tail.maxTimestamp > result.Timestamp {
			result = TimestampOffset{Timestamp: tail.maxTimestamp, Offset: max(tail.offsetOfMaxTimestamp, st.logStartOffset)}
		}
	}
	return result, result.Timestamp != NoTimestamp
}
