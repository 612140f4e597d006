package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
)

// MaxDecompressedBytes is the default cap on the records of one compressed
// batch once decompressed, for ValidateProduced. It bounds time, not
// memory: validation streams through a fixed window. See the package
// documentation for why 64 MiB.
const MaxDecompressedBytes = 64 << 20

// MaxZstdWindow is the largest window a zstd frame of a produced batch may
// declare. The decoder allocates the window up front, so without a cap a
// frame of a few bytes could claim 512 MiB.
const MaxZstdWindow = 8 << 20

// streamWindow is how many decompressed bytes validation holds at once.
const streamWindow = 32 << 10

// ProduceOptions are the topic settings a produced batch is checked
// against, besides its own bytes.
type ProduceOptions struct {
	// MaxDecompressedBytes caps a compressed batch's records once
	// decompressed; zero means the package's MaxDecompressedBytes. A batch
	// past it fails with ErrTooLarge.
	MaxDecompressedBytes int
	// KeysRequired refuses a record without a key, as Kafka does on a
	// topic whose cleanup.policy includes compact.
	KeysRequired bool
	// CheckTimestamps bounds every record's timestamp (the batch's first
	// timestamp plus the record's delta; -1, no timestamp, passes) to
	// [Now - TimestampBeforeMaxMs, Now + TimestampAfterMaxMs], all in ms,
	// as Kafka applies message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms to CreateTime topics. A record outside
	// fails with ErrInvalidTimestamp.
	CheckTimestamps                           bool
	Now                                       int64
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
}

// ErrInvalidTimestamp means a record whose timestamp is outside the range
// ProduceOptions allows.
var ErrInvalidTimestamp = errors.New("record: timestamp out of range")

// RecordError is an invalid record inside a batch whose header and CRC are
// intact. It matches ErrInvalid (ErrTooLarge when the records decompress
// past the limit, ErrInvalidTimestamp for a timestamp out of range) with
// errors.Is.
type RecordError struct {
	// Index is the record's position in the batch, from 0.
	Index int
	// Reason says what is wrong, in words a producer's author can act on.
	Reason string
	kind   error
}

