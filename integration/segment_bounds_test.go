package integration

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/offload"
)

// TestNewLeaderUploadsFromTheTieredEnd: the replicas of a tiered
// partition end their segments at the same offsets, the first segment's
// included, which rolls before segment.bytes by a cut its partition
// index sets (partition 1 here: about 0.309 of it). Both replicas' segment
// files are compared, and the first one's size checked against the cut.
// So once the leader has uploaded and is killed, the new leader's sealed
// segments start where the bucket's committed segments end, and it goes
// on uploading whole segments (one that straddled the tiered end would
// upload only its part past it: TestNewLeaderUploadsAStraddlingSegment).
func TestNewLeaderUploadsFromTheTieredEnd(t *testing.T) {
	t.Parallel()
	bucket := "file://" + t.TempDir()
	servers := startClusterOf(t, 3, 3, "--bucket", bucket, "--remote.log.manager.task.interval.ms", "200")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, []string{servers[0].kafka, servers[1].kafka, servers[2].kafka})
	admin := kadm.NewClient(cl)
	const topic = "bounds"
	createAssigned(ctx, t, cl, topic, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(strconv.Itoa(256 << 10)),
		"segment.ms":            kadm.StringPtr("3600000"), // rolls by size alone
	}, [][]int32{{1, 2}, {1, 2}})
	waitPartitions(ctx, t, admin, topic, "led by broker 1", func(p kadm.PartitionDetail) bool { return p.Leader == 1 })

	producer := newClientSeeds(t, []string{servers[1].kafka, servers[2].kafka},
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(16<<10))
	produce := func(n int) {
		t.Helper()
		records := make([]*kgo.Record, n)
		for i := range records {
			value := make([]byte, 1024)
			rand.Read(value) // incompressible
			records[i] = &kgo.Record{Topic: topic, Partition: 1, Value: value}
		}
		if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tiered := func(s *server) (offload.PartitionStatus, bool) { return tierStatus(t, s, topic, 1) }

	produce(1200) // about five segments, the first cut short
	var before offload.PartitionStatus
	eventually(t, "the first leader uploading partition 1's sealed segments", func() bool {
		p, ok := tiered(servers[0])
		before = p
		return ok && p.HighestTieredOffset >= 0 && p.SegmentsAwaitingUpload == 0
	})
	// The follower holds every acknowledged record, or soon does if it
	// fell behind the ISR: then both have rolled where they will.
	var leaderLogs, followerLogs map[string]int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		leaderLogs, followerLogs = segmentFiles(t, servers[0], topic, 1), segmentFiles(t, servers[1], topic, 1)
		if maps.Equal(leaderLogs, followerLogs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 1's segments differ between its replicas:\nleader   %v\nfollower %v", leaderLogs, followerLogs)
		}
	}
	if len(leaderLogs) < 2 {
		t.Fatalf("partition 1 has %d segments, want a sealed one at least: %v", len(leaderLogs), leaderLogs)
	}
	cutAt := int64(256<<10) - int64((math.Sqrt(5)-1)/4*float64(256<<10))
	const largestBatch = 17 << 10 // ProducerBatchMaxBytes, and a batch's header
	if first := leaderLogs[fmt.Sprintf("%020d.log", 0)]; first > cutAt || first <= cutAt-largestBatch {
		t.Fatalf("partition 1's first segment rolled at %d bytes, want within a batch below its cut, %d (segments %v)", first, cutAt, leaderLogs)
	}
	servers[0].kill()
	waitPartitions(ctx, t, admin, topic, "led by broker 2", func(p kadm.PartitionDetail) bool { return p.Leader == 2 })

	produce(1200)
	var after offload.PartitionStatus
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		p, ok := tiered(servers[1])
		after = p
		if ok && p.HighestTieredOffset > before.HighestTieredOffset && p.SegmentsAwaitingUpload == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new leader did not upload partition 1's segments past offset %d within a minute: %+v\n%s",
				before.HighestTieredOffset, after, servers[1].log)
		}
	}
	if strings.Contains(servers[1].log.String(), "uploading a segment from the tiered end") {
		t.Fatalf("the new leader uploaded a segment in part: its segments did not start at the tiered end\n%s", servers[1].log)
	}
	t.Logf("tiered to offset %d by the first leader, %d by the second", before.HighestTieredOffset, after.HighestTieredOffset)
}

