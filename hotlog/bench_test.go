package hotlog

import (
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
	"golang.org/x/sys/unix"
)

// Benchmarks report each figure beside the machine's limit for the same
// work, and their ratio:
//
//	go test -run '^$' -bench . ./hotlog/
//
// The limits are measured in the same run, interleaved with the measured
// work (per operation, or in alternating rounds), so both see the same
// disk: on shared virtual disks fsync latency and writeback speed drift by
// several times within minutes, and a limit measured before or after would
// make the ratio meaningless. Per-operation figures are medians, so a
// preempted operation does not count against its neighbour. The framework's
// own ns/op and MB/s cover the interleaved pair and are not the figures.
//
// STRATA_BENCH_LOG_BYTES sets the lookup benchmark's log size (default 1
// GiB; 64 MiB with -short) and STRATA_BENCH_HISTORY_BYTES the recovery
// benchmark's flushed history (default 1 GiB; set 8589934592 for the 8 GiB
// figure).

// benchBatch builds a batch of 1 KiB records of about size bytes.
func benchBatch(b *testing.B, size int) []byte {
	rng := rand.New(rand.NewPCG(1, 1))
	return makeBatch(b, rng, max(1, size/1024), 1024-12, time.Now().UnixMilli())
}

// envBytes reads a size in bytes from the environment.
func envBytes(b *testing.B, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number of bytes", name, v)
	}
	return n
}

func benchConfig() Config {
	c := DefaultConfig()
	c.Durability = SyncPeriodically
	return c
}

// rawFile is the limit's file: plain write(2) and fdatasync, in the same
// directory as the log.
type rawFile struct {
	b *testing.B
	f *os.File
}

func newRawFile(b *testing.B, dir string) *rawFile {
	f, err := os.Create(filepath.Join(dir, "raw"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
	return &rawFile{b: b, f: f}
}

// write times count writes of batch, with an fdatasync after every
// syncEvery of them (never when 0).
func (r *rawFile) write(batch []byte, count, syncEvery int) time.Duration {
	start := time.Now()
	for i := range count {
		if _, err := r.f.Write(batch); err != nil {
			r.b.Fatal(err)
		}
		if syncEvery > 0 && (i+1)%syncEvery == 0 {
			if err := unix.Fdatasync(int(r.f.Fd())); err != nil {
				r.b.Fatal(err)
			}
		}
	}
	return time.Since(start)
}

func mbPerSecond(bytes int64, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e6 }

// durations are per-operation times. Their median is what the benchmarks
// compare: on a shared machine a preempted operation, ours or the limit's,
// takes many times its usual time, and a mean would report the neighbours.
type durations []time.Duration

func (d durations) median() time.Duration { return d.quantile(0.5) }

// quantile is the duration at fraction q of d's sorted order (0: the
// least, 1: the most).
func (d durations) quantile(q float64) time.Duration {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// BenchmarkAppend appends 1 KiB records in batches of 16 KiB and 1 MiB
// without fsync, beside plain write(2) of the same batch to a file in the
// same directory after every append.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("batch=%dKiB", size>>10), func(b *testing.B) {
			batch := benchBatch(b, size)
			dir := b.TempDir()
			c := benchConfig()
			c.SegmentBytes = 1 << 30 // no seal, whose fsync the limit lacks
			l, err := Open(filepath.Join(dir, "log"), c)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			raw := newRawFile(b, dir)
			var ours, limit, validate durations
			appendable := checked(b, batch)[0]
			b.SetBytes(2 * int64(len(batch))) // the append and the limit's write
			for b.Loop() {
				start := time.Now()
				if _, err := l.Append(appendable); err != nil {
					b.Fatal(err)
				}
				ours = append(ours, time.Since(start))
				limit = append(limit, raw.write(batch, 1, 0))
				start = time.Now()
				if _, err := record.Validate(batch); err != nil {
					b.Fatal(err)
				}
				validate = append(validate, time.Since(start))
			}
			size := int64(len(batch))
			b.ReportMetric(mbPerSecond(size, ours.median()), "append-MB/s")
			b.ReportMetric(mbPerSecond(size, limit.median()), "limit-MB/s")
			b.ReportMetric(limit.median().Seconds()/ours.median().Seconds(), "x-limit")
			// The batch's CRC-32C check, which the broker makes once
			// before it appends (record.ValidateProduced, record.Check):
			// the write path with it counted.
			b.ReportMetric(float64(validate.median().Nanoseconds()), "validate-ns")
			b.ReportMetric((limit.median()+validate.median()).Seconds()/ours.median().Seconds(), "x-limit+validate")
		})
	}
}

