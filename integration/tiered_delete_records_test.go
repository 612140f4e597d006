package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/segmentobject"
)

// TestDeleteRecordsOnATieredTopic: DeleteRecords on a tiered partition of
// two replicas, at offsets inside batches of ten records. First inside
// what only the bucket holds: the log start answered is the offset asked,
// offsets below it are OFFSET_OUT_OF_RANGE, the bucket's manifest starts
// there and its segments wholly below are deleted. Then inside the active
// segment, above everything uploaded: the follower's hot log follows, and
// the leader goes on uploading, from the batch that holds the new start.
// Then the leader is killed: the
// follower, which followed the log start, leads, answers the same start
// and uploads on. A consumer from the earliest offset reads every
// acknowledged record from the start on, and nothing below it, each time.
// Last, the topic is deleted, and its objects leave the bucket.
func TestDeleteRecordsOnATieredTopic(t *testing.T) {
	t.Parallel()
	bucket := t.TempDir()
	servers := startCluster(t, 3, "--remote.log.manager.task.interval.ms", "200", "--bucket", "file://"+bucket)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "tiered-delete"
	createAssigned(ctx, t, cl, topic, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr("16384"),
		"local.retention.ms":    kadm.StringPtr("1000"),
	}, [][]int32{{1, 2}})
	waitPartitions(ctx, t, admin, topic, "led by broker 1 with both replicas in sync", func(p kadm.PartitionDetail) bool {
		return p.Leader == 1 && len(p.ISR) == 2
	})
	store, err := objstore.Open(ctx, "file://"+bucket, objstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var id uuid.UUID
	eventually(t, "the topic's id", func() bool {
		topics, err := admin.ListTopics(ctx, topic)
		id = uuid.UUID(topics[topic].ID)
		return err == nil && topics[topic].Err == nil
	})
	prefix := segmentobject.PartitionPrefix("", topic, id, 0)

	producer := newClientSeeds(t, seeds, kgo.ProducerLinger(20*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var acked []testRecord
	produceTo := func(n int) { produceTens(t, producer, topic, &acked, n, strings.Repeat("x", 80)) }
	// uploaded waits until s, the leader, has uploaded every sealed segment,
	// up to offset atLeast at least, and its hot log starts past hotPast.
	uploaded := func(s *server, atLeast, hotPast int64) offload.PartitionStatus {
		t.Helper()
		var p offload.PartitionStatus
		pollUntil(t, s, time.Minute, fmt.Sprintf("tiered to %d, the hot log past %d", atLeast, hotPast), func() (bool, string) {
			var ok bool
			p, ok = tierStatus(t, s, topic, 0)
			return ok && p.HighestTieredOffset >= atLeast && p.SegmentsAwaitingUpload == 0 && p.LocalLogStartOffset > hotPast, fmt.Sprintf("%+v", p)
		})
		return p
	}
	deleteRecords := func(offset int64) {
		t.Helper()
		res, err := admin.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: offset}}})
		if err != nil {
			t.Fatal(err)
		}
		if r := res[topic][0]; r.Err != nil || r.LowWatermark != offset {
			t.Fatalf("DeleteRecords before %d: low watermark %d, %v", offset, r.LowWatermark, r.Err)
		}
	}
	// readsFrom checks what clients of leader see: the log start is start,
	// a fetch below it is out of range, a consumer from the earliest offset
	// reads the acknowledged records from start on, and the bucket's
	// manifest, once remote retention has run, starts there too with no
	// object left that it does not name.
	readsFrom := func(leader *server, start int64) {
		t.Helper()
		if got := listOffset(t, newClient(t, leader), topic, -2); got != start {
			t.Fatalf("earliest offset %d, want %d", got, start)
		}
		if p := fetchDirectAt(ctx, t, leader, topic, 0, start-1); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != start {
			t.Fatalf("a fetch at %d: error %d, log start %d; want OFFSET_OUT_OF_RANGE and %d", start-1, p.ErrorCode, p.LogStartOffset, start)
		}
		var want []testRecord
		for _, r := range acked[start:] {
			r.offset -= start // checkSameRecords counts offsets from 0
			want = append(want, r)
		}
		got := consumeAllSeeds(t, []string{leader.kafka}, topic, len(want))
		for i := range got {
			got[i].offset -= start
		}
		checkSameRecords(t, want, got)
		pollUntil(t, leader, time.Minute, fmt.Sprintf("the bucket starting at %d", start), func() (bool, string) {
			man, err := readBucketManifest(ctx, store, segmentobject.ManifestKey("", topic, id, 0))
			if err != nil || man == nil {
				return false, fmt.Sprintf("manifest %v", err)
			}
			keys, err := listSegmentObjects(ctx, store, prefix)
			if err != nil {
				return false, err.Error()
			}
			unnamed := unnamedObjects(man, keys)
			if err := checkManifestShape(man, prefix, true); err != nil || man.LogStartOffset != start || len(unnamed) > 0 {
				return false, fmt.Sprintf("manifest from %d, %v; unnamed objects %v", man.LogStartOffset, err, unnamed)
			}
			return true, ""
		})
	}

	produceTo(1000) // the first segment holds some 780 records
	uploaded(servers[0], 305, 305)
	deleteRecords(305) // inside the batch [300, 309], in the bucket only
	readsFrom(servers[0], 305)

	produceTo(1300)
	if p, _ := tierStatus(t, servers[0], topic, 0); p.HighestTieredOffset >= 1290 {
		t.Fatalf("the batch at 1290 is tiered already (%+v): the test needs it in the active segment", p)
	}
	deleteRecords(1295) // inside the batch [1290, 1299], in the active segment
	produceTo(2400)
	// The follower's hot log follows the leader's log start as it fetches.
	waitForMetrics(t, servers[1], "the follower's hot log starting at 1295", func(m metricSamples) bool {
		for _, s := range m {
			if s.name == "strata_ingest_log_start_offset" && s.labels["topic"] == topic {
				return s.value == 1295
			}
		}
		return false
	})
	before := uploaded(servers[0], 1295, 1295)
	if !strings.Contains(servers[0].log.String(), "uploading a segment from the log start") {
		t.Fatalf("the leader uploaded no segment from the log start:\n%s", servers[0].log)
	}
	readsFrom(servers[0], 1295)
	man, err := readBucketManifest(ctx, store, segmentobject.ManifestKey("", topic, id, 0))
	if err != nil || man == nil || man.Segments[0].BaseOffset != 1290 {
		t.Fatalf("the bucket's first segment after DeleteRecords to 1295: %+v, %v; want it to start at the batch at 1290", man, err)
	}

	servers[0].kill()
	waitPartitions(ctx, t, admin, topic, "led by broker 2", func(p kadm.PartitionDetail) bool { return p.Leader == 2 })
	produceTo(4000)
	uploaded(servers[1], before.HighestTieredOffset+1, 1295)
	readsFrom(servers[1], 1295)

	// Deleting the topic deletes its objects in the bucket too (the
	// surviving replica's broker does, the other being down).
	deleted, err := admin.DeleteTopics(ctx, topic)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("deleting the topic: %v", err)
	}
	eventually(t, "the deleted topic's objects gone from the bucket", func() bool {
		for _, err := range store.List(ctx, prefix) {
			if err != nil {
				t.Fatalf("listing the bucket: %v", err)
			}
			return false // an object of the topic is still there
		}
		return true
	})
}

// produceTens produces records to partition 0 of topic, ten to a
// ProduceSync, which makes one batch of ten (batches start at multiples of
// ten), until acked holds n; each record's value names its offset and
// carries filler.
func produceTens(t *testing.T, producer *kgo.Client, topic string, acked *[]testRecord, n int, filler string) {
	t.Helper()
	for len(*acked) < n {
		batch := make([]*kgo.Record, 10)
		for i := range batch {
			batch[i] = &kgo.Record{Value: fmt.Appendf(nil, "record %d %s", len(*acked)+i, filler)}
		}
		*acked = append(*acked, produceAll(t, producer, topic, batch)...)
	}
}
