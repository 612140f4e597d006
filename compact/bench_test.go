package compact

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// benchLog is a log of about size bytes of 100-byte updates spread over
// keys keys, in batches of ten, with 8 MiB segments, every segment sealed
// and rewritable.
func benchLog(b *testing.B, size, keys int) *hotlog.Log {
	b.Helper()
	cfg := hotlog.DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	cfg.Durability = hotlog.SyncPeriodically
	l, err := hotlog.Open(b.TempDir(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	value := make([]byte, 100)
	records := make([]record.Record, 10)
	for n := 0; l.LogEndOffset()*130 < int64(size); n += len(records) {
		for i := range records {
			records[i] = record.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "key-%06d", (n+i)%keys), Value: value}
		}
		raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			b.Fatal(err)
		}
		batch, err := record.Check(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	if _, err := l.Append(mustBatch(b)); err != nil {
		b.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	waitRewritable(b, l)
	return l
}

func mustBatch(b *testing.B) record.Batch {
	raw, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1}, []record.Record{{Key: []byte("last"), Value: []byte("x")}})
	if err != nil {
		b.Fatal(err)
	}
	batch, err := record.Check(raw)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// rawReadWrite is the limit of a pass over the same bytes: every sealed
// segment's log read whole and written to a new file, fsynced, as the
// cleaner reads a segment and writes its replacement. It returns bytes per
// second read.
func rawReadWrite(b *testing.B, l *hotlog.Log) float64 {
	b.Helper()
	dir := b.TempDir()
	buf := make([]byte, 1<<20)
	start := time.Now()
	var total int64
	for _, s := range l.Segments() {
		if !s.Sealed {
			continue
		}
		in, err := os.Open(filepath.Join(l.Dir(), fmt.Sprintf("%020d.log", s.BaseOffset)))
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", s.BaseOffset)))
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(out, in, buf)
		if err == nil {
			err = out.Sync()
		}
		in.Close()
		out.Close()
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return float64(total) / time.Since(start).Seconds()
}

// BenchmarkClean is the cleaner's throughput, one pass over a log of
// 256 MiB of 100-byte updates, in MB of log per second, beside the limit
// measured in the same run: a raw read and write (and fsync) of the same
// segments. A pass reads each byte to map keys, again to find whether its
// segment loses anything, and a segment that does once more to rewrite it
// (reads-per-byte; written-per-byte is what the rewrites wrote). Two
// shapes: 10,000 keys (most records superseded: little is written) and
// every record its own key (nothing dropped: nothing rewritten).
func BenchmarkClean(b *testing.B) {
	for _, keys := range []int{10_000, 1 << 30} {
		name := fmt.Sprintf("keys=%d", keys)
		if keys == 1<<30 {
			name = "keys=unique"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				l := benchLog(b, 256<<20, keys)
				var logBytes int64
				for _, s := range l.Segments() {
					if s.Sealed {
						logBytes += s.Size
					}
				}
				limit := rawReadWrite(b, l)
				b.StartTimer()
				start := time.Now()
				res, err := Clean(context.Background(), Pass{
					Log: l, End: l.ActiveSegment().BaseOffset, Now: time.Now(), DeleteRetention: time.Hour,
					MaxKeys: 4 << 20, DecompressLimit: record.MaxDecompressedBytes,
				})
				elapsed := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				rate := float64(logBytes) / elapsed.Seconds()
				b.ReportMetric(rate/1e6, "MB/s")
				b.ReportMetric(limit/1e6, "raw-read-write-MB/s")
				b.ReportMetric(rate/limit, "x-limit")
				b.ReportMetric(float64(res.BytesRead)/float64(logBytes), "reads-per-byte")
				b.ReportMetric(float64(res.BytesWritten)/float64(logBytes), "written-per-byte")
			}
		})
	}
}
