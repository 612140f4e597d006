package integration

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// The topic BenchmarkNewBrokerTakesItsShare rebalances: 12 partitions with
// RF 2 on three brokers (8 replicas each), so a fourth broker's share is 6
// replicas and 3 leaderships; local retention keeps about shareHotTail of
// the topic on disk (per copy) whatever its history.
const (
	shareTopic      = "share"
	sharePartitions = 12
	shareReplicas   = 2
	shareHotTail    = 1 << 30
	shareSegment    = 16 << 20
	// shareGoal is issue 12's goal for a hot tail of 1 GiB, in seconds.
	shareGoal = 10
)

// BenchmarkNewBrokerTakesItsShare is issue 12's benchmark: how long a
// newly added, empty broker takes to get its share once `strata cluster
// rebalance --execute --wait` runs, with 1 GiB and with 20 GiB of history
// in the topic. Each size starts a fresh cluster of three brokers (the
// metadata voters, a file:// bucket on the same disk, tiering tasks every
// second) with shareTopic tiered in 16 MiB segments, retention.ms and
// retention.bytes -1 (the bucket keeps the whole history) and
// local.retention.bytes 1 GiB / 12, so the hot tail is about 1 GiB at any
// history. The history is produced by one franz-go producer (1 KiB
// incompressible values, acks=all, 1 MiB batches), then the benchmark
// waits until every sealed segment is uploaded, every replica is trimmed
// to its hot tail (DescribeLogDirs) and the trimmed segments' blocks are
// freed, so that the disk is quiet when the clock starts. A fourth broker
// joins with an empty data directory, and the CLI's rebalance is timed
// from its start to its exit (it polls the reassignments every 500 ms,
// then elects the preferred leaders).
//
// Reported: s-to-share, the command's time; MiB-copied, the new broker's
// local bytes after it (DescribeLogDirs); MiB-hot-tail, the topic's hot
// tail before (each partition's leader's local bytes, summed), and
// x-hot-tail, copied ÷ hot tail (the share of the replicas, 6 of 12
// partitions' tails, is about 0.5 at any history); GiB-history; goal-s,
// the 10 s. The limit, measured in the same run once the cluster
// is idle: limit-s, the time to read the same number of bytes from the
// moved partitions' segment files on a broker that holds them and write
// them to a directory on the same file system as the new broker's (1 MiB
// reads and writes, one fdatasync per partition's file), limit-MB/s its
// rate, and x-limit = limit-s ÷ s-to-share.
//
// The scenario runs through asTest, so that it uses the cluster helpers
// as they are (they take a *testing.T); its servers stop and its
// directories go when each size ends, before the next starts.
func BenchmarkNewBrokerTakesItsShare(b *testing.B) {
	for _, history := range []int64{1 << 30, 20 << 30} {
		b.Run(fmt.Sprintf("history=%dGiB", history>>30), func(b *testing.B) {
			for range b.N {
				asTest(b, func(t *testing.T) { newBrokerTakesItsShare(b, t, history) })
			}
		})
	}
}

