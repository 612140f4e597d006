package hotlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/internal/refcount"
	"github.com/stratalog/strata/record"
)

// NoTimestamp is Kafka's "no timestamp" (-1): the max timestamp of a
// segment none of whose batches carries one.
const NoTimestamp int64 = -1

// segment is one segment of a partition: <base>.log with its .index and
// .timeindex (format.go). Segment values are shared by successive states;
// what changes is published through atomics.
type segment struct {
	log        *Log
	baseOffset int64

	// tail is the committed extent of the segment. The writer publishes a new
	// tail after each append, once the bytes and index entries it describes
	// are written; readers look only at what their tail covers.
	tail atomic.Pointer[segmentTail]

	// files holds the segment's open files while they are open: always for
	// the active segment, and for a sealed one while the FileCache keeps it.
	files atomic.Pointer[segmentFiles]

	// openMu serializes opening a sealed segment's files with detaching and
	// deleting them.
	openMu sync.Mutex
	// detached is set under openMu once the segment's files are deleted or
	// the Log closed; it stops lazy opens.
	detached bool
	// pinned holds a replaced segment's files open (under openMu) for
	// readers of states from before the rewrite (rewrite.go): its path
	// names the new files.
	pinned *segmentFiles

	// syncedSize is how much of the .log is known durable, writebackFrom
	// where the next writeback hint starts (the flusher's startWriteback
	// under periodic flushing, DiskSync.hintWriteback under a disk
	// journal), journaledIn the newest journal file holding an entry of
	// the .log (0: none), and indexesSynced says the index files are
	// trimmed and fsynced (the segment is sealed on disk). indexesSynced
	// is guarded by the flusher's round lock, the others by its syncing
	// lock.
	syncedSize    int64
	writebackFrom int64
	journaledIn   uint64
	indexesSynced bool
}

// segmentTail is an immutable snapshot of a segment's committed extent and
// the writer's bookkeeping for it.
type segmentTail struct {
	size             int64 // bytes of whole batches
	nextOffset       int64 // the offset after the last batch
	indexEntries     int   // valid .index entries
	timeIndexEntries int   // valid .timeindex entries
	// maxTimestamp is the largest batch MaxTimestamp so far (NoTimestamp if
	// none), carried by the batch whose base offset is offsetOfMaxTimestamp.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64
	// lastIndexedPosition is where the last index entry points (0 if none):
	// the next entry goes to the first batch index.interval.bytes past it.
	lastIndexedPosition int64
	// sealed is set once the segment is no longer the active one.
	sealed bool
}

func emptyTail(baseOffset int64) *segmentTail {
	return &segmentTail{nextOffset: baseOffset, maxTimestamp: NoTimestamp, offsetOfMaxTimestamp: baseOffset}
}

// addBatch folds a batch starting at position pos into t, writing an index
// entry (and a time index entry, when the max timestamp grew) into files
// when the batch is index.interval.bytes past the last entry. Entries beyond
// the published tail are invisible to readers, so writing them before the
// log bytes is safe. A full index just gets sparser; the roll checks keep
// that from happening in the active segment.
func (t *segmentTail) addBatch(h record.Header, pos, baseOffset int64, files *segmentFiles, indexInterval int64) {
	if h.MaxTimestamp > t.maxTimestamp {
		t.maxTimestamp = h.MaxTimestamp
		t.offsetOfMaxTimestamp = h.BaseOffset
	}
	if pos > 0 && pos-t.lastIndexedPosition >= indexInterval && t.indexEntries < files.index.capacity() {
		files.index.put(t.indexEntries, uint32(h.BaseOffset-baseOffset), uint32(pos))
		t.indexEntries++
		t.lastIndexedPosition = pos
		// One time index slot stays free for the entry sealing adds.
		if t.maxTimestamp > t.lastTimeIndexTimestamp(files) && t.timeIndexEntries < files.timeIndex.capacity()-1 {
			files.timeIndex.put(t.timeIndexEntries, t.maxTimestamp, uint32(t.offsetOfMaxTimestamp-baseOffset))
			t.timeIndexEntries++
		}
	}
	t.size = pos + int64(h.Size())
	t.nextOffset = h.NextOffset()
}

// sealTimeIndex adds the final time index entry that makes the last entry
// the segment's max timestamp.
func (t *segmentTail) sealTimeIndex(baseOffset int64, files *segmentFiles) {
	if t.maxTimestamp > t.lastTimeIndexTimestamp(files) && t.timeIndexEntries < files.timeIndex.capacity() {
		files.timeIndex.put(t.timeIndexEntries, t.maxTimestamp, uint32(t.offsetOfMaxTimestamp-baseOffset))
		t.timeIndexEntries++
	}
	t.sealed = true
}

