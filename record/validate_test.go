package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// vi is a zig-zag varint.
func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// body is a record's bytes after its length: attributes 0, timestamp delta
// 0, the offset delta, then key, value and headers as given (each already
// length-prefixed, see vfield).
func body(offsetDelta int64, fields ...[]byte) []byte {
	return cat(append([][]byte{{0}, vi(0), vi(offsetDelta)}, fields...)...)
}

// vfield is a length-prefixed field; nil is null.
func vfield(b []byte) []byte {
	if b == nil {
		return vi(-1)
	}
	return cat(vi(int64(len(b))), b)
}

// framed prefixes a record body with its true length.
func framed(b []byte) []byte { return cat(vi(int64(len(b))), b) }

// goodRecord is record i with a key, a value and one header.
func goodRecord(i int64) []byte {
	return framed(body(i, vfield([]byte("k")), vfield([]byte("value")), vi(1), vfield([]byte("h")), vfield(nil)))
}

// rawBatch wraps records bytes in a header with a correct CRC, compressing
// them with codec. count is both record count and last offset delta + 1
// unless lastOffsetDelta is given.
func rawBatch(t testing.TB, codec Codec, count int32, records []byte, edit ...func([]byte)) []byte {
	t.Helper()
	compressed, err := compress(codec, records)
	if err != nil {
		t.Fatal(err)
	}
	return rawBatchBody(codec, count, compressed, edit...)
}

// lz4Frame is records compressed in one LZ4 frame, with edit applied.
func lz4Frame(t testing.TB, records []byte, edit func([]byte) []byte) []byte {
	t.Helper()
	b, err := compress(CodecLZ4, records)
	if err != nil {
		t.Fatal(err)
	}
	return edit(b)
}

// rawBatchBody is rawBatch with the body given as it is to be stored.
func rawBatchBody(codec Codec, count int32, stored []byte, edit ...func([]byte)) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(stored))
	b = append(b, stored...)
	be := binary.BigEndian
	be.PutUint32(b[posLength:], uint32(len(b)-lengthOverhead))
	b[posMagic] = Magic
	be.PutUint16(b[posAttributes:], uint16(codec))
	be.PutUint32(b[posLastOffsetDelta:], uint32(count-1))
	be.PutUint64(b[posFirstTimestamp:], 1_700_000_000_000)
	be.PutUint64(b[posMaxTimestamp:], 1_700_000_000_000)
	be.PutUint64(b[posProducerID:], math.MaxUint64) // -1
	be.PutUint16(b[posProducerEpoch:], math.MaxUint16)
	be.PutUint32(b[posBaseSequence:], math.MaxUint32)
	be.PutUint32(b[posNumRecords:], uint32(count))
	for _, e := range edit {
		e(b)
	}
	be.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
	return b
}

func TestValidateProducedAccepts(t *testing.T) {
	t.Parallel()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			b := mustBuild(t, BuildOptions{Codec: codec, FirstTimestamp: 5, ProducerID: 7, BaseSequence: 0}, sampleRecords())
			batch, err := ValidateProduced(b, ProduceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h := batch.Header(); h.NumRecords != 3 || !bytes.Equal(batch.Bytes(), b) {
				t.Fatalf("header %+v, %d bytes of %d", h, len(batch.Bytes()), len(b))
			}
			many := rawBatch(t, codec, 3, cat(goodRecord(0), goodRecord(1), goodRecord(2)))
			if _, err := ValidateProduced(many, ProduceOptions{KeysRequired: true}); err != nil {
				t.Fatal(err)
			}
			// Timestamps at the ends of the range pass, and a clock at
			// the end of time overflows nothing.
			for _, opts := range []ProduceOptions{
				{Now: 1_700_000_000_000 + 5, TimestampBeforeMaxMs: 5, TimestampAfterMaxMs: 0},
				{Now: 1_700_000_000_000 - 5, TimestampBeforeMaxMs: 0, TimestampAfterMaxMs: 5},
				{Now: math.MaxInt64, TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64},
			} {
				opts.CheckTimestamps = true
				if _, err := ValidateProduced(many, opts); err != nil {
					t.Fatalf("%+v: %v", opts, err)
				}
			}
		})
	}
}

