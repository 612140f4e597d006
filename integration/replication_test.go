package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/stratalog/strata/internal/ledger"
	"github.com/stratalog/strata/record"
)

// replicatedTopic creates topic with RF 3, min.insync.replicas 2 (unless
// configs sets it) and partitions partitions on a three-broker cluster and waits until every
// partition has a leader and a full ISR.
func replicatedTopic(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	if configs == nil {
		configs = map[string]*string{}
	}
	if _, set := configs["min.insync.replicas"]; !set {
		configs["min.insync.replicas"] = kadm.StringPtr("2")
	}
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
// Metadata reports it (a partition without a leader has Leader -1 and
// LEADER_NOT_AVAILABLE), and returns them.
func waitPartitions(ctx context.Context, t *testing.T, admin *kadm.Client, topic, what string, ok func(kadm.PartitionDetail) bool) kadm.PartitionDetails {
	t.Helper()
	var last kadm.PartitionDetails
	for ctx.Err() == nil {
		md, err := admin.Metadata(ctx, topic)
		if err == nil {
			last = md.Topics[topic].Partitions
			all := len(last) > 0
			for _, p := range last {
				all = all && ok(p)
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
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "replicated"
	replicatedTopic(ctx, t, admin, topic, 3, nil)

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
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
	checkLedger(ctx, t, led, load, seeds, topic, 1000)
}

// pause stops the process with SIGSTOP, until resume continues it (or the
// test ends, so the server can be stopped).
func (s *server) pause() {
	s.cmd.Process.Signal(syscall.SIGSTOP)
	s.t.Cleanup(s.resume)
}

func (s *server) resume() { s.cmd.Process.Signal(syscall.SIGCONT) }

// produceDirect sends one acks=1 batch straight to broker, bypassing any
// client's idea of who leads, and returns the partition's error code.
func produceDirect(ctx context.Context, t *testing.T, broker *server, topic string, partition int32) int16 {
	t.Helper()
	cl := newClient(t, broker, kgo.MaxVersions(kversion.V2_8_0())) // Produce v9: topics by name
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Value: []byte("to a deposed leader")}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("producing straight to %s: %v", broker.kafka, err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// fetchDirect sends one consumer fetch at offset 0 straight to broker and
// returns the partition's error code.
func fetchDirect(ctx context.Context, t *testing.T, broker *server, topic string, partition int32) int16 {
	t.Helper()
	return fetchDirectAt(ctx, t, broker, topic, partition, 0).ErrorCode
}

// fetchDirectAt sends one consumer fetch at offset straight to broker and
// returns the partition's answer.
func fetchDirectAt(ctx context.Context, t *testing.T, broker *server, topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	cl := newClient(t, broker, kgo.MaxVersions(kversion.V2_8_0())) // Fetch v12: topics by name
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("fetching straight from %s: %v", broker.kafka, err)
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

// TestReplicatedLeaderPausedStepsDown: the leader of partition 0 is
// stopped with SIGSTOP for longer than the session timeout while
// idempotent acks=all producers and a consumer group run. Its followers
// elect a new leader; when it continues (SIGCONT) its lease has lapsed, so
// it answers NOT_LEADER_OR_FOLLOWER at once to a write and to a read sent
// straight to it, before and after it learns it was deposed; it truncates,
// rejoins the ISR, and the ledger finds nothing lost.
func TestReplicatedLeaderPausedStepsDown(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, seeds))
	const topic = "paused"
	replicatedTopic(ctx, t, admin, topic, 1, nil)
	// Created without a replication factor on three brokers, a topic gets
	// 3 replicas and min.insync.replicas 2 (default.replication.factor
	// unset).
	if r, err := admin.CreateTopic(ctx, 1, -1, nil, "defaulted"); err != nil || r.Err != nil {
		t.Fatalf("creating a topic without a replication factor: %v %v", err, r.Err)
	}
	waitPartitions(ctx, t, admin, "defaulted", "three replicas", func(p kadm.PartitionDetail) bool { return len(p.Replicas) == 3 })
	// Any broker may answer DescribeConfigs, and one whose metadata has
	// not applied the create yet says UNKNOWN_TOPIC_OR_PARTITION, as a
	// Kafka broker would: ask until one knows the topic.
	var described kadm.ResourceConfig
	eventually(t, "a broker describing the defaulted topic", func() bool {
		configs, err := admin.DescribeTopicConfigs(ctx, "defaulted")
		if err != nil {
			return false
		}
		described, err = configs.On("defaulted", nil)
		return err == nil && described.Err == nil
	})
	if !slices.ContainsFunc(described.Configs, func(c kadm.Config) bool {
		return c.Key == "min.insync.replicas" && c.Value != nil && *c.Value == "2"
	}) {
		t.Fatalf("a defaulted topic's configs: %+v, want min.insync.replicas 2", described)
	}

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	time.Sleep(time.Second)
	leader := leaderOf(ctx, t, admin, topic, 0)
	paused := servers[leader-1]
	paused.pause()
	waitPartitions(ctx, t, admin, topic, "a new leader", func(p kadm.PartitionDetail) bool { return p.Leader >= 0 && p.Leader != leader })
	time.Sleep(2 * time.Second) // the new leader takes writes meanwhile
	paused.resume()
	wantErrorCode(t, "a write to the deposed leader", produceDirect(ctx, t, paused, topic, 0), kerr.NotLeaderForPartition)
	wantErrorCode(t, "a read from the deposed leader", fetchDirect(ctx, t, paused, topic, 0), kerr.NotLeaderForPartition)
	waitPartitions(ctx, t, admin, topic, "the paused broker back in the ISR", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 3
	})
	wantErrorCode(t, "a write to the follower", produceDirect(ctx, t, paused, topic, 0), kerr.NotLeaderForPartition)
	checkLedger(ctx, t, led, load, seeds, topic, 200)
}

// createReplicated creates topic with one partition on replicas, in that
// order (the first leads), and waits until it has a full ISR.
func createReplicated(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, configs map[string]*string, replicas ...int32) {
	t.Helper()
	createAssigned(ctx, t, cl, topic, configs, [][]int32{replicas})
}

// createAssigned creates topic with partition i on assignment[i], and
// waits until every partition has a full ISR.
func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, configs map[string]*string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for name, value := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = name, value
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		if err = kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			err = fmt.Errorf("%w: %s", err, deref(resp.Topics[0].ErrorMessage))
		}
	}
	if err != nil {
		t.Fatalf("creating %s on %v: %v", topic, assignment, err)
	}
	waitPartitions(ctx, t, kadm.NewClient(cl), topic, "led with a full ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && len(p.ISR) == len(assignment[p.Partition])
	})
}

