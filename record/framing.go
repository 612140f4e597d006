package record

import (
	"encoding/binary"
	"math"
)

// framingOK is the fast path of validating the records of an uncompressed
// batch: it reports true only when every one of count records is sound
// under the same rules cursor.records applies (see ValidateProduced), and
// nothing follows them; maxTimestamp is then the records' largest
// timestamp, -1 if none is above -1. It says only yes or no; on no, the caller runs
// cursor.records, which finds the same records good or says what is wrong
// with which one. So framingOK may refuse a sound batch (it would only be
// slower) but must never pass one cursor.records refuses: a record's
// varints are read within the record, and each bound is the cursor's.
//
// It exists because the cursor, built to stream decompressed records
// through a window, pays for that generality on every field; produce
// validates every uncompressed record, and this loop keeps each field to
// a bounds check and a varint.
func framingOK(records []byte, count int32, firstTimestamp int64, opts ProduceOptions) (maxTimestamp int64, ok bool) {
	pos := 0
	maxTimestamp = -1
	for i := int64(0); i < int64(count); i++ {
		length, p := varintAt(records, pos)
		if p < 0 || length <= 0 || length > int64(len(records)-p) {
			return 0, false
		}
		end := p + int(length)
		rec := records[:end]
		p++ // attributes: no bit is defined for a record
		timestampDelta, p := varlongAt(rec, p)
		timestamp := firstTimestamp + timestampDelta
		if p < 0 || (opts.CheckTimestamps && !opts.timestampAllowed(timestamp)) {
			return 0, false
		}
		maxTimestamp = max(maxTimestamp, timestamp)
		delta, p := varintAt(rec, p)
		if p < 0 || delta != i {
			return 0, false
		}
		p = fieldAt(rec, p, !opts.KeysRequired)
		p = fieldAt(rec, p, true)
		headers, p := varintAt(rec, p)
		if p < 0 || headers < 0 || headers > int64(end-p)/2 {
			return 0, false
		}
		for range headers {
			p = fieldAt(rec, fieldAt(rec, p, false), true)
		}
		if p != end {
			return 0, false
		}
		pos = end
	}
	return maxTimestamp, pos == len(records)
}

// varlongAt decodes the zig-zag varint at b[pos:]; the position after it
// is negative when b ends first or the varint is malformed, and so is
// pos itself when negative on entry. The one-byte case is small enough to
// inline.
func varlongAt(b []byte, pos int) (int64, int) {
	if uint(pos) < uint(len(b)) {
		if c := b[pos]; c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), pos + 1
		}
	}
	return varlongLongAt(b, pos)
}

// varlongLongAt is varlongAt past one byte: two bytes (lengths below
// 8192) without a call, longer varints through binary.Varint.
func varlongLongAt(b []byte, pos int) (int64, int) {
	if pos < 0 || pos >= len(b) {
		return 0, -1
	}
	if pos+1 < len(b) && b[pos+1] < 0x80 {
		u := uint64(b[pos]&0x7f) | uint64(b[pos+1])<<7
		return int64(u>>1) ^ -int64(u&1), pos + 2
	}
	v, n := binary.Varint(b[pos:])
	if n <= 0 {
		return 0, -1
	}
	return v, pos + n
}

// maxVarintLen32 is the longest varint Kafka reads for an int32 field
// (Java's ByteUtils.readVarint, franz-go's kbin): five bytes.
const maxVarintLen32 = 5

// varintAt is varlongAt for a field Kafka reads as an int32 varint (a
// length, the offset delta, the header count): longer than five bytes or
// outside int32's range is malformed, for consumers could not read it.
func varintAt(b []byte, pos int) (int64, int) {
	if uint(pos) < uint(len(b)) {
		if c := b[pos]; c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), pos + 1
		}
	}
	return varintLongAt(b, pos)
}

func varintLongAt(b []byte, pos int) (int64, int) {
	v, p := varlongLongAt(b, pos)
	if p-pos > maxVarintLen32 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, -1
	}
	return v, p
}

// fieldAt passes over the length-prefixed field at rec[pos:], which must
// end within rec; length -1 is null, allowed when nullable. It returns the
// position after the field, negative when the field is unsound.
func fieldAt(rec []byte, pos int, nullable bool) int {
	n, p := varintAt(rec, pos)
	switch {
	case p < 0:
		return -1
	case n == -1 && nullable:
		return p
	case n < 0 || n > int64(len(rec)-p):
		return -1
	}
	return p + int(n)
}
