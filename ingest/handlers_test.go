package ingest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/sasl"
)

// handlerTest is what one handler case works with.
type handlerTest struct {
	t      *testing.T
	broker *Broker
	client *testClient
	// name is unique to the case and version, for the topics it creates.
	name string
}

// topic creates a topic named after the case.
func (h *handlerTest) topic(partitions int32, configs map[string]string) meta.Topic {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic, _, err := h.broker.createTopic(ctx, topicSpec{name: h.name, partitions: partitions, replicationFactor: 1, configs: configs}, false)
	if err != nil {
		h.t.Fatal(err)
	}
	return topic
}

// batch builds a valid batch of n records.
func (h *handlerTest) batch(n int) []byte {
	h.t.Helper()
	var records []record.Record
	for i := range n {
		records = append(records, record.Record{Key: []byte{byte(i)}, Value: []byte(fmt.Sprintf("value %d", i))})
	}
	b, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// listOffset asks ListOffsets, at version, for partition 0 of topic at
// timestamp.
func (h *handlerTest) listOffset(topic meta.Topic, timestamp int64, version int16) kmsg.ListOffsetsResponseTopicPartition {
	h.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic.Name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return h.client.request(req, version).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// produce writes a batch of n records to partition 0 of topic with Produce
// v9 and returns its bytes as stored (base offset stamped).
func (h *handlerTest) produce(topic meta.Topic, n int) []byte {
	h.t.Helper()
	batch := h.batch(n)
	resp := h.client.request(produceRequest(topic, 0, append([]byte(nil), batch...)), 9).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		h.t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	record.SetBaseOffset(batch, p.BaseOffset)
	return batch
}

func produceRequest(topic meta.Topic, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topic.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchRequest reads partition 0 of topic from offset, at most maxBytes,
// without waiting and outside a fetch session.
func fetchRequest(topic meta.Topic, offset int64, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = maxBytes, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topic.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// handlerCases holds, for every API key in the dispatch table, a check run
// at the lowest and the highest version the broker advertises.
var handlerCases = map[int16]func(h *handlerTest, version int16){
	0: func(h *handlerTest, version int16) { // Produce
		topic := h.topic(1, map[string]string{"max.message.bytes": "2048"})
		resp := h.client.request(produceRequest(topic, 0, h.batch(3)), version).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(h.t, "produce", p.ErrorCode, nil)
		if p.BaseOffset != 0 || p.LogAppendTime != -1 || (version >= 5 && p.LogStartOffset != 0) {
			h.t.Fatalf("produce answered %+v", p)
		}
		// One batch per partition, as Kafka: a second one is INVALID_RECORD
		// even when it is corrupt, and neither is written.
		corrupt := h.batch(1)
		corrupt[len(corrupt)-1] ^= 0xff
		for _, tc := range []struct {
			what    string
			records []byte
		}{
			{"two batches", append(h.batch(2), h.batch(2)...)},
			{"a batch then a corrupt one", append(h.batch(2), corrupt...)},
			{"three batches", append(append(h.batch(1), h.batch(1)...), h.batch(1)...)},
		} {
			p := h.client.request(produceRequest(topic, 0, tc.records), version).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			wantCode(h.t, tc.what, p.ErrorCode, kerr.InvalidRecord)
			if version >= 8 && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "exactly one record batch")) {
				h.t.Fatalf("%s: error message %v", tc.what, p.ErrorMessage)
			}
		}
		resp = h.client.request(produceRequest(topic, 0, h.batch(1)), version).(*kmsg.ProduceResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 3 {
			h.t.Fatalf("produce after the refused ones: code %d, base offset %d, want 3", p.ErrorCode, p.BaseOffset)
		}
		resp = h.client.request(produceRequest(topic, 0, h.batch(200)), version).(*kmsg.ProduceResponse)
		wantCode(h.t, "oversize batch", resp.Topics[0].Partitions[0].ErrorCode, kerr.MessageTooLarge)
		resp = h.client.request(produceRequest(topic, 5, h.batch(1)), version).(*kmsg.ProduceResponse)
		wantCode(h.t, "unknown partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		bad := produceRequest(topic, 0, h.batch(1))
		bad.Acks = 2
		resp = h.client.request(bad, version).(*kmsg.ProduceResponse)
		wantCode(h.t, "acks=2", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks)
	},
	1: func(h *handlerTest, version int16) { // Fetch
		topic := h.topic(1, nil)
		first, second := h.produce(topic, 2), h.produce(topic, 3)
		req := fetchRequest(topic, 0, 1<<20)
		resp := h.client.request(req, version).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(h.t, "fetch", p.ErrorCode, nil)
		if p.HighWatermark != 5 || !bytes.Equal(p.RecordBatches, append(first, second...)) {
			h.t.Fatalf("fetch: high watermark %d, %d record bytes", p.HighWatermark, len(p.RecordBatches))
		}
		req.Topics[0].Partitions[0].FetchOffset = 9
		resp = h.client.request(req, version).(*kmsg.FetchResponse)
		wantCode(h.t, "fetch past the high watermark", resp.Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange)
	},
	2: func(h *handlerTest, version int16) { // ListOffsets
		topic := h.topic(1, nil)
		h.produce(topic, 4)
		for timestamp, want := range map[int64]int64{-1: 4, -2: 0} {
			p := h.listOffset(topic, timestamp, version)
			wantCode(h.t, "list offsets", p.ErrorCode, nil)
			if p.Offset != want {
				h.t.Fatalf("timestamp %d: offset %d, want %d", timestamp, p.Offset, want)
			}
		}
	},
	3: func(h *handlerTest, version int16) { // Metadata
		topic := h.topic(2, nil)
		req := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{topic.Name, "missing-" + h.name} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		resp := h.client.request(req, version).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != h.broker.config.BrokerID || resp.Brokers[0].Port != 9092 {
			h.t.Fatalf("brokers %+v", resp.Brokers)
		}
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[1].Leader != h.broker.config.BrokerID {
			h.t.Fatalf("topics %+v", resp.Topics)
		}
		if version >= 10 && uuid.UUID(resp.Topics[0].TopicID) != topic.ID {
			h.t.Fatalf("topic id %x, want %s", resp.Topics[0].TopicID, topic.ID)
		}
		wantCode(h.t, "missing topic", resp.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
	},
	18: func(h *handlerTest, version int16) { // ApiVersions
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-test", "1.0"
		resp := h.client.request(req, version).(*kmsg.ApiVersionsResponse)
		wantCode(h.t, "api versions", resp.ErrorCode, nil)
		if len(resp.ApiKeys) != len(apis) {
			h.t.Fatalf("%d keys advertised, %d in the table", len(resp.ApiKeys), len(apis))
		}
		for _, k := range resp.ApiKeys {
			a := apis[k.ApiKey]
			if a == nil || a.minVersion != k.MinVersion || a.maxVersion != k.MaxVersion {
				h.t.Fatalf("advertised %+v does not match the table", k)
			}
		}
	},
	19: func(h *handlerTest, version int16) { // CreateTopics
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		for i, configs := range []map[string]string{{"retention.ms": "1000"}, {"retention.msec": "1000"},
			{"remote.log.copy.disable": "true", "local.retention.ms": "3600000"}} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("%s-%d", h.name, i), 2, 1
			for name, value := range configs {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = name, kmsg.StringPtr(value)
				rt.Configs = append(rt.Configs, c)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := h.client.request(req, version).(*kmsg.CreateTopicsResponse)
		wantCode(h.t, "create", resp.Topics[0].ErrorCode, nil)
		wantCode(h.t, "unknown config", resp.Topics[1].ErrorCode, kerr.InvalidConfig)
		wantCode(h.t, "a local retention copying off ignores", resp.Topics[2].ErrorCode, kerr.InvalidConfig)
		if version >= 5 && (resp.Topics[0].NumPartitions != 2 || len(resp.Topics[0].Configs) == 0) {
			h.t.Fatalf("create answered %+v", resp.Topics[0])
		}
		resp = h.client.request(req, version).(*kmsg.CreateTopicsResponse)
		wantCode(h.t, "create again", resp.Topics[0].ErrorCode, kerr.TopicAlreadyExists)
	},
	20: func(h *handlerTest, version int16) { // DeleteTopics
		topic := h.topic(1, nil)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 30000
		req.TopicNames = []string{topic.Name}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(topic.Name)
		req.Topics = append(req.Topics, rt)
		resp := h.client.request(req, version).(*kmsg.DeleteTopicsResponse)
		wantCode(h.t, "delete", resp.Topics[0].ErrorCode, nil)
		resp = h.client.request(req, version).(*kmsg.DeleteTopicsResponse)
		wantCode(h.t, "delete again", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	},
	21: func(h *handlerTest, version int16) { // DeleteRecords
		topic := h.topic(1, nil)
		h.produce(topic, 5)
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic.Name
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := h.client.request(req, version).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		wantCode(h.t, "delete records", p.ErrorCode, nil)
		if p.LowWatermark != 3 {
			h.t.Fatalf("low watermark %d, want 3", p.LowWatermark)
		}
		// The start is inside the batch: a lookup by timestamp answers no
		// record below it.
		for _, ts := range []int64{0, -4} {
			if got := h.listOffset(topic, ts, 9); got.ErrorCode != 0 || got.Offset != 3 {
				h.t.Fatalf("ListOffsets %d after DeleteRecords to 3: offset %d, error %d; want 3", ts, got.Offset, got.ErrorCode)
			}
		}
	},
	23: func(h *handlerTest, version int16) { // OffsetForLeaderEpoch
		topic := h.topic(1, nil)
		h.produce(topic, 5)
		assigned, _ := h.broker.meta.State().Partition(topic.Name, 0)
		ask := func(partition, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic.Name
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return h.client.request(req, version).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		}
		epoch := assigned.LeaderEpoch
		if p := ask(0, epoch, epoch); p.ErrorCode != 0 || p.EndOffset != 5 || (version >= 1 && p.LeaderEpoch != epoch) {
			h.t.Fatalf("the current epoch %d: %+v, want its end at the log end, 5", epoch, p)
		}
		if p := ask(0, -1, epoch+1); p.ErrorCode != 0 || p.EndOffset != -1 {
			h.t.Fatalf("an epoch past every entry: %+v, want UNDEFINED", p)
		}
		wantCode(h.t, "unknown partition", ask(7, -1, epoch).ErrorCode, kerr.UnknownTopicOrPartition)
		if version >= 2 {
			wantCode(h.t, "a newer current epoch", ask(0, epoch+1, epoch).ErrorCode, kerr.UnknownLeaderEpoch)
		}
	},
	22: func(h *handlerTest, version int16) { // InitProducerId
		resp := h.client.request(kmsg.NewPtrInitProducerIDRequest(), version).(*kmsg.InitProducerIDResponse)
		wantCode(h.t, "init producer id", resp.ErrorCode, nil)
		again := h.client.request(kmsg.NewPtrInitProducerIDRequest(), version).(*kmsg.InitProducerIDResponse)
		if resp.ProducerID < 0 || resp.ProducerEpoch != 0 || again.ProducerID == resp.ProducerID {
			h.t.Fatalf("producer ids %d and %d (epoch %d)", resp.ProducerID, again.ProducerID, resp.ProducerEpoch)
		}
		txn := kmsg.NewPtrInitProducerIDRequest()
		txn.TransactionalID = kmsg.StringPtr("txn")
		resp = h.client.request(txn, version).(*kmsg.InitProducerIDResponse)
		wantCode(h.t, "transactional id", resp.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	},
	32: func(h *handlerTest, version int16) { // DescribeConfigs
		topic := h.topic(1, map[string]string{"retention.ms": "5000"})
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic.Name
		rr.ConfigNames = []string{"retention.ms", "segment.bytes", "no.such.config"}
		req.Resources = append(req.Resources, rr)
		broker := kmsg.NewDescribeConfigsRequestResource()
		broker.ResourceType, broker.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		req.Resources = append(req.Resources, broker)
		resp := h.client.request(req, version).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		wantCode(h.t, "describe", r.ErrorCode, nil)
		if len(r.Configs) != 2 || *r.Configs[0].Value != "5000" || r.Configs[0].Source != kmsg.ConfigSourceDynamicTopicConfig ||
			r.Configs[1].Source != kmsg.ConfigSourceDefaultConfig {
			h.t.Fatalf("configs %+v", r.Configs)
		}
		wantCode(h.t, "describe broker", resp.Resources[1].ErrorCode, nil)
		if len(resp.Resources[1].Configs) == 0 || !resp.Resources[1].Configs[0].ReadOnly {
			h.t.Fatalf("broker configs %+v", resp.Resources[1].Configs)
		}
	},
	33: func(h *handlerTest, version int16) { // AlterConfigs
		topic := h.topic(1, map[string]string{"retention.ms": "5000"})
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic.Name
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "segment.ms", kmsg.StringPtr("60000")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		wantCode(h.t, "alter", h.client.request(req, version).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, nil)
		got, _ := h.broker.meta.State().Topic(topic.Name)
		if len(got.Configs) != 1 || got.Configs["segment.ms"] != "60000" {
			h.t.Fatalf("configs after AlterConfigs: %v", got.Configs)
		}
		req.Resources[0].Configs[0].Name = "segment.millis"
		wantCode(h.t, "unknown config", h.client.request(req, version).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)
		req.Resources[0].Configs[0].Name, req.Resources[0].Configs[0].Value = "strata.schema.validation.decode", kmsg.StringPtr("true")
		wantCode(h.t, "decoding without schema validation", h.client.request(req, version).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)
	},
	37: func(h *handlerTest, version int16) { // CreatePartitions
		topic := h.topic(2, nil)
		self := h.broker.config.BrokerID
		request := func(validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) []kmsg.CreatePartitionsResponseTopic {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis, req.ValidateOnly, req.Topics = 30000, validateOnly, topics
			return h.client.request(req, version).(*kmsg.CreatePartitionsResponse).Topics
		}
		grow := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = name, count
			for _, replicas := range assignment {
				rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
			}
			return rt
		}
		partitions := func() int32 { t, _ := h.broker.meta.State().Topic(topic.Name); return t.Partitions }

		resp := request(true, grow(topic.Name, 6))
		wantCode(h.t, "validate only", resp[0].ErrorCode, nil)
		if n := partitions(); n != 2 {
			h.t.Fatalf("validate-only grew the topic to %d partitions", n)
		}
		resp = request(false, grow(topic.Name, 4), grow("missing-"+h.name, 2))
		wantCode(h.t, "grow", resp[0].ErrorCode, nil)
		wantCode(h.t, "missing topic", resp[1].ErrorCode, kerr.UnknownTopicOrPartition)
		if n := partitions(); n != 4 {
			h.t.Fatalf("%d partitions after growing to 4", n)
		}
		// The answer came after this broker opened the new partitions.
		p := h.client.request(produceRequest(topic, 3, h.batch(1)), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		wantCode(h.t, "produce to a new partition", p.ErrorCode, nil)

		resp = request(false, grow(topic.Name, 5, []int32{self}))
		wantCode(h.t, "grow with an assignment", resp[0].ErrorCode, nil)
		resp = request(false, grow(topic.Name, 3))
		wantCode(h.t, "shrink", resp[0].ErrorCode, kerr.InvalidPartitions)
		if resp[0].ErrorMessage == nil || !strings.Contains(*resp[0].ErrorMessage, "would not be an increase") {
			h.t.Fatalf("shrink message %v", resp[0].ErrorMessage)
		}
		resp = request(true, grow(topic.Name, 5))
		wantCode(h.t, "same count, validate only", resp[0].ErrorCode, kerr.InvalidPartitions)
		resp = request(false, grow(topic.Name, 6, []int32{self}, []int32{self}))
		wantCode(h.t, "two lists for one partition", resp[0].ErrorCode, kerr.InvalidReplicaAssignment)
		resp = request(true, grow(topic.Name, 6, []int32{self + 100}))
		wantCode(h.t, "unregistered broker, validate only", resp[0].ErrorCode, kerr.InvalidReplicaAssignment)
		resp = request(false, grow(topic.Name, 6), grow(topic.Name, 7))
		wantCode(h.t, "named twice", resp[0].ErrorCode, kerr.InvalidRequest)
		wantCode(h.t, "named twice", resp[1].ErrorCode, kerr.InvalidRequest)
		if n := partitions(); n != 5 {
			h.t.Fatalf("%d partitions after refused requests, want 5", n)
		}
	},
	35: func(h *handlerTest, version int16) { // DescribeLogDirs
		topic := h.topic(2, nil)
		p := h.client.request(produceRequest(topic, 1, h.batch(3)), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		wantCode(h.t, "produce", p.ErrorCode, nil)
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: topic.Name, Partitions: []int32{0, 1, 9}}}
		resp := h.client.request(req, version).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 {
			h.t.Fatalf("%d log dirs, want 1", len(resp.Dirs))
		}
		dir := resp.Dirs[0]
		wantCode(h.t, "log dir", dir.ErrorCode, nil)
		if len(dir.Topics) != 1 || len(dir.Topics[0].Partitions) != 2 {
			h.t.Fatalf("log dir topics %+v, want partitions 0 and 1 of %s", dir.Topics, topic.Name)
		}
		if empty, written := dir.Topics[0].Partitions[0], dir.Topics[0].Partitions[1]; empty.Size != 0 || written.Size == 0 || written.OffsetLag != 0 {
			h.t.Fatalf("sizes: partition 0 %+v, partition 1 %+v", empty, written)
		}
		if version >= 4 && (dir.TotalBytes <= 0 || dir.UsableBytes <= 0 || dir.UsableBytes > dir.TotalBytes) {
			h.t.Fatalf("file system bytes: total %d, usable %d", dir.TotalBytes, dir.UsableBytes)
		}
	},
	43: func(h *handlerTest, version int16) { // ElectLeaders
		topic := h.topic(2, nil)
		elect := func(kind int8, topics ...kmsg.ElectLeadersRequestTopic) *kmsg.ElectLeadersResponse {
			req := kmsg.NewPtrElectLeadersRequest()
			req.TimeoutMillis, req.ElectionType, req.Topics = 30000, kind, topics
			return h.client.request(req, version).(*kmsg.ElectLeadersResponse)
		}
		named := func(name string, partitions ...int32) kmsg.ElectLeadersRequestTopic {
			return kmsg.ElectLeadersRequestTopic{Topic: name, Partitions: partitions}
		}
		resp := elect(0, named(topic.Name, 0, 1), named("missing-"+h.name, 0))
		wantCode(h.t, "preferred, already leading", resp.Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded)
		wantCode(h.t, "preferred, already leading", resp.Topics[0].Partitions[1].ErrorCode, kerr.ElectionNotNeeded)
		wantCode(h.t, "missing topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		if resp := elect(0); len(resp.Topics) != 0 {
			h.t.Fatalf("every partition, none needing an election: %+v", resp.Topics)
		}
		if version >= 1 {
			resp := elect(1, named(topic.Name, 1))
			wantCode(h.t, "unclean, with a leader", resp.Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded)
			wantCode(h.t, "unknown election type", elect(5, named(topic.Name, 1)).ErrorCode, kerr.InvalidRequest)
		}
	},
	45: func(h *handlerTest, version int16) { // AlterPartitionAssignments
		topic := h.topic(1, nil)
		self := h.broker.config.BrokerID
		reassign := func(allowFactorChange bool, topics ...kmsg.AlterPartitionAssignmentsRequestTopic) []kmsg.AlterPartitionAssignmentsResponseTopic {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			req.TimeoutMillis, req.AllowReplicationFactorChange, req.Topics = 30000, allowFactorChange, topics
			resp := h.client.request(req, version).(*kmsg.AlterPartitionAssignmentsResponse)
			wantCode(h.t, "request", resp.ErrorCode, nil)
			return resp.Topics
		}
		to := func(name string, partition int32, replicas []int32) kmsg.AlterPartitionAssignmentsRequestTopic {
			return kmsg.AlterPartitionAssignmentsRequestTopic{Topic: name, Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{
				{Partition: partition, Replicas: replicas}}}
		}
		resp := reassign(true, to(topic.Name, 0, []int32{self}), to("missing-"+h.name, 0, []int32{self}))
		wantCode(h.t, "to the replicas it has", resp[0].Partitions[0].ErrorCode, nil)
		wantCode(h.t, "missing topic", resp[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		resp = reassign(true, to(topic.Name, 0, []int32{self, self + 100}), to(topic.Name, 7, []int32{self}))
		wantCode(h.t, "unregistered broker", resp[0].Partitions[0].ErrorCode, kerr.InvalidReplicaAssignment)
		if m := resp[0].Partitions[0].ErrorMessage; m == nil || !strings.Contains(*m, fmt.Sprintf("broker %d is not registered", self+100)) {
			h.t.Fatalf("unregistered broker's message: %v", m)
		}
		wantCode(h.t, "missing partition", resp[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		resp = reassign(true, to(topic.Name, 0, nil))
		wantCode(h.t, "cancel with none in progress", resp[0].Partitions[0].ErrorCode, kerr.NoReassignmentInProgress)
		resp = reassign(true, to(topic.Name, 0, []int32{self}), to(topic.Name, 0, []int32{self}))
		wantCode(h.t, "named twice", resp[0].Partitions[0].ErrorCode, kerr.InvalidRequest)
		if version >= 1 {
			resp = reassign(false, to(topic.Name, 0, []int32{self, self + 100}))
			wantCode(h.t, "factor change not allowed", resp[0].Partitions[0].ErrorCode, kerr.InvalidReplicationFactor)
		}
		if p, _ := h.broker.meta.State().Partition(topic.Name, 0); p.Reassigning() || !slices.Equal(p.Replicas, []int32{self}) {
			h.t.Fatalf("after the refused reassignments: %+v", p)
		}
	},
	46: func(h *handlerTest, version int16) { // ListPartitionReassignments
		topic := h.topic(1, nil)
		list := func(topics ...kmsg.ListPartitionReassignmentsRequestTopic) *kmsg.ListPartitionReassignmentsResponse {
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			req.TimeoutMillis, req.Topics = 30000, topics
			return h.client.request(req, version).(*kmsg.ListPartitionReassignmentsResponse)
		}
		resp := list()
		wantCode(h.t, "list all", resp.ErrorCode, nil)
		if len(resp.Topics) != 0 {
			h.t.Fatalf("reassignments listed with none in progress: %+v", resp.Topics)
		}
		resp = list(kmsg.ListPartitionReassignmentsRequestTopic{Topic: topic.Name, Partitions: []int32{0}})
		wantCode(h.t, "list one", resp.ErrorCode, nil)
		if len(resp.Topics) != 0 {
			h.t.Fatalf("a partition without a reassignment listed: %+v", resp.Topics)
		}
		resp = list(kmsg.ListPartitionReassignmentsRequestTopic{Topic: "missing-" + h.name})
		wantCode(h.t, "missing topic", resp.ErrorCode, kerr.UnknownTopicOrPartition)
	},
	44: func(h *handlerTest, version int16) { // IncrementalAlterConfigs
		topic := h.topic(1, map[string]string{"retention.ms": "5000"})
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic.Name
		set := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		set.Name, set.Op, set.Value = "segment.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("60000")
		del := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		del.Name, del.Op = "retention.ms", kmsg.IncrementalAlterConfigOpDelete
		rr.Configs = append(rr.Configs, set, del)
		req.Resources = append(req.Resources, rr)
		wantCode(h.t, "alter", h.client.request(req, version).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, nil)
		got, _ := h.broker.meta.State().Topic(topic.Name)
		if len(got.Configs) != 1 || got.Configs["segment.ms"] != "60000" {
			h.t.Fatalf("configs after IncrementalAlterConfigs: %v", got.Configs)
		}
		req.Resources[0].Configs = req.Resources[0].Configs[:1]
		req.Resources[0].Configs[0].Op = kmsg.IncrementalAlterConfigOpAppend
		wantCode(h.t, "append to a number", h.client.request(req, version).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.InvalidConfig)

		// Dynamic broker configs: the cluster default and this broker's own.
		self := strconv.Itoa(int(h.broker.config.BrokerID))
		alterBroker := func(name, config string, op kmsg.IncrementalAlterConfigOp, value *string) int16 {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
			rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: config, Op: op, Value: value}}
			req.Resources = append(req.Resources, rr)
			return h.client.request(req, version).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
		}
		wantCode(h.t, "set the cluster default", alterBroker("", meta.FollowerThrottledRate, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1000")), nil)
		wantCode(h.t, "set the broker's own", alterBroker(self, meta.LeaderThrottledRate, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2000")), nil)
		wantCode(h.t, "a static setting", alterBroker(self, "num.partitions", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("3")), kerr.InvalidConfig)
		wantCode(h.t, "append to a rate", alterBroker(self, meta.LeaderThrottledRate, kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("3")), kerr.InvalidConfig)
		describe := kmsg.NewPtrDescribeConfigsRequest()
		describe.Resources = []kmsg.DescribeConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: self, ConfigNames: []string{meta.LeaderThrottledRate, meta.FollowerThrottledRate}},
		}
		described := h.client.request(describe, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs
		if len(described) != 2 || *described[0].Value != "1000" || described[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
			*described[1].Value != "2000" || described[1].Source != kmsg.ConfigSourceDynamicBrokerConfig || described[1].ReadOnly {
			h.t.Fatalf("dynamic broker configs described as %+v", described)
		}
		wantCode(h.t, "delete the default", alterBroker("", meta.FollowerThrottledRate, kmsg.IncrementalAlterConfigOpDelete, nil), nil)
		wantCode(h.t, "delete the broker's own", alterBroker(self, meta.LeaderThrottledRate, kmsg.IncrementalAlterConfigOpDelete, nil), nil)
		if rate := h.broker.meta.State().BrokerRate(h.broker.config.BrokerID, meta.LeaderThrottledRate); rate != math.MaxInt64 {
			h.t.Fatalf("leader rate %d after deleting it", rate)
		}
	},
	48: func(h *handlerTest, version int16) { // DescribeClientQuotas
		client := "describe-quota-" + h.name
		alter := kmsg.NewPtrAlterClientQuotasRequest()
		alter.Entries = []kmsg.AlterClientQuotasRequestEntry{{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user"}, {Type: "client-id", Name: kmsg.StringPtr(client)}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: meta.ConsumerByteRate, Value: 1 << 30}},
		}}
		wantCode(h.t, "set", h.client.request(alter, 1).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode, nil)
		describe := func(strict bool, components ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Components, req.Strict = components, strict
			return h.client.request(req, version).(*kmsg.DescribeClientQuotasResponse)
		}
		exact := kmsg.DescribeClientQuotasRequestComponent{EntityType: "client-id", MatchType: kmsg.QuotasMatchTypeExact, Match: kmsg.StringPtr(client)}
		defaultUser := kmsg.DescribeClientQuotasRequestComponent{EntityType: "user", MatchType: kmsg.QuotasMatchTypeDefault}
		resp := describe(false, exact)
		wantCode(h.t, "describe", resp.ErrorCode, nil)
		if len(resp.Entries) != 1 || len(resp.Entries[0].Entity) != 2 || resp.Entries[0].Entity[0].Name != nil ||
			resp.Entries[0].Values[0].Key != meta.ConsumerByteRate || resp.Entries[0].Values[0].Value != 1<<30 {
			h.t.Fatalf("described %+v", resp.Entries)
		}
		if resp := describe(true, exact); len(resp.Entries) != 0 {
			h.t.Fatalf("strict on client-id alone matched an entity with a user: %+v", resp.Entries)
		}
		if resp := describe(true, exact, defaultUser); len(resp.Entries) != 1 {
			h.t.Fatalf("strict on both: %+v", resp.Entries)
		}
		resp = describe(false, kmsg.DescribeClientQuotasRequestComponent{EntityType: "ip", MatchType: kmsg.QuotasMatchTypeAny})
		wantCode(h.t, "ip entities", resp.ErrorCode, kerr.InvalidRequest)
		alter.Entries[0].Ops[0].Remove = true
		wantCode(h.t, "remove", h.client.request(alter, 1).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode, nil)
	},
	49: func(h *handlerTest, version int16) { // AlterClientQuotas
		entity := []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("alter-quota-" + h.name)}}
		alter := func(validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.Entries, req.ValidateOnly = entries, validateOnly
			return h.client.request(req, version).(*kmsg.AlterClientQuotasResponse).Entries
		}
		op := func(key string, value float64) kmsg.AlterClientQuotasRequestEntryOp {
			return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: value}
		}
		resp := alter(true, kmsg.AlterClientQuotasRequestEntry{Entity: entity, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op(meta.ProducerByteRate, 1<<30)}})
		wantCode(h.t, "validate only", resp[0].ErrorCode, nil)
		if h.broker.meta.State().HasClientQuotas() {
			h.t.Fatal("a validate-only change was made")
		}
		resp = alter(false,
			kmsg.AlterClientQuotasRequestEntry{Entity: entity, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op(meta.ProducerByteRate, 1.5)}},
			kmsg.AlterClientQuotasRequestEntry{Entity: entity, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("controller_mutation_rate", 5)}},
			kmsg.AlterClientQuotasRequestEntry{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "ip"}}, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op(meta.ProducerByteRate, 5)}},
			kmsg.AlterClientQuotasRequestEntry{Entity: entity, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op(meta.RequestPercentage, 200)}},
		)
		wantCode(h.t, "fractional byte rate", resp[0].ErrorCode, kerr.InvalidConfig)
		wantCode(h.t, "unknown key", resp[1].ErrorCode, kerr.InvalidConfig)
		wantCode(h.t, "ip entity", resp[2].ErrorCode, kerr.InvalidRequest)
		wantCode(h.t, "request share", resp[3].ErrorCode, nil)
		if q, ok := h.broker.meta.State().ClientQuota("ANONYMOUS", "alter-quota-"+h.name, meta.RequestPercentage); !ok || q.Value != 200 {
			h.t.Fatalf("request share after setting it: %v %v", q, ok)
		}
		alter(false, kmsg.AlterClientQuotasRequestEntry{Entity: entity, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: meta.RequestPercentage, Remove: true}}})
		if h.broker.meta.State().HasClientQuotas() {
			h.t.Fatal("the quota is still set after removing it")
		}
	},
	64: func(h *handlerTest, version int16) { // UnregisterBroker
		unregister := func(id int32) *kmsg.UnregisterBrokerResponse {
			req := kmsg.NewPtrUnregisterBrokerRequest()
			req.BrokerID = id
			return h.client.request(req, version).(*kmsg.UnregisterBrokerResponse)
		}
		resp := unregister(h.broker.config.BrokerID)
		wantCode(h.t, "a live broker", resp.ErrorCode, kerr.InvalidRequest)
		if resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "stop it first") {
			h.t.Fatalf("a live broker's message: %v", resp.ErrorMessage)
		}
		wantCode(h.t, "an unknown broker", unregister(h.broker.config.BrokerID+100).ErrorCode, kerr.BrokerIDNotRegistered)
	},
	17: func(h *handlerTest, version int16) { // SaslHandshake
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Mechanism = sasl.ScramSHA256
		resp := h.client.request(req, version).(*kmsg.SASLHandshakeResponse)
		wantCode(h.t, "a handshake on a PLAINTEXT listener", resp.ErrorCode, kerr.IllegalSaslState)
	},
	36: func(h *handlerTest, version int16) { // SaslAuthenticate
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("\x00u\x00p")
		resp := h.client.request(req, version).(*kmsg.SASLAuthenticateResponse)
		wantCode(h.t, "SaslAuthenticate without a handshake", resp.ErrorCode, kerr.IllegalSaslState)
	},
	30: func(h *handlerTest, version int16) { // CreateAcls, then DescribeAcls and DeleteAcls see it
		name := fmt.Sprintf("acl-topic-v%d", version)
		create := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		bad := c
		bad.Principal = "alice"
		create.Creations = []kmsg.CreateACLsRequestCreation{c, bad}
		resp := h.client.request(create, version).(*kmsg.CreateACLsResponse)
		wantCode(h.t, "a valid creation", resp.Results[0].ErrorCode, nil)
		wantCode(h.t, "a principal without a type", resp.Results[1].ErrorCode, kerr.InvalidRequest)
		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.ResourceType, describe.ResourceName, describe.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
		describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		d := h.client.request(describe, min(version, 3)).(*kmsg.DescribeACLsResponse)
		if len(d.Resources) != 1 || len(d.Resources[0].ACLs) != 1 || d.Resources[0].ACLs[0].Principal != "User:alice" {
			h.t.Fatalf("DescribeAcls after the create: %+v", d.Resources)
		}
	},
	29: func(h *handlerTest, version int16) { // DescribeAcls: an UNKNOWN filter value is refused
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeUnknown, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := h.client.request(req, version).(*kmsg.DescribeACLsResponse)
		wantCode(h.t, "an UNKNOWN resource type", resp.ErrorCode, kerr.InvalidRequest)
	},
	31: func(h *handlerTest, version int16) { // DeleteAcls removes what its filter matches
		name := fmt.Sprintf("doomed-v%d", version)
		create := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeGroup, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny
		create.Creations = []kmsg.CreateACLsRequestCreation{c}
		h.client.request(create, 3)
		del := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeGroup, &name, kmsg.ACLResourcePatternTypeLiteral
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		del.Filters = []kmsg.DeleteACLsRequestFilter{f}
		resp := h.client.request(del, version).(*kmsg.DeleteACLsResponse)
		if len(resp.Results) != 1 || len(resp.Results[0].MatchingACLs) != 1 || resp.Results[0].MatchingACLs[0].Principal != "User:bob" {
			h.t.Fatalf("DeleteAcls: %+v", resp.Results)
		}
		again := h.client.request(del, version).(*kmsg.DeleteACLsResponse)
		if len(again.Results[0].MatchingACLs) != 0 {
			h.t.Fatalf("the deleted ACL is still there: %+v", again.Results)
		}
	},
	51: func(h *handlerTest, version int16) { // AlterUserScramCredentials
		salt := []byte("salt-salt-salt")
		salted, _ := sasl.SaltPassword(sasl.ScramSHA256, "pw", salt, sasl.MinIterations)
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "carol", 1, sasl.MinIterations, salt, salted
		low := up
		low.Name, low.Iterations = "dave", 100
		del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		del.Name, del.Mechanism = "erin", 2
		req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up, low}
		req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del}
		resp := h.client.request(req, version).(*kmsg.AlterUserSCRAMCredentialsResponse)
		codes := map[string]int16{}
		for _, r := range resp.Results {
			codes[r.User] = r.ErrorCode
		}
		wantCode(h.t, "a valid upsertion", codes["carol"], nil)
		wantCode(h.t, "100 iterations", codes["dave"], kerr.UnacceptableCredential)
		wantCode(h.t, "deleting a credential nobody has", codes["erin"], kerr.ResourceNotFound)
		c, ok := h.broker.meta.State().ScramCredential("carol", sasl.ScramSHA256)
		if !ok || !c.Check("pw") || bytes.Contains(c.StoredKey, salted) {
			h.t.Fatalf("stored credential %+v, found %v", c, ok)
		}
	},
	50: func(h *handlerTest, version int16) { // DescribeUserScramCredentials
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "nobody"
		req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{u, u}
		resp := h.client.request(req, version).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if len(resp.Results) != 1 {
			h.t.Fatalf("a user named twice is answered once: %+v", resp.Results)
		}
		wantCode(h.t, "a user named twice", resp.Results[0].ErrorCode, kerr.DuplicateResource)
		req.Users = req.Users[:1]
		resp = h.client.request(req, version).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		wantCode(h.t, "a user without credentials", resp.Results[0].ErrorCode, kerr.ResourceNotFound)
	},
	60: func(h *handlerTest, version int16) { // DescribeCluster
		resp := h.client.request(kmsg.NewPtrDescribeClusterRequest(), version).(*kmsg.DescribeClusterResponse)
		wantCode(h.t, "describe cluster", resp.ErrorCode, nil)
		if resp.ClusterID != h.broker.meta.State().ClusterID() || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != h.broker.config.BrokerID {
			h.t.Fatalf("describe cluster answered %+v", resp)
		}
	},
}

