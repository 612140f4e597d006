package hotlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratalog/strata/record"
)

// A rewrite replaces one sealed segment with other batches over the same
// offsets: the log cleaner's output (package compact), which keeps each
// surviving record at its offset and each batch's offset range, so the log
// stays dense. The new files are written beside the old ones and swapped in
// crash safely, in this order:
//
//  1. <base>.log.cleaned, .index.cleaned and .timeindex.cleaned are
//     written and fsynced, outside the log's locks.
//  2. Under the writer lock: <base>.log.cleaned is renamed to
//     <base>.log.swap and the directory fsynced. This is the commit: from
//     here on the new segment wins.
//  3. The index files are renamed over the old ones, then .log.swap over
//     the .log, the new segment is published, and the directory fsynced.
//
// Open finishes a swap a crash interrupted after step 2 and removes
// .cleaned files a crash left before it, so a crash at any point leaves
// either the old segment or the new one, never a mix. Readers that hold a
// state from before the swap keep reading the old files (pinned open)
// until they release it.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// ErrNotRewritable means the segment asked for cannot be rewritten: it is
// the active segment, not yet sealed and checkpointed, or no longer in the
// log.
var ErrNotRewritable = errors.New("hotlog: segment cannot be rewritten")

// Rewrite is a replacement under way for one sealed segment. Append the new
// batches in offset order, covering exactly the segment's offsets, then
// Commit, or Abort. Not safe for concurrent use.
type Rewrite struct {
	log  *Log
	old  *segment
	next int64 // the offset after the segment
	// truncations is the log's count of TruncateTo and ResetTo calls at
	// the start: a truncation into the segment keeps its object, and the
	// log may be refilled to the same next offset before Commit.
	truncations uint64
	file        *os.File

	seg   *segment // the replacement, published by Commit
	tail  *segmentTail
	index *segmentFiles // in-memory indexes being built
	err   error
	// committed is set once .log.swap exists: from then on the new files
	// are the segment's, and only Open may finish or undo anything.
	committed bool
}

// RewritableEnd is the offset below which sealed segments can be
// rewritten: the base of the persisted recovery point's segment.
func (l *Log) RewritableEnd() int64 {
	l.flusher.mu.Lock()
	defer l.flusher.mu.Unlock()
	return l.flusher.mu.checkpointed.segmentBase
}

// RewriteSegment starts replacing the sealed segment whose base offset is
// base. Only a segment below the persisted recovery point's segment can be
// rewritten: Open trusts it as sealed, without positions into it.
func (l *Log) RewriteSegment(base int64) (*Rewrite, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	st := l.acquireState()
	defer st.release()
	i := st.segmentFor(base)
	if i < 0 || i == len(st.segments)-1 || st.segments[i].baseOffset != base {
		return nil, fmt.Errorf("%w: %d is not a sealed segment's base offset", ErrNotRewritable, base)
	}
	if checkpointed := l.RewritableEnd(); base >= checkpointed {
		return nil, fmt.Errorf("%w: segment %d is not below the recovery point's segment %d", ErrNotRewritable, base, checkpointed)
	}
	old := st.segments[i]
	tail := old.tail.Load()
	path := old.path(logSuffix) + cleanedSuffix
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	// The new segment has at most as many index entries as the old one
	// plus a few (batches shrink, so more may pass the interval); grow
	// takes care of more.
	seg := &segment{log: l, baseOffset: base, indexesSynced: true}
	return &Rewrite{
		log: l, old: old, next: tail.nextOffset, truncations: l.flusher.truncations.Load(), file: file, seg: seg,
		tail: emptyTail(base),
		index: &segmentFiles{
			index:     make(offsetIndex, (tail.indexEntries+8)*indexEntrySize),
			timeIndex: make(timeIndex, (tail.timeIndexEntries+8)*timeIndexEntrySize),
		},
	}, nil
}

