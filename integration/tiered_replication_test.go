package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestTieredReplicatedLeaderKill9LosesNothing: the leader-kill drill on a
// tiered topic whose segments roll every few hundred milliseconds, by
// size at the same offsets on every replica and by segment.ms (with
// segment.jitter.ms) at each replica's own time, and leave the hot disk a
// second after they upload. So the kills land mid-upload, new leaders
// resume or abandon their predecessors' copies and upload segments that
// straddle the bucket's end (each new leader must upload past it while
// the victim is down), and followers delete what the bucket holds.
// Every acknowledged record is read back from offset 0, most of it from
// the bucket (ledger.Check), and once the load stops every partition's
// leader uploads all its sealed segments.
func TestTieredReplicatedLeaderKill9LosesNothing(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3, "--remote.log.manager.task.interval.ms", "200")
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, seeds))
	const topic = "tiered-replicated"
	replicatedTopic(ctx, t, admin, topic, 3, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr("16384"),
		"segment.ms":            kadm.StringPtr("1000"),
		"segment.jitter.ms":     kadm.StringPtr("900"),
		"local.retention.ms":    kadm.StringPtr("1000"),
	})

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	time.Sleep(2 * time.Second)
	straddled := 0 // rounds whose new leader uploaded a segment in part
	for round := range 6 {
		leader := leaderOf(ctx, t, admin, topic, 0)
		victim := servers[leader-1]
		before, _ := tierStatus(t, victim, topic, 0)
		victim.kill()
		successor := waitPartitions(ctx, t, admin, topic, "a new leader", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && p.Leader != leader
		})[0].Leader
		// The new leader uploads past what the victim tiered, from a
		// segment that likely straddles that end, while the victim is down.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			p, ok := tierStatus(t, servers[successor-1], topic, 0)
			if ok && p.HighestTieredOffset > before.HighestTieredOffset {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: broker %d, partition 0's new leader, has not uploaded past offset %d in 30 s: %+v\n%s",
					round, successor, before.HighestTieredOffset, p, servers[successor-1].log)
			}
		}
		if strings.Contains(servers[successor-1].log.String(), "uploading a segment from the tiered end") {
			straddled++
		}
		victim.restart()
		waitPartitions(ctx, t, admin, topic, "the restarted broker back in every ISR", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && len(p.ISR) == 3
		})
		t.Logf("round %d: killed leader %d; %d records acknowledged; %d rounds with a segment uploaded in part", round, leader, led.Summary(nil).Acked, straddled)
	}
	checkLedger(ctx, t, led, load, seeds, topic, 1000)
	if straddled == 0 {
		t.Fatal("no new leader uploaded a segment that straddled the tiered end: the drill did not test it")
	}

	details := waitPartitions(ctx, t, admin, topic, "led", func(p kadm.PartitionDetail) bool { return p.Leader >= 0 })
	for _, d := range details.Sorted() {
		leader := servers[d.Leader-1]
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			p, ok := tierStatus(t, leader, topic, d.Partition)
			if ok && p.SegmentsAwaitingUpload == 0 && p.HighestTieredOffset > 0 && p.LocalLogStartOffset > 0 {
				t.Logf("partition %d: tiered to %d, hot log from %d", d.Partition, p.HighestTieredOffset, p.LocalLogStartOffset)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d: its leader, broker %d, has not uploaded every sealed segment a minute after the load: %+v (ok %v)\n%s",
					d.Partition, d.Leader, p, ok, serverLogs(servers))
			}
		}
	}
}
