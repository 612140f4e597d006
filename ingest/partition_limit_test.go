package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/replica"
)

func TestDescriptorBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, setting int
		want           int    // max.broker.partitions in force
		wantErr        string // Validate's refusal
	}{
		// 1024: 128 reserved, 256 sockets, 128 segment cache, 512 for
		// partitions at two descriptors each.
		{limit: 1024, want: 256},
		{limit: 1024, setting: 256, want: 256},
		{limit: 1024, setting: 10, want: 10},
		{limit: 1024, setting: 257, wantErr: "max.broker.partitions 257: the descriptor limit 1024 holds at most 256 partitions"},
		// A typical hard limit: the default stops at the supported 4,000,
		// and an operator may go past it.
		{limit: 1 << 20, want: 4000},
		{limit: 1 << 20, setting: 100000, want: 100000},
		{limit: 20000, want: 4000},
		{limit: 4096, want: (4096 - 128 - 1024 - 512) / 2},
		{limit: 100, wantErr: "descriptor limit 100 is too low to run a broker: want at least 256"},
		{limit: 255, wantErr: "want at least 256"},
		{limit: minDescriptorLimit, want: 16},
	} {
		cfg := DefaultConfig()
		cfg.DescriptorLimit, cfg.MaxBrokerPartitions = c.limit, int32(c.setting)
		err := cfg.Validate()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("limit %d, setting %d: Validate = %v, want %q", c.limit, c.setting, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("limit %d, setting %d: %v", c.limit, c.setting, err)
			continue
		}
		d, err := cfg.descriptorBudget()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.maxBrokerPartitions(d); got != c.want {
			t.Errorf("limit %d, setting %d: max.broker.partitions %d, want %d", c.limit, c.setting, got, c.want)
		}
		if used := d.reserved + d.sockets + d.segmentFiles + d.partitions*descriptorsPerPartition; used > c.limit {
			t.Errorf("limit %d: the budget shares out %d descriptors", c.limit, used)
		}
	}
}

// createTopicsRequest builds a CreateTopics request for one topic.
func createTopicsRequest(name string, partitions int32, factor int16, validateOnly bool, assignment ...[]int32) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, factor
	for i, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// createPartitionsRequest builds a CreatePartitions request for one topic.
