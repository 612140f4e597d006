package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUncleanLeaderContinuesTheBucket: a tiered partition's follower is
// stopped past the session timeout, so its leader takes writes alone
// (min.insync.replicas 1) and uploads far past what the follower holds;
// then the leader dies and, with unclean.leader.election.enable, the
// follower is elected. Its log ends below the bucket's end: it restarts
// its hot log there, so every record the bucket holds stays readable and
// the new leader's records follow them, at the offsets after. (Before,
// it wrote new records at offsets the bucket held, which consumers then
// read from one place or the other depending on local retention.) What
// the dead leader held above the bucket's end is lost, as unclean
// election allows; when it returns it truncates that and follows, and
// leads the same log once the other dies.
func TestUncleanLeaderContinuesTheBucket(t *testing.T) {
	t.Parallel()
	servers := startClusterOf(t, 5, 3, "--remote.log.manager.task.interval.ms", "200")
	seeds := kafkaAddresses(servers[:3])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "unclean-tiered"
	createAssigned(ctx, t, cl, topic, map[string]*string{
		"remote.storage.enable":          kadm.StringPtr("true"),
		"segment.bytes":                  kadm.StringPtr("16384"),
		"local.retention.ms":             kadm.StringPtr("1000"),
		"min.insync.replicas":            kadm.StringPtr("1"),
		"unclean.leader.election.enable": kadm.StringPtr("true"),
	}, [][]int32{{1, 4}})
	waitPartitions(ctx, t, admin, topic, "led by broker 1, broker 4 in sync", func(p kadm.PartitionDetail) bool {
		return p.Leader == 1 && len(p.ISR) == 2
	})
	leader, follower := servers[0], servers[3]
	producer := newClientSeeds(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var acked []testRecord
	produceTo := func(n int) { produceTens(t, producer, topic, &acked, n, "from broker 1") }
	produceTo(200)
	follower.pause()
	waitPartitions(ctx, t, admin, topic, "broker 1 alone in the ISR", func(p kadm.PartitionDetail) bool { return slices.Equal(p.ISR, []int32{1}) })
	produceTo(3000)
	var tiered int64
	pollUntil(t, leader, time.Minute, "broker 1 uploading past offset 1000", func() (bool, string) {
		p, ok := tierStatus(t, leader, topic, 0)
		tiered = p.HighestTieredOffset
		return ok && p.HighestTieredOffset >= 1000 && p.SegmentsAwaitingUpload == 0, fmt.Sprintf("%+v", p)
	})
	leader.kill()
	follower.resume()
	waitPartitions(ctx, t, admin, topic, "broker 4 elected uncleanly", func(p kadm.PartitionDetail) bool { return p.Leader == 4 })

	bucketEnd := tiered + 1
	var after []*kgo.Record
	for i := range 100 {
		after = append(after, &kgo.Record{Value: fmt.Appendf(nil, "record %d from broker 4", i)})
	}
	newRecords := produceAll(t, newClientSeeds(t, seeds), topic, after)
	if newRecords[0].offset != bucketEnd {
		t.Fatalf("the unclean leader's first record is at offset %d, want the bucket's end %d (its own log ended near 200)", newRecords[0].offset, bucketEnd)
	}
	want := append(slices.Clone(acked[:bucketEnd]), newRecords...)
	checkSameRecords(t, want, consumeAllSeeds(t, seeds, topic, len(want)))

	// The former leader returns, truncates what it held past the bucket's
	// end (the new leader answers its epoch from the bucket's segments)
	// and follows; elected cleanly once the new leader dies, it serves
	// the same log.
	leader.restart()
	waitPartitions(ctx, t, admin, topic, "broker 1 back in the ISR", func(p kadm.PartitionDetail) bool { return len(p.ISR) == 2 })
	follower.kill()
	waitPartitions(ctx, t, admin, topic, "broker 1 leading again", func(p kadm.PartitionDetail) bool { return p.Leader == 1 })
	checkSameRecords(t, want, consumeAllSeeds(t, seeds, topic, len(want)))
}