// NewRecordError is the error of an intact record a check beyond the
// format refuses (a broker's schema validation): INVALID_RECORD, naming
// the record.
func NewRecordError(index int, reason string) *RecordError {
	return &RecordError{Index: index, Reason: reason, kind: ErrInvalid}
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %d: %s", e.Index, e.Reason) }

// Unwrap returns the sentinel the error matches.
func (e *RecordError) Unwrap() error { return e.kind }

// ValidateProduced checks, in one pass, the records field a client sent for
// one partition of a Produce request, as Kafka's log validator checks a
// client's batch. records must be exactly one batch; bytes after it are
// ErrTruncated. Beyond what Validate checks (header, length, CRC-32C, codec,
// count against last offset delta) it requires:
//   - base offset 0, as Kafka requires of a client's v2 batch;
//   - no control batch (only a transaction coordinator writes those), and
//     no LogAppendTime bit (ErrInvalidTimestamp: only the broker sets it);
//   - a base sequence of 0 or more when the batch has a producer id;
//   - every record's framing, decompressing the records first when the
//     batch is compressed (streaming, at most opts.MaxDecompressedBytes):
//     record length, attributes, timestamp delta, an offset delta equal to
//     the record's index, key, value, header count and header lengths, each
//     within the record, each varint within what Kafka's decoders read (five
//     bytes and int32 for all but the timestamp delta); exactly NumRecords
//     records and no byte after the last.
//
// As Kafka's log validator, it then sets the header's max timestamp to the
// records' largest where the client wrote another (the CRC is computed
// again then, the only case it is): the time index, retention and
// ListOffsets trust that field, and a batch claiming a later time than
// its records would hold retention back and send timestamp lookups to a
// batch without a match.
//
// A bad record fails with a *RecordError naming its index; the rest fail
// with the package's sentinels wrapped. On failure the returned Batch has
// no bytes, and its Header is as much as could be read, for the error's
// context. It never allocates per record.
func ValidateProduced(records []byte, opts ProduceOptions) (Batch, error) {
	h, maxTimestamp, err := validateProduced(records, opts)
	if err != nil {
		return Batch{header: h}, err
	}
	b := Batch{bytes: records, header: h}
	if maxTimestamp != h.MaxTimestamp {
		b.restamp(h.Attributes, maxTimestamp)
	}
	return b, nil
}

// validateProduced is ValidateProduced's check, returning as much of the
// header as it read and the records' largest timestamp.
func validateProduced(records []byte, opts ProduceOptions) (Header, int64, error) {
	h, err := ParseHeader(records)
	if err != nil {
		return h, 0, err
	}
	if h.Size() > len(records) {
		return h, 0, fmt.Errorf("%w: header says %d bytes, %d present", ErrTruncated, h.Size(), len(records))
	}
	if h.Size() < len(records) {
		return h, 0, fmt.Errorf("%w: %d bytes after the batch are not a whole batch", ErrTruncated, len(records)-h.Size())
	}
	if h.BaseOffset != 0 {
		return h, 0, fmt.Errorf("%w: base offset %d, a producer writes 0", ErrInvalid, h.BaseOffset)
	}
	if err := checkBatch(h, records); err != nil {
		return h, 0, err
	}
	if h.NumRecords == 0 || int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 {
		return h, 0, fmt.Errorf("%w: %d records but last offset delta %d", ErrInvalid, h.NumRecords, h.LastOffsetDelta)
	}
	if h.Attributes.Control() {
		return h, 0, fmt.Errorf("%w: clients may not write control batches", ErrInvalid)
	}
	if h.Attributes.LogAppendTime() {
		return h, 0, fmt.Errorf("%w: the batch's timestamp type is LogAppendTime, which only the broker sets", ErrInvalidTimestamp)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return h, 0, fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalid, h.ProducerID, h.BaseSequence)
	}
	maxTimestamp, err := validateRecords(h, records[HeaderSize:], opts)
	return h, maxTimestamp, err
}

// checkBatch is Validate after the header is parsed.
func checkBatch(h Header, b []byte) error {
	if h.Size() > len(b) {
		return fmt.Errorf("%w: header says %d bytes, %d present", ErrTruncated, h.Size(), len(b))
	}
	if h.Size() < len(b) {
		return fmt.Errorf("%w: header says %d bytes, %d given", ErrInvalid, h.Size(), len(b))
	}
	if got := crc32.Checksum(b[posAttributes:], castagnoli); got != h.CRC {
		return fmt.Errorf("%w: crc %#08x, header says %#08x", ErrCorrupt, got, h.CRC)
	}
	if !h.Attributes.Compression().known() {
		return fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, h.Attributes.Compression())
	}
	// A compacted batch keeps its offset range and holds fewer records,
	// or none (record.Rebuild); a produced batch holds one per offset
	// (validateProduced).
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("%w: %d records but last offset delta %d", ErrInvalid, h.NumRecords, h.LastOffsetDelta)
	}
	return nil
}

// validateRecords checks the framing of every record of body, the bytes
// after the batch header, and returns their largest timestamp.
func validateRecords(h Header, body []byte, opts ProduceOptions) (int64, error) {
	codec := h.Attributes.Compression()
	if codec == CodecNone {
		if maxTimestamp, ok := framingOK(body, h.NumRecords, h.FirstTimestamp, opts); ok {
			return maxTimestamp, nil
		}
		c := cursor{buf: body, opts: opts, firstTimestamp: h.FirstTimestamp, maxTimestamp: -1}
		err := c.records(h.NumRecords)
		return c.maxTimestamp, err
	}
	limit := opts.MaxDecompressedBytes
	if limit <= 0 {
		limit = MaxDecompressedBytes
	}
	s := openStream(codec, body, limit)
	defer s.release()
	window := windows.Get().(*[streamWindow]byte)
	defer windows.Put(window)
	c := cursor{buf: window[:0], src: s.reader, limit: int64(limit), opts: opts, firstTimestamp: h.FirstTimestamp, maxTimestamp: -1}
	if s.err == nil {
		c.fill(1)
		s.err = c.err
	}
	if c.tooLarge {
		return 0, fmt.Errorf("%w: %v", ErrTooLarge, c.err)
	}
	if s.err != nil {
		return 0, fmt.Errorf("%w: records are not valid %s: %v", ErrInvalid, codec, s.err)
	}
	err := c.records(h.NumRecords)
	return c.maxTimestamp, err
}

