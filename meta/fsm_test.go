package meta

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// contentBytes encodes a state without its index, to compare content.
func contentBytes(t testing.TB, st *State) []byte {
	t.Helper()
	c := *st
	c.index = 0
	return snapshotBytes(t, &c)
}

// preconditionBase is a state to test preconditions against: brokers 1-3
// active and 4 fenced, topics "orders" (3 partitions on 1,2,3) and
// "fenced-topic" (1 partition on 1,4), a committed segment on orders-0 at
// offsets 0..99, a committed offset of group "g", dynamic broker configs
// (a cluster default and broker 2's own) and client quotas (the default
// user's, and user alice's client etl's).
func preconditionBase(t testing.TB) (*fsmHarness, CreateTopic) {
	h := newHarness(t)
	orders := topicCmd("orders", 3, 1, 2, 3)
	h.mustApply(InitCluster{ClusterID: "c1"}, brokerCmd(1), brokerCmd(2), brokerCmd(3), brokerCmd(4),
		orders, topicCmd("fenced-topic", 1, 1, 4), FenceBroker{ID: 4, Epoch: 4},
		segmentCopy(orders.ID, 0, 0, 99), CommitSegmentCopy{Topic: "orders", TopicID: orders.ID, SegmentID: segmentID(0)},
		CommitOffsets{Group: "g", CommitTimeMs: 1, Offsets: []OffsetCommit{{Topic: "orders", Partition: 0, Offset: 5, LeaderEpoch: -1}}},
		&AlterBrokerConfigs{Set: map[string]string{FollowerThrottledRate: "1048576"}},
		&AlterBrokerConfigs{Broker: "2", Set: map[string]string{LeaderThrottledRate: "2097152"}},
		&AlterClientQuota{Entity: QuotaEntity{User: &QuotaName{Default: true}}, Set: map[string]float64{ProducerByteRate: 1 << 20}},
		&AlterClientQuota{Entity: QuotaEntity{User: &QuotaName{Name: "alice"}, ClientID: &QuotaName{Name: "etl"}},
			Set: map[string]float64{ConsumerByteRate: 2 << 20, RequestPercentage: 50}},
	)
	return h, orders
}

func segmentID(n int) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte{byte(n), byte(n >> 8)})
}

// segmentCopy is a BeginSegmentCopy of segment n on partition 0 at leader
// epoch 0.
func segmentCopy(topicID uuid.UUID, n int, base, end int64) BeginSegmentCopy {
	return BeginSegmentCopy{
		Topic: "orders", TopicID: topicID, SegmentID: segmentID(n), BaseOffset: base, EndOffset: end,
		MaxTimestamp: 1000, SizeBytes: 4096, LeaderEpochs: []EpochEntry{{Epoch: 0, StartOffset: base}},
		ObjectKey: "orders/0/" + segmentID(n).String() + ".seg",
	}
}