// BenchmarkDurableAppend runs 1, 4 and 16 appenders that each wait for the
// fsync covering their 16 KiB batch, beside two limits: write+fdatasync per
// batch (no sharing), and the ideal group commit (16 batches written, then
// one fdatasync). The three alternate in rounds.
func BenchmarkDurableAppend(b *testing.B) {
	const batchSize, group = 16 << 10, 16
	for _, appenders := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			batch := benchBatch(b, batchSize)
			dir := b.TempDir()
			c := benchConfig()
			c.Durability = SyncBeforeAck
			var syncs atomic.Int64
			c.Events.Synced = func(SyncInfo) { syncs.Add(1) }
			l, err := Open(filepath.Join(dir, "log"), c)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			raw := newRawFile(b, dir)
			// Per-batch times of each kind, one per round; the rounds
			// alternate the three so they share the disk's mood, and the
			// medians are compared.
			// Enough appends per appender in a round that the round's start
			// and end (when the flusher's group is not yet or no longer
			// full) do not dominate it.
			rounds := max(1, min(9, b.N/(appenders*16)))
			var ours, unshared, ideal durations
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for round := range rounds {
				n := b.N / rounds
				if round == rounds-1 {
					n = b.N - n*(rounds-1)
				}
				limit := max(group, n/4/group*group)
				unshared = append(unshared, raw.write(batch, limit, 1)/time.Duration(limit))
				ideal = append(ideal, raw.write(batch, limit, group)/time.Duration(limit))
				ours = append(ours, durableAppends(b, l, batch, appenders, n)/time.Duration(n))
			}
			b.StopTimer()
			size := int64(len(batch))
			b.ReportMetric(mbPerSecond(size, ours.median()), "append-MB/s")
			b.ReportMetric(mbPerSecond(size, unshared.median()), "unshared-MB/s")
			b.ReportMetric(mbPerSecond(size, ideal.median()), "ideal-MB/s")
			b.ReportMetric(unshared.median().Seconds()/ours.median().Seconds(), "x-unshared")
			b.ReportMetric(ideal.median().Seconds()/ours.median().Seconds(), "x-ideal")
			b.ReportMetric(float64(b.N)/float64(max(syncs.Load(), 1)), "appends/fsync")
		})
	}
}

