package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
)

// withCompressedBody is a batch of recs, compressed with codec, whose
// compressed body is replaced by body (its length and CRC made right).
func withCompressedBody(t *testing.T, codec Codec, recs []Record, body []byte) []byte {
	t.Helper()
	b := mustBuild(t, BuildOptions{Codec: codec, ProducerID: -1, BaseSequence: -1}, recs)
	b = append(b[:HeaderSize:HeaderSize], body...)
	binary.BigEndian.PutUint32(b[posLength:], uint32(len(b)-lengthOverhead))
	binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
	return b
}

// TestSnappyIsStandardSnappy: klauspost's plain Snappy decoder also takes
// S2, whose repeat codes Kafka's and librdkafka's Snappy decoders refuse;
// a batch of S2 blocks was acknowledged and stored, and consumers of
// those clients could not read past it. Produce validation takes standard
// Snappy only; Decompress still reads what an earlier release stored.
func TestSnappyIsStandardSnappy(t *testing.T) {
	t.Parallel()
	// Four random bytes, then a unit seen before, again and again: S2
	// copies the unit with its repeat code, about 3.5 bytes from each.
	rng := rand.New(rand.NewPCG(1, 2))
	unit := make([]byte, 24)
	for i := range unit {
		unit[i] = byte(rng.Uint32())
	}
	var value []byte
	for range 400 {
		value = binary.LittleEndian.AppendUint32(value, rng.Uint32())
		value = append(value, unit...)
	}
	recs := []Record{{Value: value}}
	var raw []byte
	for i, r := range recs {
		raw = appendRecord(raw, r, int32(i))
	}
	s2Body := s2.Encode(nil, raw)
	if _, err := ValidateProduced(withCompressedBody(t, CodecSnappy, recs, s2Body), ProduceOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a produced batch of an S2 block: %v, want ErrInvalid", err)
	}
	standard := s2.EncodeSnappy(nil, raw)
	if _, err := ValidateProduced(withCompressedBody(t, CodecSnappy, recs, standard), ProduceOptions{}); err != nil {
		t.Fatalf("the same batch in standard Snappy: %v", err)
	}
	// What an earlier release stored is still read (compaction, exports).
	if got, err := Decompress(CodecSnappy, s2Body, len(raw)); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("Decompress of a stored S2 block: %d bytes, %v", len(got), err)
	}
}

// TestASnappyClaimIsBoundedByItsBlock: a Snappy block's first bytes claim
// its decoded length, and standard Snappy decodes at most 64 bytes from
// 3; a tiny batch claiming 64 MiB had a 64 MiB buffer taken and zeroed
// before the decode failed, once for each of its request's thousands of
// entries. It is refused before any buffer is taken.
func TestASnappyClaimIsBoundedByItsBlock(t *testing.T) {
	recs := []Record{{Value: []byte("v")}}
	block := binary.AppendUvarint(nil, 64<<20-1)
	block = append(block, 0x00, 'v') // a one-byte literal
	batch := withCompressedBody(t, CodecSnappy, recs, block)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ValidateProduced(batch, ProduceOptions{MaxDecompressedBytes: 128 << 20})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a %d-byte batch claiming 64 MiB: %v, want ErrInvalid", len(batch), err)
	}
	if took := after.TotalAlloc - before.TotalAlloc; took > 1<<20 {
		t.Fatalf("refusing a %d-byte batch allocated %d bytes", len(batch), took)
	}
}

// TestLZ4IsAFrame: the LZ4 decoder also takes the legacy format and
// skippable frames before a frame, which Kafka's and librdkafka's refuse:
// a batch of either was acknowledged and stored, and consumers of those
// clients could not read past it. Only a produced body that starts with
// an LZ4 frame is taken; Decompress still reads what an earlier release
// stored.
func TestLZ4IsAFrame(t *testing.T) {
	t.Parallel()
	recs := sampleRecords()
	good := mustBuild(t, BuildOptions{Codec: CodecLZ4, ProducerID: -1, BaseSequence: -1}, recs)
	body := good[HeaderSize:]
	skippable := binary.LittleEndian.AppendUint32(nil, 0x184D2A50)
	skippable = binary.LittleEndian.AppendUint32(skippable, 4)
	skippable = append(skippable, 0, 0, 0, 0)
	var raw []byte
	for i, r := range recs {
		raw = appendRecord(raw, r, int32(i))
	}
	var legacy bytes.Buffer
	w := lz4.NewWriter(&legacy)
	if err := w.Apply(lz4.LegacyOption(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"a skippable frame first": append(skippable, body...),
		"the legacy format":       legacy.Bytes(),
	} {
		if _, err := ValidateProduced(withCompressedBody(t, CodecLZ4, recs, body), ProduceOptions{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("a produced batch of %s: %v, want ErrInvalid", name, err)
		}
		// What an earlier release stored is still read.
		if got, err := Decompress(CodecLZ4, body, 1<<20); err != nil || !bytes.Equal(got, raw) {
			t.Errorf("Decompress of %s stored: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := ValidateProduced(good, ProduceOptions{}); err != nil {
		t.Fatalf("the same batch in an LZ4 frame: %v", err)
	}
}
