package hotlog

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppendBesideDeletion: 8 logs sharing a DiskSync (a broker's
// partitions on one disk), each with an appender that appends 16 KiB
// batches and waits for each acknowledgement (SyncBeforeAck), beside a
// deleter that keeps each log at its two newest segments (1 MiB), as
// local retention deletes uploaded segments. Passes with the deleter and
// without it alternate in the same run; reported: an acknowledged
// append's p50, p99 and max with deletions and without, and x-without
// (p99 without over p99 with: 1 when deletions cost the appenders
// nothing), and retired-MB, the bytes of deleted segments not yet freed
// at a pass's end (what pacing the reclaims holds back).
func BenchmarkAppendBesideDeletion(b *testing.B) {
	const logs, perPass = 8, 256
	dir := b.TempDir()
	disk, err := OpenDiskSync(dir, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer disk.Close()
	c := benchConfig()
	c.Durability, c.DiskSync, c.SegmentBytes = SyncBeforeAck, disk, 1<<20
	ls := make([]*Log, logs)
	for i := range ls {
		if ls[i], err = Open(filepath.Join(dir, fmt.Sprint(i)), c); err != nil {
			b.Fatal(err)
		}
		defer ls[i].Close()
	}
	batch := benchBatch(b, 16<<10)
	var with, without durations
	var deletions atomic.Int64
	pass := func(deleting bool) []time.Duration {
		stop := make(chan struct{})
		var deleter sync.WaitGroup
		if deleting {
			deleter.Go(func() {
				for {
					for _, l := range ls {
						if s := l.Segments(); len(s) > 2 {
							if _, err := l.DeleteBefore(s[len(s)-2].BaseOffset); err != nil {
								b.Error(err)
								return
							}
							deletions.Add(1)
						}
					}
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
		}
		lat := make([][]time.Duration, logs)
		var appenders sync.WaitGroup
		for i, l := range ls {
			appenders.Go(func() {
				mine := checked(b, append([]byte(nil), batch...))[0]
				for range perPass {
					start := time.Now()
					if err := appendAcked(l, mine); err != nil {
						b.Error(err)
						return
					}
					lat[i] = append(lat[i], time.Since(start))
				}
			})
		}
		appenders.Wait()
		close(stop)
		deleter.Wait()
		return slices.Concat(lat...)
	}
	var retired int64
	for b.Loop() {
		without = append(without, pass(false)...)
		with = append(with, pass(true)...)
		retired += retiredBytes(b, dir)
	}
	q := func(d durations, p float64) float64 { return float64(d.quantile(p).Microseconds()) / 1e3 }
	b.ReportMetric(q(with, 0.5), "p50-ms")
	b.ReportMetric(q(with, 0.99), "p99-ms")
	b.ReportMetric(q(with, 1), "max-ms")
	b.ReportMetric(q(without, 0.5), "without-p50-ms")
	b.ReportMetric(q(without, 0.99), "without-p99-ms")
	b.ReportMetric(q(without, 1), "without-max-ms")
	b.ReportMetric(q(without, 0.99)/q(with, 0.99), "x-without")
	b.ReportMetric(float64(deletions.Load())/float64(b.N), "deletions/pass")
	b.ReportMetric(float64(retired)/float64(b.N)/1e6, "retired-MB")
}

// retiredBytes is the size of the retired segment logs under dir not yet
// reclaimed.
func retiredBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, deletedSuffix) {
			return err
		}
		info, err := e.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