// lie is a batch with a correct CRC that a producer must not get stored,
// the error it gets, and what the message says.
type lie struct {
	name  string
	batch []byte
	opts  ProduceOptions
	want  error
	msg   string
}

// lies is every lie a producer can tell inside a batch whose CRC is right,
// and a few outside it. The fuzz target starts from them too.
func lies(t testing.TB) []lie {
	valueBody := body(0, vfield([]byte("k")), vi(900), []byte("twelve bytes"), vi(0))
	longValue := vfield(bytes.Repeat([]byte("zstd compresses this well "), 4096))
	tooLong := bytes.Repeat([]byte{0xff}, 11)
	// Zero in six bytes: binary.Varint reads it, Java's and franz-go's
	// int32 varint readers stop at five.
	sixByteZero := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}
	same := func(b []byte) []byte { return b }
	return []lie{
		{"record length longer than the batch", rawBatch(t, CodecNone, 1, cat(vi(40), body(0, vfield(nil), vfield([]byte("v")), vi(0)))),
			ProduceOptions{}, ErrInvalid, "record 0: record length 40 exceeds the 7 bytes left in the batch"},
		{"record length shorter than its fields", rawBatch(t, CodecNone, 2, cat(vi(4), body(0, vfield(nil), vfield([]byte("value")), vi(0)), goodRecord(1))),
			ProduceOptions{}, ErrInvalid, "record 0: value length runs 1 bytes past the record length"},
		{"record length hides the next record", rawBatch(t, CodecNone, 2, cat(vi(int64(len(body(0, vfield(nil), vfield(nil), vi(0)))+len(goodRecord(1)))), body(0, vfield(nil), vfield(nil), vi(0)), goodRecord(1))),
			ProduceOptions{}, ErrInvalid, "record 0: 16 bytes after the headers"},
		{"value length lies", rawBatch(t, CodecNone, 1, framed(valueBody)),
			ProduceOptions{}, ErrInvalid, "record 0: value length 900 exceeds the 13 bytes left"},
		{"key length lies in a later record", rawBatch(t, CodecNone, 3, cat(goodRecord(0), goodRecord(1), framed(body(2, vi(100), []byte("k"), vfield(nil), vi(0))))),
			ProduceOptions{}, ErrInvalid, "record 2: key length 100 exceeds the 3 bytes left"},
		{"key length below -1", rawBatch(t, CodecNone, 1, framed(body(0, vi(-2), vfield(nil), vi(0)))),
			ProduceOptions{}, ErrInvalid, "record 0: key length -2"},
		{"gzip flag over an uncompressed body", rawBatchBody(CodecGzip, 1, goodRecord(0)),
			ProduceOptions{}, ErrInvalid, "records are not valid gzip"},
		{"zstd flag over an uncompressed body", rawBatchBody(CodecZstd, 1, goodRecord(0)),
			ProduceOptions{}, ErrInvalid, "records are not valid zstd"},
		{"lz4 flag over an uncompressed body", rawBatchBody(CodecLZ4, 1, goodRecord(0)),
			ProduceOptions{}, ErrInvalid, "records are not valid lz4"},
		{"snappy flag over an uncompressed body", rawBatchBody(CodecSnappy, 1, bytes.Repeat([]byte{0xff}, 20)),
			ProduceOptions{}, ErrInvalid, "records are not valid snappy"},
		{"count of 2^31-1 over one record", rawBatch(t, CodecNone, math.MaxInt32, goodRecord(0)),
			ProduceOptions{}, ErrInvalid, "record 1: the batch holds 1 records, its header says 2147483647"},
		{"count of 2^31-1 over one zstd record", rawBatch(t, CodecZstd, math.MaxInt32, goodRecord(0)),
			ProduceOptions{}, ErrInvalid, "record 1: the batch holds 1 records, its header says 2147483647"},
		{"count above the records present", rawBatch(t, CodecGzip, 3, cat(goodRecord(0), goodRecord(1))),
			ProduceOptions{}, ErrInvalid, "record 2: the batch holds 2 records, its header says 3"},
		{"count and last offset delta disagree", rawBatch(t, CodecNone, 1, goodRecord(0), func(b []byte) { binary.BigEndian.PutUint32(b[posLastOffsetDelta:], 4) }),
			ProduceOptions{}, ErrInvalid, "1 records but last offset delta 4"},
		{"bytes after the last record", rawBatch(t, CodecNone, 1, cat(goodRecord(0), []byte{0, 0, 0})),
			ProduceOptions{}, ErrInvalid, "record 0: 3 bytes after the last record"},
		{"bytes after the last compressed record", rawBatch(t, CodecLZ4, 1, cat(goodRecord(0), []byte{0, 0, 0})),
			ProduceOptions{}, ErrInvalid, "record 0: bytes after the last record"},
		{"offset delta out of order", rawBatch(t, CodecNone, 2, cat(goodRecord(0), goodRecord(5))),
			ProduceOptions{}, ErrInvalid, "record 1: offset delta 5, want 1"},
		{"empty record", rawBatch(t, CodecNone, 1, vi(0)),
			ProduceOptions{}, ErrInvalid, "record 0: record length 0"},
		{"negative record length", rawBatch(t, CodecNone, 1, cat(vi(-7), goodRecord(0))),
			ProduceOptions{}, ErrInvalid, "record 0: record length -7"},
		{"varint longer than ten bytes", rawBatch(t, CodecNone, 1, tooLong),
			ProduceOptions{}, ErrInvalid, "record 0: the record length is a malformed varint"},
		{"offset delta in six bytes", rawBatch(t, CodecNone, 1, framed(cat([]byte{0}, vi(0), sixByteZero, vfield(nil), vfield(nil), vi(0)))),
			ProduceOptions{}, ErrInvalid, "record 0: the offset delta is a malformed varint"},
		{"value length in six bytes, compressed", rawBatch(t, CodecGzip, 1, framed(body(0, vfield(nil), sixByteZero, vi(0)))),
			ProduceOptions{}, ErrInvalid, "record 0: the value length is a malformed varint"},
		{"key length past int32 in five bytes", rawBatch(t, CodecNone, 1, framed(body(0, vi(1<<32), vfield(nil), vi(0)))),
			ProduceOptions{}, ErrInvalid, "record 0: the key length is a malformed varint"},
		{"header count in six bytes", rawBatch(t, CodecNone, 1, framed(body(0, vfield(nil), vfield(nil), sixByteZero))),
			ProduceOptions{}, ErrInvalid, "record 0: the header count is a malformed varint"},
		{"LZ4 with dependent blocks", rawBatchBody(CodecLZ4, 1, lz4Frame(t, goodRecord(0), func(b []byte) []byte { b[4] &^= 0x20; return b })),
			ProduceOptions{}, ErrInvalid, "LZ4: dependent blocks"},
		{"LZ4 frame version 2", rawBatchBody(CodecLZ4, 1, lz4Frame(t, goodRecord(0), func(b []byte) []byte { b[4] ^= 0xc0; return b })),
			ProduceOptions{}, ErrInvalid, "LZ4: frame version 2"},
		{"LZ4 records in two frames", rawBatchBody(CodecLZ4, 2, cat(lz4Frame(t, goodRecord(0), same), lz4Frame(t, goodRecord(1), same))),
			ProduceOptions{}, ErrInvalid, "bytes after the frame, which Kafka's decoder does not read"},
		{"LZ4 end mark flagged uncompressed, a block after it", rawBatchBody(CodecLZ4, 1, lz4Frame(t, goodRecord(0), func(b []byte) []byte {
			// Kafka's decoder ends the frame at a zero size whatever its
			// uncompressed flag; a block after it is lost to it.
			return cat(b[:7], []byte{0, 0, 0, 0x80}, []byte{3, 0, 0, 0x80, 1, 2, 3}, []byte{0, 0, 0, 0}, b[len(b)-4:])
		})), ProduceOptions{}, ErrInvalid, "bytes after the frame, which Kafka's decoder does not read"},
		{"LZ4 block past the frame's block size", rawBatchBody(CodecLZ4, 1, lz4Frame(t, goodRecord(0), func(b []byte) []byte {
			b[5] = 0x40 // 64 KiB blocks
			return cat(b[:7], []byte{0, 0, 2, 0x80}, make([]byte, 128<<10), []byte{0, 0, 0, 0}, b[len(b)-4:])
		})), ProduceOptions{}, ErrInvalid, "a block of 131072 bytes, past the frame's 65536"},
		{"LZ4 frame cut before its end mark", rawBatchBody(CodecLZ4, 1, lz4Frame(t, goodRecord(0), func(b []byte) []byte { return b[:len(b)-4] })),
			ProduceOptions{}, ErrInvalid, "LZ4: the frame ends"},
		{"LogAppendTime set by the producer", rawBatch(t, CodecNone, 1, goodRecord(0), func(b []byte) { binary.BigEndian.PutUint16(b[posAttributes:], 0x08) }),
			ProduceOptions{}, ErrInvalidTimestamp, "timestamp type is LogAppendTime, which only the broker sets"},
		{"header count lies", rawBatch(t, CodecNone, 1, framed(body(0, vfield(nil), vfield(nil), vi(1000), vfield([]byte("h")), vfield(nil)))),
			ProduceOptions{}, ErrInvalid, "record 0: header count 1000 does not fit the 3 bytes left"},
		{"negative header count", rawBatch(t, CodecNone, 1, framed(body(0, vfield(nil), vfield(nil), vi(-1)))),
			ProduceOptions{}, ErrInvalid, "record 0: header count -1"},
		{"null header key", rawBatch(t, CodecNone, 1, framed(body(0, vfield(nil), vfield(nil), vi(1), vfield(nil), vfield(nil)))),
			ProduceOptions{}, ErrInvalid, "record 0: header key length -1"},
		{"header value length lies", rawBatch(t, CodecSnappy, 1, framed(body(0, vfield(nil), vfield(nil), vi(1), vfield([]byte("h")), vi(50), []byte("x")))),
			ProduceOptions{}, ErrInvalid, "record 0: header value length 50 exceeds the 1 bytes left"},
		{"compressed stream cut short", func() []byte {
			gz, err := compress(CodecGzip, cat(goodRecord(0), goodRecord(1)))
			if err != nil {
				t.Fatal(err)
			}
			return rawBatchBody(CodecGzip, 2, gz[:len(gz)-6])
		}(), ProduceOptions{}, ErrInvalid, "unexpected EOF"},
		{"null key on a compacted topic", rawBatch(t, CodecNone, 2, cat(goodRecord(0), framed(body(1, vfield(nil), vfield([]byte("v")), vi(0))))),
			ProduceOptions{KeysRequired: true}, ErrInvalid, "record 1: null key on a compacted topic"},
		{"records decompress past the limit", rawBatch(t, CodecZstd, 1, framed(body(0, vfield(nil), longValue, vi(0)))),
			ProduceOptions{MaxDecompressedBytes: 64 << 10}, ErrTooLarge, "record 0: the records decompress to more than 65536 bytes"},
		{"snappy block claims more than the limit", rawBatch(t, CodecSnappy, 1, framed(body(0, vfield(nil), longValue, vi(0)))),
			ProduceOptions{MaxDecompressedBytes: 64 << 10}, ErrTooLarge, "a snappy block claims"},
		{"timestamp behind message.timestamp.before.max.ms", rawBatch(t, CodecNone, 2, cat(goodRecord(0), goodRecord(1))),
			ProduceOptions{CheckTimestamps: true, Now: 1_700_000_100_000, TimestampBeforeMaxMs: 60_000, TimestampAfterMaxMs: math.MaxInt64},
			ErrInvalidTimestamp, "record 0: timestamp 1700000000000 is more than 60000 ms behind the broker's clock (1700000100000; message.timestamp.before.max.ms)"},
		{"timestamp ahead of message.timestamp.after.max.ms", rawBatch(t, CodecGzip, 1, goodRecord(0)),
			ProduceOptions{CheckTimestamps: true, Now: 1_699_999_000_000, TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: 1000},
			ErrInvalidTimestamp, "record 0: timestamp 1700000000000 is more than 1000 ms ahead of the broker's clock"},
		{"base offset set by the producer", rawBatch(t, CodecNone, 1, goodRecord(0), func(b []byte) { SetBaseOffset(b, 10) }),
			ProduceOptions{}, ErrInvalid, "base offset 10, a producer writes 0"},
		{"control batch", rawBatch(t, CodecNone, 1, goodRecord(0), func(b []byte) { binary.BigEndian.PutUint16(b[posAttributes:], 0x30) }),
			ProduceOptions{}, ErrInvalid, "clients may not write control batches"},
		{"producer id without a sequence", rawBatch(t, CodecNone, 1, goodRecord(0), func(b []byte) { binary.BigEndian.PutUint64(b[posProducerID:], 9) }),
			ProduceOptions{}, ErrInvalid, "producer id 9 with base sequence -1"},
		{"bad CRC", func() []byte {
			b := rawBatch(t, CodecNone, 1, goodRecord(0))
			b[len(b)-1] ^= 1
			return b
		}(), ProduceOptions{}, ErrCorrupt, "crc"},
		{"batch cut short", rawBatch(t, CodecNone, 1, goodRecord(0))[:70], ProduceOptions{}, ErrTruncated, "header says"},
		{"bytes after the batch", append(rawBatch(t, CodecNone, 1, goodRecord(0)), 1, 2, 3), ProduceOptions{}, ErrTruncated, "3 bytes after the batch are not a whole batch"},
	}
}