// TestHandlersAtAdvertisedVersions runs every API's case at the lowest and
// the highest version in the dispatch table, through a real connection.
func TestHandlersAtAdvertisedVersions(t *testing.T) {
	b := newTestBroker(t, nil)
	for _, a := range supportedAPIs() {
		check, ok := handlerCases[a.key]
		if !ok {
			t.Errorf("%s (key %d) is advertised but has no handler case", a.name, a.key)
			continue
		}
		for _, version := range slices.Compact([]int16{a.minVersion, a.maxVersion}) {
			name := fmt.Sprintf("%s-v%d", a.name, version)
			t.Run(name, func(t *testing.T) {
				check(&handlerTest{t: t, broker: b, client: connect(t, b), name: name}, version)
			})
		}
	}
}

// TestTimestampLookupPastABatchAcrossTheLogStart: DeleteRecords put the
// log start inside a batch whose only record at or after the timestamp
// asked lies below the start (timestamps out of order within the batch,
// as producers' CreateTime may be): the answer is in the next batch.
func TestTimestampLookupPastABatchAcrossTheLogStart(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "ts-across"}
	topic := h.topic(1, nil)
	base := time.Now().UnixMilli()
	produce := func(deltas ...int64) {
		t.Helper()
		var records []record.Record
		for i, d := range deltas {
			records = append(records, record.Record{TimestampDelta: d, OffsetDelta: int32(i), Value: []byte("v")})
		}
		raw, err := record.Build(record.BuildOptions{FirstTimestamp: base, ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			t.Fatal(err)
		}
		resp := h.client.request(produceRequest(topic, 0, raw), 9).(*kmsg.ProduceResponse)
		wantCode(t, "produce", resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	produce(0, 200, 0, 0, 0)    // [0, 4]: only offset 1 at base+200
	produce(300, 300, 300, 300) // [5, 8]
	wantCode(t, "delete records", h.deleteRecords(topic, 0, 3), nil)
	if got := h.listOffset(topic, base+100, 9); got.ErrorCode != 0 || got.Offset != 5 {
		t.Fatalf("ListOffsets at base+100 after DeleteRecords to 3: offset %d, error %d; want 5 (offset 1 matches, below the start)", got.Offset, got.ErrorCode)
	}
}

// TestListOffsetsRefusesAPartitionNamedTwice: as Kafka, a partition named
// twice in one ListOffsets is INVALID_REQUEST at each mention, across two
// entries of its topic too; a partition named once is answered.
func TestListOffsetsRefusesAPartitionNamedTwice(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "lo-twice"}
	topic := h.topic(2, nil)
	h.produce(topic, 3)
	req := kmsg.NewPtrListOffsetsRequest()
	for _, partitions := range [][]int32{{0, 1}, {0}} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic.Name
		for _, partition := range partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = partition, timestampLatest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.client.request(req, 9).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 || len(resp.Topics[1].Partitions) != 1 {
		t.Fatalf("answered %+v, want an answer per mention", resp.Topics)
	}
	for _, p := range []kmsg.ListOffsetsResponseTopicPartition{resp.Topics[0].Partitions[0], resp.Topics[1].Partitions[0]} {
		wantCode(t, "partition 0, named twice", p.ErrorCode, kerr.InvalidRequest)
	}
	once := resp.Topics[0].Partitions[1]
	wantCode(t, "partition 1, named once", once.ErrorCode, nil)
	if once.Offset != 0 {
		t.Fatalf("partition 1's latest offset is %d, want 0", once.Offset)
	}
}

// TestMetadataAnswersATopicNamedTwiceOnce: as Kafka, which answers the set
// of topics asked for, a topic named again, by name or by id, is one
// entry; otherwise a small request naming a topic of many partitions
// thousands of times builds an answer thousands of times its size.
func TestMetadataAnswersATopicNamedTwiceOnce(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "md-twice"}
	topic := h.topic(4, nil)
	req := kmsg.NewPtrMetadataRequest()
	for range 3 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic.Name)
		req.Topics = append(req.Topics, rt)
	}
	for range 2 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = topic.ID
		req.Topics = append(req.Topics, rt)
	}
	resp := h.client.request(req, 12).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("named three times by name and twice by id: %d entries, want one for each form", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		wantCode(t, "metadata", rt.ErrorCode, nil)
		if len(rt.Partitions) != 4 {
			t.Fatalf("an entry lists %d partitions, want 4", len(rt.Partitions))
		}
	}
}

