package replica

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
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

func FuzzProducerSnapshotFile(f *testing.F) {
	older := encodeProducerSnapshot(snapshotStates(), 10)
	image := snapshotFileImage(1, older, snapshotStride(len(older)))
	both := bytes.Clone(image)
	copy(both, encodeSnapshotSlot(2, encodeProducerSnapshot(newProducerStates(), 20)))
	f.Add(image)
	f.Add(both)
	f.Add(older)
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, file, err := parseProducerSnapshotFile(data)
		if err != nil {
			return
		}
		if file.inPlace && file.seq != valid[0].seq {
			t.Fatalf("the next snapshot follows %d, the newest is %d", file.seq, valid[0].seq)
		}
		for i, s := range valid {
			if i > 0 && s.seq >= valid[i-1].seq {
				t.Fatalf("snapshots %d and %d out of order", valid[i-1].seq, s.seq)
			}
			snapshot := encodeProducerSnapshot(s.states, s.offset)
			if !file.inPlace {
				if !bytes.Equal(snapshot, data) {
					t.Fatal("an earlier release's snapshot that decodes does not encode back to its bytes")
				}
				continue
			}
			slot := encodeSnapshotSlot(s.seq, snapshot)
			if at := slotOffset(s.seq, file.stride); !bytes.Equal(data[at:at+int64(len(slot))], slot) {
				t.Fatalf("snapshot %d does not encode back to its slot's bytes", s.seq)
			}
		}
	})
}

// TestSnapshotPassSharesItsDurableCalls: a first pass over 16 partitions
// creates every snapshot file with one syncfs for the files and one for
// the directories, where a partition at a time took two fsyncs each (and
// a round of its log); the next pass writes each in place with one
// syncfs, or where the disk keeps a journal one fdatasync of it. Where
// the disk keeps a journal the first pass fsyncs each file and
// directory: a syncfs would write every partition's pages at once.
// Without a DiskSync, or where the DiskSync does not share metadata
// syncs, each file is fsynced and the snapshots are the same.
func TestSnapshotPassSharesItsDurableCalls(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                    string
		shared                  bool
		journalBytes            int64
		firstSyncfs, firstFsync int64 // the calls a first pass takes
		inPlaceSyncfs           int64 // the calls a pass in place takes
		inPlaceDatasync         int64
	}{
		{"disk-sync=true", true, 0, 2, 0, 1, 0},
		{"disk-journal", true, 1 << 20, 0, 32, 0, 1},
		{"disk-sync=false", false, 0, 0, 0, 0, 0},
	} {
		shared := c.shared
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var disk *hotlog.DiskSync
			if shared {
				var err error
				if disk, err = hotlog.OpenDiskSync(dir, c.journalBytes); err != nil {
					if c.journalBytes > 0 {
						t.Skipf("no disk journal here: %v", err)
					}
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
			parts[0].manager.snapshotGroup(context.Background(), due)
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
			if shared {
				syncfs, fdatasync, fsync := disk.Calls()
				syncfs, fdatasync, fsync = syncfs-syncfsBefore, fdatasync-fdatasyncBefore, fsync-fsyncBefore
				if syncfs != c.firstSyncfs || fdatasync != 0 || fsync != c.firstFsync {
					t.Fatalf("16 new snapshot files took %d syncfs, %d fdatasync and %d fsync calls, want %d syncfs and %d fsync",
						syncfs, fdatasync, fsync, c.firstSyncfs, c.firstFsync)
				}
			}
			// The next pass writes each snapshot in place, into the same
			// file: one syncfs, no file created or renamed.
			inodes := make([]uint64, len(parts))
			due = due[:0]
			for i, p := range parts {
				inodes[i] = snapshotInode(t, p.dir)
				appendIdempotent(t, p, 100+int64(i), 3)
				if err := p.log.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
				due = append(due, p.dueSnapshot())
			}
			if shared {
				syncfsBefore, fdatasyncBefore, fsyncBefore = disk.Calls()
			}
			parts[0].manager.snapshotGroup(context.Background(), due)
			for i, s := range due {
				if s.err != nil || s.whole {
					t.Fatalf("partition %d: written whole %v, %v", i, s.whole, s.err)
				}
				if _, offset, ok, err := readProducerSnapshot(s.p.dir); !ok || err != nil || offset != 4 {
					t.Fatalf("partition %d: snapshot %v at offset %d (want 4), %v", i, ok, offset, err)
				}
				if ino := snapshotInode(t, s.p.dir); ino != inodes[i] {
					t.Fatalf("partition %d: the snapshot file was replaced (inode %d, was %d)", i, ino, inodes[i])
				}
			}
			if shared {
				syncfs, fdatasync, fsync := disk.Calls()
				syncfs, fdatasync, fsync = syncfs-syncfsBefore, fdatasync-fdatasyncBefore, fsync-fsyncBefore
				if syncfs != c.inPlaceSyncfs || fdatasync != c.inPlaceDatasync || fsync != 0 {
					t.Fatalf("16 snapshots in place took %d syncfs, %d fdatasync and %d fsync calls, want %d syncfs and %d fdatasync",
						syncfs, fdatasync, fsync, c.inPlaceSyncfs, c.inPlaceDatasync)
				}
			}
		})
	}
}