func TestPreconditionsRefuseAndApplyNothing(t *testing.T) {
	t.Parallel()
	_, orders := preconditionBase(t)
	oid := orders.ID
	tooLong := strings.Repeat("x", 250)
	bigMeta := strings.Repeat("m", maxOffsetMetadataBytes+1)
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"duplicate topic", topicCmd("orders", 1, 1), ErrTopicExists},
		{"duplicate topic id", CreateTopic{ID: oid, Name: "other", Replicas: [][]int32{{1}}}, ErrTopicExists},
		{"topic name with space", topicCmd("bad name", 1, 1), ErrInvalidTopicName},
		{"empty topic name", CreateTopic{ID: uuid.New(), Replicas: [][]int32{{1}}}, ErrInvalidTopicName},
		{"topic name dot dot", topicCmd("..", 1, 1), ErrInvalidTopicName},
		{"topic name too long", topicCmd(tooLong, 1, 1), ErrInvalidTopicName},
		{"topic without id", CreateTopic{Name: "noid", Replicas: [][]int32{{1}}}, ErrInvalidCommand},
		{"unknown config", withConfigs(topicCmd("t1", 1, 1), "retention.mss", "1"), ErrInvalidConfig},
		{"config out of range", withConfigs(topicCmd("t1", 1, 1), "retention.ms", "-5"), ErrInvalidConfig},
		{"config not a number", withConfigs(topicCmd("t1", 1, 1), "segment.bytes", "big"), ErrInvalidConfig},
		{"bad enum", withConfigs(topicCmd("t1", 1, 1), "compression.type", "brotli"), ErrInvalidConfig},
		{"local retention above total", withConfigs(topicCmd("t1", 1, 1), "local.retention.ms", "7200000", "retention.ms", "3600000"), ErrInvalidConfig},
		{"no partitions", topicCmd("t1", 0), ErrInvalidPartitions},
		{"unregistered replica", topicCmd("t1", 2, 1, 9), ErrInvalidReplicaAssignment},
		{"repeated replica", topicCmd("t1", 1, 1, 1), ErrInvalidReplicaAssignment},
		{"uneven replication", CreateTopic{ID: uuid.New(), Name: "t1", Replicas: [][]int32{{1, 2}, {1}}}, ErrInvalidReplicaAssignment},
		{"only fenced replicas", topicCmd("t1", 1, 4), ErrInvalidReplicaAssignment},
		{"delete unknown topic", DeleteTopic{Name: "nope"}, ErrUnknownTopic},
		{"delete with wrong id", DeleteTopic{Name: "orders", ID: uuid.New()}, ErrTopicIDMismatch},
		{"alter unknown topic", AlterTopicConfigs{Name: "nope", Set: map[string]string{"retention.ms": "1"}}, ErrUnknownTopic},
		{"alter bad value", AlterTopicConfigs{Name: "orders", Set: map[string]string{"retention.ms": "x"}}, ErrInvalidConfig},
		{"alter delete unknown name", AlterTopicConfigs{Name: "orders", Delete: []string{"nope.ms"}}, ErrInvalidConfig},
		{"alter set and delete", AlterTopicConfigs{Name: "orders", Set: map[string]string{"retention.ms": "1"}, Delete: []string{"retention.ms"}}, ErrInvalidConfig},
		{"stale partition epoch", AlterPartition{Topic: "orders", Partition: 0, PartitionEpoch: 7, Leader: 1, ISR: []int32{1}}, ErrStalePartitionEpoch},
		{"leader outside ISR", AlterPartition{Topic: "orders", Partition: 0, Leader: 3, ISR: []int32{1, 2}}, ErrIneligibleReplica},
		{"ISR member not a replica", AlterPartition{Topic: "orders", Partition: 0, Leader: 1, ISR: []int32{1, 9}}, ErrIneligibleReplica},
		{"fenced ISR member", AlterPartition{Topic: "fenced-topic", Partition: 0, PartitionEpoch: 1, Leader: 1, ISR: []int32{1, 4}}, ErrIneligibleReplica},
		{"empty ISR", AlterPartition{Topic: "orders", Partition: 0, Leader: NoLeader}, ErrIneligibleReplica},
		{"unknown partition", AlterPartition{Topic: "orders", Partition: 3, Leader: 1, ISR: []int32{1}}, ErrUnknownPartition},
		{"fence unknown broker", FenceBroker{ID: 9, Epoch: 1}, ErrUnknownBroker},
		{"fence stale epoch", FenceBroker{ID: 1, Epoch: 2}, ErrStaleBrokerEpoch},
		{"broker without listeners", RegisterBroker{ID: 5}, ErrInvalidCommand},
		{"broker with bad protocol", RegisterBroker{ID: 5, Listeners: []Listener{{Name: "X", Host: "h", Port: 1, SecurityProtocol: "TLS"}}}, ErrInvalidCommand},
		{"broker with negative id", RegisterBroker{ID: -1, Listeners: brokerCmd(1).Listeners}, ErrInvalidCommand},
		{"second cluster id", InitCluster{ClusterID: "c2"}, ErrClusterIDExists},
		{"offset on unknown topic", commit("g", "nope", 0, 1), ErrUnknownTopic},
		{"offset on unknown partition", commit("g", "orders", 7, 1), ErrUnknownPartition},
		{"negative offset", commit("g", "orders", 0, -1), ErrInvalidCommand},
		{"metadata too large", CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "orders", Offset: 1, Metadata: bigMeta}}}, ErrOffsetMetadataTooLarge},
		{"offset committed twice", CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "orders", Offset: 1}, {Topic: "orders", Offset: 2}}}, ErrInvalidCommand},
		{"good offset beside a bad one", CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "orders", Partition: 1, Offset: 1}, {Topic: "nope", Offset: 2}}}, ErrUnknownTopic},
		{"empty group", commit("", "orders", 0, 1), ErrInvalidCommand},
		{"delete offsets of unknown group", DeleteOffsets{Group: "nope"}, ErrUnknownGroup},
		{"segment at a stale leader epoch", func() Command { c := segmentCopy(oid, 1, 100, 199); c.LeaderEpoch = 3; return c }(), ErrFencedLeaderEpoch},
		{"segment with the wrong topic id", segmentCopy(uuid.New(), 1, 100, 199), ErrTopicIDMismatch},
		{"segment without topic id", segmentCopy(uuid.Nil, 1, 100, 199), ErrInvalidCommand},
		{"segment overlapping a committed one", segmentCopy(oid, 1, 50, 150), ErrSegmentOverlap},
		{"segment id reused", segmentCopy(oid, 0, 100, 199), ErrSegmentExists},
		{"segment ending before it starts", segmentCopy(oid, 1, 200, 199), ErrInvalidSegment},
		{"segment epochs not at base", func() Command { c := segmentCopy(oid, 1, 100, 199); c.LeaderEpochs[0].StartOffset = 90; return c }(), ErrInvalidSegment},
		{"segment epochs not growing", func() Command {
			c := segmentCopy(oid, 1, 100, 199)
			c.LeaderEpochs = []EpochEntry{{Epoch: 1, StartOffset: 100}, {Epoch: 1, StartOffset: 150}}
			return c
		}(), ErrInvalidSegment},
		{"commit unknown segment", CommitSegmentCopy{Topic: "orders", TopicID: oid, SegmentID: segmentID(9)}, ErrUnknownSegment},
		{"finish delete of a committed segment", FinishSegmentDelete{Topic: "orders", TopicID: oid, SegmentID: segmentID(0)}, ErrSegmentState},
		{"reassign to an unknown broker", &ReassignPartition{Topic: "orders", Replicas: []int32{1, 9}}, ErrInvalidReplicaAssignment},
		{"reassign to a fenced broker", &ReassignPartition{Topic: "orders", Replicas: []int32{1, 4}}, ErrInvalidReplicaAssignment},
		{"reassign to a broker twice", &ReassignPartition{Topic: "orders", Replicas: []int32{1, 1}}, ErrInvalidReplicaAssignment},
		{"reassign to no replicas", &ReassignPartition{Topic: "orders", Replicas: []int32{}}, ErrInvalidReplicaAssignment},
		{"reassign an unknown partition", &ReassignPartition{Topic: "orders", Partition: 5, Replicas: []int32{1}}, ErrUnknownPartition},
		{"reassign an unknown topic", &ReassignPartition{Topic: "nope", Replicas: []int32{1}}, ErrUnknownTopic},
		{"cancel with no reassignment", &ReassignPartition{Topic: "orders"}, ErrNoReassignment},
		{"unknown broker config", &AlterBrokerConfigs{Set: map[string]string{"log.retention.ms": "1"}}, ErrInvalidConfig},
		{"broker config out of range", &AlterBrokerConfigs{Broker: "1", Set: map[string]string{LeaderThrottledRate: "0"}}, ErrInvalidConfig},
		{"broker resource that is no id", &AlterBrokerConfigs{Broker: "01", Set: map[string]string{LeaderThrottledRate: "5"}}, ErrInvalidConfig},
		{"unregister a live broker", &UnregisterBroker{ID: 1}, ErrBrokerAlive},
		{"unregister an unknown broker", &UnregisterBroker{ID: 9}, ErrUnknownBroker},
		{"unknown quota key", &AlterClientQuota{Entity: QuotaEntity{ClientID: &QuotaName{Name: "c"}}, Set: map[string]float64{"connection_creation_rate": 5}}, ErrInvalidConfig},
		{"fractional byte rate", &AlterClientQuota{Entity: QuotaEntity{ClientID: &QuotaName{Name: "c"}}, Set: map[string]float64{ProducerByteRate: 1.5}}, ErrInvalidConfig},
		{"zero request share", &AlterClientQuota{Entity: QuotaEntity{ClientID: &QuotaName{Name: "c"}}, Set: map[string]float64{RequestPercentage: 0}}, ErrInvalidConfig},
		{"quota for nobody", &AlterClientQuota{Set: map[string]float64{ProducerByteRate: 5}}, ErrInvalidConfig},
		{"named default", &AlterClientQuota{Entity: QuotaEntity{User: &QuotaName{Name: "x", Default: true}}, Set: map[string]float64{ProducerByteRate: 5}}, ErrInvalidConfig},
		{"broker config set and deleted", &AlterBrokerConfigs{Set: map[string]string{LeaderThrottledRate: "5"}, Delete: []string{LeaderThrottledRate}}, ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := preconditionBase(t)
			before := contentBytes(t, h.f.current())
			err := h.apply(tc.cmd)[0]
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "meta: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if after := contentBytes(t, h.f.current()); !bytes.Equal(before, after) {
				t.Fatal("a refused command changed the state")
			}
			if h.f.err() != nil {
				t.Fatalf("a precondition error stopped the state machine: %v", h.f.err())
			}
		})
	}
}

