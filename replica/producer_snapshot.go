package replica

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"

	"github.com/stratalog/strata/hotlog"
)

// castagnoli is the CRC-32C table the snapshot's checksum uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Producer state snapshots, Kafka's <offset>.snapshot files in spirit: a
// partition writes its idempotent producer state to producer-state.snapshot
// in its directory when it closes and, while producers write to it, every
// producerSnapshotInterval. On open it loads the snapshot and reads only
// the batch headers after it, instead of guessing from the log's tail, so
// a producer that was quiet for more than ProducerStateScanBytes of other
// producers' data is still known after a restart and its retries are still
// answered as retries.
//
// A snapshot is taken at an offset the log has made durable (at close, or
// after a Sync), so after a crash the log holds at least that offset; one
// that is past the log end, below the log start, or does not decode is
// ignored and the tail is scanned as without one.
//
// The periodic snapshots of every partition are written in one pass whose
// system calls for durability do not grow with the partitions
// (snapshotPass). One partition at a time (a Sync, an fsync of the file
// and one of the directory each), 4,000 partitions took 9.3 s of the
// Manager's loop, which also applies metadata changes, under produce load
// (2.8-3.2 s idle); in one pass 1.3 s (1.05-1.14 s idle; 2.2-2.4 s where
// the DiskSync fsyncs each file). The passes run on a goroutine of their
// own (Manager.snapshots), in groups that take turns with closing
// partitions (Manager.snapshotGroup).
//
// A snapshot is written in place, into the slot of the file that does not
// hold the newest one, so a pass creates, renames and deletes no file:
// at 4,000 partitions under produce load, creating each pass's temporary
// files took 2.6-4.0 s and renaming them 0.4-1.9 s more, while producers'
// latency rose for the whole pass (docs/bench.md). A slot torn by a crash
// fails its checksum, and the other slot, the snapshot before, is loaded.
// The file is written whole (a temporary file, fsynced, renamed, the
// directory fsynced) only when there is none (a new partition, or a
// truncation removed it), when no slot holds a snapshot that decodes,
// when the newest does not fit the log, when it is an earlier release's
// (SPS1 alone, which that release's successors read and replace), when a
// snapshot outgrows its slots, and after a write in place failed.
//
// A follower's truncation below the offset of either slot's snapshot
// removes the file: the log may grow past that offset again with other
// batches, whose producers the snapshot would then be taken for after a
// crash.
//
// Format (big-endian): two slots of the same size (the stride, a power
// of two of at least 4 KiB), the file twice that:
//
//	"SPSS"                                 slot magic
//	number           uint64                the snapshot's; even in slot 0, odd in slot 1
//	length           uint32                of the snapshot
//	snapshot         [length]byte          as below
//	crc              uint32                CRC-32C of the slot's bytes before it
//	unused to the stride                   zeros, or a longer snapshot's bytes before
//
// A snapshot:
//
//	"SPS1"                                 magic and version
//	offset           int64                 the log end the state covers
//	producers        uint32
//	producers × {
//	  producer id    int64
//	  epoch          int16
//	  last append    int64                 Unix ms, for expiry
//	  batches        uint8                 at most producerBatchesKept
//	  batches × { first sequence int32, last sequence int32, base offset int64, timestamp int64 }
//	}
//	crc              uint32                CRC-32C of everything before it
const (
	producerSnapshotFile      = "producer-state.snapshot"
	producerSnapshotTemporary = producerSnapshotFile + temporarySuffix
	producerSnapshotMagic     = "SPS1"
	// producerSnapshotHeader is magic, offset and the producer count.
	producerSnapshotHeader    = 4 + 8 + 4
	producerSnapshotEntry     = 8 + 2 + 8 + 1
	producerSnapshotBatch     = 4 + 4 + 8 + 8
	producerSnapshotSlotMagic = "SPSS"
	// producerSnapshotSlotFixed is a slot's bytes beside its snapshot:
	// magic, number, length, CRC.
	producerSnapshotSlotFixed = 4 + 8 + 4 + 4
	producerSnapshotMinStride = 4 << 10
)

