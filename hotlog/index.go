package hotlog

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// offsetIndex is a segment's sparse offset index: the mapped .index file
// (format.go). It does not know how many entries are valid; that count
// travels in the segment's tail, published together with the log bytes the
// entries point into, so a reader never looks at an entry for bytes it
// cannot read yet.
type offsetIndex []byte

// capacity is the number of entries the mapping holds.
func (x offsetIndex) capacity() int { return len(x) / indexEntrySize }

func (x offsetIndex) entry(i int) (relativeOffset, position uint32) {
	b := x[i*indexEntrySize:]
	return binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
}

func (x offsetIndex) put(i int, relativeOffset, position uint32) {
	b := x[i*indexEntrySize:]
	binary.BigEndian.PutUint32(b, relativeOffset)
	binary.BigEndian.PutUint32(b[4:], position)
}

// lookupOffset returns the last of the first n entries whose relative
// offset is at most relativeOffset, or (0, 0), the segment start, when there
// is none. The batch holding relativeOffset starts at or after it.
func (x offsetIndex) lookupOffset(n int, relativeOffset uint32) (entryOffset uint32, position int64) {
	i := sort.Search(n, func(i int) bool {
		rel, _ := x.entry(i)
		return rel > relativeOffset
	})
	if i == 0 {
		return 0, 0
	}
	rel, pos := x.entry(i - 1)
	return rel, int64(pos)
}

// lookupPosition returns the last of the first n entries at or before
// position, or (0, 0) when there is none: a batch boundary at or below
// position.
func (x offsetIndex) lookupPosition(n int, position int64) (entryOffset uint32, entryPosition int64) {
	i := sort.Search(n, func(i int) bool {
		_, pos := x.entry(i)
		return int64(pos) > position
	})
	if i == 0 {
		return 0, 0
	}
	rel, pos := x.entry(i - 1)
	return rel, int64(pos)
}

// countBelow returns how many of the first n entries point below position.
func (x offsetIndex) countBelow(n int, position int64) int {
	return sort.Search(n, func(i int) bool {
		_, pos := x.entry(i)
		return int64(pos) >= position
	})
}

// check verifies that the first n entries fit the mapping, strictly increase
// in both columns, and point inside a log of logSize bytes holding relative
// offsets below nextRelative.
func (x offsetIndex) check(n int, logSize, nextRelative int64) error {
	if n > x.capacity() {
		return fmt.Errorf("%w: %d index entries in room for %d", ErrCorruptFile, n, x.capacity())
	}
	var prevRel, prevPos int64 = -1, 0
	for i := range n {
		rel, pos := x.entry(i)
		if int64(rel) <= prevRel || int64(pos) <= prevPos || int64(pos) >= logSize || int64(rel) >= nextRelative {
			return fmt.Errorf("%w: index entry %d (%d, %d) after (%d, %d), log size %d, next relative offset %d",
				ErrCorruptFile, i, rel, pos, prevRel, prevPos, logSize, nextRelative)
		}
		prevRel, prevPos = int64(rel), int64(pos)
	}
	return nil
}
