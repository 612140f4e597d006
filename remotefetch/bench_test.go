package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/segmentobject"
)

// Remote read benchmarks against versitygw, each figure beside the limits
// measured from the same server in the same run. Every pass of the reader
// is followed by one pass of each setting of each limit over the same
// bytes; a setting's passes are timed together as the reader's are (all
// the bytes over all the time), and a limit is its fastest setting:
//
//   - ranged GETs of the reader's block size, rangedGetsInFlight at once
//     (limit-MB/s, x-limit; limit-gets-in-flight is the number that won),
//     what a cold read can at best do;
//   - one streaming GET per segment object, wholeObjectStreams objects at
//     once (stream-MB/s, x-stream; stream-parallel is the number that won).
//
// Every setting's MB/s is logged beside the metrics, for the testing
// package's one-pass probe as well as for the run it reports. The cold and
// warm reads are a catch-up consumer's (one FetchMany loop over the
// partitions, max.partition.fetch.bytes of 1 MiB each) over 4 partitions
// of 2 segments of 32 MiB; the bucket scan is `strata export`'s
// (BucketReader, a partition at a time) over one partition of 8 segments
// of 32 MiB, the same bytes, long enough that the scan's start is a small
// part of it, as in an export of a partition's history.
//
//	go test -run '^$' -bench . -benchtime 3x ./remotefetch/
const (
	benchPartitions   = 4
	benchSegments     = 2
	scanSegments      = benchPartitions * benchSegments
	benchSegmentBytes = 32 << 20
	benchValueSize    = 16 << 10 // batches of 16 to 64 KiB
	benchFetchBytes   = 1 << 20  // Kafka's max.partition.fetch.bytes
)

// rangedGetsInFlight are the GETs in flight the ranged-GET limit is
// measured at: from one up to DefaultMaxConcurrentGets, the most the
// reader can have.
var rangedGetsInFlight = []int{1, 2, 4, 8, 16, DefaultMaxConcurrentGets}

// wholeObjectStreams are the objects streamed at once for the whole-object
// limit: around benchPartitions, the partitions the reader reads at once
// (FetchConcurrency is larger), up to every object of the data set.
var wholeObjectStreams = []int{1, benchPartitions / 2, benchPartitions, benchPartitions * benchSegments}

// benchDataSet is a set of partitions uploaded once per process, under a
// prefix of its own.
type benchDataSet struct {
	once  sync.Once
	store objstore.Store
	parts sources
	bytes int64 // log bytes in all
	err   error
}

// The reads' data set and the scan's.
var catchUpData, scanData benchDataSet

func benchSetup(b *testing.B) (objstore.Store, sources, int64) {
	return catchUpData.setup(b, "bench", benchPartitions, benchSegments)
}

func scanSetup(b *testing.B) (objstore.Store, sources, int64) {
	return scanData.setup(b, "bench-scan", 1, scanSegments)
}

// setup uploads, the first time, partitions of segments of
// benchSegmentBytes each under prefix, and returns them.
func (d *benchDataSet) setup(b *testing.B, prefix string, partitions, segments int) (objstore.Store, sources, int64) {
	b.Helper()
	gw := versityGW(b)
	d.once.Do(func() {
		ctx := context.Background()
		d.store, d.err = objstore.Open(ctx, objstoretest.S3URL(gw.Endpoint, testBucket, prefix), gw.Config())
		if d.err != nil {
			return
		}
		batches := make([]int, segments)
		for i := range batches {
			batches[i] = benchSegmentBytes / (benchValueSize * 5 / 2)
		}
		for i := range partitions {
			p := buildPartition(b, "bench", int32(i), batches, segmentSpec{valueSize: benchValueSize})
			p.put(b, d.store)
			p.publish(b, d.store)
			for j := range p.segments {
				d.bytes += p.segments[j].seg.LogBytes
				p.segments[j].object, p.segments[j].batches = nil, nil // uploaded: free them
			}
			d.parts = append(d.parts, p)
		}
	})
	if d.err != nil {
		b.Fatal(d.err)
	}
	return d.store, d.parts, d.bytes
}

// inFlightBucket tracks the most GETs the reader had in flight at once.
type inFlightBucket struct {
	Bucket
	now, peak atomic.Int64
}

func (f *inFlightBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for peak := f.peak.Load(); n > peak && !f.peak.CompareAndSwap(peak, n); peak = f.peak.Load() {
	}
	return f.Bucket.ReadAt(ctx, key, p, off, filled)
}