// eventually polls ok until it holds, failing the test after 30 s: for
// what each broker learns from the metadata in its own time.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// wantErrorCode fails the test unless code is want's.
func wantErrorCode(t *testing.T, what string, code int16, want *kerr.Error) {
	t.Helper()
	if code != want.Code {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(code), want)
	}
}

// startLedgerLoad starts two idempotent acks=all producers, each sending
// every interval, and a consumer group member on topic, all reporting
// into a new ledger; the load is stopped when the test ends, if not
// before (checkLedger).
func startLedgerLoad(t *testing.T, seeds []string, topic string, interval time.Duration) (*ledger.Ledger, *ledger.Load) {
	t.Helper()
	led := ledger.New()
	load, err := ledger.Start(led, ledger.Options{Seeds: seeds, Topic: topic, Producers: 2, Interval: interval, Consume: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { load.Stop(context.Background()) })
	return led, load
}

// checkLedger stops the load and checks the ledger against a final read
// of topic, which must hold at least minAcked acknowledged records.
func checkLedger(ctx context.Context, t *testing.T, led *ledger.Ledger, load *ledger.Load, seeds []string, topic string, minAcked int) {
	t.Helper()
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
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
	if summary.Acked < minAcked {
		t.Fatalf("only %d records acknowledged, want at least %d", summary.Acked, minAcked)
	}
}

// TestControlledShutdownMovesLeadership: SIGTERM of a leader moves its
// partitions' leadership to the other ISR members before it exits (it
// fences its own incarnation), so the metadata names another leader the
// moment it is gone; a rolling restart of all three brokers under acks=all
// producers loses nothing.
func TestControlledShutdownMovesLeadership(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, seeds))
	const topic = "rolling"
	replicatedTopic(ctx, t, admin, topic, 3, nil)

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	for _, s := range servers {
		time.Sleep(time.Second)
		s.stop()
		if !strings.Contains(s.log.String(), "controlled shutdown: leadership moved to other replicas") ||
			!strings.Contains(s.log.String(), "still_leading=0") {
			t.Fatalf("the broker did not move its leadership away before it stopped:\n%s", s.log)
		}
		s.restart()
		waitPartitions(ctx, t, admin, topic, "the restarted broker back in every ISR", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && len(p.ISR) == 3
		})
	}
	checkLedger(ctx, t, led, load, seeds, topic, 500)
}

