package ingest

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceToManyPartitionsAnswersEachInPlace sends two produce requests
// for a hundred partitions, with a corrupt batch and an unknown partition
// among them: every partition is answered in the request's order with its
// own error or its own base offset, and the second request appends after
// the first.
func TestProduceToManyPartitionsAnswersEachInPlace(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "many-partitions"}
	const partitions, corrupt, unknown = 100, 37, 100
	topic := h.topic(partitions, nil)
	records := func(p int32) int { return int(p%3) + 1 }
	request := func() *kmsg.ProduceRequest {
		req := produceRequest(topic, 0, h.batch(records(0)))
		rt := &req.Topics[0]
		for p := int32(1); p <= unknown; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, h.batch(records(p))
			if p == corrupt {
				rp.Records[len(rp.Records)-1] ^= 0xff // past the CRC's field: the CRC no longer matches
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		return req
	}
	for round := range int64(2) {
		resp := h.client.request(request(), 9).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != unknown+1 {
			t.Fatalf("request %d: answered %d topics, want 1 with %d partitions", round, len(resp.Topics), unknown+1)
		}
		for i, p := range resp.Topics[0].Partitions {
			if p.Partition != int32(i) {
				t.Fatalf("request %d: answer %d is for partition %d", round, i, p.Partition)
			}
			switch p.Partition {
			case corrupt:
				wantCode(t, "the corrupt batch", p.ErrorCode, kerr.CorruptMessage)
			case unknown:
				wantCode(t, "the unknown partition", p.ErrorCode, kerr.UnknownTopicOrPartition)
			default:
				wantCode(t, "a valid batch", p.ErrorCode, nil)
				if want := round * int64(records(p.Partition)); p.BaseOffset != want {
					t.Fatalf("request %d: partition %d answered base offset %d, want %d", round, p.Partition, p.BaseOffset, want)
				}
			}
		}
	}
}

// TestProduceSpreadOverGoroutinesKeepsAPartitionsOrder sends a request
// wide enough to be appended on several goroutines, with one partition
// named three times: its batches are appended in the request's order, and
// every other partition is answered in place.
func TestProduceSpreadOverGoroutinesKeepsAPartitionsOrder(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "spread"}
	const partitions, twice = 4 * appendWorkerPartitions, 5
	topic := h.topic(partitions, nil)
	req := produceRequest(topic, 0, h.batch(1))
	rt := &req.Topics[0]
	add := func(p int32, records int) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, h.batch(records)
		rt.Partitions = append(rt.Partitions, rp)
	}
	for p := int32(1); p < partitions; p++ {
		add(p, 1)
		if p == twice || p == partitions/2 {
			// The same partition again: two and then three records.
			add(twice, 2+int(p/(partitions/2)))
		}
	}
	resp := h.client.request(req, 9).(*kmsg.ProduceResponse)
	answers := resp.Topics[0].Partitions
	if len(answers) != len(rt.Partitions) {
		t.Fatalf("answered %d partitions, want %d", len(answers), len(rt.Partitions))
	}
	var offsetsOfTwice []int64
	for i, p := range answers {
		if p.Partition != rt.Partitions[i].Partition {
			t.Fatalf("answer %d is for partition %d, want %d", i, p.Partition, rt.Partitions[i].Partition)
		}
		wantCode(t, "a valid batch", p.ErrorCode, nil)
		if p.Partition == twice {
			offsetsOfTwice = append(offsetsOfTwice, p.BaseOffset)
		} else if p.BaseOffset != 0 {
			t.Fatalf("partition %d answered base offset %d, want 0", p.Partition, p.BaseOffset)
		}
	}
	// One record, then two, then three: in order they start at 0, 1 and 3.
	if !slices.Equal(offsetsOfTwice, []int64{0, 1, 3}) {
		t.Fatalf("partition %d's three batches answered base offsets %v, want [0 1 3] (the request's order)", twice, offsetsOfTwice)
	}
}
