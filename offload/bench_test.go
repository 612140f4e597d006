package offload

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/record"
)

// Offload throughput against versitygw, each figure beside a limit
// measured in the same run from the same server:
//
//	go test -run '^$' -bench . -benchtime 3x ./offload/
//
// BenchmarkUpload: sealed 64 MiB segments of four partitions uploaded with
// UploadConcurrency 4 (MB/s), beside four concurrent plain PUTs of the
// same segment files to the same server (limit-MB/s), and the PUTs each
// segment took.
//
// BenchmarkKeepsUp: the peak produce rate of four partitions on the real
// disk (appends acknowledged after fsync), then production at half of it
// with the Manager uploading as segments seal: whether the backlog stays
// bounded and how fast it drains.

const benchPartitions = 4

// benchValue is a record value that makes a batch of about batchBytes.
func benchValue(batchBytes int) []byte {
	return objstoretest.Data("offload-bench", batchBytes-record.HeaderSize-32)
}

// benchAppend appends one batch of value to h's log and waits for it.
func benchAppend(tb testing.TB, h *harness, value []byte) int64 {
	b, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: value}})
	if err != nil {
		tb.Fatal(err)
	}
	batch, err := record.Check(b)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := h.log.Append(batch)
	if err == nil {
		err = res.WaitAck(context.Background())
	}
	if err != nil {
		tb.Fatal(err)
	}
	return int64(len(b))
}

// benchPartitionsOf makes partitions on store, all handled by the first
// one's Manager, which is told of every sealed segment; the caller starts
// it.
func benchPartitionsOf(b *testing.B, store objstore.Store, segmentBytes int64, logDir func() string) []*harness {
	parts := make([]*harness, benchPartitions)
	for i := range parts {
		parts[i] = newHarness(b, harnessOptions{
			store: store, clock: hotlog.SystemClock(), segmentBytes: segmentBytes, logDir: logDir(),
			topicConfigs: map[string]string{"local.retention.bytes": "0"}, // uploaded segments leave at once
			tweak: func(c *Config) {
				c.UploadConcurrency = benchPartitions
				c.CopyDrainTime = 0 // the upload's own speed is measured
				c.Logger = nil
			},
		})
	}
	mgr := parts[0].mgr
	for i, h := range parts {
		if i > 0 {
			if err := mgr.Add(h.partition()); err != nil {
				b.Fatal(err)
			}
		}
		notify := func() { mgr.Notify(h.topic.Name, 0) }
		h.onSealed.Store(&notify)
	}
	return parts
}

