package ingest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

// internalTopicCase is a broker with one ordinary topic, "plain", and a
// client connection to it.
func internalTopicCase(t *testing.T) (*Broker, *testClient, meta.Topic) {
	t.Helper()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, name: "plain"}
	return b, connect(t, b), h.topic(2, nil)
}

func metadataFor(c *testClient, version int16, topics ...string) *kmsg.MetadataResponse {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = true
	return c.request(req, version).(*kmsg.MetadataResponse)
}

// checkConsumerOffsets checks the internal topic as Metadata describes it:
// internal, 50 partitions, each led by broker 1 (the only one), no error.
func checkConsumerOffsets(t *testing.T, what string, mt kmsg.MetadataResponseTopic, version int16, wantID uuid.UUID) {
	t.Helper()
	if mt.Topic == nil || *mt.Topic != meta.ConsumerOffsetsTopic || mt.ErrorCode != 0 {
		t.Fatalf("%s: topic %v error %v", what, mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
	}
	if version >= 1 && !mt.IsInternal {
		t.Fatalf("%s: %s is not internal", what, meta.ConsumerOffsetsTopic)
	}
	if version >= 10 && mt.TopicID != wantID {
		t.Fatalf("%s: topic id %s, want %s", what, uuid.UUID(mt.TopicID), wantID)
	}
	if len(mt.Partitions) != consumerOffsetsPartitions {
		t.Fatalf("%s: %d partitions, want %d", what, len(mt.Partitions), consumerOffsetsPartitions)
	}
	for i, p := range mt.Partitions {
		if p.Partition != int32(i) || p.Leader != 1 || p.ErrorCode != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
			t.Fatalf("%s: partition %d: %+v", what, i, p)
		}
	}
}

// TestMetadataListsConsumerOffsetsAsInternal: every all-topics Metadata
// answer, at the oldest and newest version, holds __consumer_offsets as an
// internal topic beside the ordinary ones; asking for it by name (even
// with auto-creation allowed) or by id returns it, creating nothing.
func TestMetadataListsConsumerOffsetsAsInternal(t *testing.T) {
	t.Parallel()
	b, c, _ := internalTopicCase(t)
	id := consumerOffsetsTopicID(b.meta.State().ClusterID())
	for _, version := range []int16{0, 1, 12} {
		// No topics: null (every topic) from v1, an empty list (every topic)
		// at v0.
		all := metadataFor(c, version)
		var names []string
		for _, mt := range all.Topics {
			names = append(names, *mt.Topic)
			if *mt.Topic == meta.ConsumerOffsetsTopic {
				checkConsumerOffsets(t, "all topics", mt, version, id)
			} else if mt.IsInternal {
				t.Fatalf("v%d: %s listed as internal", version, *mt.Topic)
			}
		}
		if strings.Join(names, ",") != "__consumer_offsets,plain" {
			t.Fatalf("v%d all topics: %v", version, names)
		}
		named := metadataFor(c, version, meta.ConsumerOffsetsTopic)
		checkConsumerOffsets(t, "by name", named.Topics[0], version, id)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = id
	req.Topics = append(req.Topics, rt)
	byID := c.request(req, 12).(*kmsg.MetadataResponse)
	checkConsumerOffsets(t, "by id", byID.Topics[0], 12, id)
	if _, ok := b.meta.State().Topic(meta.ConsumerOffsetsTopic); ok {
		t.Fatal("asking for the internal topic created a topic of that name")
	}
}

// TestConsumerOffsetsRefusesWrites: producing to __consumer_offsets is
// INVALID_TOPIC_EXCEPTION with Kafka's message, creating it is
// TOPIC_ALREADY_EXISTS (validate-only too), and deleting it, by name or
// id, is INVALID_TOPIC_EXCEPTION; other "__" names are ordinary topics, as
// in Kafka.
func TestConsumerOffsetsRefusesWrites(t *testing.T) {
	t.Parallel()
	b, c, _ := internalTopicCase(t)
	h := &handlerTest{t: t, broker: b, client: c}
	internal := meta.Topic{Name: meta.ConsumerOffsetsTopic, ID: consumerOffsetsTopicID(b.meta.State().ClusterID())}
	for _, version := range []int16{3, 8, 13} {
		resp := c.request(produceRequest(internal, 0, h.batch(1)), version).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, "produce to the internal topic", p.ErrorCode, kerr.InvalidTopicException)
		if version >= 8 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "Cannot append to internal topic __consumer_offsets")) {
			t.Fatalf("v%d produce message %v", version, p.ErrorMessage)
		}
	}
	for _, validateOnly := range []bool{true, false} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = meta.ConsumerOffsetsTopic, 1, 1
		req.Topics = append(req.Topics, rt)
		resp := c.request(req, 7).(*kmsg.CreateTopicsResponse)
		wantCode(t, "create the internal topic", resp.Topics[0].ErrorCode, kerr.TopicAlreadyExists)
	}
	for _, byID := range []bool{false, true} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		rt := kmsg.NewDeleteTopicsRequestTopic()
		if byID {
			rt.TopicID = internal.ID
		} else {
			rt.Topic = kmsg.StringPtr(meta.ConsumerOffsetsTopic)
		}
		req.Topics = append(req.Topics, rt)
		resp := c.request(req, 6).(*kmsg.DeleteTopicsResponse)
		wantCode(t, "delete the internal topic", resp.Topics[0].ErrorCode, kerr.InvalidTopicException)
	}
	other := &handlerTest{t: t, broker: b, client: c, name: "__mine"}
	other.produce(other.topic(1, nil), 2)
}