// TestLeaderlessPartitionWaitsForItsISRUnlessUncleanElection is the seed's
// crisis drill 1: both followers drop out of the ISR (stopped past the
// session timeout, so the controller fences them), the leader takes
// writes alone (min.insync.replicas 1) and then dies. The followers are
// brokers 4 and 5, which are not metadata voters, so stopping them leaves
// the metadata group its quorum. With the default, the partition has no
// leader and refuses writes and reads, though two of its replicas are
// alive again: electing either would lose what only the leader held; when
// the leader returns it leads again and serves it. Turning unclean.leader.election.enable on makes the
// controller elect one, and the election is counted.
func TestLeaderlessPartitionWaitsForItsISRUnlessUncleanElection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "drill1"
	d := startDrill1(ctx, t, topic, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")})
	servers, seeds, admin, alone, followers := d.servers, d.seeds, d.admin, d.leader, d.followers

	// leaveAlone stops both followers past the session timeout, so the
	// leader is alone in the ISR, writes value there, kills the leader and
	// continues the followers; the partition is then leaderless, and it
	// returns what the leader acknowledged.
	leaveAlone := func(value string) testRecord {
		t.Helper()
		d.pauseFollowers(ctx, t)
		acked := produceAll(t, newClient(t, alone), topic, []*kgo.Record{{Value: []byte(value)}})[0]
		alone.kill()
		for _, f := range followers {
			f.resume()
		}
		for _, f := range followers {
			waitForStatus(t, f, "the leader fenced, both followers registered again", func(st metaStatus) bool {
				fenced := map[int32]bool{}
				for _, b := range st.Brokers {
					fenced[b.ID] = b.State == "fenced"
				}
				return len(fenced) == 5 && fenced[1] && !fenced[4] && !fenced[5]
			})
		}
		return acked
	}

	first := leaveAlone("only the leader holds this")
	// Several liveness ticks of the controller pass with two live replicas,
	// and it elects neither. (A client's metadata answer may come from a
	// broker just continued, before it caught up: wait for a current one.)
	time.Sleep(2 * time.Second)
	waitPartitions(ctx, t, admin, topic, "leaderless, with only broker 1 offline", func(p kadm.PartitionDetail) bool {
		return p.Leader == -1 && slices.Equal(p.OfflineReplicas, []int32{1})
	})
	for _, f := range followers {
		wantErrorCode(t, "a write while leaderless", produceDirect(ctx, t, f, topic, 0), kerr.NotLeaderForPartition)
		wantErrorCode(t, "a read while leaderless", fetchDirect(ctx, t, f, topic, 0), kerr.NotLeaderForPartition)
	}
	// With the default, the partition waits for its ISR: the leader comes
	// back, leads again (a clean election) and serves what it held.
	alone.restart()
	waitPartitions(ctx, t, admin, topic, "the returned leader leading", func(p kadm.PartitionDetail) bool { return p.Leader == 1 })
	got := consumeAll(t, alone, topic, int(first.offset)+1)
	if last := got[len(got)-1]; last.offset != first.offset || string(last.value) != "only the leader holds this" {
		t.Fatalf("the returned leader serves %+v at the end, want the record it acknowledged alone at %d", last, first.offset)
	}
	// The followers catch up and rejoin the ISR before they are stopped
	// again. Stopped while still outside it, they would leave the ISR at
	// once, and a fetch each had parked at the leader could be answered
	// with the next record into its stopped socket: read on resume, the
	// record would survive the unclean election below.
	waitPartitions(ctx, t, admin, topic, "both followers back in the ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader == 1 && len(p.ISR) == 3
	})

	second := leaveAlone("only the leader holds this too")
	if _, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, topic); err != nil {
		t.Fatal(err)
	}
	waitPartitions(ctx, t, admin, topic, "an unclean leader", func(p kadm.PartitionDetail) bool { return p.Leader == 4 || p.Leader == 5 })
	unclean := func() (n float64) {
		for _, s := range servers[1:3] { // the live voters, one of which is the controller
			n += scrapeMetrics(t, s).sum("strata_meta_unclean_leader_elections_total")
		}
		return n
	}
	// The controller counts the election once its proposal returns.
	eventually(t, "one unclean election counted", func() bool { return unclean() >= 1 })
	if n := unclean(); n != 1 {
		t.Fatalf("%v unclean elections counted, want 1", n)
	}
	if r := produceAll(t, newClientSeeds(t, seeds), topic, []*kgo.Record{{Value: []byte("after the unclean election")}}); r[0].offset != second.offset {
		t.Fatalf("the first record after the unclean election is at %d, want %d (where the leader's last, lost as unclean election allows, was)",
			r[0].offset, second.offset)
	}
}