// benchStore opens a store on versitygw with the default part size.
func benchStore(b *testing.B, prefix string) *countingStore {
	gw := versityGW(b)
	cfg := gw.Config()
	cfg.PartSize = objstore.DefaultConfig().PartSize
	store, err := objstore.Open(b.Context(), objstoretest.S3URL(gw.Endpoint, testBucket, prefix), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return newCountingStore(store)
}

// waitLong polls cond for up to two minutes.
func waitLong(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkUpload(b *testing.B) {
	const segment = 64 << 20
	const batch = 1 << 20
	store := benchStore(b, fmt.Sprintf("bench-upload-%d", time.Now().UnixNano()))
	parts := benchPartitionsOf(b, store, segment+batch, func() string { return "" })
	if err := parts[0].mgr.Start(); err != nil {
		b.Fatal(err)
	}
	value := benchValue(batch)
	var offloaded, limited time.Duration
	var total int64
	segments := 0
	for i := 0; i < b.N; i++ {
		files := make([]*os.File, len(parts))
		sizes := make([]int64, len(parts))
		for k, h := range parts {
			for h.log.ActiveSegment().Size+batch <= segment {
				benchAppend(b, h, value)
			}
			info := h.log.ActiveSegment()
			f, err := os.Open(segmentPath(h.dir, info.BaseOffset, ".log"))
			if err != nil {
				b.Fatal(err)
			}
			files[k], sizes[k] = f, info.Size
		}
		// Uploads start as the rolled segments seal.
		start := time.Now()
		for _, h := range parts {
			if err := h.log.Roll(); err != nil {
				b.Fatal(err)
			}
		}
		waitLong(b, "the uploads", func() bool {
			for _, h := range parts {
				if len(h.committed()) != i+1 {
					return false
				}
			}
			return true
		})
		offloaded += time.Since(start)

		// The limit: the same bytes, four plain PUTs at once.
		start = time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(parts))
		for k := range parts {
			wg.Go(func() {
				errs[k] = store.Store.Put(b.Context(), fmt.Sprintf("limit/%d", k), io.NewSectionReader(files[k], 0, sizes[k]), sizes[k])
			})
		}
		wg.Wait()
		limited += time.Since(start)
		for k, f := range files {
			f.Close()
			if errs[k] != nil {
				b.Fatal(errs[k])
			}
			total += sizes[k]
			segments++
		}
	}
	puts := 0
	for _, h := range parts {
		for _, s := range h.committed() {
			puts += store.putCount(s.ObjectKey)
		}
	}
	mbps := float64(total) / 1e6 / offloaded.Seconds()
	limit := float64(total) / 1e6 / limited.Seconds()
	b.ReportMetric(mbps, "MB/s")
	b.ReportMetric(limit, "limit-MB/s")
	b.ReportMetric(mbps/limit, "x-limit")
	b.ReportMetric(float64(puts)/float64(segments), "PUTs/segment")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkKeepsUp(b *testing.B) {
	const segment = 16 << 20
	const batch = 256 << 10
	const produceFor = 5 * time.Second
	store := benchStore(b, fmt.Sprintf("bench-keepsup-%d", time.Now().UnixNano()))
	// The hot logs on the real disk: the produce path's peak is fsync-bound.
	parts := benchPartitionsOf(b, store, segment, func() string { return b.TempDir() })
	value := benchValue(batch)

	produce := func(d time.Duration, rate float64) int64 {
		var produced atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, h := range parts {
			wg.Go(func() {
				for time.Since(start) < d {
					n := benchAppend(b, h, value)
					if produced.Add(n); rate > 0 {
						// Pace the four producers to rate together.
						ahead := time.Duration(float64(produced.Load())/rate*float64(time.Second)) - time.Since(start)
						time.Sleep(ahead)
					}
				}
			})
		}
		wg.Wait()
		return produced.Load()
	}
	backlog := func() int64 {
		var n int64
		for _, p := range parts[0].mgr.Status().Partitions {
			n += p.BytesAwaitingUpload
		}
		return n
	}
	uploaded := func() float64 { return testutil.ToFloat64(parts[0].mgr.metrics.uploadedBytes) }
	drain := func() time.Duration {
		start := time.Now()
		for _, h := range parts {
			if err := h.log.Roll(); err != nil {
				b.Fatal(err)
			}
		}
		waitLong(b, "the backlog to drain", func() bool { return backlog() == 0 })
		return time.Since(start)
	}
	// The peak, with nothing uploading.
	peak := float64(produce(time.Second, 0)) / time.Second.Seconds()
	if err := parts[0].mgr.Start(); err != nil {
		b.Fatal(err)
	}
	drain()
	for i := 0; i < b.N; i++ {
		before := uploaded()
		var maxBacklog atomic.Int64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if n := backlog(); n > maxBacklog.Load() {
					maxBacklog.Store(n)
				}
			}
		})
		start := time.Now()
		produced := produce(produceFor, peak/2)
		elapsed := time.Since(start)
		close(stop)
		sampler.Wait()
		drained := drain()
		b.ReportMetric(peak/1e6, "peak-MB/s")
		b.ReportMetric(float64(produced)/1e6/elapsed.Seconds(), "produce-MB/s")
		b.ReportMetric((uploaded()-before)/1e6/(elapsed+drained).Seconds(), "upload-MB/s")
		b.ReportMetric(float64(maxBacklog.Load())/(1<<20), "max-backlog-MiB")
		b.ReportMetric(drained.Seconds(), "drain-s")
	}
	b.ReportMetric(0, "ns/op")
}
