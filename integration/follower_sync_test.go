package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/hotlog"
)

// TestFollowerSyncsAFetchsPartitionsTogether: a follower appends every
// partition a fetch returned before it waits for any to be durable, so
// the partitions of one produce request cost its disk a shared sync call
// for each fetch that carried them (about seven here: a fetch wakes at
// the first append), not one call each in turn, which held its next
// fetch, and so acks=all, for as many fsync rounds as there were
// partitions.
func TestFollowerSyncsAFetchsPartitionsTogether(t *testing.T) {
	t.Parallel()
	if errs, err := hotlog.SyncfsErrorsOn(t.TempDir()); err != nil || errs == hotlog.SyncfsMayMiss {
		t.Skipf("the data directory's file system does not share syncfs calls (%v, %v): every partition is fsynced on its own there", errs, err)
	}
	servers := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, kafkaAddresses(servers),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(20*time.Millisecond))
	const topic, partitions, requests = "wide", 32, 20
	assignment := make([][]int32, partitions)
	for i := range assignment {
		assignment[i] = []int32{1, 2}
	}
	createAssigned(ctx, t, cl, topic, nil, assignment)

	follower := servers[1]
	calls := func() float64 { return scrapeMetrics(t, follower).sum("strata_disk_sync_calls_total") }
	before := calls()
	for range requests {
		records := make([]*kgo.Record, partitions)
		for i := range records {
			records[i] = &kgo.Record{Partition: int32(i), Value: []byte("one record in each partition")}
		}
		// acks=all: answered once the follower fetched past the records,
		// which it does only once they are durable.
		produceAll(t, cl, topic, records)
	}
	got, each := calls()-before, float64(requests*partitions)
	t.Logf("%v sync calls for %d requests of %d partitions", got, requests, partitions)
	if got*2 >= each {
		t.Fatalf("the follower made %v sync calls for %d requests of %d partitions each; one call a partition is %v, want under half of that",
			got, requests, partitions, each)
	}
}
