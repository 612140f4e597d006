package integration

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reassign starts the reassignment of each partition of topic to its
// replicas (nil cancels it) with kadm, failing the test on any error.
func reassign(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, targets map[int32][]int32) {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	for p, replicas := range targets {
		req.Assign(topic, p, replicas)
	}
	resp, err := admin.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("reassigning %s: %v", topic, err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			t.Fatalf("reassigning %s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	}
}

// reassignments lists topic's reassignments in progress.
func reassignments(ctx context.Context, t *testing.T, admin *kadm.Client, topic string) kadm.ListPartitionReassignmentsResponses {
	t.Helper()
	resp, err := admin.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: nil})
	if err != nil {
		t.Fatalf("listing reassignments of %s: %v", topic, err)
	}
	return resp
}

// waitReassigned waits until no reassignment of topic is in progress and
// every partition has exactly its target replicas, all in sync.
func waitReassigned(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, targets map[int32][]int32) {
	t.Helper()
	eventually(t, "the reassignments of "+topic+" complete", func() bool {
		resp, err := admin.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: nil})
		return err == nil && len(resp) == 0
	})
	waitPartitions(ctx, t, admin, topic, "on their target replicas, all in sync", func(p kadm.PartitionDetail) bool {
		want := targets[p.Partition]
		return slices.Equal(p.Replicas, want) && len(p.ISR) == len(want) && p.Leader >= 0 && slices.Contains(want, p.Leader)
	})
}

// partitionDirExists reports whether s holds a directory for partition p
// of topic.
func partitionDirExists(t *testing.T, s *server, topic string, p int32) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(s.dataDir, "partitions", fmt.Sprintf("%s-%d", topic, p)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestReassignEveryPartitionUnderLoad: four brokers, a topic of three
// partitions with RF 3 on brokers 1-3, idempotent acks=all producers and a
// consumer group running the whole time. Every partition's leader replica
// is replaced by broker 4, which catches up and takes the leadership, and
// the brokers that left delete their copies; then every partition moves
// back to where it was. No acknowledged record is lost or duplicated, and
// offsets stay dense (ledger.Check).
func TestReassignEveryPartitionUnderLoad(t *testing.T) {
	t.Parallel()
	servers := startClusterOf(t, 4, 3)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "moving"
	original := map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}
	createAssigned(ctx, t, cl, topic, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")},
		[][]int32{original[0], original[1], original[2]})

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	time.Sleep(time.Second)
	moved := map[int32][]int32{0: {4, 2, 3}, 1: {4, 3, 1}, 2: {4, 1, 2}}
	reassign(ctx, t, admin, topic, moved)
	waitReassigned(ctx, t, admin, topic, moved)
	for p, replicas := range original {
		leaving := servers[replicas[0]-1]
		eventually(t, "the leaving replica deletes its copy", func() bool { return !partitionDirExists(t, leaving, topic, p) })
	}
	// The first target in sync leads once the old leader left.
	waitPartitions(ctx, t, admin, topic, "led by broker 4", func(p kadm.PartitionDetail) bool { return p.Leader == 4 })
	acked := led.Summary(nil).Acked
	time.Sleep(time.Second)
	reassign(ctx, t, admin, topic, original)
	waitReassigned(ctx, t, admin, topic, original)
	if partitionDirExists(t, servers[3], topic, 0) {
		eventually(t, "broker 4 deletes its copies", func() bool {
			return !partitionDirExists(t, servers[3], topic, 0) && !partitionDirExists(t, servers[3], topic, 1) && !partitionDirExists(t, servers[3], topic, 2)
		})
	}
	t.Logf("%d records acknowledged before moving back", acked)
	checkLedger(ctx, t, led, load, seeds, topic, 1000)
}