// TestProducerSnapshotFileSlots: a snapshot file holds two snapshots, the
// newest is read first, and a slot torn or damaged anywhere leaves the
// other one; an earlier release's file is read and replaced whole.
func TestProducerSnapshotFileSlots(t *testing.T) {
	t.Parallel()
	older := encodeProducerSnapshot(snapshotStates(), 10)
	newer := encodeProducerSnapshot(newProducerStates(), 20)
	image := snapshotFileImage(1, older, snapshotStride(len(older)))
	valid, file, err := parseProducerSnapshotFile(image)
	if err != nil || len(valid) != 1 || valid[0].offset != 10 || file != (snapshotFile{seq: 1, stride: 4096, inPlace: true}) {
		t.Fatalf("a new file: %+v, %+v, %v", valid, file, err)
	}
	next, slot := file.next(newer)
	if next != (snapshotFile{seq: 2, stride: 4096, inPlace: true}) {
		t.Fatalf("the next snapshot goes to %+v, want slot 0 in place", next)
	}
	both := bytes.Clone(image)
	copy(both[slotOffset(next.seq, next.stride):], slot)
	valid, file, err = parseProducerSnapshotFile(both)
	if err != nil || len(valid) != 2 || valid[0].offset != 20 || valid[1].offset != 10 || file.seq != 2 {
		t.Fatalf("two snapshots: %+v, %+v, %v", valid, file, err)
	}
	// The newer slot written in part over zeros (torn), or with a bit flipped.
	for n := range len(slot) {
		torn := bytes.Clone(image)
		copy(torn, slot[:n])
		if valid, file, err := parseProducerSnapshotFile(torn); err != nil || valid[0].offset != 10 || file.seq != 1 {
			t.Fatalf("the newer slot cut at %d of %d bytes: %+v, %+v, %v; want the older", n, len(slot), valid, file, err)
		}
	}
	for i := range len(slot) * 8 {
		damaged := bytes.Clone(both)
		damaged[i/8] ^= 1 << (i % 8)
		if valid, _, err := parseProducerSnapshotFile(damaged); err != nil || len(valid) != 1 || valid[0].offset != 10 {
			t.Fatalf("the newer slot with bit %d flipped: %+v, %v; want the older alone", i, valid, err)
		}
	}
	// Both slots damaged; a number in the other slot's place; sizes that
	// are not two slots.
	damaged := bytes.Clone(both)
	damaged[20], damaged[4096+20] = damaged[20]^1, damaged[4096+20]^1
	misplaced := make([]byte, 8192)
	copy(misplaced[4096:], slot)
	for name, data := range map[string][]byte{
		"both damaged": damaged, "misplaced": misplaced, "one slot": image[:4096],
		"odd stride": make([]byte, 2*6000), "empty": nil,
	} {
		if valid, _, err := parseProducerSnapshotFile(data); !errors.Is(err, errCorruptProducerSnapshot) {
			t.Errorf("%s: %+v, %v; want errCorruptProducerSnapshot", name, valid, err)
		}
	}
	// An earlier release's file is read, and replaced whole.
	valid, file, err = parseProducerSnapshotFile(older)
	if err != nil || len(valid) != 1 || valid[0].offset != 10 || file.inPlace {
		t.Fatalf("an earlier release's file: %+v, %+v, %v", valid, file, err)
	}
	// A snapshot that outgrows the slots goes into a file written whole.
	big := newProducerStates()
	for id := range int64(200) {
		big.producers[id] = &producerEntry{batches: make([]producerBatch, producerBatchesKept)}
	}
	data := encodeProducerSnapshot(big, 30)
	if next, _ := (snapshotFile{seq: 2, stride: 4096, inPlace: true}).next(data); next.inPlace || next.stride < int64(len(data)+producerSnapshotSlotFixed) || next.seq != 3 {
		t.Fatalf("a snapshot of %d bytes after slots of 4096 goes to %+v", len(data), next)
	}
}

