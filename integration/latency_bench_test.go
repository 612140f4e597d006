package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/offload"
)

// openLoadResult is what one open-loop load measured.
type openLoadResult struct {
	p50, p99, p999 time.Duration
	acked          float64 // bytes per second acknowledged
}

// openLoop produces 1 KiB records to each client's default topic on one
// clock, one every 1 KiB/rate, spread over the clients in turn, for
// duration, and returns the percentiles of the time from each record's
// scheduled send to its acknowledgement and the rate acknowledged. A
// record sent late because the client or the broker fell behind counts
// its lateness, so the figures do not hide a queue (coordinated omission).
func openLoop(t testing.TB, clients []*kgo.Client, rate float64, duration time.Duration) openLoadResult {
	t.Helper()
	value := make([]byte, 1024)
	ctx := context.Background()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    error
	)
	interval := time.Duration(float64(len(value)) / rate * float64(time.Second))
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	start := time.Now()
	next, turn := start, 0
	for time.Since(start) < duration {
		<-ticker.C
		for now := time.Now(); !next.After(now); next = next.Add(interval) {
			scheduled := next
			clients[turn%len(clients)].Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = err
					return
				}
				latencies = append(latencies, time.Since(scheduled))
			})
			turn++
		}
	}
	for _, cl := range clients {
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		t.Fatal(failed)
	}
	if len(latencies) == 0 {
		t.Fatal("no record acknowledged")
	}
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[int(float64(len(latencies)-1)*q)] }
	return openLoadResult{p50: at(0.5), p99: at(0.99), p999: at(0.999), acked: float64(len(latencies)*len(value)) / elapsed}
}

// durableWriteRate is the disk's durable sequential rate in dir, in bytes
// per second: 1 MiB writes, each followed by fdatasync, for total bytes.
func durableWriteRate(t testing.TB, dir string, total int) float64 {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "durable-limit"))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	start := time.Now()
	for written := 0; written < total; written += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
	}
	return float64(total) / time.Since(start).Seconds()
}

// tieringLatencyPartitions is the partition counts BenchmarkTieringLatency
// runs, STRATA_BENCH_PARTITIONS (comma-separated) or 8, 64 and 512.
func tieringLatencyPartitions(t testing.TB) []int32 {
	v := os.Getenv("STRATA_BENCH_PARTITIONS")
	if v == "" {
		return []int32{8, 64, 512}
	}
	var out []int32
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("STRATA_BENCH_PARTITIONS: %q is not a partition count", f)
		}
		out = append(out, int32(n))
	}
	return out
}

// tieringLoads are the steps of BenchmarkTieringLatency: each the
// fraction of the disk's durable rate offered, for tieringLoadDuration.
var tieringLoads = []float64{0.125, 0.25, 0.5}

const tieringLoadDuration = 12 * time.Second

// BenchmarkTieringLatency is produce latency while segments seal and
// upload: one strata server with its bucket on the hot disk (file://, the
// default), a topic with remote.storage.enable and fsync before ack (the
// default), franz-go idempotent producers (1 KiB records, acks=all, linger
// 5 ms, no compression, records spread round-robin so that every request
// carries a batch for each partition), open loop at 1/8, 1/4 and 1/2 of
// the disk's durable sequential rate (1 MiB writes + fdatasync, measured
// in the same run: durable-MB/s), 12 s each. segment.bytes is set so that
// every partition rolls about twice per load, so uploads run throughout.
// Per load: p50, p99, p99.9 from each record's scheduled send, the rate
// acknowledged, partition fdatasyncs per second, and the upload lag at
// the load's end (bytes of sealed segments not yet in the bucket).
// Partition counts 8, 64 and 512 (STRATA_BENCH_PARTITIONS to change),
// from 1 and 4 producers.
func BenchmarkTieringLatency(b *testing.B) {
	for _, partitions := range tieringLatencyPartitions(b) {
		for _, producers := range []int{1, 4} {
			b.Run(fmt.Sprintf("partitions=%d/producers=%d", partitions, producers), func(b *testing.B) {
				for range b.N {
					asTest(b, func(t *testing.T) { tieringLatency(b, t, partitions, producers) })
				}
			})
		}
	}
}

func tieringLatency(b *testing.B, t *testing.T, partitions int32, producers int) {
	durable := durableWriteRate(t, t.TempDir(), 256<<20)
	b.ReportMetric(durable/1e6, "durable-MB/s")
	top := durable * tieringLoads[len(tieringLoads)-1]
	segment := max(1<<20, int(top*tieringLoadDuration.Seconds()/float64(partitions)/2))
	s := startServer(t, "--remote.log.manager.task.interval.ms", "1000")
	createTopic(t, s, "bench", partitions, map[string]*string{
		"remote.storage.enable": kadmString("true"),
		"segment.bytes":         kadmString(strconv.Itoa(segment)),
		"local.retention.bytes": kadmString(strconv.Itoa(2 * segment)),
	})
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka), kgo.DefaultProduceTopic("bench"),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.MaxBufferedRecords(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients[i] = cl
	}
	openLoop(t, clients, 10e6, time.Second) // connections, producer ids, metadata
	for _, load := range tieringLoads {
		before := scrapeMetrics(t, s).sum("strata_ingest_fsync_duration_seconds_count")
		start := time.Now()
		r := openLoop(t, clients, durable*load, tieringLoadDuration)
		syncs := (scrapeMetrics(t, s).sum("strata_ingest_fsync_duration_seconds_count") - before) / time.Since(start).Seconds()
		lag := uploadLag(t, s)
		name := fmt.Sprintf("at-%g", load)
		b.ReportMetric(durable*load/1e6, name+"-offered-MB/s")
		b.ReportMetric(r.acked/1e6, name+"-acked-MB/s")
		b.ReportMetric(millis(r.p50), name+"-p50-ms")
		b.ReportMetric(millis(r.p99), name+"-p99-ms")
		b.ReportMetric(millis(r.p999), name+"-p99.9-ms")
		b.ReportMetric(syncs, name+"-fdatasync/s")
		b.ReportMetric(float64(lag)/1e6, name+"-upload-lag-MB")
	}
	b.ReportMetric(float64(segment)/(1<<20), "segment-MiB")
}

// uploadLag is the bytes of sealed segments s has not yet tiered, from
// its tier status.
func uploadLag(t *testing.T, s *server) int64 {
	t.Helper()
	code, body := httpGet(t, "http://"+s.admin+"/v1/tier/status")
	if code != 200 {
		t.Fatalf("tier status: %d %s", code, body)
	}
	var st offload.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	var lag int64
	for _, p := range st.Partitions {
		lag += p.BytesAwaitingUpload
	}
	return lag
}