// TestConsumerOffsetsReadsAsAnEmptyLog: the departure documented in
// internal_topic.go: Fetch answers no records at offset 0 with high
// watermark and log start 0, OFFSET_OUT_OF_RANGE past it, and
// UNKNOWN_TOPIC_OR_PARTITION past the 50 partitions; ListOffsets answers 0
// for latest and earliest and nothing for a timestamp.
func TestConsumerOffsetsReadsAsAnEmptyLog(t *testing.T) {
	t.Parallel()
	b, c, _ := internalTopicCase(t)
	id := consumerOffsetsTopicID(b.meta.State().ClusterID())
	fetch := func(version int16, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = meta.ConsumerOffsetsTopic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.request(req, version).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	for _, version := range []int16{4, 12, 13, 17} {
		p := fetch(version, 7, 0)
		wantCode(t, "fetch offset 0", p.ErrorCode, nil)
		if p.HighWatermark != 0 || p.LastStableOffset != 0 || (version >= 5 && p.LogStartOffset != 0) || len(p.RecordBatches) != 0 {
			t.Fatalf("v%d fetch of the internal topic: %+v", version, p)
		}
		wantCode(t, "fetch offset 5", fetch(version, 7, 5).ErrorCode, kerr.OffsetOutOfRange)
		wantCode(t, "fetch partition 50", fetch(version, consumerOffsetsPartitions, 0).ErrorCode, kerr.UnknownTopicOrPartition)
	}
	for _, tc := range []struct {
		timestamp int64
		offset    int64
	}{{timestampLatest, 0}, {timestampEarliest, 0}, {timestampMax, -1}, {1000, -1}} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = meta.ConsumerOffsetsTopic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 3, tc.timestamp, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := c.request(req, 10).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		wantCode(t, "list offsets", p.ErrorCode, nil)
		if p.Offset != tc.offset {
			t.Fatalf("list offsets at %d: offset %d, want %d", tc.timestamp, p.Offset, tc.offset)
		}
	}
}

