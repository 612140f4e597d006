package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFollowerRestartsInsideABatch: while a follower is down, the leader
// takes records in batches of ten and DeleteRecords puts its log start
// inside one of them. The follower comes back below that start, restarts
// its log there, and the leader's read from it returns the batch that
// holds it from its first offset; the follower starts its log at that
// batch, rejoins the ISR, and, led by it once the leader is killed, the
// partition serves every record from the log start on.
func TestFollowerRestartsInsideABatch(t *testing.T) {
	t.Parallel()
	servers := startClusterOf(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seeds := kafkaAddresses(servers)
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "restart-inside"
	createAssigned(ctx, t, cl, topic, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("false"), // DeleteRecords
		"min.insync.replicas":   kadm.StringPtr("1"),
	}, [][]int32{{1, 2}})

	servers[1].kill()
	waitPartitions(ctx, t, admin, topic, "the follower out of the ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader == 1 && len(p.ISR) == 1
	})
	// A linger longer than it takes to hand over ten records: each
	// ProduceSync is one batch of ten.
	producer := newClientSeeds(t, seeds[:1], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(100*time.Millisecond))
	var produced []testRecord
	for batch := range 10 {
		records := make([]*kgo.Record, 10)
		for i := range records {
			records[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "record %d", batch*10+i)}
		}
		produced = append(produced, acknowledged(t, producer.ProduceSync(ctx, records...))...)
	}
	const start = 55 // inside the batch [50, 59]
	deleted, err := admin.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: start}}})
	if d, _ := deleted.Lookup(topic, 0); err != nil || d.Err != nil || d.LowWatermark != start {
		t.Fatalf("DeleteRecords at %d: %+v, %v", start, d, err)
	}

	servers[1].restart()
	waitPartitions(ctx, t, admin, topic, "the follower back in the ISR", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 2
	})
	if !strings.Contains(servers[1].log.String(), "the follower starts at the batch holding the leader's log start") {
		t.Fatalf("the follower did not restart at the batch:\n%s", servers[1].log)
	}
	servers[0].kill()
	waitPartitions(ctx, t, admin, topic, "led by the former follower", func(p kadm.PartitionDetail) bool { return p.Leader == 2 })
	starts, err := admin.ListStartOffsets(ctx, topic)
	if s, _ := starts.Lookup(topic, 0); err != nil || s.Err != nil || s.Offset != start {
		t.Fatalf("the new leader's log start: %+v, %v; want %d", s, err, start)
	}
	consumed := consumeAllSeeds(t, seeds[1:], topic, len(produced)-start)
	for i, r := range consumed {
		want := produced[start+i]
		if r.offset != want.offset || !bytes.Equal(r.value, want.value) {
			t.Fatalf("record %d read back at offset %d as %q, want offset %d, %q", i, r.offset, r.value, want.offset, want.value)
		}
	}
}
