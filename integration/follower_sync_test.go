package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/hotlog"
)

// TestFollowerSyncsAFetchsPartitionsTogether: a produce request's
// partitions reach a follower in one fetch (the leader wakes the
// follower's fetch once the request's partitions are all appended), and
// the follower appends them all, then registers their fsync waits, then
// waits, so they cost its disk one shared sync call. Measured on this
// test: 20 calls for 20 requests of 32 partitions; 28-31 with the fetch
// woken at each append, 32-39 with the waits registered at each append,
// and about 700 with each partition's append waiting for its own fsync
// before the next, which held the next fetch, and so acks=all, for as
// many fsync rounds as there were partitions.
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
	wide := func() {
		records := make([]*kgo.Record, partitions)
		for i := range records {
			records[i] = &kgo.Record{Partition: int32(i), Value: []byte("one record in each partition")}
		}
		// acks=all: answered once the follower fetched past the records,
		// which it does only once they are durable.
		produceAll(t, cl, topic, records)
	}
	wide() // the first appends also make the new segment files' directory entries durable
	before := calls()
	for range requests {
		wide()
	}
	got := calls() - before
	t.Logf("%v sync calls for %d requests of %d partitions", got, requests, partitions)
	if got >= 1.5*requests {
		t.Fatalf("the follower made %v sync calls for %d requests of %d partitions each, want under one and a half a request (one shared call a fetch, one fetch a request)",
			got, requests, partitions)
	}
}