func (t *segmentTail) lastTimeIndexTimestamp(files *segmentFiles) int64 {
	if t.timeIndexEntries == 0 {
		return NoTimestamp
	}
	ts, _ := files.timeIndex.entry(t.timeIndexEntries - 1)
	return ts
}

// point returns the recovery point at the end of t.
func (t *segmentTail) point(baseOffset int64) recoveryPoint {
	return recoveryPoint{
		offset: t.nextOffset, segmentBase: baseOffset, position: t.size,
		indexEntries: t.indexEntries, timeIndexEntries: t.timeIndexEntries,
	}
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.log.dir, segmentFileName(s.baseOffset, suffix))
}

// info describes the segment for callers.
func (s *segment) info() SegmentInfo {
	t := s.tail.Load()
	return SegmentInfo{
		BaseOffset:           s.baseOffset,
		NextOffset:           t.nextOffset,
		Size:                 t.size,
		MaxTimestamp:         t.maxTimestamp,
		OffsetOfMaxTimestamp: t.offsetOfMaxTimestamp,
		Sealed:               t.sealed,
	}
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset int64 // offset of the first batch
	NextOffset int64 // offset after the last batch
	Size       int64 // bytes in the .log
	// MaxTimestamp is the largest batch max timestamp (NoTimestamp if no
	// batch has one), in the batch whose base offset is
	// OffsetOfMaxTimestamp.
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	// Sealed is false only for the active segment.
	Sealed bool
}

// errSegmentGone means a reader holding an old state reached a segment
// whose files were deleted; the caller reports the offset out of range.
var errSegmentGone = errors.New("hotlog: segment deleted")

// acquireFiles returns the segment's open files with a reference the caller
// must release, opening a sealed segment's files through the FileCache when
// they are not open.
func (s *segment) acquireFiles() (*segmentFiles, error) {
	if f := s.files.Load(); f != nil && f.tryRetain() {
		f.used.Store(true)
		return f, nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.detached {
		if s.pinned != nil && s.pinned.tryRetain() {
			return s.pinned, nil
		}
		return nil, errSegmentGone
	}
	if f := s.files.Load(); f != nil && f.tryRetain() {
		f.used.Store(true)
		return f, nil
	}
	f, err := s.log.openSealedFiles(s)
	if err != nil {
		return nil, err
	}
	f.refs.Init(2) // segment.files's and the caller's
	s.files.Store(f)
	s.log.files.insert(f)
	return f, nil
}

// detach drops the Log's hold on the segment's files (the active segment's
// writer reference, or the cache's) and stops further lazy opens. Readers
// holding a reference keep the files open until they release it.
func (s *segment) detach() {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.detached = true
	s.dropFilesLocked()
	if s.pinned != nil {
		// A rewrite that failed after its commit point left it pinned.
		s.pinned.release()
		s.pinned = nil
	}
}

// dropFilesLocked releases the reference segment.files holds on the open
// files, if any, leaving the segment able to open them again. s.openMu must
// be held.
func (s *segment) dropFilesLocked() {
	if f := s.files.Swap(nil); f != nil {
		s.log.files.forget(f)
		f.release()
	}
}

// segmentFiles are a segment's open .log and mapped indexes, closed when
// the last reference goes. segment.files holds one reference (the writer's
// while the segment is active, the FileCache's once it is sealed), and
// every reader holds one while it uses them.
type segmentFiles struct {
	segment   *segment
	log       *os.File
	index     offsetIndex
	timeIndex timeIndex
	// indexAllocated and timeIndexAllocated are how many bytes at the
	// start of each index file are known to have disk blocks (see
	// reserveIndexes). Owned by the writer.
	indexAllocated, timeIndexAllocated int64
	// journalID is log's identity in disk journal entries, read by the
	// disk rounds' goroutine on first use (diskMember.journalID).
	journalID *fileID

	refs refcount.Count
	// used is the FileCache's CLOCK bit: set on every use, cleared as the
	// eviction hand passes.
	used atomic.Bool
	// slot is the position in the FileCache ring, -1 when not cached.
	// Guarded by FileCache.mu.
	slot int
}

// tryRetain takes a reference unless the files are already closing.
func (f *segmentFiles) tryRetain() bool { return f.refs.TryHold() }

// release drops a reference, closing the files with the last one.
func (f *segmentFiles) release() {
	if !f.refs.Release() {
		return
	}
	// Durability never depends on these: the writer's data was fsynced
	// before its reference went, and readers only read.
	_ = f.log.Close()
	_ = unmap(f.index)
	_ = unmap(f.timeIndex)
}

// indexAllocationChunk is how much of an index file reserveIndexes
// allocates at a time: 8,192 offset index entries, 32 MiB of log at the
// default index interval.
const indexAllocationChunk = 64 << 10

// reserveIndexes makes sure the index pages the next batch may write
// (offset index entry indexEntries; time index entries timeIndexEntries
// and the one sealing adds) have disk blocks, allocating the files ahead
// in chunks (fallocate). The index files are sparse; the entries reach
// them by pwrite when a checkpoint or a seal persists them
// (persistIndexesLocked), and a pwrite that found no room would fail the
// seal or the checkpoint, and so the log: this turns a full file system
// into ErrNoSpace before anything of the batch is written. A file system
// without fallocate is left sparse.
func (f *segmentFiles) reserveIndexes(indexEntries, timeIndexEntries int) error {
	indexNeed := min(int64(indexEntries+1)*indexEntrySize, int64(len(f.index)))
	timeIndexNeed := min(int64(timeIndexEntries+2)*timeIndexEntrySize, int64(len(f.timeIndex)))
	if indexNeed <= f.indexAllocated && timeIndexNeed <= f.timeIndexAllocated {
		return nil // all but once a chunk
	}
	if err := reserveFile(f.segment.path(indexSuffix), &f.indexAllocated, indexNeed, int64(len(f.index))); err != nil {
		return err
	}
	return reserveFile(f.segment.path(timeIndexSuffix), &f.timeIndexAllocated, timeIndexNeed, int64(len(f.timeIndex)))
}

// reserveFile allocates the file at path up to need bytes (rounded up to a
// chunk, at most size), of which allocated already are.
func reserveFile(path string, allocated *int64, need, size int64) error {
	if need <= *allocated {
		return nil
	}
	end := min((need+indexAllocationChunk-1)/indexAllocationChunk*indexAllocationChunk, size)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("allocate %s: %w", path, err)
	}
	defer unix.Close(fd)
	for {
		err = unix.Fallocate(fd, 0, *allocated, end-*allocated)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == nil:
		*allocated = end
	case errors.Is(err, unix.EOPNOTSUPP):
		*allocated = size
	case isNoSpace(err):
		return fmt.Errorf("%w: allocating %s to %d bytes: %w", ErrNoSpace, path, end, err)
	default:
		return fmt.Errorf("allocate %s to %d bytes: %w", path, end, err)
	}
	return nil
}

