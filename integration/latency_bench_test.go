package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/stratalog/strata/internal/smallfs"
	"github.com/stratalog/strata/offload"
)

// openLoadResult is what one open-loop load measured.
type openLoadResult struct {
	p50, p99, p999 time.Duration
	// secondP99s is the p99 of the records scheduled in each second of
	// the load (0 for a second with none acknowledged), and
	// worstSecondP99 the highest: a stall of a few seconds, which the
	// whole load's percentiles spread thin, shows there, and when.
	secondP99s     []time.Duration
	worstSecondP99 time.Duration
	acked          float64 // bytes per second acknowledged
	records        int     // acknowledged
}

// ackedGB is the load's acknowledged bytes in GB (10⁹ bytes), for CPU
// seconds per GB.
func (r openLoadResult) ackedGB() float64 {
	return float64(r.records*openLoopRecordBytes) / 1e9
}

// openLoop produces 1 KiB records to each client's default topic on one
// clock, one every 1 KiB/rate, spread over the clients in turn, for
// duration, and returns the percentiles of the time from each record's
// scheduled send to its acknowledgement and the rate acknowledged. A
// record sent late because the client or the broker fell behind counts
// its lateness, so the figures do not hide a queue (coordinated omission).
func openLoop(t testing.TB, clients []*kgo.Client, rate float64, duration time.Duration) openLoadResult {
	t.Helper()
	value := make([]byte, openLoopRecordBytes)
	return openLoopValues(t, clients, rate, duration, func(time.Time) []byte { return value })
}

// openLoopRecordBytes is the size of an open-loop record's value.
const openLoopRecordBytes = 1024

// openLoopValues is openLoop with each record's value, of
// openLoopRecordBytes, made by value from its scheduled send time.
func openLoopValues(t testing.TB, clients []*kgo.Client, rate float64, duration time.Duration, value func(scheduled time.Time) []byte) openLoadResult {
	t.Helper()
	// A broker that refuses every produce with a retriable error (a full
	// disk) fills the clients' buffers, and Produce then blocks: benchmarks
	// run without -test.timeout's alarm, so the run would hang. Past the
	// load and two minutes more, Produce gives up and the run says so.
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	// The latencies are kept in slices sized for the whole load up front:
	// grown by append, the copy of millions of them (and the GC of the
	// old array) ran under mu in the client's acknowledgement callbacks,
	// and stalled every acknowledgement behind it at the moments the
	// slice grew, 1.25 times apart: at 200 MB/s, a p99 of 22-68 ms in
	// seconds 10, 12, 15, 19, 24, 30 and 38 of the load, 10 elsewhere.
	perSecond := int(rate/openLoopRecordBytes) + 1
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, perSecond*(int(duration/time.Second)+1))
		bySecond  = map[int][]time.Duration{} // by the second of the load each record was scheduled in
		failed    error
	)
	interval := time.Duration(openLoopRecordBytes / rate * float64(time.Second))
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	start := time.Now()
	next, turn := start, 0
	for time.Since(start) < duration {
		<-ticker.C
		for now := time.Now(); !next.After(now); next = next.Add(interval) {
			scheduled := next
			clients[turn%len(clients)].Produce(ctx, &kgo.Record{Value: value(scheduled)}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = err
					return
				}
				latency, second := time.Since(scheduled), int(scheduled.Sub(start)/time.Second)
				latencies = append(latencies, latency)
				inSecond, ok := bySecond[second]
				if !ok {
					inSecond = make([]time.Duration, 0, perSecond)
				}
				bySecond[second] = append(inSecond, latency)
			})
			turn++
		}
	}
	flushAcknowledged(t, clients...)
	elapsed := time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		t.Fatalf("a record was not acknowledged: %v", failed)
	}
	if len(latencies) == 0 {
		t.Fatal("no record acknowledged")
	}
	r := percentiles(latencies)
	r.secondP99s = make([]time.Duration, int(duration/time.Second)+1)
	for i, second := range bySecond {
		if i >= len(r.secondP99s) {
			r.secondP99s = append(r.secondP99s, make([]time.Duration, i+1-len(r.secondP99s))...)
		}
		r.secondP99s[i] = percentiles(second).p99
		r.worstSecondP99 = max(r.worstSecondP99, r.secondP99s[i])
	}
	r.acked = float64(len(latencies)*openLoopRecordBytes) / elapsed
	r.records = len(latencies)
	return r
}