// catchUp reads every partition from 0 to its end the way a consumer's
// fetch loop does, and returns the bytes read. A partition that times out
// at remote.fetch.max.wait.ms is fetched again, as a client would.
func catchUp(b *testing.B, r *Reader, parts sources) int64 {
	offsets := make([]int64, len(parts))
	var total int64
	for {
		var reqs []Request
		var which []int
		for i, p := range parts {
			if offsets[i] < p.end() {
				reqs = append(reqs, Request{Partition: p.part, Offset: offsets[i], MaxBytes: benchFetchBytes})
				which = append(which, i)
			}
		}
		if len(reqs) == 0 {
			return total
		}
		for j, res := range r.FetchMany(b.Context(), reqs) {
			switch {
			case errors.Is(res.Err, ErrTimeout):
			case res.Err != nil:
				b.Fatal(res.Err)
			default:
				total += int64(len(res.Records))
				offsets[which[j]] = res.NextOffset
				res.Release() // as the broker does once the response is written
			}
		}
	}
}

// benchConfig is DefaultConfig at a block size, reading the same distance
// ahead whatever the block size (benchReadAhead), with a cache that holds
// the whole data set (for the warm read).
func benchConfig(blockSize int64) Config {
	cfg := DefaultConfig()
	cfg.BlockSize = blockSize
	cfg.ReadAheadBlocks = int(max(benchReadAhead/blockSize, 1))
	cfg.BlockCacheBytes = 1 << 30
	cfg.ReadAheadBytes = 1 << 30
	return cfg
}

// benchReadAhead is the read-ahead distance of every block size benchmarked:
// DefaultReadAheadBlocks of DefaultBlockSize.
const benchReadAhead = DefaultReadAheadBlocks * DefaultBlockSize

// coldCacheBytes is the cold read's block cache: a quarter of the data set.
const coldCacheBytes = benchPartitions * benchSegments * benchSegmentBytes / 4

// BenchmarkColdRead: a catch-up read with empty caches, per block size, by
// a Reader that has run before: it read the data set once before the
// passes (unmeasured), each pass starts with its block and index caches
// emptied, and its block cache (coldCacheBytes) is smaller than the data
// set, so that blocks leave it during a pass as they do in a running
// broker, where every block loaded evicts another, and their buffers go
// round the pool. buffers-reused/block is the share of the passes' block
// loads that reused a buffer.
func BenchmarkColdRead(b *testing.B) {
	store, parts, size := benchSetup(b)
	for _, blockSize := range []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("block=%dMiB", blockSize>>20), func(b *testing.B) {
			ranged, whole := newLimitSweep(rangedGetsInFlight), newLimitSweep(wholeObjectStreams)
			var cold time.Duration
			var read, peak int64
			b.StopTimer()
			bucket := &inFlightBucket{Bucket: StoreBucket(store)}
			cfg := benchConfig(blockSize)
			cfg.BlockCacheBytes = coldCacheBytes
			r, err := New(bucket, parts, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			buffers := make([][]byte, slices.Max(rangedGetsInFlight))
			for i := range buffers {
				buffers[i] = make([]byte, blockSize)
			}
			streamBuffers := newStreamBuffers()
			catchUp(b, r, parts)
			before := r.Metrics()
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				r.emptyCaches()
				bucket.peak.Store(0)
				b.StartTimer()
				start := time.Now()
				n := catchUp(b, r, parts)
				cold += time.Since(start)
				b.StopTimer()
				read, peak = read+n, max(peak, bucket.peak.Load())
				ranged.pass(func(inFlight int) time.Duration { return rangedGetLimit(b, store, parts, buffers[:inFlight]) })
				whole.pass(func(streams int) time.Duration { return streamingGetLimit(b, store, parts, streamBuffers[:streams]) })
				b.StartTimer()
			}
			b.StopTimer()
			if read != size*int64(b.N) {
				b.Fatalf("read %d bytes, want %d", read, size*int64(b.N))
			}
			after := r.Metrics()
			gets := after.BlockGets + after.IndexGets - before.BlockGets - before.IndexGets
			loads := after.Blocks.Misses + after.Prefetches - before.Blocks.Misses - before.Prefetches
			reportLimits(b, ranged, whole, cold, size)
			b.ReportMetric(float64(gets)/(float64(read)/(1<<20)), "gets/MiB")
			b.ReportMetric(float64(peak), "gets-in-flight")
			b.ReportMetric(float64(after.Blocks.BuffersReused-before.Blocks.BuffersReused)/float64(loads), "buffers-reused/block")
		})
	}
}

