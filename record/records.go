package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Record is one record of a batch. A nil Key or Value is Kafka's null; an
// empty non-nil one is a present, empty field.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
}

// RecordHeader is one application header of a record.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Records decodes every record of one intact batch (see Validate),
// decompressing it first when it is compressed. Decompressed bytes are capped
// at limit. Returned keys and values alias the batch when it is uncompressed.
// It checks that offset deltas rise within 0..LastOffsetDelta: 0..n-1 as a
// producer writes them, with gaps where compaction removed records. A
// record's offset is the batch's base offset plus its OffsetDelta.
func Records(batch []byte, limit int) ([]Record, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return nil, err
	}
	if h.Size() != len(batch) {
		return nil, fmt.Errorf("%w: header says %d bytes, %d given", ErrInvalid, h.Size(), len(batch))
	}
	body, err := Decompress(h.Attributes.Compression(), batch[HeaderSize:], limit)
	if err != nil {
		return nil, err
	}
	// Every record takes at least 7 bytes, so the count cannot claim more
	// room than the body has.
	if h.NumRecords < 0 || int(h.NumRecords) > len(body)/7+1 {
		return nil, fmt.Errorf("%w: %d records in %d bytes", ErrInvalid, h.NumRecords, len(body))
	}
	records := make([]Record, 0, h.NumRecords)
	for i := int32(0); i < h.NumRecords; i++ {
		var r Record
		if body, err = decodeRecord(body, &r); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if r.OffsetDelta < i || r.OffsetDelta > h.LastOffsetDelta || i > 0 && r.OffsetDelta <= records[i-1].OffsetDelta {
			return nil, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalid, i, r.OffsetDelta)
		}
		records = append(records, r)
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrInvalid, len(body))
	}
	return records, nil
}

// decoder reads Kafka's zig-zag varints and length-prefixed fields, keeping
// the first error so callers check once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

func (d *decoder) varlong() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// varint reads a field Kafka reads as an int32 varint. Stored batches
// are read whatever their varints' widths: an earlier release acknowledged
// varints longer than the five bytes produce validation now allows
// (cursor.varint), and the cleaner, timestamp lookups and export must go
// on reading them.
func (d *decoder) varint() int32 {
	v := d.varlong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("varint %d out of int32 range", v)
		return 0
	}
	return int32(v)
}