// flushAcknowledged waits until every record the clients were given is
// acknowledged. A broker that refuses every produce with a retriable error
// (a full disk) would keep a client retrying for ever; two minutes on,
// the run says so instead.
func flushAcknowledged(t testing.TB, clients ...*kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, cl := range clients {
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("records not acknowledged two minutes after the last was produced: %v", err)
		}
	}
}

// diskRate is a disk's durable sequential rate as durableWriteRate
// measures it, in bytes per second.
type diskRate struct {
	whole  float64 // over the whole measurement
	steady float64 // over its second half
}

// durableFileBytes is the size of each file durableWriteRate writes, and
// durableMaxBytes the most it writes.
const (
	durableFileBytes = 256 << 20
	durableMaxBytes  = 16 << 30
)

// durableWriteRate is the disk's durable sequential rate in dir: 1 MiB
// appends, each followed by fdatasync, into new files of
// durableFileBytes, for d (or until durableMaxBytes are written, which
// it logs), over the whole of it and over its second half. The project's
// VM disk is thin: blocks the host has not stored before take 53-68 MB/s
// once a first gigabyte has gone at about 500 MB/s, blocks it has stored
// (written before, or freed and handed out again) 0.6-1.1 GB/s
// (docs/bench.md, "The disk's limit, on blocks it has not stored"). So
// the files are new, and kept until the test ends, so that what is
// measured next cannot write into their freed blocks; they are new blocks
// to the host only if nothing was freed shortly before. It then rests
// while the disk writes out what it took above its steady rate (at most
// two minutes), so that what is measured next does not start behind
// this.
func durableWriteRate(t testing.TB, dir string, d time.Duration) diskRate {
	t.Helper()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	var (
		files   []*os.File
		written int64
		// at[i] is when chunk i was durable, from start.
		at []time.Duration
	)
	t.Cleanup(func() {
		for _, f := range files {
			os.Remove(f.Name())
		}
	})
	start := time.Now()
	for time.Since(start) < d && written < durableMaxBytes {
		if written%durableFileBytes == 0 {
			if len(files) > 0 {
				files[len(files)-1].Close()
			}
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("durable-limit-%d", len(files))))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		f := files[len(files)-1]
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		written += int64(len(chunk))
		at = append(at, time.Since(start))
	}
	files[len(files)-1].Close()
	if written >= durableMaxBytes {
		t.Logf("disk: stopped at %d GiB, %v into %v", durableMaxBytes>>30, at[len(at)-1].Round(time.Second), d)
	}
	elapsed := at[len(at)-1]
	half, _ := slices.BinarySearch(at, elapsed/2)
	r := diskRate{
		whole:  float64(written) / elapsed.Seconds(),
		steady: float64(int64(len(at)-half)*int64(len(chunk))) / (elapsed - elapsed/2).Seconds(),
	}
	var rest time.Duration
	if ahead := float64(written) - r.steady*elapsed.Seconds(); ahead > 0 {
		rest = min(2*time.Minute, time.Duration(ahead/r.steady*float64(time.Second)))
	}
	t.Logf("disk: %.0f MB/s over %v, %.0f MB/s over its second half; resting %v", r.whole/1e6, elapsed.Round(time.Second), r.steady/1e6, rest.Round(time.Second))
	time.Sleep(rest)
	return r
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
// fraction of the limit offered (the lower of the disk's durable rate and
// the null sink's), for tieringLoadDuration.
var tieringLoads = []float64{0.125, 0.25, 0.5}

const tieringLoadDuration = 12 * time.Second

// tieringDiskProbe is how long BenchmarkTieringLatency measures the disk's
// durable rate, whose second half is its limit: long enough to pass the
// fast first gigabyte of the project's VM disk (durableWriteRate).
const tieringDiskProbe = 20 * time.Second