// BenchmarkBucketScan: `strata export`'s read of its data set (one long
// partition; scanSetup), a partition at a time, each by a BucketReader of
// its own opened as export opens one (ScanConfig; given the topic id, as
// the data set's partitions have one each, so without export's listing to
// find it), reading every batch once; beside the same limits as
// BenchmarkColdRead at the default block size, from the same server in
// the same run, each measured as the scan reads: a partition at a time,
// with up to as many GETs in flight as a partition has blocks (at most
// the reader's MaxConcurrentGets), or objects at once as it has objects.
func BenchmarkBucketScan(b *testing.B) {
	store, parts, size := scanSetup(b)
	cfg := ScanConfig()
	blocks := 0 // the most blocks a partition's logs have, up to the reader's GETs
	for _, p := range parts {
		n := 0
		for _, s := range p.segments {
			n += int((s.seg.LogBytes + cfg.BlockSize - 1) / cfg.BlockSize)
		}
		blocks = max(blocks, min(n, cfg.MaxConcurrentGets))
	}
	ranged, whole := newLimitSweep(settingsUpTo(rangedGetsInFlight, blocks)), newLimitSweep(settingsUpTo(wholeObjectStreams, scanSegments))
	buffers := make([][]byte, blocks)
	for i := range buffers {
		buffers[i] = make([]byte, cfg.BlockSize)
	}
	streamBuffers := newStreamBuffers()
	var scan time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, p := range parts {
			scanPartition(b, store, p, cfg)
		}
		scan += time.Since(start)
		b.StopTimer()
		ranged.pass(func(inFlight int) time.Duration {
			return aPartitionAtATime(parts, func(p sources) time.Duration { return rangedGetLimit(b, store, p, buffers[:inFlight]) })
		})
		whole.pass(func(streams int) time.Duration {
			return aPartitionAtATime(parts, func(p sources) time.Duration { return streamingGetLimit(b, store, p, streamBuffers[:streams]) })
		})
		b.StartTimer()
	}
	b.StopTimer()
	reportLimits(b, ranged, whole, scan, size)
}

// reportLimits reports the ranged-GET and whole-object limits at their
// best settings, each beside measured, the time b's passes of size bytes
// each took the reader, and logs every setting's rate.
func reportLimits(b *testing.B, ranged, whole *limitSweep, measured time.Duration, size int64) {
	mbps := func(d time.Duration) float64 { return float64(size*int64(b.N)) / 1e6 / d.Seconds() }
	inFlight, rangedTime := ranged.best()
	streams, streamTime := whole.best()
	b.ReportMetric(mbps(rangedTime), "limit-MB/s")
	b.ReportMetric(rangedTime.Seconds()/measured.Seconds(), "x-limit")
	b.ReportMetric(float64(inFlight), "limit-gets-in-flight")
	b.ReportMetric(mbps(streamTime), "stream-MB/s")
	b.ReportMetric(streamTime.Seconds()/measured.Seconds(), "x-stream")
	b.ReportMetric(float64(streams), "stream-parallel")
	b.Logf("%d passes; ranged GETs, MB/s by GETs in flight: %s", b.N, ranged.format(mbps))
	b.Logf("%d passes; whole objects, MB/s by objects at once: %s", b.N, whole.format(mbps))
}

// settingsUpTo is the settings below most, and most: a sweep over one
// partition's blocks or objects gains nothing past their number.
func settingsUpTo(settings []int, most int) []int {
	var out []int
	for _, s := range settings {
		if s < most {
			out = append(out, s)
		}
	}
	return append(out, most)
}

// aPartitionAtATime is how long measure takes over each partition of parts
// alone, one after another, as an export reads them.
func aPartitionAtATime(parts sources, measure func(sources) time.Duration) time.Duration {
	var total time.Duration
	for _, p := range parts {
		total += measure(sources{p})
	}
	return total
}

// scanPartition reads every batch of p as `strata export` does and checks
// their bytes add up to the partition's log.
func scanPartition(b *testing.B, store objstore.Store, p *testPartition, cfg Config) {
	r, err := OpenBucketReader(b.Context(), store, BucketLocation{Topic: p.part.Topic, TopicID: p.part.TopicID, Partition: p.part.Index}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var n, want int64
	for batch, err := range r.Batches(b.Context(), 0, p.end()) {
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(batch.Bytes))
	}
	for _, s := range p.segments {
		want += s.seg.LogBytes
	}
	if n != want {
		b.Fatalf("scanned %d bytes of %s, want %d", n, p.part, want)
	}
}