// TestReassignmentCancelAndRefusals: a reassignment onto a broker that
// stops (SIGSTOP) never completes and is listed with its adding and
// removing replicas; cancelling it restores the original replicas.
// Reassigning onto that broker once it is fenced, or onto a broker that
// does not exist, is refused with INVALID_REPLICA_ASSIGNMENT naming it.
// Then the stopped broker is unregistered (`strata broker unregister`).
// First, with brokers 1 and 2 in one rack (--broker.rack) and 3 and 4 in
// another, every partition of a new topic has a replica in each.
func TestReassignmentCancelAndRefusals(t *testing.T) {
	t.Parallel()
	racks := []string{"az-a", "az-a", "az-b", "az-b"}
	servers := startClusterFlags(t, 4, 3, nil, func(i int, _ *server) []string { return []string{"--broker.rack", racks[i]} })
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "stuck"
	cl := newClientSeeds(t, seeds[:3])
	createReplicated(ctx, t, cl, topic, nil, 1, 2)

	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 2, nil, "racked"); err != nil || r.Err != nil {
		t.Fatalf("creating racked: %v %v", err, r.Err)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, "racked")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.Rack == nil || *b.Rack != racks[b.NodeID-1] {
			t.Fatalf("broker %d reports rack %v, want %s", b.NodeID, b.Rack, racks[b.NodeID-1])
		}
	}
	for _, p := range md.Topics["racked"].Partitions {
		if racks[p.Replicas[0]-1] == racks[p.Replicas[1]-1] {
			t.Fatalf("racked-%d on %v: both replicas in rack %s", p.Partition, p.Replicas, racks[p.Replicas[0]-1])
		}
	}

	servers[3].pause()
	defer servers[3].resume()
	// Each broker names itself the controller, where admin requests go: a
	// client that asked brokers 1-3 only never takes the stopped broker 4
	// for one.
	admin := kadm.NewClient(newClientSeeds(t, seeds[:3]))
	reassign(ctx, t, admin, topic, map[int32][]int32{0: {4, 2}})
	listed := reassignments(ctx, t, admin, topic)
	r, ok := listed.Sorted()[0], len(listed) == 1
	if !ok || !slices.Equal(r.Replicas, []int32{4, 2, 1}) || !slices.Equal(r.AddingReplicas, []int32{4}) || !slices.Equal(r.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed reassignments %+v, want replicas [4 2 1], adding [4], removing [1]", listed.Sorted())
	}
	// Cancelled, the partition has its replicas back, in the order of the
	// reassignment's list without the added ones ([2 1]), as Kafka reverts.
	reassign(ctx, t, admin, topic, map[int32][]int32{0: nil})
	waitReassigned(ctx, t, admin, topic, map[int32][]int32{0: {2, 1}})

	waitForStatus(t, servers[0], "broker 4 fenced", func(st metaStatus) bool {
		for _, b := range st.Brokers {
			if b.ID == 4 {
				return b.State == "fenced"
			}
		}
		return false
	})
	for _, c := range []struct {
		replicas []int32
		message  string
	}{
		{[]int32{4, 2}, "broker 4 is fenced"},
		{[]int32{9, 2}, "broker 9 is not registered"},
	} {
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign(topic, 0, c.replicas)
		resp, err := admin.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Sorted()[0]
		if !errors.Is(got.Err, kerr.InvalidReplicaAssignment) || !strings.Contains(got.ErrMessage, c.message) {
			t.Fatalf("reassigning onto %v: %v %q, want INVALID_REPLICA_ASSIGNMENT naming %q", c.replicas, got.Err, got.ErrMessage, c.message)
		}
	}
	if len(reassignments(ctx, t, admin, topic)) != 0 {
		t.Fatal("a refused reassignment is listed")
	}

	// The stopped broker will not come back: unregistered, it is listed as
	// such and leaves the metadata group, where it was a non-voter. A live
	// broker is refused, saying why.
	if out, err := servers[0].strata(ctx, "", "broker", "unregister", "1"); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("unregistering a live broker: %v\n%s", err, out)
	}
	if out, err := servers[0].strata(ctx, "", "broker", "unregister", "4"); err != nil {
		t.Fatalf("unregistering the stopped broker: %v\n%s", err, out)
	}
	waitForStatus(t, servers[0], "broker 4 unregistered and out of the metadata group", func(st metaStatus) bool {
		listed := slices.ContainsFunc(st.Brokers, func(b metaBroker) bool { return b.ID == 4 && b.State == "unregistered" })
		return listed && !slices.ContainsFunc(st.Servers, func(s metaServer) bool { return s.ID == "4" })
	})
}

