package ingest

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestRetriedBatchGetsItsLogAppendTime: on a LogAppendTime topic a
// retried idempotent batch is answered with the offset and the append
// time the broker gave the original, not with the producer's own
// timestamp.
func TestRetriedBatchGetsItsLogAppendTime(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "append-time"}
	topic := h.topic(1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	const clientTime = 1_000_000_000_000 // 2001: far from now
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: clientTime, ProducerID: 4242, ProducerEpoch: 0, BaseSequence: 0},
		[]record.Record{{Value: []byte("once")}})
	if err != nil {
		t.Fatal(err)
	}
	send := func() kmsg.ProduceResponseTopicPartition {
		resp := h.client.request(produceRequest(topic, 0, append([]byte(nil), batch...)), 9).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, "produce", p.ErrorCode, nil)
		return p
	}
	first := send()
	if first.LogAppendTime < time.Now().Add(-time.Hour).UnixMilli() {
		t.Fatalf("first append answered LogAppendTime %d, want the broker's clock", first.LogAppendTime)
	}
	retry := send()
	if retry.BaseOffset != first.BaseOffset || retry.LogAppendTime != first.LogAppendTime {
		t.Fatalf("retry answered offset %d, append time %d; the original got offset %d, append time %d",
			retry.BaseOffset, retry.LogAppendTime, first.BaseOffset, first.LogAppendTime)
	}
}
