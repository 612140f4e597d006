package integration

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestKill9KeepsAcknowledgedRecords produces with acks=all, kills the server
// with SIGKILL while another producer is still writing, restarts it on the
// same data, and checks that every acknowledged record is there, byte for
// byte, and that the topic still takes writes.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "durable", 3, nil)
	producer := newClient(t, s, kgo.ProducerLinger(time.Millisecond))
	rng := rand.New(rand.NewPCG(5, 6))
	acked := produceAll(t, producer, "durable", randomRecords(rng, 1500))

	// A second producer keeps writing while the server dies: what it had
	// acknowledged must survive too; what it had not may or may not.
	busy := newClient(t, s, kgo.RecordRetries(0), kgo.RequestRetries(0))
	inflight := make(chan kgo.ProduceResults, 1)
	go func() { inflight <- produce(busy, "durable", randomRecords(rng, 1000)) }()
	s.kill()
	for _, r := range <-inflight {
		if r.Err == nil {
			acked = append(acked, testRecord{partition: r.Record.Partition, offset: r.Record.Offset, key: r.Record.Key, value: r.Record.Value, headers: r.Record.Headers})
		}
	}
	s.restart()

	consumed := consumeAllUpTo(t, s, "durable")
	byPosition := map[[2]int64]testRecord{}
	for _, r := range consumed {
		byPosition[[2]int64{int64(r.partition), r.offset}] = r
	}
	var survived []testRecord
	for _, r := range acked {
		got, ok := byPosition[[2]int64{int64(r.partition), r.offset}]
		if !ok {
			t.Fatalf("acknowledged record at partition %d offset %d is gone after kill -9", r.partition, r.offset)
		}
		survived = append(survived, got)
	}
	checkSameRecords(t, acked, survived)

	after := produceAll(t, newClient(t, s), "durable", randomRecords(rng, 10))
	for _, r := range after {
		if r.offset < 0 {
			t.Fatalf("produce after restart got offset %d", r.offset)
		}
	}
}

// consumeAllUpTo reads every record of topic below the high watermarks it
// has when called.
func consumeAllUpTo(t testing.TB, s *server, topic string) []testRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, s)
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	md, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, p := range md.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p.Partition, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	ends, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range ends.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("list offsets partition %d: %v", p.Partition, err)
		}
		total += int(p.Offset)
	}
	return consumeAll(t, s, topic, total)
}

// TestIdempotentStateSurvivesRestart writes an idempotent batch, kills the
// server, restarts it, and retries the same batch: the broker must answer
// with the original offset (the producer state was rebuilt from the log),
// not append it again, and must refuse a sequence gap.
func TestIdempotentStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "idempotent", 1, nil)
	cl := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pid, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || pid.ErrorCode != 0 {
		t.Fatalf("init producer id: %v (code %d)", err, pid.ErrorCode)
	}
	batch := func(sequence int32) []byte {
		b, err := record.Build(record.BuildOptions{
			FirstTimestamp: time.Now().UnixMilli(), ProducerID: pid.ProducerID, ProducerEpoch: pid.ProducerEpoch, BaseSequence: sequence,
		}, []record.Record{{Value: []byte("one")}, {Value: []byte("two")}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mdReq := kmsg.NewPtrMetadataRequest()
	mdTopic := kmsg.NewMetadataRequestTopic()
	mdTopic.Topic = kmsg.StringPtr("idempotent")
	mdReq.Topics = append(mdReq.Topics, mdTopic)
	md, err := mdReq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[0].TopicID
	produceRaw := func(records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "idempotent", topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}

	if first := produceRaw(batch(0)); first.ErrorCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("first batch: code %d offset %d", first.ErrorCode, first.BaseOffset)
	}
	if second := produceRaw(batch(2)); second.ErrorCode != 0 || second.BaseOffset != 2 {
		t.Fatalf("second batch: code %d offset %d", second.ErrorCode, second.BaseOffset)
	}
	s.kill()
	s.restart()
	cl = newClient(t, s)

	if retry := produceRaw(batch(2)); retry.ErrorCode != 0 || retry.BaseOffset != 2 {
		t.Fatalf("retried batch after restart: code %d offset %d, want 0 and the original offset 2", retry.ErrorCode, retry.BaseOffset)
	}
	if gap := produceRaw(batch(7)); gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap after restart: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", gap.ErrorCode)
	}
	if next := produceRaw(batch(4)); next.ErrorCode != 0 || next.BaseOffset != 4 {
		t.Fatalf("next batch: code %d offset %d, want offset 4", next.ErrorCode, next.BaseOffset)
	}
}
