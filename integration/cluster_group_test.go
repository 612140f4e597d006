package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupCoordinatorMovesWhenItsBrokerIsKilled runs a consumer group
// over three `strata server` processes. The members bootstrap from broker
// 1 while the group's coordinator is another broker, and the topic's
// partitions (replication factor 1) live on the two brokers that are not
// the coordinator. A member consumes and commits everything; then the
// coordinator's process is killed with SIGKILL. Once it is fenced, broker
// 1 names a survivor as the coordinator, the committed offsets are still
// there (they live in the metadata group, not in the coordinator), a new
// member joins the group at the new coordinator and starts from them (not
// from the start, where the members reset), every record produced before
// and after the kill is consumed, and the commits reach the end offsets.
func TestGroupCoordinatorMovesWhenItsBrokerIsKilled(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3, "--group.initial.rebalance.delay.ms", "0", "--group.min.session.timeout.ms", "500")
	bootstrap := servers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClient(t, bootstrap)

	// A group whose coordinator is not the bootstrap broker; the
	// coordinator is a hash of the name, so some name among a few does.
	var group string
	var coordinator int32
	for i := 0; coordinator == 0 || coordinator == 1; i++ {
		if i == 100 {
			t.Fatalf("broker 1 names itself or nobody as the coordinator of 100 groups (last %d)", coordinator)
		}
		group = fmt.Sprintf("moving-group-%d", i)
		coordinator = findCoordinator(ctx, t, cl, group)
	}
	killed := servers[coordinator-1]
	survivor := int32(2)
	if coordinator == 2 {
		survivor = 3
	}
	t.Logf("group %s: coordinator %d, partitions on brokers 1 and %d", group, coordinator, survivor)

	const topic, partitions = "moving", int32(6)
	createTopicOn(ctx, t, cl, topic, partitions, 1, survivor)
	producer := newClient(t, bootstrap)
	record := func(i int) *kgo.Record {
		return &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "value %d", i)}
	}
	var before []*kgo.Record
	for i := range 300 {
		before = append(before, record(i))
	}
	acked := produceAll(t, producer, topic, before)

	ch := newChanges()
	m1 := newMemberLog("m1", ch)
	startConsumer(t, bootstrap, m1, group, topic)
	ch.waitFor(t, time.Minute, consumedAll(acked, m1))
	waitCommittedAtEnd(t, bootstrap, group, topic)
	admin := kadm.NewClient(cl)
	if c := describeGroup(ctx, t, admin, group).Coordinator.NodeID; c != coordinator {
		t.Fatalf("the group is coordinated by %d, FindCoordinator said %d", c, coordinator)
	}
	committedBefore, err := admin.FetchOffsets(ctx, group)
	if err == nil {
		err = committedBefore.Error()
	}
	if err != nil {
		t.Fatalf("fetching the committed offsets: %v", err)
	}

	killed.kill()
	// The broker is fenced after its session (4 s); until then broker 1
	// still names it. There is no event a client can wait on.
	moved := waitForCoordinator(ctx, t, cl, group, func(id int32) bool { return id != coordinator })
	if moved != 1 && moved != survivor {
		t.Fatalf("the group moved to broker %d, which is not a survivor", moved)
	}
	// A new client, as a lag monitor started now would be: the old one
	// keeps the dead coordinator's address until a request to it fails
	// (the members below keep theirs, and must find the new one).
	admin = kadm.NewClient(newClient(t, bootstrap))
	committedAfter, err := admin.FetchOffsets(ctx, group)
	if err == nil {
		err = committedAfter.Error()
	}
	if err != nil {
		t.Fatalf("fetching the committed offsets from the new coordinator %d: %v", moved, err)
	}
	committedBefore.Each(func(o kadm.OffsetResponse) {
		if after, ok := committedAfter.Lookup(o.Topic, o.Partition); !ok || after.At < o.At {
			t.Errorf("%s-%d: committed %d before the kill, %d (found %v) at the new coordinator", o.Topic, o.Partition, o.At, after.At, ok)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	m2 := newMemberLog("m2", ch)
	startConsumer(t, bootstrap, m2, group, topic)
	ch.waitFor(t, time.Minute, balanced(partitions, m1, m2))
	var after []*kgo.Record
	for i := range 300 {
		after = append(after, record(300+i))
	}
	acked = append(acked, produceAll(t, producer, topic, after)...)
	ch.waitFor(t, time.Minute, consumedAll(acked, m1, m2))
	waitCommittedAtEnd(t, bootstrap, group, topic)

	// m2 started from the committed offsets: nothing below them.
	m2.mu.Lock()
	if len(m2.consumed) == 0 {
		t.Error("m2 consumed nothing")
	}
	for key := range m2.consumed {
		p, offset := int32(key[0]), key[1]
		if c, ok := committedBefore.Lookup(topic, p); !ok || offset < c.At {
			t.Errorf("m2 consumed %s-%d@%d, below the offset %d committed before the kill", topic, p, offset, c.At)
		}
	}
	m2.mu.Unlock()
	described := describeGroup(ctx, t, admin, group)
	if described.Coordinator.NodeID != moved || described.State != "Stable" || len(described.Members) != 2 {
		t.Fatalf("after the move: coordinator %d, state %s, %d members; want %d, Stable, 2",
			described.Coordinator.NodeID, described.State, len(described.Members), moved)
	}
}

// findCoordinator asks the broker cl bootstraps from (broker 1) for the
// coordinator of group, failing the test on an error.
func findCoordinator(ctx context.Context, t *testing.T, cl *kgo.Client, group string) int32 {
	t.Helper()
	id, err := askCoordinator(ctx, cl, group)
	if err != nil {
		t.Fatalf("FindCoordinator %s: %v", group, err)
	}
	return id
}

// askCoordinator sends FindCoordinator for group to broker 1 itself, not
// through the client's coordinator cache.
func askCoordinator(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group            // v0-3
	req.CoordinatorKeys = []string{group} // v4 on
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		return 0, err
	}
	code, message, id := resp.ErrorCode, resp.ErrorMessage, resp.NodeID
	if len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		code, message, id = c.ErrorCode, c.ErrorMessage, c.NodeID
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return 0, fmt.Errorf("%w: %s", err, deref(message))
	}
	return id, nil
}