// TestValidateProducedRefuses sends each lie and checks the sentinel and
// the message, which names the record when the lie is inside one.
func TestValidateProducedRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range lies(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ValidateProduced(tc.batch, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("message %q does not say %q", err, tc.msg)
			}
			var re *RecordError
			if strings.HasPrefix(tc.msg, "record ") != errors.As(err, &re) {
				t.Fatalf("%v: a record error is one that names its record", err)
			}
		})
	}
}

// TestValidateProducedZstdWindow refuses a frame that declares a window
// above MaxZstdWindow, however little it holds.
func TestValidateProducedZstdWindow(t *testing.T) {
	t.Parallel()
	// Frame header: magic, descriptor 0 (no content size, not single
	// segment), window descriptor 0x80 (2^26 bytes); then one raw last
	// block holding the record.
	rec := goodRecord(0)
	frame := cat([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x80}, binary.LittleEndian.AppendUint32(nil, uint32(len(rec))<<3|1)[:3], rec)
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := dec.DecodeAll(frame, nil); err != nil || !bytes.Equal(out, rec) {
		t.Fatalf("the hand-built frame does not decode: %v", err)
	}
	_, err = ValidateProduced(rawBatchBody(CodecZstd, 1, frame), ProduceOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "window") {
		t.Fatalf("a 64 MiB window: %v", err)
	}
}

