package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
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

// TestSnapshotPassSharesItsDurableCalls: a pass over 16 partitions puts
// every snapshot in place with one syncfs for the files and one for the
// directories, where a partition at a time took two fsyncs each (and a
// round of its log); without a DiskSync, or where the DiskSync does not
// share metadata syncs, each file is fsynced and the snapshots are the
// same.
func TestSnapshotPassSharesItsDurableCalls(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("disk-sync=%v", shared), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var disk *hotlog.DiskSync
			if shared {
				var err error
				if disk, err = hotlog.OpenDiskSync(dir, 0); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { disk.Close() })
				if !disk.Shared() {
					t.Skipf("a syncfs on this file system and kernel may miss a failed write (%v), so a DiskSync fsyncs each file", disk.Errors())
				}
			}
			parts := openSnapshotPartitions(t, dir, 16, []int32{0}, disk)
			var due []*dueSnapshot
			for i, p := range parts {
				for seq := range int32(3) {
					appendIdempotent(t, p, 100+int64(i), seq)
				}
				// The log durable first, so the calls counted are the
				// pass's own.
				if err := p.log.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
				due = append(due, p.dueSnapshot())
			}
			var syncfsBefore, fdatasyncBefore, fsyncBefore int64
			if shared {
				syncfsBefore, fdatasyncBefore, fsyncBefore = disk.Calls()
			}
			snapshotPass(context.Background(), disk, due)
			for i, s := range due {
				if s.err != nil {
					t.Fatalf("partition %d: %v", i, s.err)
				}
				states, offset, ok, err := readProducerSnapshot(s.p.dir)
				if !ok || err != nil || offset != 3 || states.producers[100+int64(i)] == nil {
					t.Fatalf("partition %d: snapshot %v at offset %d (want 3, with its producer), %v", i, ok, offset, err)
				}
				if _, err := os.Stat(filepath.Join(s.p.dir, producerSnapshotTemporary)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("partition %d: the temporary file is left: %v", i, err)
				}
			}
			if !shared {
				return
			}
			syncfs, fdatasync, fsync := disk.Calls()
			syncfs, fdatasync, fsync = syncfs-syncfsBefore, fdatasync-fdatasyncBefore, fsync-fsyncBefore
			if syncfs != 2 || fdatasync != 0 || fsync != 0 {
				t.Fatalf("16 snapshots took %d syncfs, %d fdatasync and %d fsync calls, want 2 syncfs", syncfs, fdatasync, fsync)
			}
		})
	}
}

// TestTruncationRemovesTheSnapshotPastIt: a follower's log cut back below
// its snapshot may grow past the snapshot's offset again with other
// batches, so the truncation removes the snapshot, and a pass that encoded
// the state before the truncation does not put it back.
func TestTruncationRemovesTheSnapshotPastIt(t *testing.T) {
	t.Parallel()
	// Broker 1 never fetches, so the high watermark stays at 0 and the
	// truncation is allowed.
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(3) {
		appendIdempotent(t, p, 7, seq)
	}
	snapshotPass(context.Background(), nil, []*dueSnapshot{p.dueSnapshot()})
	if _, offset, ok, err := readProducerSnapshot(p.dir); !ok || err != nil || offset != 3 {
		t.Fatalf("snapshot at %d (%v, %v), want 3", offset, ok, err)
	}
	appendIdempotent(t, p, 7, 3)
	stale := p.dueSnapshot() // encoded at 4, before the truncation
	follower := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := p.setRole(roleOf(follower)); err != nil {
		t.Fatal(err)
	}
	if err := p.truncateTo(2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, producerSnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the snapshot at 3 is still there after a truncation to 1: %v", err)
	}
	// A truncation before the pass's wait fails the wait; one between the
	// wait and the rename fails the rename.
	tmp := filepath.Join(p.dir, producerSnapshotTemporary)
	if err := os.WriteFile(tmp, stale.data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.installSnapshot(tmp, stale.truncations); !errors.Is(err, errTruncatedSinceSnapshot) {
		t.Fatalf("installing a state encoded before the truncation: %v", err)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	snapshotPass(context.Background(), nil, []*dueSnapshot{stale})
	if stale.err == nil {
		t.Fatal("a pass put in place a state encoded before the truncation")
	}
	for _, name := range []string{producerSnapshotFile, producerSnapshotTemporary} {
		if _, err := os.Stat(filepath.Join(p.dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is there after the pass: %v", name, err)
		}
	}
}

// TestSnapshotPassLeavesAClosedPartitionAlone: a pass runs off the
// Manager's loop, so a partition may close after the pass encoded its
// state; its own close writes a newer snapshot, which the pass's older
// one must not replace (the directory may even belong to a new Partition
// by then), while the other partitions of the group are snapshotted.
func TestSnapshotPassLeavesAClosedPartitionAlone(t *testing.T) {
	t.Parallel()
	parts := openSnapshotPartitions(t, t.TempDir(), 2, []int32{0}, nil)
	m := parts[0].manager
	var due []*dueSnapshot
	for i, p := range parts {
		for seq := range int32(2) {
			appendIdempotent(t, p, 200+int64(i), seq)
		}
		due = append(due, p.dueSnapshot()) // at 2
	}
	closing := parts[1]
	appendIdempotent(t, closing, 201, 2)
	m.closePartition(closing, false) // snapshots at 3
	m.snapshotGroup(context.Background(), due)
	for i, want := range []int64{2, 3} {
		if _, offset, ok, err := readProducerSnapshot(parts[i].dir); !ok || err != nil || offset != want {
			t.Errorf("partition %d: snapshot at %d (%v, %v), want %d", i, offset, ok, err, want)
		}
	}
}

// openSnapshotPartitions opens n partitions of a topic led by broker 0
// with replicas, through a Manager that is not started (disk may be nil:
// each log then fdatasyncs its own files).
func openSnapshotPartitions(t *testing.T, dir string, n int32, replicas []int32, disk *hotlog.DiskSync) []*Partition {
	t.Helper()
	m, err := NewManager(Config{BrokerID: 0, DataDir: dir, ProducerStateScanBytes: 1 << 20, SegmentFiles: 64, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: modelMetadata{}, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if disk != nil {
		m.disk.Store(disk)
	}
	topic := meta.Topic{ID: uuid.New(), Name: "snapshots", Partitions: n}
	parts := make([]*Partition, n)
	for i := range parts {
		p, err := m.openPartition(topic, meta.Partition{Topic: topic.Name, Partition: int32(i), Replicas: replicas, ISR: replicas, Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !p.closed() {
				p.close()
			}
		})
		parts[i] = p
	}
	return parts
}

// appendIdempotent appends one record of producer id at sequence seq,
// acknowledged by the leader alone, without waiting for it.
func appendIdempotent(t *testing.T, p *Partition, id int64, seq int32) {
	t.Helper()
	raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: id, BaseSequence: seq}, []record.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := record.ValidateProduced(raw, p.ProduceOptions(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append([]record.Batch{batch}, AcksLeader); err != nil {
		t.Fatal(err)
	}
}
