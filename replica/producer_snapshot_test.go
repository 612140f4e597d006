package replica

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
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