// TestValidateProducedDoesNotAllocatePerRecord checks that what validation
// allocates does not grow with the record count: decoders and windows come
// from pools, so no decoder is built per batch either. The race detector
// makes sync.Pool drop items at random, and a decoder built afresh
// allocates more for some inputs than for others (gzip's dynamic Huffman
// tables), so with it on only the growth is checked, between batches far
// enough apart in size that one allocation per record would stand out
// from that noise by a hundred times.
func TestValidateProducedDoesNotAllocatePerRecord(t *testing.T) {
	batchOf := func(codec Codec, n int) []byte {
		var recs []byte
		for i := range n {
			recs = append(recs, goodRecord(int64(i))...)
		}
		return rawBatch(t, codec, int32(n), recs)
	}
	const fewRecords, manyRecords = 100, 2100
	for _, codec := range allCodecs {
		allocs := func(b []byte) float64 {
			return testing.AllocsPerRun(100, func() {
				if _, err := ValidateProduced(b, ProduceOptions{}); err != nil {
					t.Fatal(err)
				}
			})
		}
		few, many := allocs(batchOf(codec, fewRecords)), allocs(batchOf(codec, manyRecords))
		if many-few > (manyRecords-fewRecords)/100 {
			t.Errorf("%s: %.1f allocations for %d records, %.1f for %d", codec, many, manyRecords, few, fewRecords)
		}
		// Without the race detector the pools hold: one allocation, the
		// stream's release closure, and no decoder built per batch.
		if !raceEnabled && many > 1 {
			t.Errorf("%s: %.1f allocations per batch", codec, many)
		}
	}
}