func withConfigs(c CreateTopic, kv ...string) CreateTopic {
	c.Configs = map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		c.Configs[kv[i]] = kv[i+1]
	}
	return c
}

func commit(group, topic string, partition int32, offset int64) CommitOffsets {
	return CommitOffsets{Group: group, CommitTimeMs: 1, Offsets: []OffsetCommit{{Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: -1}}}
}

func TestBatchResultsAreIndependent(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	errs := h.apply(topicCmd("a", 1, 1), topicCmd("orders", 1, 1), topicCmd("b", 2, 1, 2))
	if errs[0] != nil || !errors.Is(errs[1], ErrTopicExists) || errs[2] != nil {
		t.Fatalf("results %v", errs)
	}
	st := h.f.current()
	for _, name := range []string{"a", "b"} {
		if _, ok := st.Topic(name); !ok {
			t.Errorf("topic %q missing", name)
		}
	}
	if got := len(st.Partitions("b")); got != 2 {
		t.Errorf("b has %d partitions", got)
	}
}

func TestCreateTopicCanonicalConfigs(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	h.mustApply(withConfigs(topicCmd("c", 1, 1), "cleanup.policy", " delete, compact ", "preallocate", "TRUE", "retention.ms", "+60000"))
	topic, _ := h.f.current().Topic("c")
	want := map[string]string{"cleanup.policy": "delete,compact", "preallocate": "true", "retention.ms": "60000"}
	for k, v := range want {
		if topic.Configs[k] != v {
			t.Errorf("%s = %q, want %q", k, topic.Configs[k], v)
		}
	}
	if v, _ := topic.Config("segment.bytes"); v != "134217728" {
		t.Errorf("default segment.bytes %q", v)
	}
	h.mustApply(AlterTopicConfigs{Name: "c", Set: map[string]string{"segment.ms": "1000"}, Delete: []string{"preallocate"}})
	topic, _ = h.f.current().Topic("c")
	if _, ok := topic.Configs["preallocate"]; ok || topic.Configs["segment.ms"] != "1000" || topic.Configs["retention.ms"] != "60000" {
		t.Fatalf("after alter: %v", topic.Configs)
	}
}