// TestTornSnapshotSlotLeavesTheOneBefore: a crash that tears the slot a
// pass was writing in place leaves the snapshot before it, and the
// partition opened again knows every producer's last batch from it and
// the batches after it.
func TestTornSnapshotSlotLeavesTheOneBefore(t *testing.T) {
	t.Parallel()
	dir, topic := t.TempDir(), meta.Topic{ID: uuid.New(), Name: "snapshots", Partitions: 1}
	p := openWithProducer7(t, dir, topic)
	first := p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{first}) // at 3, whole
	appendIdempotent(t, p, 7, 3)
	second := p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{second}) // at 4, in place
	if first.err != nil || second.err != nil || !first.whole || second.whole {
		t.Fatalf("passes: whole %v, %v; %v, %v", first.whole, second.whole, first.err, second.err)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(p.dir, producerSnapshotFile)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The newer slot's first half, as a crash mid-write could leave it.
	at := slotOffset(second.written.seq, second.written.stride)
	if _, err := f.WriteAt(make([]byte, len(second.data)/2), at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, offset, ok, err := readProducerSnapshot(p.dir); !ok || err != nil || offset != 3 {
		t.Fatalf("after the tear: snapshot at %d (%v, %v), want the one at 3", offset, ok, err)
	}
	again := openSnapshotTopic(t, dir, topic, []int32{0}, nil)[0]
	again.appendMu.Lock()
	batches := again.appendMu.producers.producers[7].batches
	file := again.appendMu.snapshotFile
	again.appendMu.Unlock()
	if last := batches[len(batches)-1]; last.lastSequence != 3 || last.baseOffset != 3 {
		t.Fatalf("producer 7's last batch after the restart: %+v, want sequence 3 at offset 3", last)
	}
	if file != (snapshotFile{seq: first.written.seq, stride: first.written.stride, inPlace: true}) {
		t.Fatalf("the next snapshot follows %+v, want the one left, %+v", file, first.written)
	}
}

// TestSnapshotFileNotTrustedIsWrittenWhole: a file whose newest snapshot
// does not fit the log, or that vanished behind the broker's back, gets
// no snapshot in place: the next is written whole, so no slot of the old
// file is left to be loaded after a crash.
func TestSnapshotFileNotTrustedIsWrittenWhole(t *testing.T) {
	t.Parallel()
	dir, topic := t.TempDir(), meta.Topic{ID: uuid.New(), Name: "snapshots", Partitions: 1}
	p := openWithProducer7(t, dir, topic)
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	past := encodeProducerSnapshot(snapshotStates(), 100) // past the log end, 3
	if err := os.WriteFile(filepath.Join(p.dir, producerSnapshotFile), snapshotFileImage(4, past, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	p = openSnapshotTopic(t, dir, topic, []int32{0}, nil)[0]
	appendIdempotent(t, p, 7, 3)
	s := p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{s})
	if valid, _, err := readProducerSnapshotFile(p.dir); s.err != nil || !s.whole || err != nil || len(valid) != 1 || valid[0].offset != 4 {
		t.Fatalf("after a snapshot past the log end: written whole %v (%v); file %+v, %v", s.whole, s.err, valid, err)
	}
	if err := os.Remove(filepath.Join(p.dir, producerSnapshotFile)); err != nil {
		t.Fatal(err)
	}
	appendIdempotent(t, p, 7, 4)
	s = p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{s})
	if s.err == nil {
		t.Fatal("a snapshot in place into a file that is gone reported no error")
	}
	s = p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{s})
	if _, offset, ok, err := readProducerSnapshot(p.dir); s.err != nil || !s.whole || !ok || err != nil || offset != 5 {
		t.Fatalf("the pass after: written whole %v (%v); snapshot at %d (%v, %v), want 5", s.whole, s.err, offset, ok, err)
	}
}