// The fast path takes the batches producers write, so produce does not
// pay for the cursor on every record; and it passes no lie on to the
// cursor's verdict unchecked (FuzzValidateProduced holds it to that).
func TestFramingOKTakesWhatProducersWrite(t *testing.T) {
	t.Parallel()
	b, err := Build(BuildOptions{FirstTimestamp: 5, ProducerID: -1, BaseSequence: -1}, sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := framingOK(b[HeaderSize:], h.NumRecords, h.FirstTimestamp, ProduceOptions{}); !ok {
		t.Fatal("framingOK refuses a batch record.Build wrote")
	}
	for _, l := range lies(t) {
		lh, err := ParseHeader(l.batch)
		if err != nil || lh.Attributes.Compression() != CodecNone || len(l.batch) < HeaderSize {
			continue
		}
		if _, ok := framingOK(l.batch[HeaderSize:], lh.NumRecords, lh.FirstTimestamp, l.opts); ok {
			c := cursor{buf: l.batch[HeaderSize:], opts: l.opts, firstTimestamp: lh.FirstTimestamp}
			if err := c.records(lh.NumRecords); err != nil {
				t.Errorf("%s: framingOK passes what the cursor refuses: %v", l.name, err)
			}
		}
	}
}

// TestValidateProducedSetsTheRecordsMaxTimestamp: as Kafka's log
// validator, a produced batch's max timestamp becomes its records' largest
// when the client wrote another, above or below, compressed or not, with
// the CRC computed again; a batch that tells the truth is left as sent.
func TestValidateProducedSetsTheRecordsMaxTimestamp(t *testing.T) {
	t.Parallel()
	const first = 1_700_000_000_000
	records := []Record{{TimestampDelta: 0, OffsetDelta: 0}, {TimestampDelta: 200, OffsetDelta: 1}, {TimestampDelta: 50, OffsetDelta: 2}}
	for _, codec := range []Codec{CodecNone, CodecGzip} {
		for _, claimed := range []int64{first + 1e12, first, first + 200} {
			b, err := Build(BuildOptions{Codec: codec, FirstTimestamp: first, ProducerID: -1, BaseSequence: -1}, records)
			if err != nil {
				t.Fatal(err)
			}
			binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(claimed))
			binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
			sent := bytes.Clone(b)
			batch, err := ValidateProduced(b, ProduceOptions{})
			if err != nil {
				t.Fatalf("%s, max timestamp %d: %v", codec, claimed, err)
			}
			stored, err := Validate(batch.Bytes())
			if err != nil {
				t.Fatalf("%s, max timestamp %d: the batch as stored: %v", codec, claimed, err)
			}
			if stored.MaxTimestamp != first+200 || batch.Header() != stored {
				t.Fatalf("%s, max timestamp %d: stored %d (header %d), want the records' %d", codec, claimed, stored.MaxTimestamp, batch.Header().MaxTimestamp, first+200)
			}
			if claimed == first+200 && !bytes.Equal(batch.Bytes(), sent) {
				t.Fatalf("%s: a batch with the right max timestamp was rewritten", codec)
			}
		}
	}
}
