package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
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

// FuzzValidateProduced checks ValidateProduced against Records, the decoder
// consumers of the broker use: a batch it accepts decodes to exactly its
// record count, within the limit and with keys where they are required;
// and a batch Records reads that breaks no rule of a produced batch is
// accepted (zstd aside: produce caps the window Records does not). The CRC
// is mended first so that the fuzzer explores the records.
func FuzzValidateProduced(f *testing.F) {
	for _, codec := range allCodecs {
		b, err := Build(BuildOptions{Codec: codec, FirstTimestamp: 5, ProducerID: -1, BaseSequence: -1}, sampleRecords())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	for _, l := range lies(f) {
		f.Add(l.batch, l.opts.KeysRequired)
	}
	f.Fuzz(func(t *testing.T, b []byte, keysRequired bool) {
		const limit = 1 << 20
		opts := ProduceOptions{MaxDecompressedBytes: limit, KeysRequired: keysRequired}
		if len(b) >= HeaderSize {
			b = bytes.Clone(b)
			binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], castagnoli))
		}
		batch, err := ValidateProduced(b, opts)
		h := batch.Header()
		// The uncompressed fast path may refuse what the cursor accepts,
		// never the other way round (framingOK).
		if len(b) >= HeaderSize && h.Attributes.Compression() == CodecNone && h.NumRecords >= 0 {
			c := cursor{buf: b[HeaderSize:], opts: opts, firstTimestamp: h.FirstTimestamp, maxTimestamp: -1}
			if fast, ok := framingOK(b[HeaderSize:], h.NumRecords, h.FirstTimestamp, opts); ok {
				if slow := c.records(h.NumRecords); slow != nil {
					t.Fatalf("framingOK passes records the cursor refuses: %v", slow)
				}
				if fast != c.maxTimestamp {
					t.Fatalf("framingOK's max timestamp %d, the cursor's %d", fast, c.maxTimestamp)
				}
			}
		}
		var re *RecordError
		if errors.As(err, &re) && (re.Index < 0 || re.Index >= int(h.NumRecords)) {
			t.Fatalf("%v: index outside the batch's %d records", err, h.NumRecords)
		}
		recs, readErr := Records(b, limit)
		if err == nil {
			if readErr != nil {
				t.Fatalf("accepted, but Records fails: %v", readErr)
			}
			if len(recs) != int(h.NumRecords) {
				t.Fatalf("accepted %d records, Records finds %d", h.NumRecords, len(recs))
			}
			stored, verr := Validate(batch.Bytes())
			if verr != nil || stored != h {
				t.Fatalf("accepted, but the batch as stored is %+v, %v; the header returned %+v", stored, verr, h)
			}
			maxTimestamp := int64(-1)
			for _, r := range recs {
				maxTimestamp = max(maxTimestamp, h.FirstTimestamp+r.TimestampDelta)
			}
			if h.MaxTimestamp != maxTimestamp {
				t.Fatalf("accepted with max timestamp %d, the records' is %d", h.MaxTimestamp, maxTimestamp)
			}
			for i, r := range recs {
				if keysRequired && r.Key == nil {
					t.Fatalf("accepted record %d without a key", i)
				}
			}
			return
		}
		if readErr != nil || h.Attributes.Compression() == CodecZstd {
			return
		}
		// Records reads stored batches beyond what Kafka's decoders do
		// (an earlier release may have stored them): LZ4 past one frame,
		// int32 varints past five bytes. A producer's must be as Kafka
		// reads them.
		if h.Attributes.Compression() == CodecLZ4 && checkLZ4Frame(b[HeaderSize:]) != nil {
			return
		}
		if errors.As(err, &re) && strings.Contains(re.Reason, "malformed varint") {
			return
		}
		// A batch with fewer records than offsets is a compacted one:
		// stored, read, never produced.
		if _, verr := Validate(b); verr != nil || h.BaseOffset != 0 || h.Attributes.Control() || h.Attributes.LogAppendTime() || (h.ProducerID >= 0 && h.BaseSequence < 0) ||
			int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 {
			return
		}
		for _, r := range recs {
			if keysRequired && r.Key == nil {
				return
			}
		}
		t.Fatalf("Records reads %d records, ValidateProduced refuses them: %v", len(recs), err)
	})
}