// BenchmarkTieringLatency is produce latency while segments seal and
// upload: one strata server with its bucket on the hot disk (file://, the
// default), a topic with remote.storage.enable and fsync before ack (the
// default), franz-go idempotent producers (1 KiB records, acks=all, linger
// 5 ms, no compression, records spread round-robin so that every request
// carries a batch for each partition), open loop at 1/8, 1/4 and 1/2 of
// the limit, 12 s each. The limit, measured in the same run, is the lower
// of the disk's durable sequential rate (1 MiB writes + fdatasync into new
// files for tieringDiskProbe, the rate over its second half:
// durable-steady-MB/s; over the whole: durable-whole-MB/s) and what the
// same producers reach against a null sink (sink-MB/s), since on two cores
// the client can be the bound; STRATA_BENCH_LIMIT (bytes per second) fixes
// it instead, to compare two builds. segment.bytes is set so that every
// partition rolls twice in the 1/8 load and more in the others, so uploads
// run throughout, but never below 1 MiB: where that floor applies (many
// partitions, a low limit) partitions roll less, and at 512 partitions on
// a 60 MB/s disk not before the 1/2 load. Six ways: uploads as by default
// (their backlog drained over about 10 s: --remote-upload-drain), unpaced
// (unpaced-: as Kafka's default), paced at a fixed rate (paced-:
// remote.log.manager.copy.max.bytes.per.second at 1.5 times the load
// offered, no drain, a server started for each load), a topic that does
// not tier (local-: the same rolls, no uploads), to show what tiering
// adds, uploads as by default with the disk journal on (journal-:
// --disk-journal-bytes 256 MiB), and uploads as by default to a bucket
// off the hot disk (offdisk-:
// file:// on a tmpfs, which needs root to mount; the disk writes each
// byte once, where the other tiered ways write it twice, but the network
// and HTTP work of a bucket on another machine is not there either, so
// what it shows is a lower bound on what tiering costs);
// STRATA_BENCH_TIERING chooses which ways run, in what order. Per
// load: p50, p99, p99.9 from each record's scheduled send, the rate
// acknowledged, the system calls that made logs durable per second (syncfs
// and fdatasync: sync-calls/s), for the journal way what the journal wrote
// (journal-MB/s) and its retirement passes in the load, a syncfs each
// (journal-retirements), and for the tiered topics the upload lag
// at the load's end (bytes of sealed segments not yet in the bucket).
// Beside them, the latency bounds at each load from the same producers:
// against the null sink (sink-at-) and against a durable sink, which
// appends every produce to one file and fsyncs it before answering
// (durable-sink-at-): what fsync before ack costs this client on this disk
// with no broker at all. Partition counts 8, 64 and 512
// (STRATA_BENCH_PARTITIONS to change), from 1, 4 and 16 producers (the
// issue's three; -bench 'TieringLatency//producers=16$' runs 16 alone),
// each a client with connections of its own, the load split evenly.
func BenchmarkTieringLatency(b *testing.B) {
	for _, partitions := range tieringLatencyPartitions(b) {
		for _, producers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("partitions=%d/producers=%d", partitions, producers), func(b *testing.B) {
				for range b.N {
					asTest(b, func(t *testing.T) { tieringLatency(b, t, partitions, producers) })
				}
			})
		}
	}
}

// latencyProducers are producers clients of the benchmark's configuration
// (benchProducer's, with records spread round-robin) to topic at address.
func latencyProducers(t *testing.T, address, topic string, producers int) []*kgo.Client {
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(address), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.MaxBufferedRecords(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		clients[i] = cl
	}
	return clients
}

// peakRate produces n 1 KiB records spread over clients, each as fast as
// it takes them, and returns the bytes per second acknowledged.
func peakRate(t *testing.T, clients []*kgo.Client, n int) float64 {
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			producePeak(t, cl, n/len(clients))
		})
	}
	wg.Wait()
	return float64(n/len(clients)*len(clients)*1024) / time.Since(start).Seconds()
}