// bytes reads a varint-length-prefixed field; length -1 is null.
func (d *decoder) bytes() []byte {
	n := d.varint()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 || int(n) > len(d.b) {
		d.fail("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func decodeRecord(body []byte, r *Record) ([]byte, error) {
	d := decoder{b: body}
	length := d.varint()
	if d.err == nil && (length < 0 || int(length) > len(d.b)) {
		d.fail("record of %d bytes, %d left", length, len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	rest := d.b[length:]
	d.b = d.b[:length]
	if len(d.b) < 1 {
		return nil, fmt.Errorf("%w: empty record", ErrInvalid)
	}
	r.Attributes = int8(d.b[0])
	d.b = d.b[1:]
	r.TimestampDelta = d.varlong()
	r.OffsetDelta = d.varint()
	r.Key = d.bytes()
	r.Value = d.bytes()
	count := d.varint()
	// A header takes at least two bytes; a count beyond that is a lie.
	if d.err == nil && (count < 0 || int(count) > len(d.b)/2) {
		d.fail("%d headers in %d bytes", count, len(d.b))
	}
	if d.err == nil && count > 0 {
		r.Headers = make([]RecordHeader, count)
		for i := range r.Headers {
			key := d.bytes()
			if d.err == nil && key == nil {
				d.fail("header %d has a null key", i)
			}
			r.Headers[i] = RecordHeader{Key: string(key), Value: d.bytes()}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the record's headers", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return rest, nil
}

// BuildOptions are the batch-level fields Build writes.
type BuildOptions struct {
	Codec          Codec
	FirstTimestamp int64
	// MaxTimestamp is written as given when non-zero; zero means the first
	// timestamp plus the largest record timestamp delta.
	MaxTimestamp  int64
	ProducerID    int64 // -1 for a producer without idempotence
	ProducerEpoch int16
	BaseSequence  int32 // -1 for a producer without idempotence
}

// Build encodes records as one valid batch with base offset 0, assigning
// offset deltas 0..n-1. Producers, tests and tools use it; the broker itself
// never re-encodes what a producer sent.
func Build(opts BuildOptions, records []Record) ([]byte, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: a batch needs at least one record", ErrInvalid)
	}
	numbered := make([]Record, len(records))
	maxDelta := int64(0)
	for i, r := range records {
		r.OffsetDelta = int32(i)
		numbered[i] = r
		maxDelta = max(maxDelta, r.TimestampDelta)
	}
	maxTimestamp := opts.MaxTimestamp
	if maxTimestamp == 0 {
		maxTimestamp = opts.FirstTimestamp + maxDelta
	}
	return Rebuild(Header{
		Attributes: Attributes(opts.Codec), LastOffsetDelta: int32(len(records) - 1),
		FirstTimestamp: opts.FirstTimestamp, MaxTimestamp: maxTimestamp,
		ProducerID: opts.ProducerID, ProducerEpoch: opts.ProducerEpoch, BaseSequence: opts.BaseSequence,
	}, numbered)
}

// Rebuild encodes records as a batch with h's offsets, leader epoch,
// timestamps, producer fields and attributes, as Kafka's log cleaner
// rewrites a v2 batch: the records keep their offset and timestamp deltas,
// the batch keeps its last offset delta (so the producer's last sequence
// survives), and only the record count, the length and the CRC change.
// With no records the batch is empty and uncompressed: it still holds its
// offsets, so readers move past them, and, when h has a producer, that
// producer's last sequence. Records must be in rising offset order within
// the batch's range.
func Rebuild(h Header, records []Record) ([]byte, error) {
	var raw []byte
	for i, r := range records {
		if r.OffsetDelta < 0 || r.OffsetDelta > h.LastOffsetDelta || i > 0 && r.OffsetDelta <= records[i-1].OffsetDelta {
			return nil, fmt.Errorf("%w: record %d has offset delta %d in a batch of last delta %d", ErrInvalid, i, r.OffsetDelta, h.LastOffsetDelta)
		}
		raw = appendRecord(raw, r, r.OffsetDelta)
	}
	attributes := h.Attributes
	if len(records) == 0 {
		attributes &^= 0x07
	}
	body, err := compress(attributes.Compression(), raw)
	if err != nil {
		return nil, err
	}
	b := make([]byte, HeaderSize, HeaderSize+len(body))
	b = append(b, body...)
	be := binary.BigEndian
	be.PutUint64(b[posBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[posLength:], uint32(len(b)-lengthOverhead))
	be.PutUint32(b[posPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[posMagic] = Magic
	be.PutUint16(b[posAttributes:], uint16(attributes))
	be.PutUint32(b[posLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[posFirstTimestamp:], uint64(h.FirstTimestamp))
	be.PutUint64(b[posMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[posProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[posProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[posBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[posNumRecords:], uint32(len(records)))
	be.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
	return b, nil
}

func appendField(b, field []byte) []byte {
	if field == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(field))), field...)
}

func appendRecord(b []byte, r Record, offsetDelta int32) []byte {
	var body []byte
	body = append(body, byte(r.Attributes))
	body = binary.AppendVarint(body, r.TimestampDelta)
	body = binary.AppendVarint(body, int64(offsetDelta))
	body = appendField(body, r.Key)
	body = appendField(body, r.Value)
	body = binary.AppendVarint(body, int64(len(r.Headers)))
	for _, h := range r.Headers {
		body = appendField(body, []byte(h.Key))
		body = appendField(body, h.Value)
	}
	b = binary.AppendVarint(b, int64(len(body)))
	return append(b, body...)
}
