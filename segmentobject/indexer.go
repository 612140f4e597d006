package segmentobject

import "encoding/binary"

// Indexer builds the offset and time index sections of an object whose log
// is written batch by batch rather than taken from a hot-log segment (the
// remote recompaction's), with the hot log's rules: an offset entry for
// the first batch IndexInterval bytes past the last entry, with a time
// entry beside it when the max timestamp grew, and a last time entry for
// the segment's max timestamp.
type Indexer struct {
	base     int64
	interval int64

	size                 int64 // log bytes so far
	lastIndexed          int64 // the position of the last offset entry
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	offsets, times       []byte
}

// noTimestamp is a batch's max timestamp when it carries none.
const noTimestamp = -1

// NewIndexer returns an Indexer for a log starting at base offset base,
// with an offset entry every indexInterval bytes (index.interval.bytes).
func NewIndexer(base int64, indexInterval int64) *Indexer {
	return &Indexer{base: base, interval: max(indexInterval, 1), maxTimestamp: noTimestamp, offsetOfMaxTimestamp: base}
}

// Add folds in the next batch: its base offset, size in bytes and max
// timestamp.
func (x *Indexer) Add(baseOffset int64, size int, maxTimestamp int64) {
	if maxTimestamp > x.maxTimestamp {
		x.maxTimestamp, x.offsetOfMaxTimestamp = maxTimestamp, baseOffset
	}
	if x.size > 0 && x.size-x.lastIndexed >= x.interval {
		x.offsets = binary.BigEndian.AppendUint32(x.offsets, uint32(baseOffset-x.base))
		x.offsets = binary.BigEndian.AppendUint32(x.offsets, uint32(x.size))
		x.lastIndexed = x.size
		x.addTime()
	}
	x.size += int64(size)
}

// addTime adds a time entry for the max timestamp so far, if it grew.
func (x *Indexer) addTime() {
	n := len(x.times)
	if x.maxTimestamp == noTimestamp || n > 0 && int64(binary.BigEndian.Uint64(x.times[n-timeIndexEntrySize:])) >= x.maxTimestamp {
		return
	}
	x.times = binary.BigEndian.AppendUint64(x.times, uint64(x.maxTimestamp))
	x.times = binary.BigEndian.AppendUint32(x.times, uint32(x.offsetOfMaxTimestamp-x.base))
}

// Finish returns the index sections, sealed with the last time entry, the
// log's size and its max timestamp (-1 if no batch had one).
func (x *Indexer) Finish() (offsetIndex, timeIndex []byte, logSize, maxTimestamp int64) {
	x.addTime()
	return x.offsets, x.times, x.size, x.maxTimestamp
}