// waitForCoordinator polls broker 1 until the coordinator it names for
// group passes ok, and returns it.
func waitForCoordinator(ctx context.Context, t *testing.T, cl *kgo.Client, group string, ok func(int32) bool) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		id, err := askCoordinator(ctx, cl, group)
		if err == nil && ok(id) {
			return id
		}
		if ctx.Err() == nil {
			last = fmt.Sprintf("coordinator %d, error %v", id, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the coordinator of %s did not move within a minute: last %s", group, last)
		case <-tick.C:
		}
	}
}

// allLed reports whether every partition has a leader.
func allLed(partitions kadm.PartitionDetails) bool {
	for _, p := range partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}

// createTopicOn creates topic with partitions spread over the brokers in
// turn, one replica each.
func createTopicOn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partitions int32, brokers ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{brokers[int(p)%len(brokers)]}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Topics) == 1 {
		if err = kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			err = fmt.Errorf("%w: %s", err, deref(resp.Topics[0].ErrorMessage))
		}
	}
	if err != nil {
		t.Fatalf("create topic %s on brokers %v: %v", topic, brokers, err)
	}
	// Check the placement through Metadata, as the members will see it,
	// once every leader has opened its partition: until then Metadata
	// answers LEADER_NOT_AVAILABLE (leader -1), and clients retry, as this
	// does.
	var md kadm.Metadata
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if md, err = kadm.NewClient(cl).Metadata(ctx, topic); err != nil {
			t.Fatal(err)
		}
		// A broker that has not applied the new topic yet answers with
		// none of its partitions.
		parts := md.Topics[topic].Partitions
		if (len(parts) == int(partitions) && allLed(parts)) || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range md.Topics[topic].Partitions {
		if want := brokers[int(p.Partition)%len(brokers)]; p.Leader != want {
			t.Fatalf("%s-%d is led by %d, want %d", topic, p.Partition, p.Leader, want)
		}
	}
	if got := len(md.Topics[topic].Partitions); got != int(partitions) {
		t.Fatalf("%s has %d partitions, want %d", topic, got, partitions)
	}
}

// describeGroup describes one group, failing the test on an error.
func describeGroup(ctx context.Context, t *testing.T, admin *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	described, err := admin.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := described[group]
	if !ok || g.Err != nil {
		t.Fatalf("describe %s: %v (found %v)", group, g.Err, ok)
	}
	return g
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestControlledShutdownMovesTheGroupsOfABrokerLeadingNothing: a broker
// that leads no partition still coordinates its share of the groups. Its
// SIGTERM fences it like any other's, so the moment it has exited broker
// 1 names a survivor as the coordinator; before, it skipped the fence and
// was named until the controller fenced it a session later (30 s here),
// while consumers giving up partitions could not commit.
func TestControlledShutdownMovesTheGroupsOfABrokerLeadingNothing(t *testing.T) {
	t.Parallel()
	servers := startClusterFlags(t, 3, 3, nil, func(int, *server) []string {
		return []string{"--broker.session.timeout.ms", "30000"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, servers[0])
	var group string
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("broker 1 names no other broker as the coordinator of 100 groups")
		}
		group = fmt.Sprintf("stopping-group-%d", i)
		if findCoordinator(ctx, t, cl, group) == 3 {
			break
		}
	}
	servers[2].stop() // no topic: broker 3 leads nothing
	// Broker 1 applies the fence once it learns it was committed, within
	// a few metadata heartbeats; without it, broker 3 stays named 30 s.
	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	for findCoordinator(ctx, t, cl, group) == 3 {
		select {
		case <-waitCtx.Done():
			t.Fatalf("broker 1 still names the stopped broker 3 as the coordinator of %s 10 s after it exited", group)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