// TestLeadershipReturnsToPreferredReplicas: after broker 1 is killed and
// restarted, leadership of the partitions it prefers (two of three, so
// 100% of its share led elsewhere) moves back to it: by the controller on
// its own every leader.imbalance.check.interval.seconds (1 s here); not by
// itself with auto.leader.rebalance.enable=false, nor while the imbalance
// stays within leader.imbalance.per.broker.percentage (100: never), where
// ElectLeaders moves it. Out-of-range balance settings are refused at
// start.
func TestLeadershipReturnsToPreferredReplicas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		flags []string
		auto  bool
	}{
		{"auto", nil, true},
		{"rebalance-off", []string{"--auto.leader.rebalance.enable=false"}, false},
		{"within-percentage", []string{"--leader.imbalance.per.broker.percentage", "100"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			servers := startCluster(t, 3, append([]string{"--leader.imbalance.check.interval.seconds", "1"}, c.flags...)...)
			seeds := kafkaAddresses(servers)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cl := newClientSeeds(t, seeds)
			admin := kadm.NewClient(cl)
			const topic = "preferred"
			createAssigned(ctx, t, cl, topic, nil, [][]int32{{1, 2, 3}, {1, 3, 2}, {2, 3, 1}})

			servers[0].kill()
			waitPartitions(ctx, t, admin, topic, "led away from broker 1", func(p kadm.PartitionDetail) bool { return p.Leader > 1 })
			servers[0].restart()
			waitPartitions(ctx, t, admin, topic, "broker 1 back in sync", func(p kadm.PartitionDetail) bool {
				return slices.Contains(p.ISR, 1)
			})
			if !c.auto {
				// Three checks' time: balancing would have moved it.
				time.Sleep(3 * time.Second)
				if leader := leaderOf(ctx, t, admin, topic, 0); leader == 1 {
					t.Fatalf("leadership moved back by itself with %v", c.flags)
				}
				results, err := admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
				if err != nil {
					t.Fatal(err)
				}
				for p, want := range map[int32]error{0: nil, 1: nil, 2: kerr.ElectionNotNeeded} {
					if got := results[topic][p].Err; !errors.Is(got, want) && got != want {
						t.Fatalf("preferred election of partition %d: %v, want %v", p, got, want)
					}
				}
			}
			waitPartitions(ctx, t, admin, topic, "led by their preferred replicas", func(p kadm.PartitionDetail) bool {
				return p.Leader == p.Replicas[0]
			})
			if c.name == "within-percentage" {
				refusedAtStart(t, servers[0], "--leader.imbalance.per.broker.percentage 101: want 0 to 100", "--leader.imbalance.per.broker.percentage", "101")
				refusedAtStart(t, servers[0], "--leader.imbalance.check.interval.seconds 0: want at least 1", "--leader.imbalance.check.interval.seconds", "0")
			}
		})
	}
}

// TestThrottleHoldsAReassignmentsCopyRate: with the replication throttles
// set the way the seeds' runbook sets them (`strata config alter`, rates
// as dynamic broker configs, every replica of the topic throttled), a new
// replica copies a 32 MiB hot tail at the throttled rate, within 20%, and
// once the throttle is lifted the copy finishes.
func TestThrottleHoldsAReassignmentsCopyRate(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 2)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds[:1], kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	admin := kadm.NewClient(cl)
	const topic = "throttled"
	createReplicated(ctx, t, cl, topic, map[string]*string{"remote.storage.enable": kadm.StringPtr("false")}, 1)
	records := make([]*kgo.Record, 32<<10)
	for i := range records {
		value := make([]byte, 1024)
		crand.Read(value) // incompressible, so 32 MiB on disk
		records[i] = &kgo.Record{Topic: topic, Value: value}
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const rate = 4 << 20
	cli := func(args ...string) {
		t.Helper()
		if out, err := servers[0].strata(ctx, "", args...); err != nil {
			t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	cli("config", "alter", "--broker-defaults", "--set", fmt.Sprintf("leader.replication.throttled.rate=%d", rate),
		"--set", fmt.Sprintf("follower.replication.throttled.rate=%d", rate))
	cli("config", "alter", "--topic", topic, "--set", "leader.replication.throttled.replicas=*", "--set", "follower.replication.throttled.replicas=*")

	reassign(ctx, t, admin, topic, map[int32][]int32{0: {1, 2}})
	// The copy's rate between 8 and 24 MiB: past the first second's budget,
	// which the throttle grants at once.
	copied := func() int64 {
		d, _ := admin.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
		var size int64
		d[2].EachPartition(func(p kadm.DescribedLogDirPartition) { size += p.Size })
		return size
	}
	var from, to time.Time
	for size := copied(); size < 24<<20; size = copied() {
		if from.IsZero() && size >= 8<<20 {
			from = time.Now()
		}
		if ctx.Err() != nil {
			t.Fatalf("copied %d bytes before the test timed out", size)
		}
		time.Sleep(20 * time.Millisecond)
	}
	to = time.Now()
	measured := float64(16<<20) / to.Sub(from).Seconds()
	t.Logf("copied 16 MiB at %.2f MiB/s under a %d MiB/s throttle", measured/(1<<20), rate>>20)
	if measured < 0.8*rate || measured > 1.2*rate {
		t.Fatalf("copy rate %.0f B/s under a throttle of %d B/s: outside ±20%%", measured, rate)
	}
	cli("config", "alter", "--broker-defaults", "--delete", "leader.replication.throttled.rate", "--delete", "follower.replication.throttled.rate")
	waitReassigned(ctx, t, admin, topic, map[int32][]int32{0: {1, 2}})
}