var windows = sync.Pool{New: func() any { return new([streamWindow]byte) }}

// cursor reads record framing from the records of one batch: straight from
// buf when the batch is uncompressed (src nil), or from a decompressing
// src through buf, a fixed window.
type cursor struct {
	buf []byte // buf[pos:] is read from src but not yet parsed
	pos int
	src io.Reader
	// base is the offset in the records of buf[0].
	base int64
	// limit caps the bytes src may produce.
	limit int64
	eof   bool
	// err is src's failure, or the records' growing past limit (tooLarge).
	err      error
	tooLarge bool
	// malformed says the last varint read was malformed, not cut short.
	malformed      bool
	opts           ProduceOptions
	firstTimestamp int64
	// maxTimestamp is the largest record timestamp read, -1 if none is
	// above -1.
	maxTimestamp int64
}

// limitError is a stream's failure for growing past its limit.
type limitError string

func (e limitError) Error() string { return string(e) }

// offset is the position in the records of the next byte to parse.
func (c *cursor) offset() int64 { return c.base + int64(c.pos) }

// fill tries to hold at least n unparsed bytes in the window, reading from
// src; it stops early at the end of src or on src's failure.
func (c *cursor) fill(n int) {
	if c.src == nil || c.eof || c.err != nil {
		return
	}
	if c.pos > 0 {
		kept := copy(c.buf[:cap(c.buf)], c.buf[c.pos:])
		c.base += int64(c.pos)
		c.buf, c.pos = c.buf[:kept], 0
	}
	for idle := 0; len(c.buf) < n && len(c.buf) < cap(c.buf); {
		m, err := c.src.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+m]
		if c.base+int64(len(c.buf)) > c.limit {
			c.err, c.tooLarge = limitError(fmt.Sprintf("the records decompress to more than %d bytes", c.limit)), true
			return
		}
		switch {
		case err == io.EOF:
			c.eof = true
			return
		case err != nil:
			var limit limitError
			c.err, c.tooLarge = err, errors.As(err, &limit)
			return
		case m == 0:
			if idle++; idle > 100 {
				c.err = io.ErrNoProgress
				return
			}
		}
	}
}

// varlong reads a zig-zag varint; ok is false at the end of the records or
// on a malformed varint (longer than ten bytes, or overflowing: malformed
// is then set).
func (c *cursor) varlong() (v int64, ok bool) {
	// Most fields of a record are short: decode one byte inline.
	if pos := c.pos; pos < len(c.buf) && c.buf[pos] < 0x80 {
		c.pos++
		return int64(c.buf[pos]>>1) ^ -int64(c.buf[pos]&1), true
	}
	return c.varlongSlow()
}

func (c *cursor) varlongSlow() (v int64, ok bool) {
	// Two bytes hold lengths and deltas below 8192.
	if pos := c.pos; pos+1 < len(c.buf) && c.buf[pos+1] < 0x80 {
		u := uint64(c.buf[pos]&0x7f) | uint64(c.buf[pos+1])<<7
		c.pos += 2
		return int64(u>>1) ^ -int64(u&1), true
	}
	if len(c.buf)-c.pos < binary.MaxVarintLen64 {
		c.fill(binary.MaxVarintLen64)
	}
	v, n := binary.Varint(c.buf[c.pos:])
	if n <= 0 {
		c.malformed = n < 0
		return 0, false
	}
	c.pos += n
	return v, true
}