func TestFencingMovesLeadershipAndRegistrationUnfences(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), topicCmd("t", 1, 1, 2))
	part := func() Partition { p, _ := h.f.current().Partition("t", 0); return p }
	if p := part(); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("initial %+v", p)
	}
	h.mustApply(FenceBroker{ID: 1, Epoch: 1})
	if p := part(); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("after fencing the leader: %+v", p)
	}
	h.mustApply(FenceBroker{ID: 1, Epoch: 1}) // fencing twice does nothing
	if p := part(); p.PartitionEpoch != 1 {
		t.Fatalf("second fence changed the partition: %+v", p)
	}
	h.mustApply(FenceBroker{ID: 2, Epoch: 2})
	if p := part(); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 2 {
		t.Fatalf("after fencing the last ISR member: %+v", p)
	}
	if errs := h.apply(brokerCmd(2)); errs[0] != nil {
		t.Fatal(errs[0])
	}
	b, _ := h.f.current().Broker(2)
	if b.Fenced || b.Epoch != 3 {
		t.Fatalf("re-registered broker %+v", b)
	}
	if p := part(); p.Leader != 2 || p.LeaderEpoch != 3 {
		t.Fatalf("a re-registered ISR member did not take the leaderless partition: %+v", p)
	}
	// A new incarnation of a live leader never keeps the old leader epoch.
	h.mustApply(brokerCmd(2))
	if p := part(); p.Leader != 2 || p.LeaderEpoch != 5 {
		t.Fatalf("after re-registering the live leader: %+v", p)
	}
}

