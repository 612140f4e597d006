package ingest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestProducerStateOutlivesTheScanWindow: with no log tail scanned on open
// (ProducerStateScanBytes 0), a partition reopened still knows its
// idempotent producer from the snapshot its close wrote: the retried batch
// is answered with its original offset and not written again, the next
// sequence is accepted, and a gap is refused.
func TestProducerStateOutlivesTheScanWindow(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *Config) { c.ProducerStateScanBytes = 0 })
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "snapshot"}
	topic := h.topic(1, nil)
	batch := func(sequence int32) []byte {
		b, err := record.Build(record.BuildOptions{ProducerID: 4242, ProducerEpoch: 0, BaseSequence: sequence}, []record.Record{{Value: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send := func(sequence int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		return h.client.request(produceRequest(topic, 0, batch(sequence)), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	h.produce(topic, 3) // another producer's records first
	if p := send(0); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("first idempotent batch: code %d at %d, want offset 3", p.ErrorCode, p.BaseOffset)
	}

	before, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.alterTopic(topic.Name, map[string]string{"flush.ms": "1000"}) // reopens the partition
	p, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p == before {
		t.Fatal("the partition was not reopened")
	}
	if r := send(0); r.ErrorCode != 0 || r.BaseOffset != 3 || p.Log().LogEndOffset() != 4 {
		t.Fatalf("retry after the reopen: code %d at %d, log end %d; want the original offset 3 and nothing written", r.ErrorCode, r.BaseOffset, p.Log().LogEndOffset())
	}
	if r := send(1); r.ErrorCode != 0 || r.BaseOffset != 4 {
		t.Fatalf("next sequence after the reopen: code %d at %d, want offset 4", r.ErrorCode, r.BaseOffset)
	}
	wantCode(t, "a sequence gap after the reopen", send(5).ErrorCode, kerr.OutOfOrderSequenceNumber)
}