// TestTruncationAfterAWriteInPlaceKeepsItsNumber: a truncation between a
// pass's write in place and its end that leaves the file (nothing in it
// past the cut) leaves the slot just written as the newest, so the next
// snapshot goes into the other slot rather than over it.
func TestTruncationAfterAWriteInPlaceKeepsItsNumber(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(4) {
		appendIdempotent(t, p, 7, seq)
		if seq == 2 {
			p.manager.snapshotGroup(context.Background(), []*dueSnapshot{p.dueSnapshot()}) // at 3, whole
		}
	}
	s := p.dueSnapshot() // at 4
	f, err := p.writeSnapshot(s)
	if err != nil || s.whole {
		t.Fatalf("written whole %v: %v", s.whole, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	appendIdempotent(t, p, 7, 4)
	follower := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := p.setRole(roleOf(follower)); err != nil {
		t.Fatal(err)
	}
	if err := p.truncateTo(2, 4); err != nil {
		t.Fatal(err)
	}
	p.snapshotted(s)
	p.appendMu.Lock()
	file := p.appendMu.snapshotFile
	p.appendMu.Unlock()
	if file != s.written {
		t.Fatalf("after the truncation the next snapshot follows %+v, want the one written, %+v", file, s.written)
	}
}

// TestInstallingAWholeFileTakesItsStride: once a file written whole, of a
// stride of its own, is renamed in place, the partition writes by that
// stride, and in place only once the rename is known durable.
func TestInstallingAWholeFileTakesItsStride(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0}, nil)[0]
	appendIdempotent(t, p, 7, 0)
	s := p.dueSnapshot()
	s.written, s.whole = snapshotFile{seq: 5, stride: 8192}, true
	tmp := filepath.Join(p.dir, producerSnapshotTemporary)
	if err := os.WriteFile(tmp, snapshotFileImage(5, s.data, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.installSnapshot(tmp, s); err != nil {
		t.Fatal(err)
	}
	p.appendMu.Lock()
	file := p.appendMu.snapshotFile
	p.appendMu.Unlock()
	if file != (snapshotFile{seq: 5, stride: 8192}) {
		t.Fatalf("after the rename the next snapshot follows %+v, want number 5 of stride 8192, not in place", file)
	}
}

// TestTruncationBelowTheNewerSlotRemovesTheFile: after a crash that tore
// the newer slot the older one would be loaded, so a truncation below the
// newer slot's offset removes the file even though the older one fits,
// and the next snapshot writes the file whole again.
func TestTruncationBelowTheNewerSlotRemovesTheFile(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(3) {
		appendIdempotent(t, p, 7, seq)
	}
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{p.dueSnapshot()}) // at 3
	appendIdempotent(t, p, 7, 3)
	appendIdempotent(t, p, 7, 4)
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{p.dueSnapshot()}) // at 5, in place
	follower := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := p.setRole(roleOf(follower)); err != nil {
		t.Fatal(err)
	}
	if err := p.truncateTo(2, 5); err != nil {
		t.Fatal(err) // at the log end: nothing cut, the file stays
	}
	if valid, _, err := readProducerSnapshotFile(p.dir); err != nil || len(valid) != 2 {
		t.Fatalf("after a truncation that cut nothing: %+v, %v; want both snapshots", valid, err)
	}
	if err := p.truncateTo(2, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, producerSnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the snapshot file is there after a truncation below its newer snapshot: %v", err)
	}
	leader := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 3, PartitionEpoch: 3}
	if _, err := p.setRole(roleOf(leader)); err != nil {
		t.Fatal(err)
	}
	appendIdempotent(t, p, 9, 0)
	s := p.dueSnapshot()
	p.manager.snapshotGroup(context.Background(), []*dueSnapshot{s})
	if s.err != nil || !s.whole {
		t.Fatalf("the snapshot after the truncation: whole %v, %v; want a new file", s.whole, s.err)
	}
	if _, offset, ok, err := readProducerSnapshot(p.dir); !ok || err != nil || offset != 5 {
		t.Fatalf("snapshot at %d (%v, %v), want 5", offset, ok, err)
	}
}