// durableAppends times n appends, each acknowledged under SyncBeforeAck,
// shared among concurrent appenders.
func durableAppends(b *testing.B, l *Log, batch []byte, appenders, n int) time.Duration {
	// Each appender stamps a copy of its own.
	copies := make([]record.Batch, appenders)
	for i := range copies {
		copies[i] = checked(b, append([]byte(nil), batch...))[0]
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := copies[i]
			for range n/appenders + min(1, max(0, n%appenders-i)) {
				if err := appendAcked(l, mine); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// appendAcked appends batch and waits for its acknowledgement.
func appendAcked(l *Log, batch record.Batch) error {
	res, err := l.Append(batch)
	if err != nil {
		return err
	}
	return res.WaitAck(context.Background())
}

// BenchmarkLookup reads random offsets of a large log (whole-batch
// sections, like a fetch) through the sparse index, beside a dense index of
// every record built for the comparison.
func BenchmarkLookup(b *testing.B) {
	size := int64(1 << 30)
	if testing.Short() {
		size = 64 << 20
	}
	size = envBytes(b, "STRATA_BENCH_LOG_BYTES", size)
	dir := b.TempDir()
	c := benchConfig()
	c.FileCache = NewFileCache(64)
	l, err := Open(dir, c)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := checked(b, benchBatch(b, 16<<10))[0]
	for l.state.Load().logEndOffset() == 0 || sizeOf(l) < size {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	var sparseBytes int64
	for _, s := range l.state.Load().segments {
		sparseBytes += int64(s.tail.Load().indexEntries) * indexEntrySize
	}
	dense := buildDenseIndex(b, l)

	rng := rand.New(rand.NewPCG(2, 2))
	offsets := make([]int64, 4096)
	for i := range offsets {
		offsets[i] = rng.Int64N(end)
	}
	// The dense index's lookup: binary search, then the batch header for
	// the batch's length, as a fetch needs.
	header := make([]byte, record.HeaderSize)
	var ours, limit durations
	i := 0
	for b.Loop() {
		offset := offsets[i%len(offsets)]
		i++
		start := time.Now()
		s, err := l.Read(offset, 1)
		if err != nil {
			b.Fatal(err)
		}
		s.Release()
		middle := time.Now()
		entry := dense.find(offset)
		if _, err := entry.file.ReadAt(header, entry.position); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, middle.Sub(start))
		limit = append(limit, time.Since(middle))
	}
	b.ReportMetric(float64(size>>20), "log-MiB")
	b.ReportMetric(float64(ours.median().Nanoseconds()), "ns/lookup")
	b.ReportMetric(float64(limit.median().Nanoseconds()), "dense-ns/lookup")
	b.ReportMetric(ours.median().Seconds()/limit.median().Seconds(), "x-dense")
	b.ReportMetric(float64(sparseBytes), "index-bytes")
	b.ReportMetric(float64(dense.bytes()), "dense-index-bytes")
}

func sizeOf(l *Log) int64 {
	var total int64
	for _, s := range l.Segments() {
		total += s.Size
	}
	return total
}

// denseIndex maps every record offset to its batch's position, 8 bytes an
// entry like the sparse index (relative offset and position, per segment).
type denseIndex struct {
	segments []denseSegment
}

type denseSegment struct {
	base    int64
	file    *os.File
	entries []uint64 // relative offset << 32 | position
}

type denseEntry struct {
	file     *os.File
	position int64
}

func buildDenseIndex(b *testing.B, l *Log) *denseIndex {
	d := &denseIndex{}
	for _, s := range l.Segments() {
		f, err := os.Open(filepath.Join(l.Dir(), segmentFileName(s.BaseOffset, logSuffix)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		seg := denseSegment{base: s.BaseOffset, file: f}
		r := newHeaderReader(f, s.Size)
		for pos := int64(0); pos < s.Size; {
			h, err := r.at(pos)
			if err != nil {
				b.Fatal(err)
			}
			for o := h.BaseOffset; o <= h.LastOffset(); o++ {
				seg.entries = append(seg.entries, uint64(o-s.BaseOffset)<<32|uint64(pos))
			}
			pos += int64(h.Size())
		}
		r.close()
		d.segments = append(d.segments, seg)
	}
	return d
}

func (d *denseIndex) find(offset int64) denseEntry {
	i := sort.Search(len(d.segments), func(i int) bool { return d.segments[i].base > offset }) - 1
	seg := d.segments[i]
	rel := uint64(offset - seg.base)
	j := sort.Search(len(seg.entries), func(j int) bool { return seg.entries[j]>>32 > rel }) - 1
	return denseEntry{file: seg.file, position: int64(uint32(seg.entries[j]))}
}

func (d *denseIndex) bytes() int64 {
	var n int64
	for _, s := range d.segments {
		n += int64(len(s.entries)) * indexEntrySize
	}
	return n
}

// BenchmarkRecovery opens a log after an unclean stop with 0, 64 MiB and
// 512 MiB appended since the persisted recovery point, over a short and a
// long flushed history: the time must depend on the first, not the second.
// Beside it, the limit: reading the unflushed bytes and computing their
// CRC-32C, which recovery cannot avoid. The data is in the page cache, as
// after a process crash.
func BenchmarkRecovery(b *testing.B) {
	history := envBytes(b, "STRATA_BENCH_HISTORY_BYTES", 1<<30)
	for _, h := range []int64{128 << 20, history} {
		for _, unflushed := range []int64{0, 64 << 20, 512 << 20} {
			b.Run(fmt.Sprintf("history=%dMiB/unflushed=%dMiB", h>>20, unflushed>>20), func(b *testing.B) {
				benchmarkRecovery(b, h, unflushed)
			})
		}
	}
}

func benchmarkRecovery(b *testing.B, history, unflushed int64) {
	dir := b.TempDir()
	c := benchConfig()
	l, err := Open(dir, c)
	if err != nil {
		b.Fatal(err)
	}
	batch := checked(b, benchBatch(b, 1<<20))[0]
	for sizeOf(l) < history {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	l.flusher.round.Lock()
	err = l.writeCheckpointLocked()
	l.flusher.round.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	checkpoint, err := os.ReadFile(filepath.Join(dir, logCheckpointName))
	if err != nil {
		b.Fatal(err)
	}
	// An unclean stop: the flusher stops, the appends that follow are
	// written but neither fsynced nor sealed, and the log is never closed.
	l.flusher.stop()
	before := sizeOf(l)
	for sizeOf(l)-before < unflushed {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	segments := l.Segments()
	for _, s := range l.state.Load().segments {
		s.detach()
	}

	// Each recovery starts from the same crash: the old recovery point, no
	// clean-shutdown marker.
	var scanned int64
	recover := func() time.Duration {
		if err := os.WriteFile(filepath.Join(dir, logCheckpointName), checkpoint, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := removeIfExists(filepath.Join(dir, cleanShutdownName)); err != nil {
			b.Fatal(err)
		}
		var info RecoveryInfo
		start := time.Now()
		r, err := Open(dir, recoveryEvents(c, &info))
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		scanned = info.BytesScanned
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		return took
	}
	// The first recovery also writes the crashed data back to disk (its
	// fsync); the measured ones find it there, so they measure the scan.
	recover()
	var ours, limit time.Duration
	for b.Loop() {
		limit += readAndCRC(b, dir, segments, before)
		ours += recover()
	}
	perOp := ours / time.Duration(b.N)
	b.ReportMetric(float64(perOp.Microseconds())/1000, "ms/recovery")
	b.ReportMetric(float64(len(segments)), "segments")
	b.ReportMetric(float64(scanned>>20), "scanned-MiB")
	if scanned > 0 {
		b.ReportMetric(mbPerSecond(scanned, perOp), "MB/s")
		b.ReportMetric(mbPerSecond(scanned*int64(b.N), limit), "limit-MB/s")
		b.ReportMetric(limit.Seconds()/ours.Seconds(), "x-limit")
	}
}

// readAndCRC times reading the bytes past position from of the last
// segments and computing their CRC-32C: the least work a recovery of them
// can do.
func readAndCRC(b *testing.B, dir string, segments []SegmentInfo, from int64) time.Duration {
	table := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, recoveryReadSize)
	start := time.Now()
	var offset int64
	for _, s := range segments {
		segmentStart := offset
		offset += s.Size
		if offset <= from {
			continue
		}
		f, err := os.Open(filepath.Join(dir, segmentFileName(s.BaseOffset, logSuffix)))
		if err != nil {
			b.Fatal(err)
		}
		for pos := max(from-segmentStart, 0); pos < s.Size; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), s.Size-pos)], pos)
			if n == 0 {
				b.Fatal(err)
			}
			crc32.Checksum(buf[:n], table)
			pos += int64(n)
		}
		f.Close()
	}
	return time.Since(start)
}
