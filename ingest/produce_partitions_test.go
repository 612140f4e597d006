package ingest

import (
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
