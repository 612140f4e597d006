package record

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkValidateProduced validates produced batches of 16 KiB and 1 MiB
// of records, uncompressed and zstd, beside the machine's limit for the
// same bytes measured in the same run, alternating per operation so both
// see the same load:
//
//	go test -run '^$' -bench ValidateProduced ./record/
//
// The limit of an uncompressed batch is the bare CRC-32C of it, which any
// check must compute; that of a zstd batch is decompressing it into
// io.Discard with a reused decoder, which any check of its records must
// do. Figures are medians per operation, in MB/s of records (decompressed
// bytes); x-limit is limit time over ours (1 means validation costs
// nothing beyond the limit). The framework's own ns/op and MB/s cover the
// pair and are not the figures.
func BenchmarkValidateProduced(b *testing.B) {
	for _, codec := range []Codec{CodecNone, CodecZstd} {
		for _, size := range []int{16 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("codec=%s/batch=%dKiB", codec, size>>10), func(b *testing.B) {
				batch, recordsBytes := benchProduced(b, codec, size)
				limit := benchLimit(b, codec, batch)
				var ours, limits durations
				b.SetBytes(2 * int64(recordsBytes))
				for b.Loop() {
					start := time.Now()
					if _, err := ValidateProduced(batch, ProduceOptions{}); err != nil {
						b.Fatal(err)
					}
					ours = append(ours, time.Since(start))
					start = time.Now()
					limit()
					limits = append(limits, time.Since(start))
				}
				mbs := func(d time.Duration) float64 { return float64(recordsBytes) / d.Seconds() / 1e6 }
				b.ReportMetric(mbs(ours.median()), "validate-MB/s")
				b.ReportMetric(mbs(limits.median()), "limit-MB/s")
				b.ReportMetric(limits.median().Seconds()/ours.median().Seconds(), "x-limit")
				b.ReportMetric(float64(len(batch))/float64(recordsBytes), "stored/records")
			})
		}
	}
}

// durations are per-operation times; their median ignores the operations
// another process preempted.
type durations []time.Duration

func (d durations) median() time.Duration {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// benchProduced builds a batch of about size bytes of records, each a
// short key, a 200-byte value of words (text compresses about as logs and
// JSON events do) and one header. It returns the batch and the size of its
// records uncompressed.
func benchProduced(b *testing.B, codec Codec, size int) ([]byte, int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the broker validates every record of a produced batch before it is written offset key value header partition topic leader")
	var records []Record
	var raw []byte
	for i := 0; len(raw) < size; i++ {
		var value strings.Builder
		for value.Len() < 200 {
			value.WriteString(words[rng.IntN(len(words))])
			fmt.Fprintf(&value, " %d ", rng.IntN(1000))
		}
		r := Record{Key: fmt.Appendf(nil, "key-%d", i), Value: []byte(value.String()), TimestampDelta: int64(i),
			Headers: []RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "%08x", rng.Uint32())}}}
		records = append(records, r)
		raw = appendRecord(raw, r, int32(i))
	}
	batch, err := Build(BuildOptions{Codec: codec, FirstTimestamp: 1_700_000_000_000, ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		b.Fatal(err)
	}
	return batch, len(raw)
}

// benchLimit returns the machine's limit for checking batch: its CRC-32C,
// or, compressed, decompressing its records into io.Discard.
func benchLimit(b *testing.B, codec Codec, batch []byte) func() {
	if codec == CodecNone {
		return func() { crc32.Checksum(batch[posAttributes:], castagnoli) }
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(dec.Close)
	body := bytes.NewReader(nil)
	return func() {
		body.Reset(batch[HeaderSize:])
		if err := dec.Reset(body); err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, dec); err != nil {
			b.Fatal(err)
		}
	}
}
