package segmentobject

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// ShortTailError is returned by ParseTail when the tail it was given does
// not reach back far enough; Need is the tail length that does.
type ShortTailError struct{ Need int64 }

func (e *ShortTailError) Error() string {
	return fmt.Sprintf("%v: need the last %d bytes", ErrShortTail, e.Need)
}

// Is makes errors.Is(err, ErrShortTail) true.
func (e *ShortTailError) Is(target error) bool { return target == ErrShortTail }

// Index is the parsed, verified tail of a segment object: what a reader
// needs to map offsets and timestamps to byte ranges of the log section.
// It is immutable and safe for concurrent use.
type Index struct {
	Footer Footer
	Epochs []EpochEntry
	// offsets and times hold the raw index entries (see doc.go).
	offsets []byte
	times   []byte
}

// ParseTail verifies and decodes the last len(tail) bytes of an object of
// objectSize bytes. If tail is shorter than everything after the log, it
// returns a *ShortTailError naming the length that is needed.
func ParseTail(tail []byte, objectSize int64) (*Index, error) {
	if int64(len(tail)) > objectSize {
		return nil, fmt.Errorf("%w: tail of %d bytes from an object of %d", ErrCorrupt, len(tail), objectSize)
	}
	if len(tail) < FooterSize {
		return nil, &ShortTailError{Need: FooterSize}
	}
	f, err := ParseFooter(tail[len(tail)-FooterSize:], objectSize)
	if err != nil {
		return nil, err
	}
	if need := f.TailSize(); int64(len(tail)) < need {
		return nil, &ShortTailError{Need: need}
	}
	tailStart := uint64(objectSize) - uint64(len(tail))
	sectionBytes := func(i int) ([]byte, error) {
		s := f.Sections[i]
		b := tail[s.Offset-tailStart : s.End()-tailStart]
		if got := crc32.Checksum(b, castagnoli); got != s.CRC {
			return nil, fmt.Errorf("%w: section %d crc %#08x, footer says %#08x", ErrCorrupt, i, got, s.CRC)
		}
		return b, nil
	}
	ix := &Index{Footer: f}
	if ix.offsets, err = sectionBytes(SectionOffsetIndex); err != nil {
		return nil, err
	}
	if ix.times, err = sectionBytes(SectionTimeIndex); err != nil {
		return nil, err
	}
	epochs, err := sectionBytes(SectionEpochs)
	if err != nil {
		return nil, err
	}
	for p := epochs; len(p) > 0; p = p[epochEntrySize:] {
		ix.Epochs = append(ix.Epochs, EpochEntry{
			Epoch:       int32(binary.BigEndian.Uint32(p)),
			StartOffset: int64(binary.BigEndian.Uint64(p[4:])),
		})
	}
	if err := ix.check(); err != nil {
		return nil, err
	}
	return ix, nil
}

// check verifies what the CRCs cannot: that entries are ordered and inside
// the segment, so lookups can binary search and trust what they find.
func (ix *Index) check() error {
	span := uint64(ix.Footer.NextOffset - ix.Footer.BaseOffset)
	logLength := ix.Footer.Sections[SectionLog].Length
	var prevOffset, prevPosition uint32
	for i := range ix.offsetEntries() {
		rel, pos := ix.offsetEntry(i)
		if uint64(rel) >= span || uint64(pos) >= logLength || (i > 0 && (rel <= prevOffset || pos <= prevPosition)) {
			return fmt.Errorf("%w: offset index entry %d (%d, %d) out of order or range", ErrCorrupt, i, rel, pos)
		}
		prevOffset, prevPosition = rel, pos
	}
	var prevTimestamp int64
	var prevTimeOffset uint32
	for i := range ix.timeEntries() {
		ts, rel := ix.timeEntry(i)
		if uint64(rel) >= span || (i > 0 && (ts <= prevTimestamp || rel < prevTimeOffset)) {
			return fmt.Errorf("%w: time index entry %d (%d, %d) out of order or range", ErrCorrupt, i, ts, rel)
		}
		prevTimestamp, prevTimeOffset = ts, rel
	}
	for i := 1; i < len(ix.Epochs); i++ {
		if ix.Epochs[i].Epoch <= ix.Epochs[i-1].Epoch || ix.Epochs[i].StartOffset <= ix.Epochs[i-1].StartOffset {
			return fmt.Errorf("%w: epoch entry %d %+v does not follow %+v", ErrCorrupt, i, ix.Epochs[i], ix.Epochs[i-1])
		}
	}
	return nil
}