func tieringLatency(b *testing.B, t *testing.T, partitions int32, producers int) {
	durable := durableWriteRate(t, t.TempDir(), tieringDiskProbe)
	sinkAddress := freePort(t)
	sink := startNullSink(t, sinkAddress, "bench", partitions)
	sinkClients := latencyProducers(t, sinkAddress, "bench", producers)
	peakRate(t, sinkClients, 20_000) // connections, producer ids, metadata
	sinkRate := peakRate(t, sinkClients, 200_000)
	for _, cl := range sinkClients {
		cl.Close()
	}
	sink.close()
	limit := min(durable.steady, sinkRate)
	if v := os.Getenv("STRATA_BENCH_LIMIT"); v != "" {
		// A fixed base for the loads, to compare two builds on a disk
		// whose measured rate wanders from run to run.
		fixed, err := strconv.ParseFloat(v, 64)
		if err != nil || fixed <= 0 {
			t.Fatalf("STRATA_BENCH_LIMIT: %q is not a rate in bytes per second", v)
		}
		limit = fixed
	}
	b.ReportMetric(durable.steady/1e6, "durable-steady-MB/s")
	b.ReportMetric(durable.whole/1e6, "durable-whole-MB/s")
	b.ReportMetric(sinkRate/1e6, "sink-MB/s")
	for _, load := range tieringLoads {
		name := fmt.Sprintf("at-%g", load)
		reportLatency(b, "sink-"+name, sinkLatency(t, partitions, producers, nullSinkKind, limit*load, tieringLoadDuration))
		reportLatency(b, "durable-sink-"+name, sinkLatency(t, partitions, producers, durableSinkKind, limit*load, tieringLoadDuration))
	}
	segment := max(1<<20, int(limit*tieringLoads[0]*tieringLoadDuration.Seconds()/float64(partitions)/2))
	b.ReportMetric(float64(segment)/(1<<20), "segment-MiB")

	run := func(prefix, tiering string, loads []float64, flags ...string) {
		s := startServer(t, append([]string{"--remote.log.manager.task.interval.ms", "1000"}, flags...)...)
		defer func() {
			// Each server's log and bucket go with it: seven servers'
			// worth filled the disk, and the broker then refused
			// produces (KAFKA_STORAGE_ERROR) while the client retried.
			s.stop()
			if err := os.RemoveAll(s.dataDir); err != nil {
				t.Error(err)
			}
		}()
		createTopic(t, s, "bench", partitions, map[string]*string{
			"remote.storage.enable": kadmString(tiering),
			"segment.bytes":         kadmString(strconv.Itoa(segment)),
			"local.retention.bytes": kadmString(strconv.Itoa(2 * segment)),
		})
		clients := latencyProducers(t, s.kafka, "bench", producers)
		defer func() {
			for _, cl := range clients {
				cl.Close()
			}
		}()
		openLoop(t, clients, 10e6, time.Second) // connections, producer ids, metadata
		journaled := slices.Contains(flags, "--disk-journal-bytes")
		for _, load := range loads {
			before := scrapeMetrics(t, s)
			start := time.Now()
			r := openLoop(t, clients, limit*load, tieringLoadDuration)
			after := scrapeMetrics(t, s)
			elapsed := time.Since(start).Seconds()
			name := fmt.Sprintf("%sat-%g", prefix, load)
			reportLatency(b, name, r)
			b.Logf("%s p99 by second of the load, ms: %s", name, formatSeconds(r.secondP99s))
			b.ReportMetric((after.sum("strata_disk_sync_calls_total")-before.sum("strata_disk_sync_calls_total"))/elapsed, name+"-sync-calls/s")
			if journaled {
				// The journal's copies, which the segments' writeback
				// writes again, and its retirement passes (a syncfs each).
				b.ReportMetric((after.sum("strata_disk_journal_bytes_total")-before.sum("strata_disk_journal_bytes_total"))/elapsed/1e6, name+"-journal-MB/s")
				b.ReportMetric(after.sum("strata_disk_journal_retirements_total")-before.sum("strata_disk_journal_retirements_total"), name+"-journal-retirements")
			}
			if tiering == "true" {
				b.ReportMetric(float64(uploadLag(t, s))/1e6, name+"-upload-lag-MB")
			}
		}
	}
	for _, way := range tieringWays(t) {
		switch way {
		case "default":
			run("", "true", tieringLoads)
		case "unpaced":
			run("unpaced-", "true", tieringLoads, "--remote-upload-drain", "0")
		case "paced":
			for _, load := range tieringLoads {
				pace := strconv.FormatInt(max(1<<20, int64(1.5*limit*load)), 10)
				run("paced-", "true", []float64{load}, "--remote.log.manager.copy.max.bytes.per.second", pace, "--remote-upload-drain", "0")
			}
		case "offdisk":
			var offered float64
			for _, load := range tieringLoads {
				offered += limit * load * tieringLoadDuration.Seconds()
			}
			bucket := offDiskBucket(t, offered)
			run("offdisk-", "true", tieringLoads, "--bucket", "file://"+bucket)
			// The tmpfs holds the bucket in memory until the cell ends.
			if err := emptyDir(bucket); err != nil {
				t.Error(err)
			}
		case "local":
			run("local-", "false", tieringLoads)
		case "journal":
			run("journal-", "true", tieringLoads, "--disk-journal-bytes", strconv.Itoa(256<<20))
		}
	}
}

