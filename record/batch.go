package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 batch header in bytes.
const HeaderSize = 61

// Byte positions of the header fields.
const (
	posBaseOffset           = 0
	posLength               = 8
	posPartitionLeaderEpoch = 12
	posMagic                = 16
	posCRC                  = 17
	posAttributes           = 21
	posLastOffsetDelta      = 23
	posFirstTimestamp       = 27
	posMaxTimestamp         = 35
	posProducerID           = 43
	posProducerEpoch        = 51
	posBaseSequence         = 53
	posNumRecords           = 57

	// lengthOverhead is the part of a batch that batchLength does not count:
	// baseOffset and batchLength itself.
	lengthOverhead = 12
)

// Magic is the only message format version strata accepts.
const Magic = 2

// Sentinel errors. Each is returned wrapped with the detail that caused it;
// test with errors.Is.
var (
	// ErrTruncated means fewer bytes are present than the header says.
	ErrTruncated = errors.New("record: batch truncated")
	// ErrCorrupt means the CRC-32C does not match the batch.
	ErrCorrupt = errors.New("record: batch corrupt")
	// ErrInvalid means the batch is well-formed bytes with impossible content:
	// bad lengths, counts, varints or codecs.
	ErrInvalid = errors.New("record: invalid batch")
	// ErrUnsupportedMagic means a message format other than v2.
	ErrUnsupportedMagic = errors.New("record: unsupported message format")
	// ErrTooLarge means decompressed records exceed the caller's limit.
	ErrTooLarge = errors.New("record: decompressed batch too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Attributes is the batch attributes bit field.
type Attributes int16

// Compression returns the codec the records are compressed with.
func (a Attributes) Compression() Codec { return Codec(a & 0x07) }

// attrLogAppendTime is the timestamp-type bit of the attributes.
const attrLogAppendTime Attributes = 0x08

// LogAppendTime reports whether timestamps are set by the broker
// (message.timestamp.type=LogAppendTime) rather than the producer.
func (a Attributes) LogAppendTime() bool { return a&attrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (a Attributes) Transactional() bool { return a&0x10 != 0 }

// Control reports whether the batch holds control records (commit/abort markers).
func (a Attributes) Control() bool { return a&0x20 != 0 }

// Header is a decoded v2 batch header.
type Header struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the whole batch's length in bytes, header included.
func (h Header) Size() int { return int(h.Length) + lengthOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// LastSequence is the producer sequence number of the batch's last record.
// Sequences wrap at the int32 maximum, as Kafka's do.
func (h Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return h.BaseSequence
	}
	last := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if last > 1<<31-1 {
		last -= 1 << 31
	}
	return int32(last)
}

// ParseHeader decodes the header at the start of b. It checks that b holds a
// whole header, that the format is v2 and that batchLength is at least a
// header's worth; it does not look past the header, so it neither checks the
// CRC nor requires the records to be present.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, a header needs %d", ErrTruncated, len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[posBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[posLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[posPartitionLeaderEpoch:])),
		Magic:                int8(b[posMagic]),
		CRC:                  binary.BigEndian.Uint32(b[posCRC:]),
		Attributes:           Attributes(binary.BigEndian.Uint16(b[posAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[posLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[posFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[posMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[posProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[posProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[posBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[posNumRecords:])),
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d, want %d", ErrUnsupportedMagic, h.Magic, Magic)
	}
	if h.Length < HeaderSize-lengthOverhead {
		return h, fmt.Errorf("%w: batch length %d is shorter than a header", ErrInvalid, h.Length)
	}
	return h, nil
}

// Validate checks that b is exactly one whole, intact batch: a v2 header, a
// batchLength that matches len(b), a CRC-32C that matches, a known codec, and
// a record count that fits the last offset delta (no more records than
// offsets: a compacted batch keeps its offsets and may hold fewer records,
// or none). It reads only the header and hashes the rest; records are not
// decoded.
func Validate(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	return h, checkBatch(h, b)
}

// Batch is one whole, intact batch: its bytes and the header they hold, as
// Check or ValidateProduced found them. Only those make a Batch, so one in
// hand has been checked once and is not hashed again on its way into the
// log. The bytes are the caller's: the log stamps the base offset and
// leader epoch in them in place.
type Batch struct {
	bytes  []byte
	header Header
}

// Bytes is the batch as it is stored.
func (b Batch) Bytes() []byte { return b.bytes }

// Header is the batch's header as checked, or as stamped since.
func (b Batch) Header() Header { return b.header }

// Check validates b as Validate does and returns it as a Batch.
func Check(b []byte) (Batch, error) {
	h, err := Validate(b)
	if err != nil {
		return Batch{}, err
	}
	return Batch{bytes: b, header: h}, nil
}

// StampLogAppendTime marks the batch's timestamps as the broker's (Kafka's
// message.timestamp.type=LogAppendTime): the timestamp-type bit is set,
// the max timestamp becomes millis, and the CRC, which covers both, is
// computed again, so the batch stays intact. Only topics configured for it
// pay that cost.
func (b *Batch) StampLogAppendTime(millis int64) {
	b.restamp(b.header.Attributes|attrLogAppendTime, millis)
}

// restamp writes the batch's attributes and max timestamp in place and
// computes the CRC, which covers both, again.
func (b *Batch) restamp(attributes Attributes, maxTimestamp int64) {
	b.header.Attributes, b.header.MaxTimestamp = attributes, maxTimestamp
	binary.BigEndian.PutUint16(b.bytes[posAttributes:], uint16(attributes))
	binary.BigEndian.PutUint64(b.bytes[posMaxTimestamp:], uint64(maxTimestamp))
	b.header.CRC = crc32.Checksum(b.bytes[posAttributes:], castagnoli)
	binary.BigEndian.PutUint32(b.bytes[posCRC:], b.header.CRC)
}

// SetBaseOffset writes the base offset in place. The CRC does not cover it.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch writes the leader epoch in place. The CRC does not
// cover it.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[posPartitionLeaderEpoch:], uint32(epoch))
}

// Split cuts a concatenation of batches, such as a Fetch response's records
// or a segment's bytes, into its batches, validating each as Validate does.
// It fails on the first batch that is not intact. A produced batch is
// checked with ValidateProduced instead, which also reads its records.
func Split(b []byte) ([][]byte, []Header, error) {
	var batches [][]byte
	var headers []Header
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil {
			return nil, nil, fmt.Errorf("batch %d: %w", len(batches), err)
		}
		if h.Size() > len(b) {
			return nil, nil, fmt.Errorf("batch %d: %w: header says %d bytes, %d present", len(batches), ErrTruncated, h.Size(), len(b))
		}
		if _, err := Validate(b[:h.Size()]); err != nil {
			return nil, nil, fmt.Errorf("batch %d: %w", len(batches), err)
		}
		batches = append(batches, b[:h.Size():h.Size()])
		headers = append(headers, h)
		b = b[h.Size():]
	}
	return batches, headers, nil
}

// Recompress returns b with its records compressed with codec (CodecNone:
// stored uncompressed), as Kafka's broker rewrites a produced batch for a
// topic whose compression.type names a codec: the header is kept but for
// the codec, the length and the CRC; records keep their deltas. A batch
// already in codec is returned as it is. Decompressed records are capped at
// limit.
func Recompress(b Batch, codec Codec, limit int) (Batch, error) {
	h := b.header
	if h.Attributes.Compression() == codec {
		return b, nil
	}
	records, err := Records(b.bytes, limit)
	if err != nil {
		return Batch{}, err
	}
	h.Attributes = h.Attributes&^0x07 | Attributes(codec)
	out, err := Rebuild(h, records)
	if err != nil {
		return Batch{}, err
	}
	return Check(out)
}
