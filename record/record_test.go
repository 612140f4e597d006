package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

func sampleRecords() []Record {
	return []Record{
		{Key: []byte("k0"), Value: []byte("v0"), Headers: []RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
		{Key: nil, Value: bytes.Repeat([]byte("payload "), 200), TimestampDelta: 7},
		{Key: []byte{}, Value: nil, TimestampDelta: 3},
	}
}

func mustBuild(t testing.TB, opts BuildOptions, recs []Record) []byte {
	t.Helper()
	b, err := Build(opts, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func TestBuildValidateRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			opts := BuildOptions{Codec: codec, FirstTimestamp: 1_700_000_000_000, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 10}
			b := mustBuild(t, opts, sampleRecords())
			h, err := Validate(b)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			want := Header{Length: int32(len(b) - 12), Magic: 2, CRC: h.CRC, Attributes: Attributes(codec),
				LastOffsetDelta: 2, FirstTimestamp: opts.FirstTimestamp, MaxTimestamp: opts.FirstTimestamp + 7,
				ProducerID: 42, ProducerEpoch: 3, BaseSequence: 10, NumRecords: 3}
			if h != want {
				t.Fatalf("header\n got %+v\nwant %+v", h, want)
			}
			got, err := Records(b, 1<<20)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			for i, r := range sampleRecords() {
				r.OffsetDelta = int32(i)
				if fmt.Sprintf("%#v", got[i]) != fmt.Sprintf("%#v", r) {
					t.Errorf("record %d\n got %#v\nwant %#v", i, got[i], r)
				}
			}
		})
	}
}

// TestAgreesWithFranzGo decodes our batches with franz-go's independent
// kmsg implementation, and validates batches kmsg encodes.
func TestAgreesWithFranzGo(t *testing.T) {
	t.Parallel()
	b := mustBuild(t, BuildOptions{FirstTimestamp: 99, ProducerID: -1, BaseSequence: -1}, sampleRecords())
	SetBaseOffset(b, 1234)
	SetPartitionLeaderEpoch(b, 5)
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot read our batch: %v", err)
	}
	if kb.FirstOffset != 1234 || kb.PartitionLeaderEpoch != 5 || kb.NumRecords != 3 || kb.ProducerID != -1 {
		t.Fatalf("kmsg sees %+v", kb)
	}
	rest := kb.Records
	for i, want := range sampleRecords() {
		length, n := binary.Varint(rest)
		var kr kmsg.Record
		if err := kr.ReadFrom(rest[:n+int(length)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		rest = rest[n+int(length):]
		if !bytes.Equal(kr.Key, want.Key) || !bytes.Equal(kr.Value, want.Value) || len(kr.Headers) != len(want.Headers) || int(kr.OffsetDelta) != i {
			t.Fatalf("record %d: kmsg sees %+v", i, kr)
		}
	}

	// And the other way: a batch kmsg encodes, with the CRC filled in as a
	// producer would.
	kb.FirstOffset = 0
	enc := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[17:], crc32.Checksum(enc[21:], castagnoli))
	if _, err := Validate(enc); err != nil {
		t.Fatalf("Validate(kmsg batch): %v", err)
	}
}