// BenchmarkWarmRead: the same catch-up read with every block cached,
// beside the cold read of the same data by the same reader, pass for pass:
// each pass is a new reader's cold read, then its warm one.
func BenchmarkWarmRead(b *testing.B) {
	store, parts, size := benchSetup(b)
	var cold, warm time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r, err := New(StoreBucket(store), parts, benchConfig(DefaultBlockSize))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		catchUp(b, r, parts)
		cold += time.Since(start)
		gets := r.Metrics().BlockGets
		b.StartTimer()
		start = time.Now()
		catchUp(b, r, parts)
		warm += time.Since(start)
		b.StopTimer()
		if n := r.Metrics().BlockGets; n != gets {
			b.Fatalf("the warm read made %d GETs: the cache does not hold the data set", n-gets)
		}
		_ = r.Close()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(cold.Seconds()/warm.Seconds(), "x-cold")
}

// limitSweep times one way of reading the benchmark objects at several
// settings (GETs or objects in flight), each summed over the benchmark's
// passes, so that the limit is the fastest setting measured as the
// reader's figure is.
type limitSweep struct {
	settings []int
	elapsed  []time.Duration
}

func newLimitSweep(settings []int) *limitSweep {
	return &limitSweep{settings: settings, elapsed: make([]time.Duration, len(settings))}
}

// pass adds one pass of measure at every setting.
func (s *limitSweep) pass(measure func(setting int) time.Duration) {
	for i, setting := range s.settings {
		s.elapsed[i] += measure(setting)
	}
}

// best returns the fastest setting and its time over all passes.
func (s *limitSweep) best() (setting int, elapsed time.Duration) {
	fastest := 0
	for i, d := range s.elapsed {
		if d < s.elapsed[fastest] {
			fastest = i
		}
	}
	return s.settings[fastest], s.elapsed[fastest]
}

// format lists every setting's rate, as "1: 412, 2: 800".
func (s *limitSweep) format(mbps func(time.Duration) float64) string {
	rates := make([]string, len(s.settings))
	for i, setting := range s.settings {
		rates[i] = fmt.Sprintf("%d: %.0f", setting, mbps(s.elapsed[i]))
	}
	return strings.Join(rates, ", ")
}

// rangedGetLimit reads every block of the benchmark objects' logs with
// ranged GETs of the buffers' size, one per buffer at a time, and returns
// how long that took.
func rangedGetLimit(b *testing.B, store objstore.Store, parts sources, buffers [][]byte) time.Duration {
	blockSize := int64(len(buffers[0]))
	type block struct {
		key        string
		off, len64 int64
	}
	var blocks []block
	for _, p := range parts {
		for _, s := range p.segments {
			for off := int64(0); off < s.seg.LogBytes; off += blockSize {
				blocks = append(blocks, block{s.seg.Key, off, min(blockSize, s.seg.LogBytes-off)})
			}
		}
	}
	return timeInParallel(b, len(blocks), len(buffers), func(worker, i int) error {
		bl := blocks[i]
		return objstore.ReadAt(b.Context(), store, bl.key, buffers[worker][:bl.len64], bl.off)
	})
}

// streamingGetLimit reads each benchmark object's log with one streaming
// GET, one per buffer at a time, each body read into its buffer as fast as
// the socket gives it, and returns how long that took.
func streamingGetLimit(b *testing.B, store objstore.Store, parts sources, buffers [][]byte) time.Duration {
	var segments []segmentobject.ManifestSegment
	for _, p := range parts {
		for _, s := range p.segments {
			segments = append(segments, s.seg)
		}
	}
	return timeInParallel(b, len(segments), len(buffers), func(worker, i int) error {
		seg := segments[i]
		n, err := objstoretest.ReadThrough(b.Context(), store, seg.Key, 0, seg.LogBytes, buffers[worker])
		if err == nil && n != seg.LogBytes {
			err = fmt.Errorf("streamed %d of %d bytes of %s", n, seg.LogBytes, seg.Key)
		}
		return err
	})
}

// streamBufferBytes is what the whole-object limit reads a body into at a
// time: read buffers of 64 KiB, 256 KiB, 1 MiB and 8 MiB measured within
// the runs' spread of each other (3.0-3.3 GB/s at eight streams, one run
// each at 8 MiB blocks; docs/bench.md).
const streamBufferBytes = 1 << 20

// newStreamBuffers returns a buffer for each stream of the whole-object
// limit at its most streams.
func newStreamBuffers() [][]byte {
	buffers := make([][]byte, slices.Max(wholeObjectStreams))
	for i := range buffers {
		buffers[i] = make([]byte, streamBufferBytes)
	}
	return buffers
}

// timeInParallel calls read for every i below count, from workers
// goroutines numbered from 0, and returns how long that took; it fails b
// on the first error, once every worker has stopped.
func timeInParallel(b *testing.B, count, workers int, read func(worker, i int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for worker := range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(count); i = next.Add(1) - 1 {
				if err := read(worker, int(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return elapsed
}