// errCorruptProducerSnapshot is why a snapshot file is ignored.
var errCorruptProducerSnapshot = errors.New("replica: corrupt producer state snapshot")

// encodeProducerSnapshot encodes s as the state at offset, producers in id
// order so the same state always gives the same bytes.
func encodeProducerSnapshot(s *producerStates, offset int64) []byte {
	ids := make([]int64, 0, len(s.producers))
	size := producerSnapshotHeader + 4
	for id, e := range s.producers {
		ids = append(ids, id)
		size += producerSnapshotEntry + len(e.batches)*producerSnapshotBatch
	}
	slices.Sort(ids)
	b := make([]byte, 0, size)
	b = append(b, producerSnapshotMagic...)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastAppendMillis))
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = binary.BigEndian.AppendUint32(b, uint32(pb.firstSequence))
			b = binary.BigEndian.AppendUint32(b, uint32(pb.lastSequence))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.baseOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.timestamp))
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeProducerSnapshot decodes a snapshot, refusing anything that is not
// exactly one well-formed snapshot. It allocates nothing the data's own
// length does not bound.
func decodeProducerSnapshot(data []byte) (*producerStates, int64, error) {
	corrupt := func(format string, args ...any) (*producerStates, int64, error) {
		return nil, 0, fmt.Errorf("%w: %s", errCorruptProducerSnapshot, fmt.Sprintf(format, args...))
	}
	if len(data) < producerSnapshotHeader+4 || string(data[:4]) != producerSnapshotMagic {
		return corrupt("%d bytes without the %q header", len(data), producerSnapshotMagic)
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return corrupt("checksum mismatch")
	}
	offset := int64(binary.BigEndian.Uint64(body[4:]))
	count := binary.BigEndian.Uint32(body[12:])
	rest := body[producerSnapshotHeader:]
	if offset < 0 || uint64(count) > uint64(len(rest)/producerSnapshotEntry) {
		return corrupt("offset %d, %d producers in %d bytes", offset, count, len(rest))
	}
	s := newProducerStates()
	for range count {
		if len(rest) < producerSnapshotEntry {
			return corrupt("truncated producer entry")
		}
		id := int64(binary.BigEndian.Uint64(rest))
		e := &producerEntry{
			epoch:            int16(binary.BigEndian.Uint16(rest[8:])),
			lastAppendMillis: int64(binary.BigEndian.Uint64(rest[10:])),
		}
		n := int(rest[18])
		rest = rest[producerSnapshotEntry:]
		if n > producerBatchesKept || len(rest) < n*producerSnapshotBatch {
			return corrupt("producer %d with %d batches in %d bytes", id, n, len(rest))
		}
		if _, dup := s.producers[id]; dup || id < 0 {
			return corrupt("producer id %d repeated or negative", id)
		}
		for range n {
			e.batches = append(e.batches, producerBatch{
				firstSequence: int32(binary.BigEndian.Uint32(rest)),
				lastSequence:  int32(binary.BigEndian.Uint32(rest[4:])),
				baseOffset:    int64(binary.BigEndian.Uint64(rest[8:])),
				timestamp:     int64(binary.BigEndian.Uint64(rest[16:])),
			})
			rest = rest[producerSnapshotBatch:]
		}
		s.producers[id] = e
	}
	if len(rest) != 0 {
		return corrupt("%d bytes after the last producer", len(rest))
	}
	return s, offset, nil
}

// snapshotFile is what a partition knows of its snapshot file: the number
// of the newest snapshot in it and its stride. inPlace says the next
// snapshot may go into the other slot; where it is false the next one
// replaces the file whole.
type snapshotFile struct {
	seq     uint64
	stride  int64
	inPlace bool
}