// Append writes the next batch of the new segment. The batch must be intact
// (record.Validate) and start where the previous one ended (at the
// segment's base offset for the first).
func (w *Rewrite) Append(batch []byte) error {
	if w.err != nil {
		return w.err
	}
	h, err := record.Validate(batch)
	if err != nil {
		return w.fail(err)
	}
	if h.BaseOffset != w.tail.nextOffset || h.NextOffset() > w.next {
		return w.fail(fmt.Errorf("%w: batch [%d, %d] does not continue the rewrite at %d (segment ends before %d)",
			ErrNotContiguous, h.BaseOffset, h.LastOffset(), w.tail.nextOffset, w.next))
	}
	if w.tail.indexEntries == w.index.index.capacity() || w.tail.timeIndexEntries >= w.index.timeIndex.capacity()-1 {
		w.grow()
	}
	if _, err := w.file.WriteAt(batch, w.tail.size); err != nil {
		return w.fail(err)
	}
	w.tail.addBatch(h, w.tail.size, w.seg.baseOffset, w.index, w.log.indexInterval)
	return nil
}

// grow doubles the in-memory indexes, which are sized for the old
// segment's bytes and may be outgrown by many small batches.
func (w *Rewrite) grow() {
	w.index.index = append(w.index.index, make(offsetIndex, len(w.index.index))...)
	w.index.timeIndex = append(w.index.timeIndex, make(timeIndex, len(w.index.timeIndex))...)
}

func (w *Rewrite) fail(err error) error {
	w.err = err
	return err
}

// Abort removes what the rewrite wrote, unless it was committed. The old
// segment stays.
func (w *Rewrite) Abort() {
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
	if w.committed {
		return
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		_ = removeIfExists(w.old.path(suffix) + cleanedSuffix)
	}
}