// tieringWays is the ways BenchmarkTieringLatency runs, in order:
// STRATA_BENCH_TIERING (comma-separated) or default, unpaced, paced, local,
// journal and offdisk.
func tieringWays(t testing.TB) []string {
	v := os.Getenv("STRATA_BENCH_TIERING")
	if v == "" {
		return allTieringWays
	}
	ways := strings.Split(v, ",")
	for _, w := range ways {
		if !slices.Contains(allTieringWays, w) {
			t.Fatalf("STRATA_BENCH_TIERING: %q is not one of %s", w, strings.Join(allTieringWays, ", "))
		}
	}
	return ways
}

// allTieringWays is every way BenchmarkTieringLatency knows, in its
// default order.
// offdisk comes last: it mounts a tmpfs, which needs root (as the
// disk-full tests do), and a run without fails there, after the others.
var allTieringWays = []string{"default", "unpaced", "paced", "local", "journal", "offdisk"}

// emptyDir removes everything in dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	for _, e := range entries {
		err = errors.Join(err, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return err
}

// offDiskBucket is a directory for a file:// bucket off the hot disk: a
// tmpfs (so the uploads write no byte to the hot disk, as a bucket on
// another machine writes none), sized for twice the bytes a run offers.
func offDiskBucket(t *testing.T, offered float64) string {
	return smallfs.Tmpfs(t, strconv.FormatInt(max(256<<20, int64(2*offered)), 10))
}

// reportLatency reports what one open-loop load measured, each figure's
// unit prefixed with name.
func reportLatency(b *testing.B, name string, r openLoadResult) {
	b.ReportMetric(r.acked/1e6, name+"-acked-MB/s")
	b.ReportMetric(millis(r.p50), name+"-p50-ms")
	b.ReportMetric(millis(r.p99), name+"-p99-ms")
	b.ReportMetric(millis(r.p999), name+"-p99.9-ms")
}

// sinkKind is what a sink does with a produce's records before it
// answers (null_sink_test.go).
type sinkKind int

const (
	nullSinkKind           sinkKind = iota // nothing
	durableSinkKind                        // appends them to one file, fdatasync per group commit
	partitionFilesSinkKind                 // a file per partition, syncfs per group commit
)