// TestCollidingTopicNamesAreRefused: once "a.b" exists, "a_b" is
// INVALID_TOPIC_EXCEPTION with Kafka's message, validate-only as well,
// and the other way round.
func TestCollidingTopicNamesAreRefused(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	c := connect(t, b)
	create := func(name string, validateOnly bool) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
		return c.request(req, 7).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	wantCode(t, "create a.b", create("a.b", false).ErrorCode, nil)
	wantCode(t, "create x_y", create("x_y", false).ErrorCode, nil)
	for _, tc := range []struct{ name, existing string }{{"a_b", "a.b"}, {"x.y", "x_y"}} {
		for _, validateOnly := range []bool{true, false} {
			got := create(tc.name, validateOnly)
			wantCode(t, "create "+tc.name, got.ErrorCode, kerr.InvalidTopicException)
			want := "Topic '" + tc.name + "' collides with existing topic: " + tc.existing
			if got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, want) {
				t.Fatalf("create %s (validate only %v): message %v, want %q", tc.name, validateOnly, got.ErrorMessage, want)
			}
		}
	}
	wantCode(t, "create a-b", create("a-b", false).ErrorCode, nil)
}

// heldWatches is the metadata seam with the partition manager's watch
// held: while held, applied changes reach State but not the partitions,
// which is the window right after a topic is created and before its
// partitions are open.
type heldWatches struct {
	Metadata
	mu   sync.Mutex
	gate chan struct{} // nil: open; else closed on release
	stop chan struct{}
}

func (h *heldWatches) Watch(opts meta.WatchOptions) *meta.Watch {
	w := h.Metadata.Watch(opts)
	in, out := w.C, make(chan meta.Update)
	w.C = out
	go func() {
		defer close(out)
		for u := range in {
			h.mu.Lock()
			gate := h.gate
			h.mu.Unlock()
			if gate != nil {
				select {
				case <-gate:
				case <-h.stop:
					return
				}
			}
			select {
			case out <- u:
			case <-h.stop:
				return
			}
		}
	}()
	return w
}

func (h *heldWatches) hold() {
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
}

func (h *heldWatches) release() {
	h.mu.Lock()
	close(h.gate)
	h.gate = nil
	h.mu.Unlock()
}

// TestMetadataWaitsForThePartitionToOpen: a topic applied to the metadata
// but not yet open on its leader, this broker, is LEADER_NOT_AVAILABLE
// (where it used to name this broker, which then answered
// NOT_LEADER_OR_FOLLOWER); once open, Metadata names the leader and the
// first produce succeeds.
func TestMetadataWaitsForThePartitionToOpen(t *testing.T) {
	t.Parallel()
	held := &heldWatches{stop: make(chan struct{})}
	b := newTestBrokerWith(t, nil, func(m Metadata) Metadata { held.Metadata = m; return held })
	t.Cleanup(func() { close(held.stop) })
	c := connect(t, b)
	h := &handlerTest{t: t, broker: b, client: c}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	held.hold()
	cmd := &meta.CreateTopic{ID: uuid.New(), Name: "fresh", Replicas: [][]int32{{1}}}
	result, err := b.meta.Propose(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	p := metadataFor(c, 12, "fresh").Topics[0].Partitions[0]
	if p.Leader != -1 || p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("before the partition opened: leader %d, %v; want -1, LEADER_NOT_AVAILABLE", p.Leader, kerr.ErrorForCode(p.ErrorCode))
	}
	topic := meta.Topic{Name: "fresh", ID: cmd.ID}
	resp := c.request(produceRequest(topic, 0, h.batch(1)), 9).(*kmsg.ProduceResponse)
	wantCode(t, "produce before the partition opened", resp.Topics[0].Partitions[0].ErrorCode, kerr.NotLeaderForPartition)

	held.release()
	b.partitions.WaitReconciled(ctx, result.Index)
	p = metadataFor(c, 12, "fresh").Topics[0].Partitions[0]
	if p.Leader != 1 || p.ErrorCode != 0 {
		t.Fatalf("after the partition opened: leader %d, %v", p.Leader, kerr.ErrorForCode(p.ErrorCode))
	}
	h.produce(topic, 1)
}
