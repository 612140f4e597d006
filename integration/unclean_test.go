package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFormerLeaderRejoinsAfterAnUncleanElection: a partition's leader,
// alone in its ISR, acknowledges a record and is paused (not killed)
// past the session timeout; a follower outside the ISR is elected
// uncleanly and writes at that record's offset. The former leader,
// continued, counted the record committed, yet the unclean election gave
// it up: it truncates below its high watermark, follows and rejoins the
// ISR without a restart (before, it refused until restarted), and led
// again it serves the new leader's record there.
func TestFormerLeaderRejoinsAfterAnUncleanElection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "unclean-rejoin"
	d := startDrill1(ctx, t, topic, map[string]*string{
		"min.insync.replicas": kadm.StringPtr("1"), "unclean.leader.election.enable": kadm.StringPtr("true"),
	})
	seeds, admin, former, followers := d.seeds, d.admin, d.leader, d.followers
	produceAll(t, d.cl, topic, []*kgo.Record{{Value: []byte("every replica holds this")}})

	d.pauseFollowers(ctx, t)
	givenUp := produceAll(t, newClient(t, former), topic, []*kgo.Record{{Value: []byte("only the former leader holds this")}})[0]
	former.pause()
	for _, f := range followers {
		f.resume()
	}
	waitPartitions(ctx, t, admin, topic, "an unclean leader", func(p kadm.PartitionDetail) bool { return p.Leader == 4 || p.Leader == 5 })
	after := produceAll(t, newClientSeeds(t, seeds[1:]), topic, []*kgo.Record{{Value: []byte("after the unclean election")}})[0]
	if after.offset != givenUp.offset {
		t.Fatalf("the first record after the unclean election is at %d, want %d", after.offset, givenUp.offset)
	}

	former.resume()
	waitPartitions(ctx, t, admin, topic, "the former leader back in the ISR", func(p kadm.PartitionDetail) bool {
		return slices.Contains(p.ISR, 1)
	})
	if n := scrapeMetrics(t, former).sum("strata_replica_truncations_below_high_watermark_total"); n != 0 {
		t.Fatalf("the former leader refused %v truncations", n)
	}
	if _, err := admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
		t.Fatal(err)
	}
	waitPartitions(ctx, t, admin, topic, "the former leader leading again", func(p kadm.PartitionDetail) bool { return p.Leader == 1 })
	got := consumeAll(t, former, topic, int(after.offset)+1)
	if last := got[len(got)-1]; last.offset != after.offset || string(last.value) != "after the unclean election" {
		t.Fatalf("the former leader serves %q at %d, want the new leader's record at %d", last.value, last.offset, after.offset)
	}
}
