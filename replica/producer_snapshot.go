package replica

import (
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
// the DiskSync fsyncs each file). The passes now run on a goroutine of
// their own (Manager.snapshots), in groups that take turns with closing
// partitions (Manager.snapshotGroup).
//
// A follower's truncation below the snapshot's offset removes it: the log
// may grow past that offset again with other batches, whose producers the
// snapshot would then be taken for after a crash.
//
// Format (big-endian), replaced atomically (tmp file, fsync, rename, fsync
// directory):
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
	producerSnapshotTemporary = producerSnapshotFile + ".tmp"
	producerSnapshotMagic     = "SPS1"
	// producerSnapshotHeader is magic, offset and the producer count.
	producerSnapshotHeader = 4 + 8 + 4
	producerSnapshotEntry  = 8 + 2 + 8 + 1
	producerSnapshotBatch  = 4 + 4 + 8 + 8
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

// writeProducerSnapshot replaces dir's snapshot with data, atomically.
func writeProducerSnapshot(dir string, data []byte) error {
	tmp := filepath.Join(dir, producerSnapshotTemporary)
	if err := writeFileData(tmp, data); err != nil {
		return err
	}
	if err := renameSnapshot(dir, tmp); err != nil {
		return err
	}
	return syncDir(dir)
}

// renameSnapshot renames the temporary file tmp over dir's snapshot.
func renameSnapshot(dir, tmp string) error {
	return os.Rename(tmp, filepath.Join(dir, producerSnapshotFile))
}

// removeProducerSnapshotAfter removes dir's snapshot if it is at an offset
// past end, durably: a log truncated to end may grow past that offset
// again with other batches, and after a crash the snapshot would then be
// taken for their state (Kafka deletes the snapshots above a truncation).
// A snapshot that does not decode is left: Open ignores it. The directory
// is synced even when there is nothing to remove, since a removal whose
// sync failed before (the truncation then failed and is retried) is not
// durable yet.
func removeProducerSnapshotAfter(dir string, end int64) error {
	_, offset, ok, err := readProducerSnapshot(dir)
	if err != nil && !errors.Is(err, errCorruptProducerSnapshot) {
		return err
	}
	if ok && offset > end {
		if err := os.Remove(filepath.Join(dir, producerSnapshotFile)); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// snapshotPassFiles bounds the temporary files a snapshot pass holds open
// at once, and so the descriptors it takes beside the partitions' own: a
// pass of more partitions goes on in groups of this many, two syncfs
// calls each.
const snapshotPassFiles = 512

// dueSnapshot is one partition's snapshot in a snapshot pass.
type dueSnapshot struct {
	p                    *Partition
	changes, truncations uint64 // the partition's appendMu counts it covers
	data                 []byte
	synced               hotlog.Ack // the log's sync up to the snapshot's offset
	err                  error
}

// errTruncatedSinceSnapshot is why a snapshot pass leaves a partition's
// snapshot as it was: the next pass snapshots the state after the
// truncation.
var errTruncatedSinceSnapshot = errors.New("replica: the log was truncated since the producer state was encoded")

// snapshotPass replaces the snapshots of due, atomically each, as
// writeProducerSnapshot does but with the durability calls shared: every
// log's sync was registered before the pass (the logs' rounds coalesce,
// hotlog.Log.ExpectSync); the temporary files are written, made durable
// together (DiskSync.SyncAll: one syncfs for all of them on the data
// directory's file system), renamed, and the directories made durable
// together. A partition whose step fails keeps its old snapshot and gets
// the error. disk may be nil: every file is then fsynced on its own.
func snapshotPass(ctx context.Context, disk *hotlog.DiskSync, due []*dueSnapshot) {
	for _, s := range due {
		s.err = s.synced.Wait(ctx)
	}
	tmps := make([]*os.File, len(due))
	for i, s := range due {
		if s.err == nil {
			tmps[i], s.err = createWritten(filepath.Join(s.p.dir, producerSnapshotTemporary), s.data)
		}
	}
	syncEach(disk, due, tmps)
	dirs := make([]*os.File, len(due))
	for i, s := range due {
		if tmps[i] == nil {
			continue
		}
		tmp := tmps[i].Name()
		if err := tmps[i].Close(); s.err == nil {
			s.err = err
		}
		if s.err == nil {
			s.err = s.p.installSnapshot(tmp, s.truncations)
		}
		if s.err != nil {
			if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
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

// readProducerSnapshot returns dir's snapshot; ok is false when there is
// none. A snapshot that does not decode is an error, for the caller to log.
func readProducerSnapshot(dir string) (s *producerStates, offset int64, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, producerSnapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	s, offset, err = decodeProducerSnapshot(data)
	return s, offset, err == nil, err
}