// Commit makes the new segment durable and swaps it in for the old one.
// modified becomes the new .log's modification time, so that what is
// measured from a segment's last write (delete.retention.ms for
// tombstones) is not reset by rewriting it. On error the old segment
// stays, unless the error came after the commit point and the log has
// failed (ErrFailed), in which case Open finishes the swap.
func (w *Rewrite) Commit(modified time.Time) error {
	defer w.Abort()
	if w.err != nil {
		return w.err
	}
	l := w.log
	if w.tail.nextOffset != w.next {
		return fmt.Errorf("%w: the rewrite of segment %d ends at %d, the segment at %d", ErrNotContiguous, w.seg.baseOffset, w.tail.nextOffset, w.next)
	}
	w.tail.sealTimeIndex(w.seg.baseOffset, w.index)
	// Through the DiskSync, like every sync of the log's files: it takes
	// its turn beside the shared syncfs and refuses once the disk failed.
	if err := l.syncer.syncFile(w.file); err != nil {
		return err
	}
	if err := w.file.Close(); err != nil {
		return err
	}
	w.file = nil
	logPath := w.old.path(logSuffix)
	if err := os.Chtimes(logPath+cleanedSuffix, modified, modified); err != nil {
		return err
	}
	if err := l.writeDurable(w.old.path(indexSuffix)+cleanedSuffix, w.index.index[:w.tail.indexEntries*indexEntrySize]); err != nil {
		return err
	}
	if err := l.writeDurable(w.old.path(timeIndexSuffix)+cleanedSuffix, w.index.timeIndex[:w.tail.timeIndexEntries*timeIndexEntrySize]); err != nil {
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	st := l.state.Load()
	i := st.segmentFor(w.seg.baseOffset)
	switch {
	case i < 0 || st.segments[i] != w.old:
		return fmt.Errorf("%w: segment %d was deleted or replaced during the rewrite", ErrNotRewritable, w.seg.baseOffset)
	case w.old.tail.Load().nextOffset != w.next || w.old.baseOffset >= l.RewritableEnd() || l.flusher.truncations.Load() != w.truncations:
		return fmt.Errorf("%w: segment %d was truncated during the rewrite", ErrNotRewritable, w.seg.baseOffset)
	}
	if err := w.pinOld(); err != nil {
		return err
	}
	if err := os.Rename(logPath+cleanedSuffix, logPath+swapSuffix); err != nil {
		w.unpinOld()
		return err
	}
	w.committed = true
	// From here on the old segment stays detached, its files pinned for
	// whoever reads it, whatever fails: its path may already name new
	// files. Open finishes the swap.
	if err := l.syncer.syncPath(l.dir); err != nil {
		return l.fail(err)
	}
	if err := finishSwap(l.dir, w.seg.baseOffset, func() error { return l.syncer.syncPath(l.dir) }); err != nil {
		return l.fail(err)
	}
	w.seg.syncedSize = w.tail.size
	w.tail.sealed = true
	w.seg.tail.Store(w.tail)
	segments := append([]*segment(nil), st.segments...)
	segments[i] = w.seg
	l.publishStateLocked(&state{segments: segments, logStartOffset: st.logStartOffset})
	old := w.old
	l.reclaiming.Go(func() {
		l.retirees.waitUnless(l.closed.Load)
		old.unpin()
	})
	if err := l.syncer.syncPath(l.dir); err != nil {
		return l.fail(err)
	}
	return nil
}

// pinOld keeps the old segment's files open for readers of older states:
// its path names the new files once the swap is done, so it must never be
// opened again by path. The segment is detached, and its pinned files are
// released once those readers are gone.
func (w *Rewrite) pinOld() error {
	s := w.old
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if f := s.files.Load(); f != nil && f.tryRetain() {
		s.pinned = f
	} else {
		f, err := s.log.openSealedFiles(s)
		if err != nil {
			return err
		}
		s.pinned = f
	}
	s.detached = true
	s.dropFilesLocked()
	return nil
}

// unpinOld undoes pinOld when the swap did not happen.
func (w *Rewrite) unpinOld() {
	s := w.old
	s.openMu.Lock()
	s.detached = false
	s.openMu.Unlock()
	s.unpin()
}

// unpin releases the files pinOld kept open.
func (s *segment) unpin() {
	s.openMu.Lock()
	f := s.pinned
	s.pinned = nil
	s.openMu.Unlock()
	if f != nil {
		f.release()
	}
}

// SegmentModified is the modification time of segment base's .log: when
// it was last appended to (a rewrite keeps it).
func (l *Log) SegmentModified(base int64) (time.Time, error) {
	info, err := os.Stat(filepath.Join(l.dir, segmentFileName(base, logSuffix)))
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// writeDurable writes data to path and fsyncs it.
func (l *Log) writeDurable(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = l.syncer.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SegmentFilesMatch reports whether log, the .log of the sealed segment
// based at base in dir as a reader of the files opened it, and the index
// files that reader then read from their paths are one segment's. Call
// it after reading the indexes. A swap renames the new index files into
// place before the new .log (step 3), so indexes read while a swap is
// under way may be the new ones beside the old log; false means open the
// files again. Readers through the Log need none of this: they hold the
// segment's files open.
func SegmentFilesMatch(dir string, base int64, log *os.File) (bool, error) {
	path := filepath.Join(dir, segmentFileName(base, logSuffix))
	switch _, err := os.Lstat(path + swapSuffix); {
	case err == nil:
		return false, nil // a swap is under way
	case !errors.Is(err, os.ErrNotExist):
		return false, err
	}
	// No swap began before the indexes were read, unless one has finished
	// since: then the path names another file than the one open.
	opened, err := log.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(opened, now), nil
}

// finishSwap completes a committed swap of segment base in dir: the new
// index files over the old, syncDir, then the new .log over the old, so
// that no file system can persist the last rename before the others.
func finishSwap(dir string, base int64, syncDir func() error) error {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		name := filepath.Join(dir, segmentFileName(base, suffix))
		if err := os.Rename(name+cleanedSuffix, name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := syncDir(); err != nil {
		return err
	}
	name := filepath.Join(dir, segmentFileName(base, logSuffix))
	return os.Rename(name+swapSuffix, name)
}

// recoverRewrites finishes the swaps a crash left committed (a .log.swap)
// and removes the files of rewrites it left uncommitted (.cleaned without
// a .log.swap). It reports whether it changed the directory.
func recoverRewrites(dir string, names []string, syncDir func() error) (changed bool, err error) {
	swapped := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, logSuffix+swapSuffix) {
			base, _, ok := parseSegmentFileName(strings.TrimSuffix(name, swapSuffix))
			if !ok {
				continue
			}
			if err := finishSwap(dir, base, syncDir); err != nil {
				return changed, err
			}
			swapped[segmentFileName(base, "")] = true
			changed = true
		}
	}
	for _, name := range names {
		if !strings.HasSuffix(name, cleanedSuffix) {
			continue
		}
		if prefix, _, _ := strings.Cut(name, "."); swapped[prefix] {
			continue // renamed by finishSwap
		}
		if err := removeIfExists(filepath.Join(dir, name)); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}