// createSegmentFiles creates a segment's three files at the given paths:
// an empty .log, and indexes sized to segment.index.bytes (sparse) and
// mapped writable.
func createSegmentFiles(logPath, indexPath, timeIndexPath string, indexBytes int32, preallocate int64) (*segmentFiles, error) {
	logFile, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	f := &segmentFiles{log: logFile, slot: -1}
	f.refs.Init(1)
	err = preallocateLog(logFile, preallocate)
	if err == nil {
		f.index, err = mapIndexFile(indexPath, int64(indexBytes/indexEntrySize)*indexEntrySize, true, true)
	}
	if err == nil {
		f.timeIndex, err = mapIndexFile(timeIndexPath, int64(indexBytes/timeIndexEntrySize)*timeIndexEntrySize, true, true)
	}
	if err != nil {
		f.release()
		return nil, errors.Join(err, removeIfExists(logPath), removeIfExists(indexPath), removeIfExists(timeIndexPath))
	}
	return f, nil
}

// preallocateLog gives a new segment log its disk blocks ahead, n bytes
// (Kafka's preallocate, segment.bytes), without changing its size
// (FALLOC_FL_KEEP_SIZE), so recovery, which reads a log up to its size,
// sees nothing new; sealing frees what the segment did not use. A file
// system that cannot (EOPNOTSUPP) or a disk without room for the whole
// segment (ENOSPC, which the appends then meet themselves) leaves the log
// to be allocated as it grows.
func preallocateLog(f *os.File, n int64) error {
	if n <= 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) || isNoSpace(err) {
		return nil
	}
	return err
}

// mapIndexFile maps an index file. Writable mappings first size the file to
// size (sparse); read-only ones map the file as it is, ignoring size, down
// to whole entries. create allows creating a missing file.
func mapIndexFile(path string, size int64, writable, create bool) ([]byte, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if writable {
		if err := f.Truncate(size); err != nil {
			return nil, err
		}
	} else {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		size = st.Size()
	}
	if size > 1<<31 {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrCorruptFile, path, size)
	}
	return mapFile(f, int(size), writable)
}