// TestProduceRefusesAsKafkasLogAnswers: a zstd batch before Produce v7 is
// UNSUPPORTED_COMPRESSION_TYPE (ProduceRequest.validateRecords) and taken
// at v7; a batch within max.message.bytes but above segment.bytes is
// RECORD_LIST_TOO_LARGE, as Kafka's log answers it. Nothing refused is
// written.
func TestProduceRefusesAsKafkasLogAnswers(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "produce-kafka-codes"}
	topic := h.topic(1, map[string]string{"segment.bytes": "1024"})
	build := func(codec record.Codec, value []byte) []byte {
		t.Helper()
		raw, err := record.Build(record.BuildOptions{Codec: codec, FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
			[]record.Record{{Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	small := []byte("v")
	produce := func(version int16, raw []byte) kmsg.ProduceResponseTopicPartition {
		return h.client.request(produceRequest(topic, 0, raw), version).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	wantCode(t, "zstd at v6", produce(6, build(record.CodecZstd, small)).ErrorCode, kerr.UnsupportedCompressionType)
	wantCode(t, "a batch above segment.bytes", produce(9, build(record.CodecNone, make([]byte, 2048))).ErrorCode, kerr.RecordListTooLarge)
	p := produce(7, build(record.CodecZstd, small))
	wantCode(t, "zstd at v7", p.ErrorCode, nil)
	if p.BaseOffset != 0 {
		t.Fatalf("zstd at v7 went to offset %d, want 0: a refused batch was written", p.BaseOffset)
	}
}