// varint reads a zig-zag varint of a field Kafka reads as an int32 (a
// length, the offset delta, the header count): as varlong, and one longer
// than five bytes or outside int32's range is malformed too.
func (c *cursor) varint() (v int64, ok bool) {
	if pos := c.pos; pos < len(c.buf) && c.buf[pos] < 0x80 {
		c.pos++
		return int64(c.buf[pos]>>1) ^ -int64(c.buf[pos]&1), true
	}
	start := c.offset()
	v, ok = c.varlongSlow()
	if ok && (c.offset()-start > maxVarintLen32 || v < math.MinInt32 || v > math.MaxInt32) {
		c.malformed = true
		return 0, false
	}
	return v, ok
}

// skip passes over n bytes; it is false if the records end first.
func (c *cursor) skip(n int64) bool {
	for {
		avail := int64(len(c.buf) - c.pos)
		if avail >= n {
			c.pos += int(n)
			return true
		}
		n -= avail
		c.pos = len(c.buf)
		if c.src == nil || c.eof || c.err != nil {
			return false
		}
		c.fill(1)
	}
}

// more reports whether any byte is left after the offset.
func (c *cursor) more() bool {
	if c.pos == len(c.buf) {
		c.fill(1)
	}
	return c.pos < len(c.buf)
}

// records checks count records and that nothing follows them.
func (c *cursor) records(count int32) error {
	for i := range int(count) {
		if !c.more() {
			if c.err != nil {
				return c.fault(i, "%v", c.err)
			}
			return c.fault(i, "the batch holds %d records, its header says %d", i, count)
		}
		if err := c.record(i); err != nil {
			return err
		}
	}
	if c.more() {
		if c.src == nil {
			return c.fault(int(count)-1, "%d bytes after the last record", len(c.buf)-c.pos)
		}
		return c.fault(int(count)-1, "bytes after the last record")
	}
	if c.err != nil {
		return c.fault(int(count)-1, "%v", c.err)
	}
	return nil
}

// fault is record i's error: ErrTooLarge when the stream went past its
// limit, ErrInvalid otherwise.
func (c *cursor) fault(i int, format string, args ...any) error {
	kind := ErrInvalid
	if c.tooLarge {
		kind = ErrTooLarge
	}
	return &RecordError{Index: i, Reason: fmt.Sprintf(format, args...), kind: kind}
}

// truncated is record i's error when the records end inside it, or its
// field what is a malformed varint.
func (c *cursor) truncated(i int, what string) error {
	if c.malformed {
		return c.fault(i, "the %s is a malformed varint (a length, count or offset delta takes at most %d bytes, within int32; a timestamp delta at most 10)", what, maxVarintLen32)
	}
	if c.tooLarge {
		return c.fault(i, "%v", c.err)
	}
	if c.err != nil {
		return c.fault(i, "%s: %v", what, c.err)
	}
	return c.fault(i, "the batch ends inside the %s", what)
}