// drill1 is the cluster of the seed's crisis drill 1: five brokers, the
// first three the metadata voters, and a topic of one partition on
// brokers 1, 4 and 5, led by 1. The followers are not voters, so stopping
// them leaves the metadata group its quorum.
type drill1 struct {
	servers   []*server
	seeds     []string
	cl        *kgo.Client
	admin     *kadm.Client
	topic     string
	leader    *server
	followers []*server
}

// startDrill1 starts drill 1's cluster with topic created on it, with
// configs.
func startDrill1(ctx context.Context, t *testing.T, topic string, configs map[string]*string) *drill1 {
	t.Helper()
	servers := startClusterOf(t, 5, 3)
	d := &drill1{servers: servers, seeds: kafkaAddresses(servers[:3]), topic: topic,
		leader: servers[0], followers: []*server{servers[3], servers[4]}}
	d.cl = newClientSeeds(t, d.seeds)
	d.admin = kadm.NewClient(d.cl)
	createReplicated(ctx, t, d.cl, topic, configs, 1, 4, 5)
	if leader := leaderOf(ctx, t, d.admin, topic, 0); leader != 1 {
		t.Fatalf("%s is led by %d, want 1, its first replica", topic, leader)
	}
	return d
}

// followerFetchMaxWait is the max wait of a follower's fetch (replica's
// replicaFetchWaitMax).
const followerFetchMaxWait = 500 * time.Millisecond

// pauseFollowers stops both followers past the session timeout, so that
// the leader is alone in the ISR and they fetch nothing it appends next.
//
// A fetch a follower sent just before it stopped waits at the leader for
// up to the fetch's max wait (500 ms) and is answered with whatever the
// leader appends meanwhile, into the stopped follower's socket, to be
// applied when it resumes. The ISR is usually down to the leader only a
// session timeout after the pause, but not on a loaded machine, where a
// follower's session may have lapsed just before it: so the wait here
// lets such fetches be answered first.
func (d *drill1) pauseFollowers(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, f := range d.followers {
		f.pause()
	}
	time.Sleep(2 * followerFetchMaxWait)
	waitPartitions(ctx, t, d.admin, d.topic, "the leader alone in the ISR", func(p kadm.PartitionDetail) bool {
		return slices.Equal(p.ISR, []int32{1})
	})
}