func TestDeleteTopicRemovesEverything(t *testing.T) {
	t.Parallel()
	h, orders := preconditionBase(t)
	h.mustApply(commit("g2", "fenced-topic", 0, 3), DeleteTopic{Name: "orders", ID: orders.ID})
	st := h.f.current()
	if _, ok := st.Topic("orders"); ok {
		t.Fatal("topic still there")
	}
	if _, ok := st.TopicByID(orders.ID); ok {
		t.Fatal("topic id still indexed")
	}
	if len(st.Partitions("orders")) != 0 {
		t.Fatal("partitions still there")
	}
	if _, ok := st.Manifest("orders", 0); ok {
		t.Fatal("manifest still there")
	}
	if got := st.GroupOffsets("g"); len(got) != 0 {
		t.Fatalf("offsets still there: %v", got)
	}
	if got := st.Groups(); !slices.Equal(got, []string{"g2"}) {
		t.Fatalf("groups %v", got)
	}
	// The name can be used again, under a new id.
	h.mustApply(CreateTopic{ID: uuid.New(), Name: "orders", Replicas: [][]int32{{1}}})
}

func TestUnknownCommandStopsTheStateMachine(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	before := h.f.current()
	unknown := []byte{200, 1, 0, '{', '}'}
	resp := h.applyRaw(entry(t, topicCmd("x", 1, 1)), encodeBatch([][]byte{mustEncode(t, topicCmd("y", 1, 1)), unknown}))
	if _, ok := resp[0].(applyResult); !ok {
		t.Fatalf("first entry: %v", resp[0])
	}
	err, _ := resp[1].(error)
	if !errors.Is(err, ErrUnknownCommand) || !errors.Is(h.f.err(), ErrUnknownCommand) {
		t.Fatalf("response %v, fatal %v", resp[1], h.f.err())
	}
	if !strings.Contains(err.Error(), "log index") {
		t.Errorf("error %q does not say where", err)
	}
	st := h.f.current()
	if _, ok := st.Topic("x"); !ok {
		t.Fatal("the entry before the unknown one was not applied")
	}
	if _, ok := st.Topic("y"); ok {
		t.Fatal("a command in the same entry as the unknown one was applied")
	}
	if st.Index() != before.Index()+1 {
		t.Fatalf("index %d, want %d", st.Index(), before.Index()+1)
	}
	select {
	case <-h.f.fatalCh:
	default:
		t.Fatal("fatalCh not closed")
	}
	// Nothing more is applied, and no snapshot is taken.
	if resp := h.applyRaw(entry(t, topicCmd("z", 1, 1))); !errors.Is(resp[0].(error), ErrUnknownCommand) {
		t.Fatalf("later entry answered %v", resp[0])
	}
	if _, ok := h.f.current().Topic("z"); ok {
		t.Fatal("applied after a fatal error")
	}
	if _, err := h.f.Snapshot(); err == nil {
		t.Fatal("snapshot after a fatal error")
	}
}

