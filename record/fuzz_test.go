package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// FuzzBatch feeds arbitrary bytes to every decoder: none may panic, and
// anything Validate accepts must decode or fail with a typed error within
// its limit. Batches with a wrong CRC are decoded too, with the CRC
// mended, so that the fuzzer explores the record decoder.
func FuzzBatch(f *testing.F) {
	for _, codec := range allCodecs {
		b, err := Build(BuildOptions{Codec: codec, FirstTimestamp: 5}, sampleRecords())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1 << 20
		if _, err := ParseHeader(b); err != nil {
			return
		}
		_, _, _ = Split(b)
		if _, err := Validate(b); err != nil && !errors.Is(err, ErrCorrupt) {
			return
		}
		// Past the CRC, so the fuzzer reaches the record decoder.
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
		recs, err := Records(b, limit)
		if err != nil {
			return
		}
		total := 0
		for _, r := range recs {
			total += len(r.Key) + len(r.Value)
		}
		if total > limit {
			t.Fatalf("decoded %d bytes past the %d limit", total, limit)
		}
	})
}

// FuzzDecompress checks that no codec panics or exceeds its limit on
// arbitrary input.
func FuzzDecompress(f *testing.F) {
	for _, codec := range allCodecs {
		body, err := compress(codec, bytes.Repeat([]byte("fuzz"), 100))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(int8(codec), body)
	}
	f.Fuzz(func(t *testing.T, codec int8, body []byte) {
		const limit = 64 << 10
		out, err := Decompress(Codec(codec), body, limit)
		if err == nil && len(out) > limit {
			t.Fatalf("%d bytes out, limit %d", len(out), limit)
		}
	})
}