// TestEmptyReplicaStartsAtTheTieredBoundary: a follower of a tiered topic
// loses its whole disk (its partitions directory) and restarts. It does
// not copy the topic's history: the leader answers its fetch at offset 0
// with OFFSET_MOVED_TO_TIERED_STORAGE, and it starts its log at the
// leader's local log start (KIP-405), catches up the hot tail and rejoins
// the ISR. Then the other two replicas die, one after the other, so the
// rebuilt replica leads alone; it serves the whole history, the old part
// from the shared bucket, and the ledger finds nothing lost.
func TestEmptyReplicaStartsAtTheTieredBoundary(t *testing.T) {
	t.Parallel()
	bucket := "file://" + t.TempDir()
	servers := startClusterOf(t, 5, 3, "--bucket", bucket, "--remote.log.manager.task.interval.ms", "200")
	seeds := []string{servers[0].kafka, servers[1].kafka}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "rebuilt"
	// Replicas 4 (leader), 5 and 3: two of them can die and leave the
	// metadata group (voters 1, 2, 3) its quorum.
	createReplicated(ctx, t, cl, topic, map[string]*string{
		"min.insync.replicas":   kadm.StringPtr("2"),
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(strconv.Itoa(256 << 10)),
		"segment.ms":            kadm.StringPtr("2000"),
		"local.retention.bytes": kadm.StringPtr(strconv.Itoa(512 << 10)),
	}, 4, 5, 3)

	led := ledger.New()
	producer := newClientSeeds(t, seeds, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(64<<10)) // batches well under segment.bytes
	var wg sync.WaitGroup
	for i := range int64(4000) {
		wg.Add(1)
		key := make([]byte, 1024)
		rand.Read(key) // incompressible: kgo compresses batches
		producer.Produce(ctx, &kgo.Record{Topic: topic, Key: key, Value: ledger.Value("bulk", i)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				led.Failed(r, err)
				return
			}
			led.Acked(r)
		})
	}
	wg.Wait()
	leader := leaderOf(ctx, t, admin, topic, 0)
	for deadline := time.Now().Add(time.Minute); listOffset(t, cl, topic, -4) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_, status := httpGet(t, "http://"+servers[leader-1].admin+"/v1/tier/status")
			for _, s := range servers {
				m := scrapeMetrics(t, s)
				t.Logf("%s: log end %v, high watermark %v", s.kafka, m.sum("strata_ingest_log_end_offset"), m.sum("strata_ingest_high_watermark"))
			}
			t.Fatalf("the leader's local log start did not move within a minute: nothing was tiered (%s; tier status %s):\n%s",
				led.Summary(nil), status, servers[leader-1].log)
		}
	}
	const rebuiltID = 5 // a follower
	rebuilt := servers[rebuiltID-1]
	rebuilt.kill()
	if err := os.RemoveAll(filepath.Join(rebuilt.dataDir, "partitions")); err != nil {
		t.Fatal(err)
	}
	rebuilt.restart()
	// The ISR other brokers report may still list the killed incarnation
	// (the restart can beat its session timeout), so rejoining is judged
	// by the rebuilt broker's own view: its registration took the old
	// incarnation out of the ISR, and only a rejoin puts it back.
	eventually(t, "the rebuilt replica starting at the leader's local log start", func() bool {
		return strings.Contains(rebuilt.log.String(), "the follower starts at the leader's local log start")
	})
	labels := []string{"topic", topic, "partition", "0"}
	if start := scrapeMetrics(t, rebuilt).value(t, "strata_ingest_log_start_offset", labels...); start == 0 {
		t.Fatal("the rebuilt replica copied the log from offset 0, not from the leader's local log start")
	}
	eventually(t, "the rebuilt replica back in the ISR, as it sees it", func() bool {
		return slices.Contains(isrSeenBy(t, rebuilt, topic), rebuiltID)
	})

	// The rebuilt replica leads once both others are gone.
	for _, s := range []*server{servers[3], servers[2]} {
		s.kill()
		waitPartitions(ctx, t, admin, topic, "led by a live broker", func(p kadm.PartitionDetail) bool {
			return p.Leader >= 0 && servers[p.Leader-1] != s
		})
	}
	if got := leaderOf(ctx, t, admin, topic, 0); got != rebuiltID {
		t.Fatalf("%s-0 is led by %d, want the rebuilt replica %d", topic, got, rebuiltID)
	}
	final, err := ledger.ReadAll(ctx, []string{rebuilt.kafka}, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(led.Summary(final))
	if err := led.Check(final); err != nil {
		t.Fatal(err)
	}
}

// isrSeenBy is partition 0's ISR in broker s's own metadata, asked on a
// connection of its own so that no other broker answers.
func isrSeenBy(t *testing.T, s *server, topic string) []int32 {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	c := dialRaw(t, s)
	defer c.conn.Close()
	resp := c.roundTrip(req, 12).(*kmsg.MetadataResponse)
	for _, mt := range resp.Topics {
		for _, p := range mt.Partitions {
			if p.Partition == 0 && p.ErrorCode == 0 {
				return p.ISR
			}
		}
	}
	return nil
}