// next returns where the snapshot after f's newest goes, and the slot
// holding data as it: in place where f has slots and data fits one, else
// whole, into a file of a stride that fits it.
func (f snapshotFile) next(data []byte) (snapshotFile, []byte) {
	next := snapshotFile{seq: f.seq + 1, stride: f.stride, inPlace: f.inPlace}
	slot := encodeSnapshotSlot(next.seq, data)
	if !f.inPlace || int64(len(slot)) > f.stride {
		next.stride, next.inPlace = snapshotStride(len(data)), false
	}
	return next, slot
}

// slotOffset is where snapshot seq goes in a file of stride.
func slotOffset(seq uint64, stride int64) int64 { return int64(seq%2) * stride }

// snapshotStride is the stride of a file written whole for a snapshot of
// n bytes: room for it with the slot's fields, at least 4 KiB so a slot
// shares no page with the other, in powers of two so a growing producer
// count rewrites the file seldom.
func snapshotStride(n int) int64 {
	stride := int64(producerSnapshotMinStride)
	for stride < int64(producerSnapshotSlotFixed+n) {
		stride *= 2
	}
	return stride
}

// encodeSnapshotSlot returns the slot holding snapshot as number seq,
// without the zeros that fill it to the stride.
func encodeSnapshotSlot(seq uint64, snapshot []byte) []byte {
	b := make([]byte, 0, producerSnapshotSlotFixed+len(snapshot))
	b = append(b, producerSnapshotSlotMagic...)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint32(b, uint32(len(snapshot)))
	b = append(b, snapshot...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// snapshotFileImage is a whole file of stride with snapshot number seq in
// its slot and the other slot zeros.
func snapshotFileImage(seq uint64, snapshot []byte, stride int64) []byte {
	image := make([]byte, 2*stride)
	copy(image[slotOffset(seq, stride):], encodeSnapshotSlot(seq, snapshot))
	return image
}

// snapshotInFile is one valid snapshot of a file.
type snapshotInFile struct {
	states *producerStates
	offset int64
	seq    uint64
}

// parseProducerSnapshotFile returns the valid snapshots of a snapshot
// file, newest first, and where the next one goes. An earlier release's
// file (one snapshot, SPS1) is read as the only one, with no slots to
// write in place; a slot never written (zeros) or torn is skipped; a file
// with no valid snapshot is an error.
func parseProducerSnapshotFile(data []byte) ([]snapshotInFile, snapshotFile, error) {
	if string(data[:min(len(data), 4)]) == producerSnapshotMagic {
		states, offset, err := decodeProducerSnapshot(data)
		if err != nil {
			return nil, snapshotFile{}, err
		}
		return []snapshotInFile{{states: states, offset: offset}}, snapshotFile{}, nil
	}
	stride := int64(len(data) / 2)
	if len(data)%2 != 0 || stride < producerSnapshotMinStride || stride&(stride-1) != 0 {
		return nil, snapshotFile{}, fmt.Errorf("%w: %d bytes, not two slots", errCorruptProducerSnapshot, len(data))
	}
	var valid []snapshotInFile
	var errs [2]error
	for i := range int64(2) {
		s, err := decodeSnapshotSlot(data[i*stride:(i+1)*stride], i)
		if err != nil {
			errs[i] = fmt.Errorf("slot %d: %w", i, err)
			continue
		}
		valid = append(valid, s)
	}
	if len(valid) == 0 {
		return nil, snapshotFile{}, fmt.Errorf("%w; %w", errs[0], errs[1])
	}
	slices.SortFunc(valid, func(a, b snapshotInFile) int { return cmp.Compare(b.seq, a.seq) })
	return valid, snapshotFile{seq: valid[0].seq, stride: stride, inPlace: true}, nil
}

// decodeSnapshotSlot decodes slot i, refusing one never written, torn, or
// whose number does not belong in it.
func decodeSnapshotSlot(slot []byte, i int64) (snapshotInFile, error) {
	if string(slot[:4]) != producerSnapshotSlotMagic {
		return snapshotInFile{}, fmt.Errorf("%w: no slot magic", errCorruptProducerSnapshot)
	}
	seq := binary.BigEndian.Uint64(slot[4:])
	n := int64(binary.BigEndian.Uint32(slot[12:]))
	end := producerSnapshotSlotFixed - 4 + n
	switch {
	case end+4 > int64(len(slot)):
		return snapshotInFile{}, fmt.Errorf("%w: a snapshot of %d bytes in a slot of %d", errCorruptProducerSnapshot, n, len(slot))
	case binary.BigEndian.Uint32(slot[end:]) != crc32.Checksum(slot[:end], castagnoli):
		return snapshotInFile{}, fmt.Errorf("%w: slot checksum mismatch", errCorruptProducerSnapshot)
	case int64(seq%2) != i:
		return snapshotInFile{}, fmt.Errorf("%w: snapshot %d in slot %d", errCorruptProducerSnapshot, seq, i)
	}
	states, offset, err := decodeProducerSnapshot(slot[producerSnapshotSlotFixed-4 : end])
	return snapshotInFile{states: states, offset: offset, seq: seq}, err
}

// readProducerSnapshotFile reads and parses dir's snapshot file; there
// being none is no error.
func readProducerSnapshotFile(dir string) ([]snapshotInFile, snapshotFile, error) {
	data, err := os.ReadFile(filepath.Join(dir, producerSnapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, snapshotFile{}, nil
	}
	if err != nil {
		return nil, snapshotFile{}, err
	}
	return parseProducerSnapshotFile(data)
}

// renameSnapshot renames the temporary file tmp over dir's snapshot.
func renameSnapshot(dir, tmp string) error {
	return os.Rename(tmp, filepath.Join(dir, producerSnapshotFile))
}

// removeProducerSnapshotAfter removes dir's snapshot file if either of its
// snapshots is at an offset past end, durably, and says whether it did: a
// log truncated to end may grow past that offset again with other
// batches, and after a crash the snapshot would then be taken for their
// state (Kafka deletes the snapshots above a truncation). A file with no
// snapshot that decodes is left: Open ignores it, and the next snapshot
// replaces it whole. The directory is synced even when there is nothing
// to remove, since a removal whose sync failed before (the truncation
// then failed and is retried) is not durable yet.
func removeProducerSnapshotAfter(dir string, end int64) (removed bool, err error) {
	valid, _, err := readProducerSnapshotFile(dir)
	if err != nil && !errors.Is(err, errCorruptProducerSnapshot) {
		return false, err
	}
	if slices.ContainsFunc(valid, func(s snapshotInFile) bool { return s.offset > end }) {
		if err := os.Remove(filepath.Join(dir, producerSnapshotFile)); err != nil {
			return false, err
		}
		removed = true
	}
	return removed, syncDir(dir)
}

// snapshotPassFiles bounds the files a snapshot pass holds open at once,
// and so the descriptors it takes beside the partitions' own: a pass of
// more partitions goes on in groups of this many.
const snapshotPassFiles = 512

// dueSnapshot is one partition's snapshot in a snapshot pass.
type dueSnapshot struct {
	p                    *Partition
	changes, truncations uint64 // the partition's appendMu counts it covers
	data                 []byte
	synced               hotlog.Ack // the log's sync up to the snapshot's offset
	// written is where the pass wrote it: in place into the file (whole
	// false), or whole into the temporary file.
	written snapshotFile
	whole   bool
	err     error
}

// errTruncatedSinceSnapshot is why a snapshot pass leaves a partition's
// snapshot as it was: the next pass snapshots the state after the
// truncation.
var errTruncatedSinceSnapshot = errors.New("replica: the log was truncated since the producer state was encoded")

// snapshotPass writes the snapshots of due, each in place where its file
// takes it (Partition.writeSnapshot), with the durability calls shared:
// every log's sync was registered before the pass (the logs' rounds
// coalesce, hotlog.Log.ExpectSync); the files are written and made
// durable together (syncWritten: one syncfs for all of them on the data
// directory's file system, or where the disk keeps a journal, one
// fdatasync of it for the slots written in place and an fsync of each
// file written whole). A snapshot written whole then has its temporary
// file renamed, and those directories are made durable together (one
// syncfs, or under a journal an fsync each). A partition whose step fails keeps its old snapshot and gets
// the error. disk may be nil: every file is then fsynced on its own.
func snapshotPass(ctx context.Context, disk *hotlog.DiskSync, due []*dueSnapshot) {
	for _, s := range due {
		s.err = s.synced.Wait(ctx)
	}
	files := make([]*os.File, len(due))
	for i, s := range due {
		if s.err == nil {
			files[i], s.err = s.p.writeSnapshot(s)
		}
	}
	syncWritten(disk, due, files)
	dirs := make([]*os.File, len(due))
	for i, s := range due {
		if files[i] == nil {
			continue
		}
		name := files[i].Name()
		if err := files[i].Close(); s.err == nil {
			s.err = err
		}
		if !s.whole {
			continue
		}
		if s.err == nil {
			s.err = s.p.installSnapshot(name, s)
		}
		if s.err != nil {
			if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.err = errors.Join(s.err, err)
			}
			continue
		}
		dirs[i], s.err = os.Open(s.p.dir)
	}
	syncEach(disk, due, dirs)
	for i, s := range due {
		if dirs[i] != nil {
			if err := dirs[i].Close(); s.err == nil {
				s.err = err
			}
		}
	}
}

// createWritten creates path, truncated, with data in it, and returns it
// open.
func createWritten(path string, data []byte) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	return f, nil
}

// syncWritten makes the files a pass wrote durable: each temporary file
// whole (syncEach), each slot written in place by its range
// (DiskSync.SyncWrites: through the disk's journal where it keeps one, no
// syncfs). files[i] belongs to due[i]; nil ones are skipped.
func syncWritten(disk *hotlog.DiskSync, due []*dueSnapshot, files []*os.File) {
	temporaries := make([]*os.File, len(files))
	var which []int
	var slots []hotlog.FileWrite
	for i, f := range files {
		switch {
		case f == nil || due[i].err != nil:
		case due[i].whole:
			temporaries[i] = f
		default:
			which = append(which, i)
			slots = append(slots, hotlog.FileWrite{File: f, Position: slotOffset(due[i].written.seq, due[i].written.stride), Len: producerSnapshotSlotFixed + len(due[i].data)})
		}
	}
	syncEach(disk, due, temporaries)
	var errs []error
	if disk != nil {
		errs = disk.SyncWrites(slots)
	} else {
		errs = make([]error, len(slots))
		for j, w := range slots {
			errs[j] = w.File.Sync()
		}
	}
	for j, i := range which {
		if errs[j] != nil {
			due[i].err = fmt.Errorf("fsync %s: %w", files[i].Name(), errs[j])
		}
	}
}

// syncEach makes the files of the snapshots still without an error durable,
// with disk's SyncAll or else an fsync each, and sets each failure on its
// snapshot. files[i] belongs to due[i]; nil ones are skipped.
func syncEach(disk *hotlog.DiskSync, due []*dueSnapshot, files []*os.File) {
	var which []int
	var open []*os.File
	for i, f := range files {
		if f != nil && due[i].err == nil {
			which, open = append(which, i), append(open, f)
		}
	}
	var errs []error
	if disk != nil {
		errs = disk.SyncAll(open)
	} else {
		errs = make([]error, len(open))
		for j, f := range open {
			errs[j] = f.Sync()
		}
	}
	for j, i := range which {
		if errs[j] != nil {
			due[i].err = fmt.Errorf("fsync %s: %w", open[j].Name(), errs[j])
		}
	}
}