// TestNewLeaderUploadsAStraddlingSegment: replicas that roll by
// segment.ms (and segment.jitter.ms) end their segments at different
// offsets, so after a failover the new leader's segment holding the
// bucket's end starts below it. The new leader uploads that segment from
// the bucket's end on and goes on uploading; once local retention has
// deleted its hot copy of the offsets around that end, every acknowledged
// record reads back, those around the end from the bucket.
func TestNewLeaderUploadsAStraddlingSegment(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3, "--remote.log.manager.task.interval.ms", "200")
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "straddle"
	createAssigned(ctx, t, cl, topic, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.ms":            kadm.StringPtr("1500"),
		"segment.jitter.ms":     kadm.StringPtr("1400"), // each replica rolls 0.1 to 1.5 s after a segment's first append
		"local.retention.ms":    kadm.StringPtr("1000"),
	}, [][]int32{{1, 2}})
	waitPartitions(ctx, t, admin, topic, "led by broker 1", func(p kadm.PartitionDetail) bool { return p.Leader == 1 })

	producer := newClientSeeds(t, seeds[1:], kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var acked []testRecord
	// trickle produces for about two seconds, a record every 20 ms, so
	// that segments roll by time.
	trickle := func() {
		t.Helper()
		for range 100 {
			r := &kgo.Record{Value: fmt.Appendf(nil, "record %d", len(acked))}
			acked = append(acked, acknowledged(t, produce(producer, topic, []*kgo.Record{r}))...)
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Trickle until the leader has uploaded a segment that ends where the
	// follower's segments do not, the follower holding every record.
	var before offload.PartitionStatus
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatalf("the replicas' segments ended at the same offsets in five rounds; follower's %v", segmentFiles(t, servers[1], topic, 0))
		}
		trickle()
		eventually(t, "the leader uploading every sealed segment", func() bool {
			p, ok := tierStatus(t, servers[0], topic, 0)
			before = p
			return ok && p.HighestTieredOffset >= 0 && p.SegmentsAwaitingUpload == 0
		})
		waitPartitions(ctx, t, admin, topic, "both replicas in sync", func(p kadm.PartitionDetail) bool { return len(p.ISR) == 2 })
		end := before.HighestTieredOffset + 1
		if _, ok := segmentFiles(t, servers[1], topic, 0)[fmt.Sprintf("%020d.log", end)]; !ok {
			break
		}
	}
	servers[0].kill()
	waitPartitions(ctx, t, admin, topic, "led by broker 2", func(p kadm.PartitionDetail) bool { return p.Leader == 2 })

	trickle() // the straddling segment rolls, if it was the active one
	var after offload.PartitionStatus
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		p, ok := tierStatus(t, servers[1], topic, 0)
		after = p
		if ok && p.HighestTieredOffset > before.HighestTieredOffset && p.SegmentsAwaitingUpload == 0 &&
			p.LocalLogStartOffset > before.HighestTieredOffset+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new leader did not upload past offset %d and let the hot copy go within a minute: %+v\n%s",
				before.HighestTieredOffset, after, servers[1].log)
		}
	}
	if !strings.Contains(servers[1].log.String(), "uploading a segment from the tiered end") {
		t.Fatalf("the new leader uploaded no segment from the tiered end:\n%s", servers[1].log)
	}
	t.Logf("tiered to offset %d by the first leader, %d by the second; the hot log starts at %d",
		before.HighestTieredOffset, after.HighestTieredOffset, after.LocalLogStartOffset)
	checkSameRecords(t, acked, consumeAllSeeds(t, seeds[1:], topic, len(acked)))
}

// tierStatus reads s's tier status of a partition of topic: the last
// tiered offset, the sealed segments awaiting upload, the hot log's start.
func tierStatus(t *testing.T, s *server, topic string, partition int32) (offload.PartitionStatus, bool) {
	code, body := httpGet(t, "http://"+s.admin+"/v1/tier/status?topic="+topic)
	var status offload.Status
	if code != 200 || json.Unmarshal([]byte(body), &status) != nil {
		return offload.PartitionStatus{}, false
	}
	for _, p := range status.Partitions {
		if p.Partition == partition {
			return p, true
		}
	}
	return offload.PartitionStatus{}, false
}

// segmentFiles is the size of each segment log (its name, a base offset)
// of partition of topic in s's data directory.
func segmentFiles(t *testing.T, s *server, topic string, partition int32) map[string]int64 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(s.dataDir, "partitions", fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, path := range paths {
		name := filepath.Base(path)
		if len(name) != len("00000000000000000000.log") {
			continue // a segment being prepared
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = info.Size()
	}
	return sizes
}