// record checks the framing of record i.
func (c *cursor) record(i int) error {
	length, ok := c.varint()
	if !ok {
		return c.truncated(i, "record length")
	}
	if length <= 0 {
		return c.fault(i, "record length %d", length)
	}
	if c.src == nil && length > int64(len(c.buf)-c.pos) {
		return c.fault(i, "record length %d exceeds the %d bytes left in the batch", length, len(c.buf)-c.pos)
	}
	end := c.offset() + length
	if !c.skip(1) { // attributes: no bit is defined for a record
		return c.truncated(i, "attributes")
	}
	timestampDelta, ok := c.varlong()
	if !ok {
		return c.truncated(i, "timestamp delta")
	}
	timestamp := c.firstTimestamp + timestampDelta
	if c.opts.CheckTimestamps {
		if err := c.timestamp(i, timestamp); err != nil {
			return err
		}
	}
	c.maxTimestamp = max(c.maxTimestamp, timestamp)
	delta, ok := c.varint()
	if !ok {
		return c.truncated(i, "offset delta")
	}
	if delta != int64(i) {
		return c.fault(i, "offset delta %d, want %d", delta, i)
	}
	if err := c.field(i, end, "key", !c.opts.KeysRequired); err != nil {
		return err
	}
	if err := c.field(i, end, "value", true); err != nil {
		return err
	}
	headers, ok := c.varint()
	if !ok {
		return c.truncated(i, "header count")
	}
	left := end - c.offset()
	// A header takes at least two bytes.
	if headers < 0 || left < 0 || headers > left/2 {
		return c.fault(i, "header count %d does not fit the %d bytes left", headers, max(left, 0))
	}
	for range headers {
		if err := c.field(i, end, "header key", false); err != nil {
			return err
		}
		if err := c.field(i, end, "header value", true); err != nil {
			return err
		}
	}
	if at := c.offset(); at != end {
		if at > end {
			return c.fault(i, "fields run %d bytes past the record length", at-end)
		}
		return c.fault(i, "%d bytes after the headers", end-at)
	}
	return nil
}

// timestampAllowed reports whether a record's timestamp ts lies in the
// allowed range (-1, no timestamp, always does). The distances are
// computed unsigned, so that no bound overflows.
func (o ProduceOptions) timestampAllowed(ts int64) bool {
	return ts == -1 || !o.timestampBehind(ts) && !o.timestampAhead(ts)
}

func (o ProduceOptions) timestampBehind(ts int64) bool {
	return ts < o.Now && uint64(o.Now)-uint64(ts) > uint64(o.TimestampBeforeMaxMs)
}

func (o ProduceOptions) timestampAhead(ts int64) bool {
	return ts > o.Now && uint64(ts)-uint64(o.Now) > uint64(o.TimestampAfterMaxMs)
}

// timestamp checks record i's timestamp ts against the allowed range.
func (c *cursor) timestamp(i int, ts int64) error {
	if c.opts.timestampAllowed(ts) {
		return nil
	}
	now := c.opts.Now
	what, limit, setting := "behind", c.opts.TimestampBeforeMaxMs, "message.timestamp.before.max.ms"
	if c.opts.timestampAhead(ts) {
		what, limit, setting = "ahead of", c.opts.TimestampAfterMaxMs, "message.timestamp.after.max.ms"
	}
	return &RecordError{Index: i, kind: ErrInvalidTimestamp,
		Reason: fmt.Sprintf("timestamp %d is more than %d ms %s the broker's clock (%d; %s)", ts, limit, what, now, setting)}
}

// field checks one length-prefixed field of record i, which ends at end.
// Length -1 is null, allowed when nullable.
func (c *cursor) field(i int, end int64, name string, nullable bool) error {
	n, ok := c.varint()
	if !ok {
		return c.truncated(i, name+" length")
	}
	// The common case first: a field inside its record and the window.
	if left := end - c.offset(); n >= 0 && n <= left {
		if n <= int64(len(c.buf)-c.pos) {
			c.pos += int(n)
			return nil
		}
		if !c.skip(n) {
			return c.truncated(i, name)
		}
		return nil
	}
	return c.badField(i, end, name, nullable, n)
}

// badField is field's verdict on a length that is negative or too long.
func (c *cursor) badField(i int, end int64, name string, nullable bool, n int64) error {
	left := end - c.offset()
	switch {
	case left < 0:
		return c.fault(i, "%s length runs %d bytes past the record length", name, -left)
	case n == -1 && nullable:
		return nil
	case n == -1 && name == "key":
		return c.fault(i, "null key on a compacted topic (cleanup.policy compact needs a key)")
	case n < 0:
		return c.fault(i, "%s length %d", name, n)
	}
	return c.fault(i, "%s length %d exceeds the %d bytes left", name, n, left)
}