func newBrokerTakesItsShare(b *testing.B, t *testing.T, history int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	servers := startClusterOf(t, 3, 3, "--remote.log.manager.task.interval.ms", "1000")
	seeds := kafkaAddresses(servers)
	admin := kadm.NewClient(newClientSeeds(t, seeds))
	const localRetention = shareHotTail / sharePartitions
	created, err := admin.CreateTopic(ctx, sharePartitions, shareReplicas, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(strconv.Itoa(shareSegment)),
		"local.retention.bytes": kadm.StringPtr(strconv.Itoa(localRetention)),
		"retention.bytes":       kadm.StringPtr("-1"),
		"retention.ms":          kadm.StringPtr("-1"),
	}, shareTopic)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", shareTopic, err)
	}
	waitPartitions(ctx, t, admin, shareTopic, "led with a full ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && len(p.ISR) == shareReplicas
	})

	began := time.Now()
	produced := produceHistory(ctx, t, seeds, shareTopic, history)
	producing := time.Since(began)
	b.Logf("history %.1f GiB produced in %s (%.0f MB/s)", float64(produced)/(1<<30), producing.Round(time.Second), float64(produced)/producing.Seconds()/1e6)
	began = time.Now()
	hotTail := waitForHotTails(ctx, t, admin, servers, localRetention)
	b.Logf("tiered and trimmed to a hot tail of %.0f MiB %s later", float64(hotTail)/(1<<20), time.Since(began).Round(time.Second))
	began = time.Now()
	reclaimed := waitForReclaim(t, servers)
	b.Logf("the trimmed segments reclaimed (%.0f MiB still retired when trimmed) %s later", float64(reclaimed)/(1<<20), time.Since(began).Round(100*time.Millisecond))

	const newID = 4
	fourth := joinCluster(t, servers, newID)
	// The CLI plans with the brokers the Metadata it gets lists; each
	// broker must know the new one before the clock starts.
	for _, s := range servers {
		probe := newClient(t, s)
		for !metadataListsBroker(ctx, probe, newID) {
			if ctx.Err() != nil {
				t.Fatalf("broker %s never listed broker %d", s.kafka, newID)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	loadAvg, _ := os.ReadFile("/proc/loadavg")
	b.Logf("load average before the rebalance: %s", loadAvg)
	began = time.Now()
	out, err := servers[0].strata(ctx, "", "cluster", "rebalance", "--execute", "--wait", "--timeout", "60s")
	toShare := time.Since(began)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b.Logf("strata cluster rebalance --execute --wait: %s\n%s", toShare.Round(time.Millisecond), out)

	replicas, leads := 0, 0
	eventually(t, "the new broker holding its share, 6 replicas and 3 leaders", func() bool {
		replicas, leads = replicasOn(ctx, t, admin, shareTopic, newID)
		return replicas == sharePartitions*shareReplicas/newID && leads == sharePartitions/newID
	})
	details := waitPartitions(ctx, t, admin, shareTopic, "every replica in sync", func(p kadm.PartitionDetail) bool {
		return len(p.Replicas) == shareReplicas && len(p.ISR) == shareReplicas
	})
	var sizes map[int32]map[int32]int64
	eventually(t, "the new broker answering DescribeLogDirs", func() bool {
		sizes = localSizesOf(ctx, t, admin, shareTopic)
		return len(sizes[newID]) == replicas
	})
	var copied int64
	for _, size := range sizes[newID] {
		copied += size
	}

	// The limit: the moved tails read from a broker that still holds
	// them, written to the new broker's file system.
	all := append(slices.Clone(servers), fourth)
	var sources []string
	for _, p := range details {
		if !slices.Contains(p.Replicas, newID) {
			continue
		}
		for _, id := range p.Replicas {
			if id != newID {
				sources = append(sources, filepath.Join(all[id-1].dataDir, "partitions", fmt.Sprintf("%s-%d", shareTopic, p.Partition)))
				break
			}
		}
	}
	rawRate := rawCopyRate(t, sources, t.TempDir(), copied)
	limit := float64(copied) / rawRate

	b.ReportMetric(toShare.Seconds(), "s-to-share")
	b.ReportMetric(limit, "limit-s")
	b.ReportMetric(limit/toShare.Seconds(), "x-limit")
	b.ReportMetric(rawRate/1e6, "limit-MB/s")
	b.ReportMetric(float64(copied)/(1<<20), "MiB-copied")
	b.ReportMetric(float64(hotTail)/(1<<20), "MiB-hot-tail")
	b.ReportMetric(float64(copied)/float64(hotTail), "x-hot-tail")
	b.ReportMetric(float64(produced)/(1<<30), "GiB-history")
	b.ReportMetric(shareGoal, "goal-s")
}

// produceHistory produces total bytes of 1 KiB values to topic with one
// franz-go producer (acks=all, 1 MiB batches, no compression; the values
// are slices of a random pool, so nothing compresses them) and returns
// the bytes acknowledged.
func produceHistory(ctx context.Context, t *testing.T, seeds []string, topic string, total int64) int64 {
	t.Helper()
	const valueSize = 1024
	producer := newClientSeeds(t, seeds, kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(10*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	pool := make([]byte, 64<<20)
	if _, err := crand.Read(pool); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		failed error
	)
	records := total / valueSize
	for i := range records {
		at := (i * valueSize) % int64(len(pool)-valueSize)
		producer.Produce(ctx, &kgo.Record{Value: pool[at : at+valueSize]}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flushing the history: %v", err)
	}
	if failed != nil {
		t.Fatalf("producing the history: %v", failed)
	}
	return records * valueSize
}

// waitForHotTails waits until every sealed segment of shareTopic is
// uploaded and every replica is trimmed to its hot tail: local retention
// deletes the oldest segment while the rest would still hold
// localRetention, so a trimmed log holds less than localRetention plus
// one segment. Leaders apply it every second here, followers on their
// own tick (every 5 minutes). Tiering has no event a client can wait on,
// so it polls DescribeLogDirs and the tier status every second, for up to
// 15 minutes, logging where it is every 30 seconds (t's log, shown if
// the run fails: a benchmark's own keeps 10 lines). It returns the hot
// tail: the leaders' local bytes, summed.
func waitForHotTails(ctx context.Context, t *testing.T, admin *kadm.Client, servers []*server, localRetention int64) int64 {
	t.Helper()
	began := time.Now()
	deadline := began.Add(15 * time.Minute)
	nextLog := began.Add(30 * time.Second)
	var last string
	for {
		leaders := map[int32]int32{}
		for _, p := range waitPartitions(ctx, t, admin, shareTopic, "led", func(p kadm.PartitionDetail) bool { return p.Leader >= 0 }) {
			leaders[p.Partition] = p.Leader
		}
		lag := clusterUploadLag(t, servers...)
		sizes := localSizesOf(ctx, t, admin, shareTopic)
		var hotTail, held, largest int64
		led := 0
		for broker, partitions := range sizes {
			for p, size := range partitions {
				held += size
				largest = max(largest, size)
				if leaders[p] == broker {
					hotTail += size
					led++
				}
			}
		}
		trimmed := lag == 0 && led == sharePartitions && largest < localRetention+shareSegment
		if trimmed {
			return hotTail
		}
		last = fmt.Sprintf("upload lag %d bytes, leaders hold %d MiB, all replicas %d MiB, the largest %d MiB", lag, hotTail>>20, held>>20, largest>>20)
		if now := time.Now(); now.After(deadline) {
			t.Fatalf("not tiered and trimmed to the hot tail within 15 minutes: %s", last)
		} else if now.After(nextLog) {
			t.Logf("%s after the history: %s", now.Sub(began).Round(time.Second), last)
			nextLog = now.Add(30 * time.Second)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not tiered and trimmed to the hot tail: %s: %v", last, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// waitForReclaim waits until the retired segments of servers (renamed
// <segment>.log.deleted by retention and freed a cut at a time on a
// goroutine of their own: hotlog/reclaim.go) are gone, so the disk is
// quiet when the clock starts, for up to 10 minutes, polling every 100
// ms. It returns the retired bytes it first saw.
func waitForReclaim(t *testing.T, servers []*server) int64 {
	t.Helper()
	first := int64(-1)
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var retired int64
		for _, s := range servers {
			files, err := filepath.Glob(filepath.Join(s.dataDir, "partitions", "*", "*.deleted"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if info, err := os.Stat(f); err == nil {
					retired += info.Size()
				}
			}
		}
		if first < 0 {
			first = retired
		}
		if retired == 0 {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d retired bytes not reclaimed within 10 minutes", retired)
		}
	}
}

// localSizesOf is each broker's local bytes of each partition of topic it
// holds, from DescribeLogDirs. It asks for every partition and keeps
// topic's: a topic named without partitions asks for none of them.
func localSizesOf(ctx context.Context, t *testing.T, admin *kadm.Client, topic string) map[int32]map[int32]int64 {
	t.Helper()
	described, err := admin.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	out := map[int32]map[int32]int64{}
	for broker, dirs := range described {
		if err := dirs.Error(); err != nil {
			t.Fatalf("DescribeLogDirs of broker %d: %v", broker, err)
		}
		sizes := map[int32]int64{}
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				sizes[p.Partition] += p.Size
			}
		})
		out[broker] = sizes
	}
	return out
}

// metadataListsBroker reports whether the seed broker of cl lists broker
// id in its Metadata answer.
func metadataListsBroker(ctx context.Context, cl *kgo.Client, id int32) bool {
	resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(resp.(*kmsg.MetadataResponse).Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id })
}

// rawCopyRate is this machine's rate for copying a hot tail, in bytes per
// second: the .log files of each partition directory in sources, in
// order, read 1 MiB at a time and written to one new file per partition
// in dir, which is fdatasynced once written, until want bytes are copied
// (or the sources run out). Plain reads and writes, not copy_file_range,
// so the bytes pass through this process as they pass through a broker.
func rawCopyRate(t *testing.T, sources []string, dir string, want int64) float64 {
	t.Helper()
	buf := make([]byte, 1<<20)
	var copied int64
	start := time.Now()
	for i, source := range sources {
		if copied >= want {
			break
		}
		segments, err := filepath.Glob(filepath.Join(source, "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(segments)
		dst, err := os.Create(filepath.Join(dir, fmt.Sprintf("tail-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, segment := range segments {
			if copied >= want {
				break
			}
			n, err := copyFile(dst, segment, want-copied, buf)
			copied += n
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Fdatasync(int(dst.Fd())); err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	if copied == 0 {
		t.Fatalf("no segment files to copy in %v", sources)
	}
	return float64(copied) / took.Seconds()
}

// copyFile appends at most limit bytes of the file at path to dst through
// buf, and returns how many it wrote.
func copyFile(dst *os.File, path string, limit int64, buf []byte) (int64, error) {
	src, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	var written int64
	for written < limit {
		n, err := src.Read(buf[:min(int64(len(buf)), limit-written)])
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return written, err
			}
			written += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return written, nil
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