func (ix *Index) offsetEntries() int { return len(ix.offsets) / indexEntrySize }
func (ix *Index) timeEntries() int   { return len(ix.times) / timeIndexEntrySize }

func (ix *Index) offsetEntry(i int) (relativeOffset, position uint32) {
	e := ix.offsets[i*indexEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

func (ix *Index) timeEntry(i int) (timestamp int64, relativeOffset uint32) {
	e := ix.times[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// ErrOutOfSegment means an offset the segment does not hold.
var ErrOutOfSegment = errors.New("segmentobject: offset outside the segment")

// StartPosition returns the log position of the batch at which a forward
// scan for offset should start, the last indexed batch at or below it (or
// the first batch), and that batch's base offset as the index records it.
// At most one index interval of batches lies between it and offset's
// batch. A batch's own base offset is outside its CRC, so a reader checks
// the batch it finds at position against baseOffset, which the index's
// checksum covers.
func (ix *Index) StartPosition(offset int64) (position, baseOffset int64, err error) {
	if offset < ix.Footer.BaseOffset || offset >= ix.Footer.NextOffset {
		return 0, 0, fmt.Errorf("%w: %d not in [%d, %d)", ErrOutOfSegment, offset, ix.Footer.BaseOffset, ix.Footer.NextOffset)
	}
	rel := uint32(offset - ix.Footer.BaseOffset)
	i := sort.Search(ix.offsetEntries(), func(i int) bool {
		r, _ := ix.offsetEntry(i)
		return r > rel
	})
	if i == 0 {
		return 0, ix.Footer.BaseOffset, nil
	}
	r, pos := ix.offsetEntry(i - 1)
	return int64(pos), ix.Footer.BaseOffset + int64(r), nil
}

// BatchFrom returns the position of the first batch that starts at or
// after log position pos which the index knows: the log's first batch (at
// position 0), or an indexed one. ok is false when the index knows none.
func (ix *Index) BatchFrom(pos int64) (position int64, ok bool) {
	if pos <= 0 {
		return 0, ix.LogLength() > 0
	}
	i := sort.Search(ix.offsetEntries(), func(i int) bool {
		_, p := ix.offsetEntry(i)
		return int64(p) >= pos
	})
	if i == ix.offsetEntries() {
		return 0, false
	}
	_, p := ix.offsetEntry(i)
	return int64(p), true
}

// OffsetForTimestamp returns the offset from which to scan for the first
// record with a timestamp at or after ts: the indexed batch before the first
// time-index entry at or after ts. ok is false when every record in the
// segment is older than ts.
func (ix *Index) OffsetForTimestamp(ts int64) (offset int64, ok bool) {
	if ts > ix.Footer.MaxTimestamp {
		return 0, false
	}
	i := sort.Search(ix.timeEntries(), func(i int) bool {
		t, _ := ix.timeEntry(i)
		return t >= ts
	})
	if i == 0 {
		return ix.Footer.BaseOffset, true
	}
	_, rel := ix.timeEntry(i - 1)
	return ix.Footer.BaseOffset + int64(rel), true
}

// LogLength is the length of the log section: log positions run 0..LogLength.
func (ix *Index) LogLength() int64 { return int64(ix.Footer.Sections[SectionLog].Length) }
