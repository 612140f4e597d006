package ingest

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// snapshotStates is a producer state with a few producers of every shape.
func snapshotStates() *producerStates {
	s := newProducerStates()
	s.producers[7] = &producerEntry{epoch: 3, lastAppendMillis: 1_700_000_000_000}
	s.producers[1<<40] = &producerEntry{epoch: 0, lastAppendMillis: 1_700_000_000_001, batches: []producerBatch{
		{firstSequence: 0, lastSequence: 4, baseOffset: 10, timestamp: 1},
		{firstSequence: 5, lastSequence: 5, baseOffset: 20, timestamp: -1},
	}}
	s.producers[2] = &producerEntry{epoch: 32767, lastAppendMillis: 5}
	for i := range producerBatchesKept {
		s.producers[2].batches = append(s.producers[2].batches, producerBatch{firstSequence: int32(2147483640 + i), lastSequence: int32(2147483640 + i), baseOffset: int64(100 + i)})
	}
	return s
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	want := snapshotStates()
	data := encodeProducerSnapshot(want, 12345)
	if again := encodeProducerSnapshot(want, 12345); !bytes.Equal(again, data) {
		t.Fatal("encoding the same state twice gave different bytes")
	}
	got, offset, err := decodeProducerSnapshot(data)
	if err != nil || offset != 12345 || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded offset %d, err %v, state %+v; want %+v", offset, err, got, want)
	}
	empty, offset, err := decodeProducerSnapshot(encodeProducerSnapshot(newProducerStates(), 0))
	if err != nil || offset != 0 || len(empty.producers) != 0 {
		t.Fatalf("empty snapshot: %v, %d, %+v", err, offset, empty)
	}
}

// Every truncation and every single bit flip of a snapshot is refused.
func TestProducerSnapshotRefusesDamage(t *testing.T) {
	t.Parallel()
	data := encodeProducerSnapshot(snapshotStates(), 99)
	for n := range len(data) {
		if _, _, err := decodeProducerSnapshot(data[:n]); !errors.Is(err, errCorruptProducerSnapshot) {
			t.Fatalf("snapshot cut to %d of %d bytes: %v, want errCorruptProducerSnapshot", n, len(data), err)
		}
	}
	for i := range len(data) * 8 {
		damaged := bytes.Clone(data)
		damaged[i/8] ^= 1 << (i % 8)
		if _, _, err := decodeProducerSnapshot(damaged); !errors.Is(err, errCorruptProducerSnapshot) {
			t.Fatalf("snapshot with bit %d flipped: %v, want errCorruptProducerSnapshot", i, err)
		}
	}
	if _, _, err := decodeProducerSnapshot(append(bytes.Clone(data), 0)); !errors.Is(err, errCorruptProducerSnapshot) {
		t.Fatalf("snapshot with a trailing byte: %v", err)
	}
}

func FuzzProducerSnapshot(f *testing.F) {
	f.Add(encodeProducerSnapshot(snapshotStates(), 99))
	f.Add(encodeProducerSnapshot(newProducerStates(), 0))
	f.Add([]byte("SPS1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, offset, err := decodeProducerSnapshot(data)
		if err != nil {
			return
		}
		if again := encodeProducerSnapshot(s, offset); !bytes.Equal(again, data) {
			t.Fatalf("a snapshot that decodes does not encode back to its bytes")
		}
	})
}

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

	h.alterTopic(topic.Name, map[string]string{"flush.ms": "1000"}) // reopens the partition
	p, err := b.partitions.get(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !p.periodicFlush {
		t.Fatal("the partition was not reopened")
	}
	if r := send(0); r.ErrorCode != 0 || r.BaseOffset != 3 || p.log.LogEndOffset() != 4 {
		t.Fatalf("retry after the reopen: code %d at %d, log end %d; want the original offset 3 and nothing written", r.ErrorCode, r.BaseOffset, p.log.LogEndOffset())
	}
	if r := send(1); r.ErrorCode != 0 || r.BaseOffset != 4 {
		t.Fatalf("next sequence after the reopen: code %d at %d, want offset 4", r.ErrorCode, r.BaseOffset)
	}
	wantCode(t, "a sequence gap after the reopen", send(5).ErrorCode, kerr.OutOfOrderSequenceNumber)
}