// TestSlowFollowerLeavesTheISRAndRejoins is the seed's incident 1: a
// follower whose fetches crawl through a throttling proxy (the leader's
// inter-broker address) falls behind under produce load and leaves the
// ISR after replica.lag.time.max.ms; the under-replicated metric and
// `strata topic list --under-replicated` show it; acks=all produces carry
// on, acknowledged by the ISR that is left (min.insync.replicas 1 here);
// once the proxy stops throttling the follower catches up and rejoins,
// and nothing acknowledged is lost.
func TestSlowFollowerLeavesTheISRAndRejoins(t *testing.T) {
	t.Parallel()
	var proxy *throttleProxy
	servers := startClusterFlags(t, 3, 3, nil, func(i int, s *server) []string {
		if i != 0 {
			return nil
		}
		proxy = newThrottleProxy(t, s.kafka)
		return []string{"--inter-broker-advertise", proxy.addr()}
	}, "--replica.lag.time.max.ms", "2000")
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "incident1"
	// Leader 1, whose followers fetch through the proxy; follower 2 only.
	createReplicated(ctx, t, cl, topic, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")}, 1, 2)

	led, load := startLedgerLoad(t, seeds, topic, 2*time.Millisecond)
	time.Sleep(time.Second)
	proxy.throttle(2 << 10)
	waitPartitions(ctx, t, admin, topic, "the slow follower out of the ISR", func(p kadm.PartitionDetail) bool {
		return slices.Equal(p.ISR, []int32{1})
	})
	eventually(t, "the leader reporting one under-replicated partition", func() bool {
		return scrapeMetrics(t, servers[0]).sum("strata_replica_under_replicated_partitions") == 1
	})
	// Each broker applies the ISR change when it learns of it: poll.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		listed, err := servers[1].strata(ctx, "", "topic", "list", "--under-replicated")
		if err == nil && strings.Contains(listed, topic) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("strata topic list --under-replicated: %q, %v; want %s listed", listed, err, topic)
		}
	}
	if m := scrapeMetrics(t, servers[0]); m.sum("strata_replica_isr_shrinks_total") < 1 || m.sum("strata_replica_follower_lag_bytes") <= 0 {
		t.Fatalf("%v ISR shrinks counted, follower lag %v bytes; want a shrink and a lag", m.sum("strata_replica_isr_shrinks_total"), m.sum("strata_replica_follower_lag_bytes"))
	}

	proxy.throttle(0)
	waitPartitions(ctx, t, admin, topic, "the follower back in the ISR", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 2
	})
	eventually(t, "the leader reporting no under-replicated partition once healed", func() bool {
		return scrapeMetrics(t, servers[0]).sum("strata_replica_under_replicated_partitions") == 0
	})
	checkLedger(ctx, t, led, load, seeds, topic, 500)
}

// TestPartitionedLeaderStopsTakingWrites is the seed's crisis drill 2: the
// leader of a partition is cut off from the other brokers and from the
// metadata group (its network namespace taken off the bridge) while a
// producer beside it, in its namespace, can still reach it. The others
// elect a new leader; the cut-off broker's lease lapses first, so from
// then on it refuses the local producer's writes (NOT_LEADER_OR_FOLLOWER)
// (or, asked for metadata, reports no leader) though it has heard of no
// new leader: no two brokers take writes for one partition; the ledger
// would also report the write had it landed. Healed, it follows the new leader, and the ledger of the
// acks=all producers outside finds nothing lost.
func TestPartitionedLeaderStopsTakingWrites(t *testing.T) {
	t.Parallel()
	lab := newNetLab(t, 3)
	servers := startClusterFlags(t, 3, 3, func(i int, s *server) {
		host := lab.host(i + 1)
		s.kafka, s.admin, s.meta = host+":9092", host+":9644", host+":9093"
		s.wrapper = lab.exec(i + 1)
	}, nil)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	const topic = "drill2"
	createReplicated(ctx, t, cl, topic, nil, 1, 2, 3)

	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	time.Sleep(time.Second)
	lab.cut(1)
	waitPartitions(ctx, t, kadm.NewClient(newClientSeeds(t, seeds[1:])), topic, "a new leader among the others", func(p kadm.PartitionDetail) bool {
		return p.Leader == 2 || p.Leader == 3
	})
	// The producer beside the cut-off broker, in its namespace, writes
	// straight to it: it may not take the write.
	// It gets no acknowledgement: the CLI fails, or is still waiting when
	// its context ends (the ledger's check below would also find the
	// record, had it been written).
	localCtx, localCancel := context.WithTimeout(ctx, 30*time.Second)
	defer localCancel()
	local := exec.CommandContext(localCtx, lab.exec(1)[0], append(lab.exec(1)[1:], strataBinary, "produce", topic,
		"--bootstrap", servers[0].kafka, "--acks", "1", "--partition", "0", "--timeout", "10s")...)
	local.Stdin = strings.NewReader("written to a deposed leader\n")
	out, err := local.CombinedOutput()
	if err == nil {
		t.Fatalf("the cut-off leader acknowledged a write from a producer beside it:\n%s", out)
	}
	t.Logf("the producer beside the cut-off leader got no acknowledgement (%v): %s", err, strings.TrimSpace(string(out)))
	lab.join(1)
	waitPartitions(ctx, t, admin, topic, "the healed broker back in the ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && len(p.ISR) == 3
	})
	checkLedger(ctx, t, led, load, seeds, topic, 200)
}
