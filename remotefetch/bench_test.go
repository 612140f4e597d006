package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// Remote read benchmarks against versitygw, each beside the limits
// measured in the same run from the same server:
//
//   - ranged GETs of the reader's block size at the parallelism the reader
//     reached (limit-MB/s, x-limit), what a cold read can at best do;
//   - one streaming GET of a whole segment object (stream-MB/s, x-stream).
//
// The workload is a catch-up consumer: one FetchMany loop over 4 partitions
// of 2 segments of 32 MiB, max.partition.fetch.bytes of 1 MiB each.
//
//	go test -run '^$' -bench . -benchtime 3x ./remotefetch/
const (
	benchPartitions   = 4
	benchSegments     = 2
	benchSegmentBytes = 32 << 20
	benchValueSize    = 16 << 10 // batches of 16 to 64 KiB
	benchFetchBytes   = 1 << 20  // Kafka's max.partition.fetch.bytes
)

// The benchmark data, uploaded once per process.
var benchData struct {
	once  sync.Once
	store objstore.Store
	parts sources
	bytes int64 // log bytes in all
	err   error
}

func benchSetup(b *testing.B) (objstore.Store, sources, int64) {
	b.Helper()
	gw := versityGW(b)
	benchData.once.Do(func() {
		ctx := context.Background()
		benchData.store, benchData.err = objstore.Open(ctx, objstoretest.S3URL(gw.Endpoint, testBucket, "bench"), gw.Config())
		if benchData.err != nil {
			return
		}
		batches := benchSegmentBytes / (benchValueSize * 5 / 2)
		for i := range benchPartitions {
			p := buildPartition(b, "bench", int32(i), []int{batches, batches}, segmentSpec{valueSize: benchValueSize})
			p.put(b, benchData.store)
			for j := range p.segments {
				benchData.bytes += p.segments[j].seg.LogBytes
				p.segments[j].object, p.segments[j].batches = nil, nil // uploaded: free them
			}
			benchData.parts = append(benchData.parts, p)
		}
	})
	if benchData.err != nil {
		b.Fatal(benchData.err)
	}
	return benchData.store, benchData.parts, benchData.bytes
}

// inFlightBucket tracks the most GETs the reader had in flight at once.
type inFlightBucket struct {
	Bucket
	now, peak atomic.Int64
}

func (f *inFlightBucket) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for peak := f.peak.Load(); n > peak && !f.peak.CompareAndSwap(peak, n); peak = f.peak.Load() {
	}
	return f.Bucket.ReadAt(ctx, key, p, off)
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

// BenchmarkColdRead: a catch-up read with empty caches, per block size.
func BenchmarkColdRead(b *testing.B) {
	store, parts, size := benchSetup(b)
	for _, blockSize := range []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("block=%dMiB", blockSize>>20), func(b *testing.B) {
			var cold, ranged, stream time.Duration
			var gets, read, peak int64
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				bucket := &inFlightBucket{Bucket: StoreBucket(store)}
				r, err := New(bucket, parts, benchConfig(blockSize))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				n := catchUp(b, r, parts)
				cold += time.Since(start)
				b.StopTimer()
				m := r.Metrics()
				gets, read, peak = gets+m.BlockGets+m.IndexGets, read+n, max(peak, bucket.peak.Load())
				_ = r.Close()
				ranged += rangedGetLimit(b, store, parts, blockSize, int(bucket.peak.Load()))
				stream += streamingGetLimit(b, store, parts)
				b.StartTimer()
			}
			b.StopTimer()
			if read != size*int64(b.N) {
				b.Fatalf("read %d bytes, want %d", read, size*int64(b.N))
			}
			mbps := func(d time.Duration) float64 { return float64(size*int64(b.N)) / 1e6 / d.Seconds() }
			b.ReportMetric(mbps(ranged), "limit-MB/s")
			b.ReportMetric(ranged.Seconds()/cold.Seconds(), "x-limit")
			b.ReportMetric(mbps(stream), "stream-MB/s")
			b.ReportMetric(stream.Seconds()/cold.Seconds(), "x-stream")
			b.ReportMetric(float64(gets)/(float64(read)/(1<<20)), "gets/MiB")
			b.ReportMetric(float64(peak), "gets-in-flight")
		})
	}
}

// BenchmarkWarmRead: the same catch-up read with every block cached,
// beside the cold read of the same data by the same reader.
func BenchmarkWarmRead(b *testing.B) {
	store, parts, size := benchSetup(b)
	r, err := New(StoreBucket(store), parts, benchConfig(DefaultBlockSize))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	catchUp(b, r, parts)
	cold := time.Since(start)
	gets := r.Metrics().BlockGets
	b.SetBytes(size)
	b.ResetTimer()
	start = time.Now()
	for range b.N {
		catchUp(b, r, parts)
	}
	warm := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	if n := r.Metrics().BlockGets; n != gets {
		b.Fatalf("warm reads made %d GETs: the cache does not hold the data set", n-gets)
	}
	b.ReportMetric(cold.Seconds()/warm.Seconds(), "x-cold")
}

// rangedGetLimit reads every block of the benchmark objects' logs with
// ranged GETs of blockSize, parallelism at a time, and returns how long
// that took.
func rangedGetLimit(b *testing.B, store objstore.Store, parts sources, blockSize int64, parallelism int) time.Duration {
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
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, parallelism)
	start := time.Now()
	for range max(parallelism, 1) {
		wg.Go(func() {
			buf := make([]byte, blockSize)
			for i := next.Add(1) - 1; i < int64(len(blocks)); i = next.Add(1) - 1 {
				bl := blocks[i]
				if err := objstore.ReadAt(b.Context(), store, bl.key, buf[:bl.len64], bl.off); err != nil {
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

// streamingGetLimit reads each benchmark object's log with one streaming
// GET, one object after the other, and returns how long that took.
func streamingGetLimit(b *testing.B, store objstore.Store, parts sources) time.Duration {
	start := time.Now()
	for _, p := range parts {
		for _, s := range p.segments {
			rc, err := store.Get(b.Context(), s.seg.Key, 0, s.seg.LogBytes)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, rc)
			_ = rc.Close()
			if err != nil || n != s.seg.LogBytes {
				b.Fatalf("streamed %d of %d bytes: %v", n, s.seg.LogBytes, err)
			}
		}
	}
	return time.Since(start)
}