func TestStampingKeepsCRC(t *testing.T) {
	t.Parallel()
	b := mustBuild(t, BuildOptions{Codec: CodecZstd}, sampleRecords())
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 77)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate after stamping: %v", err)
	}
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 77 || h.LastOffset() != 1<<40+2 || h.NextOffset() != 1<<40+3 {
		t.Fatalf("stamped header %+v", h)
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	good := mustBuild(t, BuildOptions{}, sampleRecords())
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
		return b
	}
	tests := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"empty", nil, ErrTruncated},
		{"header only", good[:HeaderSize], ErrTruncated},
		{"one byte short", good[:len(good)-1], ErrTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), ErrInvalid},
		{"magic 1", mutate(func(b []byte) []byte { b[posMagic] = 1; return b }), ErrUnsupportedMagic},
		{"length below header", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[posLength:], 10); return b }), ErrInvalid},
		{"negative length", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[posLength:], 0xffffffff); return b }), ErrInvalid},
		{"flipped value bit", mutate(func(b []byte) []byte { b[len(b)-5] ^= 1; return b }), ErrCorrupt},
		{"flipped attribute bit", mutate(func(b []byte) []byte { b[posAttributes+1] ^= 0x10; return b }), ErrCorrupt},
		{"count disagrees with delta", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[posNumRecords:], 5)
			return recrc(b)
		}), ErrInvalid},
		{"zero records", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[posNumRecords:], 0)
			binary.BigEndian.PutUint32(b[posLastOffsetDelta:], 0xffffffff)
			return recrc(b)
		}), ErrInvalid},
		{"unknown codec", mutate(func(b []byte) []byte { b[posAttributes+1] |= 7; return recrc(b) }), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Validate(tt.batch); !errors.Is(err, tt.want) {
				t.Fatalf("Validate = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTruncatedAtEveryLength(t *testing.T) {
	t.Parallel()
	good := mustBuild(t, BuildOptions{Codec: CodecLZ4}, sampleRecords())
	for n := 0; n < len(good); n++ {
		if _, err := Validate(good[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Validate(first %d of %d bytes) = %v, want ErrTruncated", n, len(good), err)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	a := mustBuild(t, BuildOptions{}, sampleRecords()[:1])
	b := mustBuild(t, BuildOptions{Codec: CodecSnappy}, sampleRecords())
	joined := append(bytes.Clone(a), b...)
	batches, headers, err := Split(joined)
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	if len(batches) != 2 || !bytes.Equal(batches[0], a) || !bytes.Equal(batches[1], b) || headers[1].NumRecords != 3 {
		t.Fatalf("Split gave %d batches %v", len(batches), headers)
	}
	// Appending to a returned batch must not overwrite its neighbour.
	_ = append(batches[0], 0xff)
	if !bytes.Equal(batches[1], b) {
		t.Fatal("batches share capacity")
	}
	if _, _, err := Split(joined[:len(joined)-1]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Split(torn) = %v, want ErrTruncated", err)
	}
	bad := bytes.Clone(joined)
	bad[len(bad)-1] ^= 0xff
	if _, _, err := Split(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Split(corrupt second batch) = %v, want ErrCorrupt", err)
	}
}

func TestDecompressLimit(t *testing.T) {
	t.Parallel()
	recs := []Record{{Value: make([]byte, 1<<20)}} // compresses to almost nothing
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			b := mustBuild(t, BuildOptions{Codec: codec}, recs)
			if _, err := Records(b, 64<<10); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Records with a 64 KiB limit = %v, want ErrTooLarge", err)
			}
			if _, err := Records(b, 2<<20); err != nil {
				t.Fatalf("Records with room: %v", err)
			}
		})
	}
}

func TestXerialSnappy(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte("xerial framed snappy "), 5000)
	framed := append([]byte{}, xerialMagic...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	for chunk := range slices.Chunk(raw, 32<<10) {
		block := s2.EncodeSnappy(nil, chunk)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	got, err := Decompress(CodecSnappy, framed, len(raw))
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("Decompress(xerial) = %d bytes, %v", len(got), err)
	}
	if _, err := Decompress(CodecSnappy, framed, len(raw)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decompress(xerial) past its limit = %v, want ErrTooLarge", err)
	}
	if _, err := Decompress(CodecSnappy, framed[:len(framed)-3], len(raw)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Decompress(torn xerial) = %v, want ErrInvalid", err)
	}
}

func TestRecordsRejectsBadDeltas(t *testing.T) {
	t.Parallel()
	var raw []byte
	raw = appendRecord(raw, Record{Value: []byte("a")}, 0)
	raw = appendRecord(raw, Record{Value: []byte("b")}, 5)
	b := make([]byte, HeaderSize, HeaderSize+len(raw))
	b = append(b, raw...)
	binary.BigEndian.PutUint32(b[posLength:], uint32(len(b)-12))
	b[posMagic] = Magic
	binary.BigEndian.PutUint32(b[posLastOffsetDelta:], 1)
	binary.BigEndian.PutUint32(b[posNumRecords:], 2)
	if _, err := Records(b, 1<<20); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Records with offset deltas 0,5 = %v, want ErrInvalid", err)
	}
}

func TestParseCodec(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		if got, err := ParseCodec(c.String()); err != nil || got != c {
			t.Errorf("ParseCodec(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseCodec("brotli"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseCodec(brotli) = %v, want ErrInvalid", err)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		base, delta, want int32
	}{{0, 4, 4}, {-1, 4, -1}, {1<<31 - 2, 3, 1}} {
		h := Header{BaseSequence: tt.base, LastOffsetDelta: tt.delta}
		if got := h.LastSequence(); got != tt.want {
			t.Errorf("LastSequence(base %d, delta %d) = %d, want %d", tt.base, tt.delta, got, tt.want)
		}
	}
}