// sinkLatency is the latency bound at an offered rate: the benchmark's
// producers, open loop at rate for d (after a second to connect), against
// a sink of kind with partitions.
func sinkLatency(t *testing.T, partitions int32, producers int, kind sinkKind, rate float64, d time.Duration) openLoadResult {
	address := freePort(t)
	var sink *nullSink
	switch kind {
	case nullSinkKind:
		sink = startNullSink(t, address, "bench", partitions)
	case durableSinkKind:
		sink = startDurableSink(t, address, "bench", partitions, t.TempDir())
	case partitionFilesSinkKind:
		sink = startPartitionFilesSink(t, address, "bench", partitions, t.TempDir())
	}
	defer sink.close()
	clients := latencyProducers(t, address, "bench", producers)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	openLoop(t, clients, rate, time.Second)
	return openLoop(t, clients, rate, d)
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

// fixedRate is the offered rate of BenchmarkFixedRate,
// STRATA_BENCH_RATE (bytes per second) or 40 MB/s.
func fixedRate(t testing.TB) float64 {
	v := os.Getenv("STRATA_BENCH_RATE")
	if v == "" {
		return 40e6
	}
	rate, err := strconv.ParseFloat(v, 64)
	if err != nil || rate <= 0 {
		t.Fatalf("STRATA_BENCH_RATE: %q is not a rate in bytes per second", v)
	}
	return rate
}

// BenchmarkFixedRate is produce latency at one offered rate on a topic
// that by default neither tiers nor rolls (128 MiB segments, which a load
// of a minute or more at a high rate fills), so that two builds can be
// compared on the produce path alone: one strata server, producers of
// BenchmarkTieringLatency's configuration (round-robin over the
// partitions; STRATA_BENCH_PRODUCERS of them, by default one, the load
// split evenly among them), 15 s open loop at half the rate to warm up, then
// STRATA_BENCH_SECONDS (15) at STRATA_BENCH_RATE (40 MB/s), for each
// partition count of STRATA_BENCH_PARTITIONS (8, 64 and 512). Reported:
// p50, p99, p99.9 from each record's scheduled send, the highest p99 of
// any one second (a load of 60 s or more takes in the partitions'
// recovery-point checkpoints), the rate acknowledged, the system calls
// that made logs durable per second and the broker's CPU seconds per GB
// acknowledged; then the same against a durable sink
// (durable-sink-: one file, fsync before each answer), the bound for fsync
// before ack at that rate with these clients, and against a partition-files
// sink (files-sink-: a file per partition, one syncfs per group commit),
// the bound for any broker that keeps a partition in files of its own.
// STRATA_BENCH_SEGMENT_BYTES sets the topic's segment.bytes, to measure
// the cost of rolls on the same path; STRATA_BENCH_FLUSH_MS its flush.ms,
// to measure the path without fsync before ack;
// STRATA_BENCH_DISK_JOURNAL_BYTES the server's --disk-journal-bytes;
// STRATA_BENCH_UPLOAD_DRAIN (a Go duration) makes the topic tier, its
// uploads paced by the server's --remote-upload-drain set to it (0:
// unpaced), to measure what a wave of rolled segments' uploads costs;
// with STRATA_BENCH_BUCKET=offdisk they go to a bucket off the hot disk
// (offDiskBucket), not to the default one under the data directory.
func BenchmarkFixedRate(b *testing.B) {
	rate := fixedRate(b)
	load := time.Duration(envCount(b, "STRATA_BENCH_SECONDS", 15, "a whole number of seconds")) * time.Second
	producers := envCount(b, "STRATA_BENCH_PRODUCERS", 1, "a number of producers")
	for _, partitions := range tieringLatencyPartitions(b) {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			for range b.N {
				asTest(b, func(t *testing.T) {
					var flags []string
					if v := os.Getenv("STRATA_BENCH_DISK_JOURNAL_BYTES"); v != "" {
						flags = append(flags, "--disk-journal-bytes", v)
					}
					tiered := "false"
					if v := os.Getenv("STRATA_BENCH_UPLOAD_DRAIN"); v != "" {
						tiered = "true"
						flags = append(flags, "--remote-upload-drain", v)
					}
					switch v := os.Getenv("STRATA_BENCH_BUCKET"); v {
					case "":
					case "offdisk":
						if tiered != "true" {
							t.Fatal("STRATA_BENCH_BUCKET=offdisk: the topic tiers only with STRATA_BENCH_UPLOAD_DRAIN set")
						}
						// The warm-up at half the rate, then the load.
						flags = append(flags, "--bucket", "file://"+offDiskBucket(t, rate*(fixedRateWarmup/2+load).Seconds()))
					default:
						t.Fatalf("STRATA_BENCH_BUCKET: %q is not offdisk (or unset: the default bucket, under the data directory)", v)
					}
					s := startServer(t, flags...)
					defer s.stop()
					configs := map[string]*string{"remote.storage.enable": kadmString(tiered)}
					if v := os.Getenv("STRATA_BENCH_SEGMENT_BYTES"); v != "" {
						configs["segment.bytes"] = kadmString(v)
					}
					if v := os.Getenv("STRATA_BENCH_FLUSH_MS"); v != "" {
						configs["flush.ms"] = kadmString(v)
					}
					createTopic(t, s, "bench", partitions, configs)
					clients := latencyProducers(t, s.kafka, "bench", producers)
					openLoop(t, clients, rate/2, fixedRateWarmup)
					before := scrapeMetrics(t, s).sum("strata_disk_sync_calls_total")
					start := time.Now()
					stopProfile := profileBroker(t, s, fmt.Sprint(partitions))
					cpu := serversCPUSeconds(t, s)
					r := openLoop(t, clients, rate, load)
					cpu = serversCPUSeconds(t, s) - cpu
					stopProfile()
					syncs := (scrapeMetrics(t, s).sum("strata_disk_sync_calls_total") - before) / time.Since(start).Seconds()
					b.ReportMetric(rate/1e6, "offered-MB/s")
					b.ReportMetric(r.acked/1e6, "acked-MB/s")
					b.ReportMetric(millis(r.p50), "p50-ms")
					b.ReportMetric(millis(r.p99), "p99-ms")
					b.ReportMetric(millis(r.p999), "p99.9-ms")
					b.ReportMetric(millis(r.worstSecondP99), "worst-second-p99-ms")
					b.ReportMetric(syncs, "sync-calls/s")
					// The broker's CPU for what it acknowledged: steadier
					// than the latencies, which move with the disk's hour.
					b.ReportMetric(cpu/r.ackedGB(), "broker-cpu-s/GB")
					b.Logf("p99 by second of the load, ms: %s", formatSeconds(r.secondP99s))
					reportLatency(b, "durable-sink", sinkLatency(t, partitions, producers, durableSinkKind, rate, 15*time.Second))
					reportLatency(b, "files-sink", sinkLatency(t, partitions, producers, partitionFilesSinkKind, rate, 15*time.Second))
				})
			}
		})
	}
}

