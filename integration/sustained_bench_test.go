package integration

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sustainDuration is how long BenchmarkSustainedProduce produces,
// STRATA_BENCH_SUSTAIN (a Go duration) or one minute.
func sustainDuration(t testing.TB) time.Duration {
	v := os.Getenv("STRATA_BENCH_SUSTAIN")
	if v == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second {
		t.Fatalf("STRATA_BENCH_SUSTAIN: %q is not a duration of at least 10s", v)
	}
	return d
}

// sustainWindow is the span over which the slowest stretch of a sustained
// run is measured.
const sustainWindow = 10 * time.Second

// BenchmarkSustainedProduce is the acknowledged throughput a broker holds
// for a minute (STRATA_BENCH_SUSTAIN) while segments seal and upload: the
// client of BenchmarkProduce (one franz-go idempotent producer, 1 KiB
// records, acks=all, linger 5 ms, no compression) writing flat out into 8
// partitions of a tiered topic with the default 128 MiB segments, its
// bucket on the hot disk (file://, the default). With fsync before ack the
// limit is the disk's durable sequential rate (1 MiB writes + fdatasync
// into new files, for as long as the run: a VM's disk may take a first
// gigabyte faster than the rest; durableWriteRate) over the whole run
// (durable-whole-MB/s); without it (flush.ms set), the null sink driven by
// the same client, the best of three (sink-MB/s), with the disk's rate
// beside it (x-durable); all measured in the same run. Reported: MB/s over
// the whole run and its x-limit; the slowest 10 s window (worst-10s-MB/s)
// and its x-limit, against the disk's rate over the second half of its
// measurement (durable-steady-MB/s) or the sink's; the bytes of sealed
// segments not yet uploaded at the end (upload-lag-MB); and the broker's
// CPU seconds per GB acknowledged (broker-cpu-s/GB, from /proc/PID/stat;
// with the profiler's own cost when profiled). STRATA_BENCH_PROFILE saves
// a CPU profile and a trace of the broker as FixedRate does, named
// cpu.prof-sustained-<mode>.
func BenchmarkSustainedProduce(b *testing.B) {
	for _, mode := range durabilityModes {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				asTest(b, func(t *testing.T) {
					d := sustainDuration(t)
					// The limit for the whole run, and for its slowest
					// window: the disk's over the run's length and over
					// its second half; the sink's best. Without fsync
					// the disk is reported too: past the page cache's
					// dirty limit it bounds the broker all the same.
					disk := durableWriteRate(t, t.TempDir(), d)
					b.ReportMetric(disk.whole/1e6, "durable-whole-MB/s")
					b.ReportMetric(disk.steady/1e6, "durable-steady-MB/s")
					fsync := mode.configs == nil
					limit, worstLimit := disk.whole, disk.steady
					if !fsync {
						limit = sinkPeak(b, freePort(b))
						worstLimit = limit
						b.ReportMetric(limit/1e6, "sink-MB/s")
					}
					configs := map[string]*string{"remote.storage.enable": kadmString("true")}
					for k, v := range mode.configs {
						configs[k] = v
					}
					s := startServer(t, "--remote.log.manager.task.interval.ms", "1000")
					defer s.stop()
					createTopic(t, s, "bench", 8, configs)
					cl := benchProducer(b, s.kafka)
					defer cl.Close()
					producePeak(t, cl, 10_000) // connections, producer id, metadata
					profiled := profileBroker(t, s, "sustained-"+mode.name)
					cpu := serversCPUSeconds(t, s)
					total, worst := sustain(t, cl, d)
					cpu = serversCPUSeconds(t, s) - cpu
					profiled()
					b.ReportMetric(total/1e6, "MB/s")
					b.ReportMetric(total/limit, "x-limit")
					if !fsync {
						b.ReportMetric(total/disk.whole, "x-durable")
					}
					b.ReportMetric(worst/1e6, "worst-10s-MB/s")
					b.ReportMetric(worst/worstLimit, "worst-10s-x-limit")
					b.ReportMetric(float64(uploadLag(t, s))/1e6, "upload-lag-MB")
					// The broker's CPU for what it acknowledged, uploads
					// included: what the client and the machine's other
					// load do not move, as the rates above do.
					b.ReportMetric(cpu/(total*d.Seconds()/1e9), "broker-cpu-s/GB")
				})
			}
		})
	}
}

// sinkPeak is the best of three flat-out runs of the benchmarks' client
// against a null sink at address with 8 partitions, in bytes per second:
// the limit is what the client and the network can do, not what they did
// once.
func sinkPeak(b *testing.B, address string) float64 {
	sink := startNullSink(b, address, "bench", 8)
	defer sink.close()
	cl := benchProducer(b, address)
	defer cl.Close()
	producePeak(b, cl, 10_000) // connections, producer id, metadata
	best := 0.0
	for range 3 {
		best = max(best, producePeak(b, cl, produceBenchRecords))
	}
	return best
}

// sustain produces 1 KiB records through cl as fast as it takes them
// (closed loop: Produce blocks while the client's buffer is full) for d,
// and returns the bytes per second acknowledged within d and in its
// slowest sustainWindow.
func sustain(t *testing.T, cl *kgo.Client, d time.Duration) (total, worst float64) {
	t.Helper()
	value := make([]byte, 1024)
	var acked atomic.Int64
	var failed atomic.Pointer[error]
	ctx := context.Background()
	start := time.Now()
	deadline := start.Add(d)
	windows := time.NewTicker(sustainWindow)
	defer windows.Stop()
	worst = -1
	var windowStart int64
	for time.Now().Before(deadline) {
		select {
		case <-windows.C:
			now := acked.Load()
			rate := float64(now-windowStart) / sustainWindow.Seconds()
			if worst < 0 || rate < worst {
				worst = rate
			}
			windowStart = now
		default:
		}
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.Store(&err)
				return
			}
			acked.Add(int64(len(r.Value)))
		})
	}
	total = float64(acked.Load()) / time.Since(start).Seconds()
	flushAcknowledged(t, cl)
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	return total, max(worst, 0)
}