// StampLogAppendTime keeps the batch intact: the bytes check again with
// the broker's timestamp type and time, and the header says the same.
func TestStampLogAppendTime(t *testing.T) {
	t.Parallel()
	b, err := Build(BuildOptions{FirstTimestamp: 5, ProducerID: -1, BaseSequence: -1}, sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	batch, err := Check(b)
	if err != nil {
		t.Fatal(err)
	}
	batch.StampLogAppendTime(1_800_000_000_000)
	again, err := Check(batch.Bytes())
	if err != nil {
		t.Fatalf("the stamped batch no longer checks: %v", err)
	}
	if h := again.Header(); h != batch.Header() || !h.Attributes.LogAppendTime() || h.MaxTimestamp != 1_800_000_000_000 {
		t.Fatalf("stamped header %+v, read back %+v", batch.Header(), h)
	}
}

// TestRebuildKeepsOffsets: a batch rebuilt with some of its records (as
// the log cleaner does) keeps its offsets, epoch, timestamps, producer and
// codec, reads back with the records' own offset deltas, and is a valid
// stored batch that no producer may send; rebuilt with none it is an empty,
// uncompressed batch over the same offsets.
func TestRebuildKeepsOffsets(t *testing.T) {
	t.Parallel()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			b := mustBuild(t, BuildOptions{Codec: codec, FirstTimestamp: 1000, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40}, sampleRecords())
			SetBaseOffset(b, 500)
			SetPartitionLeaderEpoch(b, 3)
			h, err := Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := Records(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			kept := []Record{recs[0], recs[2]}
			rebuilt, err := Rebuild(h, kept)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Validate(rebuilt)
			if err != nil {
				t.Fatalf("the rebuilt batch is not valid: %v", err)
			}
			want := h
			want.NumRecords, want.Length, want.CRC = 2, got.Length, got.CRC
			if got != want {
				t.Fatalf("header %+v, want %+v", got, want)
			}
			back, err := Records(rebuilt, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(back) != 2 || back[0].OffsetDelta != 0 || back[1].OffsetDelta != 2 || !bytes.Equal(back[1].Key, []byte{}) || back[1].Value != nil || back[1].TimestampDelta != 3 {
				t.Fatalf("records read back %+v", back)
			}
			SetBaseOffset(rebuilt, 0)
			if _, err := ValidateProduced(rebuilt, ProduceOptions{}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("a compacted batch produced: %v, want ErrInvalid", err)
			}
			empty, err := Rebuild(h, nil)
			if err != nil {
				t.Fatal(err)
			}
			eh, err := Validate(empty)
			if err != nil {
				t.Fatalf("the empty batch is not valid: %v", err)
			}
			if eh.NumRecords != 0 || eh.BaseOffset != 500 || eh.LastOffset() != h.LastOffset() || eh.Attributes.Compression() != CodecNone || eh.LastSequence() != h.LastSequence() {
				t.Fatalf("empty batch header %+v", eh)
			}
			if _, err := Rebuild(h, []Record{recs[2], recs[0]}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("records out of order: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestRecompress: a batch recompressed into every codec keeps its header
// but for the codec, length and CRC, and reads back the same records.
func TestRecompress(t *testing.T) {
	t.Parallel()
	for _, from := range allCodecs {
		b := mustBuild(t, BuildOptions{Codec: from, FirstTimestamp: 1000, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3}, sampleRecords())
		batch, err := Check(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range allCodecs {
			got, err := Recompress(batch, to, 1<<20)
			if err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			want := batch.Header()
			want.Attributes = want.Attributes&^0x07 | Attributes(to)
			want.Length, want.CRC = got.Header().Length, got.Header().CRC
			if got.Header() != want || got.Header().Attributes.Compression() != to {
				t.Fatalf("%v to %v: header %+v, want %+v", from, to, got.Header(), want)
			}
			records, err := Records(got.Bytes(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			original, _ := Records(b, 1<<20)
			if len(records) != len(original) {
				t.Fatalf("%v to %v: %d records, want %d", from, to, len(records), len(original))
			}
			for i := range records {
				if !bytes.Equal(records[i].Key, original[i].Key) || !bytes.Equal(records[i].Value, original[i].Value) || records[i].TimestampDelta != original[i].TimestampDelta || len(records[i].Headers) != len(original[i].Headers) {
					t.Fatalf("%v to %v: record %d differs", from, to, i)
				}
			}
		}
	}
}