// fixedRateWarmup is how long BenchmarkFixedRate sends at half its rate
// before the load it measures.
const fixedRateWarmup = 15 * time.Second

// envCount is the positive whole number the environment variable name
// holds, or def when it is unset; what says what the number counts.
func envCount(t testing.TB, name string, def int, what string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s: %q is not %s", name, v, what)
	}
	return n
}

// formatSeconds lists per-second figures in whole milliseconds, ten to a
// group, for a log line that shows when in a load a stall came.
func formatSeconds(ds []time.Duration) string {
	var b strings.Builder
	for i, d := range ds {
		switch {
		case i > 0 && i%10 == 0:
			fmt.Fprintf(&b, " | %d:", i)
		case i == 0:
			b.WriteString("0:")
		}
		fmt.Fprintf(&b, " %d", d.Round(time.Millisecond).Milliseconds())
	}
	return b.String()
}

// profileBroker, when STRATA_BENCH_PROFILE names a directory, saves a
// 10 s CPU profile, the allocations of the same 10 s and a 2 s execution
// trace of s taken while the caller runs its load, as cpu.prof-<name>,
// allocs.prof-<name> and trace.out-<name>; the returned function waits for
// them.
func profileBroker(t *testing.T, s *server, name string) (wait func()) {
	dir := os.Getenv("STRATA_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	var wg sync.WaitGroup
	save := func(path, file string) {
		defer wg.Done()
		resp, err := adminHTTP.Get("http://" + s.admin + path)
		if err != nil {
			t.Errorf("profile %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, file+"-"+name))
		if err != nil {
			t.Errorf("profile: %v", err)
			return
		}
		defer f.Close()
		if _, err := io.Copy(f, resp.Body); err != nil {
			t.Errorf("profile %s: %v", path, err)
		}
	}
	wg.Add(3)
	go save("/debug/pprof/profile?seconds=10", "cpu.prof")
	go save("/debug/pprof/allocs?seconds=10", "allocs.prof")
	go func() {
		time.Sleep(11 * time.Second)
		save("/debug/pprof/trace?seconds=2", "trace.out")
	}()
	return wg.Wait
}
