package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/internal/ledger"
)

// replicatedTopic creates topic with RF 3, min.insync.replicas 2 and
// partitions partitions on a three-broker cluster and waits until every
// partition has a leader and a full ISR.
func replicatedTopic(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	if configs == nil {
		configs = map[string]*string{}
	}
	configs["min.insync.replicas"] = kadm.StringPtr("2")
	r, err := admin.CreateTopic(ctx, partitions, 3, configs, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	waitPartitions(ctx, t, admin, topic, "every partition led with ISR 3", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && len(p.ISR) == 3
	})
}

// waitPartitions waits until every partition of topic satisfies ok, as
// Metadata reports it, and returns them.
func waitPartitions(ctx context.Context, t *testing.T, admin *kadm.Client, topic, what string, ok func(kadm.PartitionDetail) bool) kadm.PartitionDetails {
	t.Helper()
	var last kadm.PartitionDetails
	for ctx.Err() == nil {
		md, err := admin.Metadata(ctx, topic)
		if err == nil {
			last = md.Topics[topic].Partitions
			all := len(last) > 0
			for _, p := range last {
				all = all && p.Err == nil && ok(p)
			}
			if all {
				return last
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: partitions of %s never got there: %+v", topic, what, last)
	return nil
}

// leaderOf is the broker leading partition p of topic, once one does.
func leaderOf(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, p int32) int32 {
	t.Helper()
	details := waitPartitions(ctx, t, admin, topic, "led", func(d kadm.PartitionDetail) bool { return d.Leader >= 0 })
	return details[p].Leader
}

// TestReplicatedLeaderKill9LosesNothing: three strata servers, a topic with
// RF 3 and min.insync.replicas 2, idempotent acks=all producers and a
// consumer group running the whole time; the leader of partition 0 is
// killed with SIGKILL ten times in a row, each time restarted once a new
// leader has taken over. Every acknowledged record is read back exactly
// once at its acknowledged offset, in producer order, offsets are dense,
// and no consumer saw a record that later vanished (ledger.Check).
func TestReplicatedLeaderKill9LosesNothing(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	seeds := []string{servers[0].kafka, servers[1].kafka, servers[2].kafka}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "replicated"
	replicatedTopic(ctx, t, admin, topic, 3, nil)

	led := ledger.New()
	load, err := ledger.Start(led, ledger.Options{Seeds: seeds, Topic: topic, Producers: 2, Interval: 5 * time.Millisecond, Consume: true})
	if err != nil {
		t.Fatal(err)
	}
	defer load.Stop(context.Background())
	time.Sleep(time.Second)
	for round := range 10 {
		leader := leaderOf(ctx, t, admin, topic, 0)
		victim := servers[leader-1]
		victim.kill()
		waitPartitions(ctx, t, admin, topic, "a new leader", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && p.Leader != leader
		})
		acked := led.Summary(nil).Acked
		victim.restart()
		waitPartitions(ctx, t, admin, topic, "the restarted broker back in every ISR", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && slices.Contains(p.ISR, leader)
		})
		t.Logf("round %d: killed leader %d; %d records acknowledged by then", round, leader, acked)
	}
	stopCtx, stopCancel := context.WithTimeout(ctx, time.Minute)
	defer stopCancel()
	if err := load.Stop(stopCtx); err != nil {
		t.Log(err)
	}
	final, err := ledger.ReadAll(ctx, seeds, topic)
	if err != nil {
		t.Fatal(err)
	}
	summary := led.Summary(final)
	t.Log(summary)
	if err := led.Check(final); err != nil {
		t.Fatal(err)
	}
	if summary.Acked < 1000 {
		t.Fatalf("only %d records acknowledged over ten failovers", summary.Acked)
	}
}