// TestTruncationRemovesTheSnapshotPastIt: a follower's log cut back below
// its snapshot may grow past the snapshot's offset again with other
// batches, so the truncation removes the snapshot, and a pass that encoded
// the state before the truncation does not put it back.
func TestTruncationRemovesTheSnapshotPastIt(t *testing.T) {
	t.Parallel()
	p := snapshottedAt3(t)
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
	refusesToInstall(t, p, stale, "the truncation")
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

// openWithProducer7 opens partition 0 of topic, a sole replica, in dir,
// and appends producer 7's sequences 0 to 2 (offsets 0 to 2).
func openWithProducer7(t *testing.T, dir string, topic meta.Topic) *Partition {
	t.Helper()
	p := openSnapshotTopic(t, dir, topic, []int32{0}, nil)[0]
	for seq := range int32(3) {
		appendIdempotent(t, p, 7, seq)
	}
	return p
}

// readProducerSnapshot returns the newest snapshot of dir's file; ok is
// false when there is none.
func readProducerSnapshot(dir string) (s *producerStates, offset int64, ok bool, err error) {
	valid, _, err := readProducerSnapshotFile(dir)
	if err != nil || len(valid) == 0 {
		return nil, 0, false, err
	}
	return valid[0].states, valid[0].offset, true, nil
}

// snapshotInode is the inode number of dir's snapshot file.
func snapshotInode(t *testing.T, dir string) uint64 {
	t.Helper()
	info, err := os.Stat(filepath.Join(dir, producerSnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

// openSnapshotPartitions opens n partitions of a topic led by broker 0
// with replicas, through a Manager that is not started (disk may be nil:
// each log then fdatasyncs its own files).
func openSnapshotPartitions(t *testing.T, dir string, n int32, replicas []int32, disk *hotlog.DiskSync) []*Partition {
	t.Helper()
	return openSnapshotTopic(t, dir, meta.Topic{ID: uuid.New(), Name: "snapshots", Partitions: n}, replicas, disk)
}

// openSnapshotTopic is openSnapshotPartitions of topic, so a test can open
// the same topic's partitions again.
func openSnapshotTopic(t *testing.T, dir string, topic meta.Topic, replicas []int32, disk *hotlog.DiskSync) []*Partition {
	t.Helper()
	m, err := NewManager(Config{BrokerID: 0, DataDir: dir, ProducerStateScanBytes: 1 << 20, SegmentFiles: 64, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: modelMetadata{}, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if disk != nil {
		m.disk.Store(disk)
	}
	parts := make([]*Partition, topic.Partitions)
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
	batch, err := record.ValidateProduced(raw, p.ProduceOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append([]record.Batch{batch}, AcksLeader); err != nil {
		t.Fatal(err)
	}
}

// TestResetRemovesTheSnapshot: a log restarted empty elsewhere (a follower
// at its leader's log start, a new leader at its bucket's end) keeps no
// snapshot of the log that went: one at an offset the new log reaches
// again would be loaded after a restart with the old log's producers, and
// a pass that encoded the old state before the reset does not put it back.
func TestResetRemovesTheSnapshot(t *testing.T) {
	t.Parallel()
	p := snapshottedAt3(t)
	stale := p.dueSnapshot()
	p.appendMu.Lock()
	err := p.resetLocked(1, nil)
	p.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, producerSnapshotFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the snapshot at 3 is still there after the log restarted at 1: %v", err)
	}
	refusesToInstall(t, p, stale, "the reset")
}

// refusesToInstall writes stale's state into the temporary file, as a pass
// would, checks that p refuses to install it, the state having been
// encoded before what (errTruncatedSinceSnapshot), and removes the file.
func refusesToInstall(t *testing.T, p *Partition, stale *dueSnapshot, what string) {
	t.Helper()
	tmp := filepath.Join(p.dir, producerSnapshotTemporary)
	if err := os.WriteFile(tmp, stale.data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.installSnapshot(tmp, stale); !errors.Is(err, errTruncatedSinceSnapshot) {
		t.Fatalf("installing a state encoded before %s: %v", what, err)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
}

// snapshottedAt3 opens a partition of two replicas (broker 1 never
// fetches, so its high watermark stays at 0 and a truncation is allowed),
// appends three records of one idempotent producer and snapshots them.
func snapshottedAt3(t *testing.T) *Partition {
	t.Helper()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(3) {
		appendIdempotent(t, p, 7, seq)
	}
	snapshotPass(context.Background(), nil, []*dueSnapshot{p.dueSnapshot()})
	if _, offset, ok, err := readProducerSnapshot(p.dir); !ok || err != nil || offset != 3 {
		t.Fatalf("snapshot at %d (%v, %v), want 3", offset, ok, err)
	}
	return p
}