func mustEncode(t testing.TB, c Command) []byte {
	t.Helper()
	data, err := encodeCommand(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestOptionalUnknownCommandIsSkipped(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	before := contentBytes(t, h.f.current())
	optional := []byte{200, 3, flagOptional, 'x'}
	if resp := h.applyRaw(optional); resp[0] != (applyResult{}) {
		t.Fatalf("response %v", resp[0])
	}
	if h.f.err() != nil {
		t.Fatal(h.f.err())
	}
	if !bytes.Equal(before, contentBytes(t, h.f.current())) {
		t.Fatal("an ignored command changed the state")
	}
	resp := h.applyRaw(encodeBatch([][]byte{optional, mustEncode(t, topicCmd("x", 1, 1))}))
	results := resp[0].([]applyResult)
	if results[0] != (applyResult{}) || results[1].err != nil {
		t.Fatalf("results %v", results)
	}
	if _, ok := h.f.current().Topic("x"); !ok {
		t.Fatal("the command beside the optional one was not applied")
	}
}

func TestUndecodableEntriesStopTheStateMachine(t *testing.T) {
	t.Parallel()
	cases := map[string][]byte{
		"short":                 {5},
		"zero type":             {0, 1, 0},
		"bad json":              {byte(cmdCreateTopic), 1, 0, '{'},
		"unknown field":         append([]byte{byte(cmdCreateTopic), 1, 0}, `{"nme":"x"}`...),
		"newer version":         append([]byte{byte(cmdCreateTopic), 2, 0}, `{}`...),
		"reserved flag":         append([]byte{byte(cmdCreateTopic), 1, 4}, `{}`...),
		"truncated batch":       {byte(cmdBatch), 1, 0, 2, 10, byte(cmdInitCluster)},
		"nested batch":          {byte(cmdBatch), 1, 0, 1, 5, byte(cmdBatch), 1, 0, 1, 0},
		"empty batch":           {byte(cmdBatch), 1, 0, 0},
		"bytes after the batch": {byte(cmdBatch), 1, 0, 1, 3, byte(cmdInitCluster), 1, 0, 9},
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.applyRaw(data)
			err := h.f.err()
			if !errors.Is(err, ErrInvalidCommand) && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("fatal error %v", err)
			}
		})
	}
}

func TestRestoreReplacesStateAndPublishes(t *testing.T) {
	t.Parallel()
	src, _ := preconditionBase(t)
	want := snapshotBytes(t, src.f.current())
	dst := newHarness(t)
	dst.mustApply(brokerCmd(7))
	var published []Change
	dst.f.publish = func(_ *State, changes []Change) { published = changes }
	if err := dst.f.Restore(readCloser(want)); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, dst.f.current()); !bytes.Equal(got, want) {
		t.Fatal("restored state differs")
	}
	if len(published) != 1 || published[0].Kind != ChangeSnapshot {
		t.Fatalf("published %v", published)
	}
}