func createPartitionsRequest(name string, count int32, validateOnly bool, assignment ...[]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = name, count
	for _, replicas := range assignment {
		rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func wantMessage(t *testing.T, what string, message *string, want string) {
	t.Helper()
	if message == nil || !strings.Contains(*message, want) {
		t.Fatalf("%s: message %v, want one containing %q", what, message, want)
	}
}

// TestReplicationFactorAboveTheBrokersRefused: on a single broker, a topic
// or new partition with more replicas than live brokers is
// INVALID_REPLICATION_FACTOR, and an assignment naming a broker that is
// not registered is INVALID_REPLICA_ASSIGNMENT, validate-only or not, as
// Kafka answers; nothing is created.
func TestReplicationFactorAboveTheBrokersRefused(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	c := connect(t, b)
	self := b.config.BrokerID
	for _, validateOnly := range []bool{false, true} {
		for what, factor := range map[string]int16{"factor 3": 3, "factor 2": 2} {
			r := c.request(createTopicsRequest("rf", 1, factor, validateOnly), 7).(*kmsg.CreateTopicsResponse).Topics[0]
			wantCode(t, what, r.ErrorCode, kerr.InvalidReplicationFactor)
			wantMessage(t, what, r.ErrorMessage, "with 1 live brokers")
		}
		r := c.request(createTopicsRequest("assigned", -1, -1, validateOnly, []int32{self}, []int32{self, self + 1}), 7).(*kmsg.CreateTopicsResponse).Topics[0]
		wantCode(t, "an unregistered replica", r.ErrorCode, kerr.InvalidReplicaAssignment)
	}
	r := c.request(createTopicsRequest("rf1", 2, 1, false), 7).(*kmsg.CreateTopicsResponse).Topics[0]
	wantCode(t, "factor 1", r.ErrorCode, nil)

	for _, validateOnly := range []bool{false, true} {
		p := c.request(createPartitionsRequest("rf1", 3, validateOnly, []int32{self, self + 1}), 3).(*kmsg.CreatePartitionsResponse).Topics[0]
		wantCode(t, "a new partition on an unregistered replica", p.ErrorCode, kerr.InvalidReplicaAssignment)
	}
	st := b.meta.State()
	if got, _ := st.Topic("rf1"); got.Partitions != 2 {
		t.Fatalf("rf1 has %d partitions after refused increases, want 2", got.Partitions)
	}
	for _, name := range []string{"rf", "assigned"} {
		if _, ok := st.Topic(name); ok {
			t.Fatalf("refused topic %q exists", name)
		}
	}
}

func TestMaxBrokerPartitionsRefusesCreates(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *Config) { c.MaxBrokerPartitions, c.AutoCreateTopics = 4, true })
	c := connect(t, b)
	create := func(name string, partitions int32, validateOnly bool) kmsg.CreateTopicsResponseTopic {
		return c.request(createTopicsRequest(name, partitions, -1, validateOnly), 7).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	grow := func(name string, count int32, validateOnly bool) kmsg.CreatePartitionsResponseTopic {
		return c.request(createPartitionsRequest(name, count, validateOnly), 3).(*kmsg.CreatePartitionsResponse).Topics[0]
	}
	const limitMessage = "past max.broker.partitions 4"

	wantCode(t, "3 of 4", create("first", 3, false).ErrorCode, nil)
	for _, validateOnly := range []bool{true, false} {
		r := create("second", 2, validateOnly)
		wantCode(t, "2 more", r.ErrorCode, kerr.PolicyViolation)
		wantMessage(t, "2 more", r.ErrorMessage, limitMessage)
		p := grow("first", 5, validateOnly)
		wantCode(t, "growing to 5", p.ErrorCode, kerr.PolicyViolation)
		wantMessage(t, "growing to 5", p.ErrorMessage, limitMessage)
	}
	wantCode(t, "1 more, validate only", create("second", 1, true).ErrorCode, nil)
	wantCode(t, "growing to 4", grow("first", 4, false).ErrorCode, nil)
	r := create("third", 1, false)
	wantCode(t, "a fifth partition", r.ErrorCode, kerr.PolicyViolation)
	wantMessage(t, "a fifth partition", r.ErrorMessage, "would give broker 1 5 partitions")

	// Auto-creation counts too.
	if _, err := b.autoCreate(context.Background(), "auto"); err == nil || errorCode(err) != kerr.PolicyViolation.Code {
		t.Fatalf("auto-creating past the limit: %v, want POLICY_VIOLATION", err)
	}

	st := b.meta.State()
	if first, _ := st.Topic("first"); first.Partitions != 4 {
		t.Fatalf("first has %d partitions, want 4", first.Partitions)
	}
	for _, name := range []string{"second", "third", "auto"} {
		if _, ok := st.Topic(name); ok {
			t.Fatalf("refused topic %q exists", name)
		}
	}
}

// waitPartitionsReady waits until every partition b leads is open, or
// fails the test when ctx ends first. It wakes on each reconcile, the only
// event that can change the answer.
func waitPartitionsReady(ctx context.Context, t *testing.T, b *Broker) {
	t.Helper()
	for {
		reconciled := b.partitions.Reconciled()
		if b.PartitionsReady() == nil {
			return
		}
		select {
		case <-reconciled:
		case <-ctx.Done():
			t.Fatalf("partitions still offline: %v", b.PartitionsReady())
		}
	}
}

func TestPartitionThatFailsToOpenIsRetried(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	c := connect(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	healthy, _, err := b.createTopic(ctx, topicSpec{name: "healthy", partitions: 1, replicationFactor: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	// A file where the partition's directory should be: opening fails
	// until it is gone.
	blocker := filepath.Join(b.config.DataDir, replica.DirName("blocked", 0))
	if err := os.WriteFile(blocker, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocked, _, err := b.createTopic(ctx, topicSpec{name: "blocked", partitions: 1, replicationFactor: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	notReady := b.PartitionsReady()
	if notReady == nil || !strings.Contains(notReady.Error(), "blocked-0") {
		t.Fatalf("PartitionsReady = %v, want blocked-0 named", notReady)
	}
	batch := func() []byte { return (&handlerTest{t: t}).batch(1) }
	p := c.request(produceRequest(blocked, 0, batch()), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	wantCode(t, "produce to the offline partition", p.ErrorCode, kerr.KafkaStorageError)
	wantMessage(t, "produce to the offline partition", p.ErrorMessage, "blocked-0")
	p = c.request(produceRequest(healthy, 0, batch()), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	wantCode(t, "produce to another topic", p.ErrorCode, nil)

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	waitPartitionsReady(ctx, t, b)
	p = c.request(produceRequest(blocked, 0, batch()), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	wantCode(t, "produce once it opened", p.ErrorCode, nil)

	// Deleting a topic whose partition is offline forgets it.
	if err := os.WriteFile(filepath.Join(b.config.DataDir, replica.DirName("doomed", 0)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.createTopic(ctx, topicSpec{name: "doomed", partitions: 1, replicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	if b.PartitionsReady() == nil {
		t.Fatal("doomed-0 opened over a file")
	}
	doomed, _ := b.meta.State().Topic("doomed")
	result, err := b.meta.Propose(ctx, &meta.DeleteTopic{Name: "doomed", ID: doomed.ID})
	if err != nil {
		t.Fatal(err)
	}
	b.partitions.WaitReconciled(ctx, result.Index)
	if err := b.PartitionsReady(); err != nil {
		t.Fatalf("after deleting the topic: %v", err)
	}
}

// TestDefaultReplicationFactorIsHonoured: default.replication.factor gives
// the factor of topics created without one, here more than the one broker
// can hold, so the create is refused for it.
func TestDefaultReplicationFactorIsHonoured(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *Config) { c.DefaultReplicationFactor = 2 })
	c := connect(t, b)
	r := c.request(createTopicsRequest("defaulted", 1, -1, false), 7).(*kmsg.CreateTopicsResponse).Topics[0]
	wantCode(t, "a default of 2 on one broker", r.ErrorCode, kerr.InvalidReplicationFactor)
	wantMessage(t, "a default of 2 on one broker", r.ErrorMessage, "2 replicas with 1 live brokers")
}
