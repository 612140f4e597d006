package hotlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stratalog/strata/record"
)

// load brings the directory to a valid state and publishes the first
// state. Segments below the persisted recovery point are trusted: only
// their file sizes and last time index entry are read. From the recovery
// point on, every batch is read and checked (header, CRC-32C, dense
// offsets); the first torn or corrupt batch and everything after it are
// cut off, and the indexes of what remains are rebuilt. A reset-intent
// left by a crash during ResetTo is finished instead: the log opens empty
// at its offset. Called once, by Open, before the flusher starts.
func (l *Log) load() error {
	started := time.Now()
	listing, err := l.listDirectory()
	if err != nil {
		return err
	}
	file, haveCheckpoint, err := l.readLogCheckpoint()
	if err != nil {
		return err
	}
	l.flusher.checkpointFile = file
	checkpoint := file.checkpoint
	epochs, err := l.readEpochCheckpoint()
	if err != nil {
		return err
	}
	info := RecoveryInfo{CleanShutdown: listing.clean}
	if listing.clean {
		// A stale marker is harmless (see doc.go), so no directory fsync.
		if err := os.Remove(filepath.Join(l.dir, cleanShutdownName)); err != nil {
			return err
		}
	}
	intent, resetting, err := l.readResetIntent()
	if err != nil {
		return err
	}
	if resetting {
		// A crash interrupted ResetTo: the checkpoints may be the old
		// log's or the new one's, and the intent says which wins.
		return l.loadInterruptedReset(intent, listing.bases, info, started)
	}

	bases := listing.bases
	logStart := checkpoint.logStartOffset
	if len(bases) == 0 {
		if haveCheckpoint {
			// The segment files are gone: start empty where the log ended,
			// so no offset is ever handed out twice.
			logStart = max(logStart, checkpoint.recoveryPoint.offset)
			l.logger.Warn("hotlog: checkpoint but no segments; starting empty", "offset", logStart)
		}
		return l.loadEmpty(logStart, haveCheckpoint, epochs, info, started)
	}
	if !haveCheckpoint || logStart < bases[0] {
		logStart = bases[0]
	}
	// A crash between persisting a new log start and deleting the segments
	// below it leaves them behind.
	below := 0
	for below+1 < len(bases) && bases[below+1] <= logStart {
		below++
	}
	for _, base := range bases[:below] {
		if err := l.removeSegmentFiles(base); err != nil {
			return err
		}
	}
	bases = bases[below:]

	trusted, from := l.trustedPrefix(bases, checkpoint, haveCheckpoint)
	segments := make([]*segment, 0, len(bases))
	for i := range trusted {
		s, err := l.loadSealedSegment(bases[i], bases[i+1])
		if err != nil {
			return err
		}
		segments = append(segments, s)
	}
	recovered, changedFiles, err := l.recoverSegments(bases[trusted:], from, &info)
	if err != nil {
		return err
	}
	segments = append(segments, recovered...)
	active := segments[len(segments)-1]
	tail := active.tail.Load()
	if logStart > tail.nextOffset {
		// Only a damaged checkpoint gets here: DeleteBefore makes the log
		// durable up to the new start before persisting it.
		l.logger.Warn("hotlog: log start past the recovered log end; lowering it", "logStart", logStart, "logEnd", tail.nextOffset)
		logStart = tail.nextOffset
	}
	// The files may have entries in live journal files from an earlier
	// Open in this process, which a truncation must retire first. The
	// cuts recovery made above need no barrier: they remove only bytes
	// past the last whole batch, and entries hold whole batches.
	if seq := l.syncer.disk.journaledBeforeOpen(l.dir); seq > 0 {
		for _, s := range segments {
			s.journaledIn = seq
		}
	}
	point := tail.point(active.baseOffset)
	l.flusher.mu.flushed, l.flusher.mu.checkpointed = point, checkpoint.recoveryPoint
	l.flusher.mu.nextRound = make(chan struct{})
	l.publishStateLocked(&state{segments: segments, logStartOffset: logStart})
	if tail.size > 0 {
		l.mu.firstAppend = l.clock.Now()
	}
	if changedFiles {
		if err := l.syncer.syncPath(l.dir); err != nil {
			return l.abandonLoad(err)
		}
	}
	if changedFiles || !haveCheckpoint || checkpoint.recoveryPoint != point || checkpoint.logStartOffset != logStart {
		if err := l.writeCheckpointLocked(); err != nil {
			return l.abandonLoad(err)
		}
	}
	if err := l.loadEpochs(epochs, logStart, tail.nextOffset); err != nil {
		return l.abandonLoad(err)
	}
	info.LogStartOffset, info.LogEndOffset = logStart, tail.nextOffset
	info.Duration = time.Since(started)
	if !info.CleanShutdown || info.BytesTruncated > 0 {
		l.logger.Info("hotlog: recovered", "clean", info.CleanShutdown, "segmentsScanned", info.SegmentsScanned,
			"bytesScanned", info.BytesScanned, "bytesTruncated", info.BytesTruncated, "logEnd", info.LogEndOffset,
			"duration", info.Duration)
	}
	l.events.recovered(info)
	return nil
}

// abandonLoad releases the files of a load that failed after publishing
// its state.
func (l *Log) abandonLoad(err error) error {
	for _, s := range l.state.Load().segments {
		s.detach()
	}
	return err
}

// loadEmpty creates the first segment of a log with no segment files. A
// checkpoint left from vanished segments is rewritten to match.
func (l *Log) loadEmpty(base int64, staleCheckpoint bool, epochs []EpochEntry, info RecoveryInfo, started time.Time) error {
	s := &segment{log: l, baseOffset: base}
	files, err := createSegmentFiles(s.path(logSuffix), s.path(indexSuffix), s.path(timeIndexSuffix), l.conf().SegmentIndexBytes, l.conf().preallocation())
	if err != nil {
		return err
	}
	files.segment = s
	s.files.Store(files)
	s.tail.Store(emptyTail(base))
	point := segmentStart(base)
	l.flusher.mu.flushed, l.flusher.mu.checkpointed = point, point
	l.flusher.mu.nextRound = make(chan struct{})
	// The new files' directory entries become durable with the first flush.
	l.flusher.mu.dirDirty = true
	l.publishStateLocked(&state{segments: []*segment{s}, logStartOffset: base})
	if staleCheckpoint {
		if err := l.writeCheckpointLocked(); err != nil {
			return l.abandonLoad(err)
		}
	}
	if err := l.loadEpochs(epochs, base, base); err != nil {
		return l.abandonLoad(err)
	}
	info.LogStartOffset, info.LogEndOffset = base, base
	info.Duration = time.Since(started)
	l.events.recovered(info)
	return nil
}

// loadEpochs trims the epoch cache to the recovered log and publishes it.
func (l *Log) loadEpochs(epochs []EpochEntry, logStart, logEnd int64) error {
	trimmed, endChanged := truncateEpochsFromEnd(epochs, logEnd, false)
	trimmed, startChanged := truncateEpochsFromStart(trimmed, logStart)
	if endChanged || startChanged {
		return l.setEpochsLocked(trimmed)
	}
	l.epochs.Store(&trimmed)
	return nil
}

// directoryListing is what listDirectory found.
type directoryListing struct {
	bases []int64 // base offsets of the .log files, ascending
	clean bool    // the clean-shutdown marker is present
}

// listDirectory finds the segments and removes what an interrupted
// operation left behind: temporaries of atomic rewrites, a prepared next
// segment, retired segment logs (reclaim.go), and index files whose .log
// is gone. A segment rewrite a crash interrupted is finished or undone
// first (rewrite.go).
func (l *Log) listDirectory() (directoryListing, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return directoryListing{}, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	rewritten, err := recoverRewrites(l.dir, names, func() error { return l.syncer.syncPath(l.dir) })
	if err != nil {
		return directoryListing{}, err
	}
	if rewritten {
		if err := l.syncer.syncPath(l.dir); err != nil {
			return directoryListing{}, err
		}
		if entries, err = os.ReadDir(l.dir); err != nil {
			return directoryListing{}, err
		}
	}
	var listing directoryListing
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		base, suffix, isSegment := parseSegmentFileName(name)
		switch {
		case name == cleanShutdownName:
			listing.clean = true
		case strings.HasSuffix(name, temporarySuffix) || strings.HasPrefix(name, preparedName+"."):
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return directoryListing{}, err
			}
		case strings.HasSuffix(name, deletedSuffix):
			if _, err := reclaim(filepath.Join(l.dir, name), nil, nil, nil); err != nil {
				return directoryListing{}, err
			}
		case isSegment && suffix == logSuffix:
			logs[base] = true
			listing.bases = append(listing.bases, base)
		case isSegment:
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		if base, _, _ := parseSegmentFileName(name); !logs[base] {
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return directoryListing{}, err
			}
		}
	}
	slices.Sort(listing.bases)
	return listing, nil
}

// readLogCheckpoint reads log-checkpoint; ok is false when there is none.
func (l *Log) readLogCheckpoint() (f checkpointFile, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(l.dir, logCheckpointName))
	if errors.Is(err, os.ErrNotExist) {
		return checkpointFile{}, false, nil
	}
	if err != nil {
		return checkpointFile{}, false, err
	}
	f, err = parseCheckpointFile(data)
	if err != nil {
		return checkpointFile{}, false, err
	}
	if f.damaged != nil {
		l.logger.Warn("hotlog: a log-checkpoint slot is damaged (a checkpoint's write cut short); trusting the other", "checkpoint", f.seq, "err", f.damaged)
	}
	return f, true, nil
}

func (l *Log) readEpochCheckpoint() ([]EpochEntry, error) {
	data, err := os.ReadFile(filepath.Join(l.dir, epochCheckpointName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEpochCheckpoint(data)
}

// trustedPrefix returns how many of the segments the checkpoint vouches
// for as sealed, and where checking starts in the next one.
func (l *Log) trustedPrefix(bases []int64, c logCheckpoint, haveCheckpoint bool) (trusted int, from recoveryPoint) {
	if !haveCheckpoint {
		return 0, segmentStart(bases[0])
	}
	p := c.recoveryPoint
	k, found := slices.BinarySearch(bases, p.segmentBase)
	switch {
	case found:
		return k, p
	case k < len(bases):
		l.logger.Warn("hotlog: recovery point segment missing; checking the segments after it", "segment", p.segmentBase)
		return k, segmentStart(bases[k])
	default:
		l.logger.Warn("hotlog: recovery point beyond the last segment; checking the last segment", "segment", p.segmentBase)
		last := len(bases) - 1
		return last, segmentStart(bases[last])
	}
}

// loadSealedSegment describes a trusted sealed segment from its file sizes
// and last time index entry, without opening its files for reading. If the
// index files are missing or malformed it rebuilds them from the log.
func (l *Log) loadSealedSegment(base, next int64) (*segment, error) {
	s := &segment{log: l, baseOffset: base, indexesSynced: true}
	logInfo, err := os.Stat(s.path(logSuffix))
	if err != nil {
		return nil, err
	}
	s.syncedSize = logInfo.Size()
	tail, err := l.readSealedTail(s, logInfo.Size(), next)
	if err != nil {
		l.logger.Warn("hotlog: rebuilding indexes of sealed segment", "segment", base, "err", err)
		if tail, err = l.rebuildSealedIndexes(s, logInfo.Size(), next); err != nil {
			return nil, err
		}
	}
	s.tail.Store(tail)
	return s, nil
}

// readSealedTail reads what a sealed segment's tail needs from its index
// file sizes and its last time index entry.
func (l *Log) readSealedTail(s *segment, size, next int64) (*segmentTail, error) {
	indexInfo, err := os.Stat(s.path(indexSuffix))
	if err != nil {
		return nil, err
	}
	timeIndexFile, err := os.Open(s.path(timeIndexSuffix))
	if err != nil {
		return nil, err
	}
	defer timeIndexFile.Close()
	timeIndexInfo, err := timeIndexFile.Stat()
	if err != nil {
		return nil, err
	}
	if indexInfo.Size()%indexEntrySize != 0 || timeIndexInfo.Size()%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: index sizes %d and %d are not whole entries", ErrCorruptFile, indexInfo.Size(), timeIndexInfo.Size())
	}
	t := emptyTail(s.baseOffset)
	t.size, t.nextOffset, t.sealed = size, next, true
	t.indexEntries = int(indexInfo.Size() / indexEntrySize)
	t.timeIndexEntries = int(timeIndexInfo.Size() / timeIndexEntrySize)
	if t.timeIndexEntries > 0 {
		last := make(timeIndex, timeIndexEntrySize)
		if _, err := timeIndexFile.ReadAt(last, timeIndexInfo.Size()-timeIndexEntrySize); err != nil {
			return nil, err
		}
		ts, rel := last.entry(0)
		if s.baseOffset+int64(rel) >= next {
			return nil, fmt.Errorf("%w: last time index entry offset %d past the segment end %d", ErrCorruptFile, s.baseOffset+int64(rel), next)
		}
		t.maxTimestamp, t.offsetOfMaxTimestamp = ts, s.baseOffset+int64(rel)
	}
	return t, nil
}

// rebuildSealedIndexes regenerates a sealed segment's index files from its
// log by walking the batch headers, and writes them atomically. The log
// itself is trusted (it is below the recovery point) but its headers must
// still be consistent: a batch that does not parse or breaks the offset
// sequence is reported, not cut, since data below the recovery point was
// acknowledged.
func (l *Log) rebuildSealedIndexes(s *segment, size, next int64) (*segmentTail, error) {
	logFile, err := os.Open(s.path(logSuffix))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	entries := int(size/max(l.indexInterval, 1)) + 2
	files := &segmentFiles{
		log:       logFile,
		index:     make(offsetIndex, entries*indexEntrySize),
		timeIndex: make(timeIndex, entries*timeIndexEntrySize),
	}
	t := emptyTail(s.baseOffset)
	r := newHeaderReader(logFile, size)
	defer r.close()
	for t.size < size {
		h, err := r.at(t.size)
		if err != nil {
			return nil, err
		}
		if h.BaseOffset != t.nextOffset {
			return nil, fmt.Errorf("%w: %s: batch at %d has base offset %d, want %d", ErrCorruptFile, logFile.Name(), t.size, h.BaseOffset, t.nextOffset)
		}
		t.addBatch(h, t.size, s.baseOffset, files, l.indexInterval)
	}
	if t.nextOffset != next {
		return nil, fmt.Errorf("%w: %s ends at offset %d but the next segment starts at %d", ErrCorruptFile, logFile.Name(), t.nextOffset, next)
	}
	t.sealTimeIndex(s.baseOffset, files)
	if err := l.syncer.writeFileAtomic(l.dir, filepath.Base(s.path(indexSuffix)), files.index[:t.indexEntries*indexEntrySize]); err != nil {
		return nil, err
	}
	if err := l.syncer.writeFileAtomic(l.dir, filepath.Base(s.path(timeIndexSuffix)), files.timeIndex[:t.timeIndexEntries*timeIndexEntrySize]); err != nil {
		return nil, err
	}
	return t, nil
}

// openSealedFiles opens a sealed segment's log read-only and maps its
// indexes, checking them against the log; indexes that fail the check are
// rebuilt. The caller sets the reference count.
func (l *Log) openSealedFiles(s *segment) (*segmentFiles, error) {
	logFile, err := os.Open(s.path(logSuffix))
	if err != nil {
		return nil, err
	}
	files := &segmentFiles{segment: s, log: logFile, slot: -1}
	files.refs.Init(1)
	mapIndexes := func() error {
		var err error
		if files.index, err = mapIndexFile(s.path(indexSuffix), 0, false, false); err != nil {
			return err
		}
		files.timeIndex, err = mapIndexFile(s.path(timeIndexSuffix), 0, false, false)
		return err
	}
	tail := s.tail.Load()
	err = mapIndexes()
	if err == nil && !tail.sealed {
		// TruncateTo is making the segment active again: its tail is cut
		// and no longer sealed while its files are still the sealed ones,
		// with entries past the cut. Only those below it are checked, and
		// nothing is rebuilt under the truncation, which would seal the
		// tail of the segment becoming active.
		if err = files.index.check(tail.indexEntries, tail.size, tail.nextOffset-s.baseOffset); err == nil {
			err = files.timeIndex.check(tail.timeIndexEntries, tail.nextOffset-s.baseOffset)
		}
		if err != nil {
			files.release()
			return nil, err
		}
		return files, nil
	}
	if err == nil {
		err = files.index.check(files.index.capacity(), tail.size, tail.nextOffset-s.baseOffset)
	}
	if err == nil {
		err = files.timeIndex.check(files.timeIndex.capacity(), tail.nextOffset-s.baseOffset)
	}
	if err != nil {
		l.logger.Warn("hotlog: rebuilding indexes of sealed segment", "segment", s.baseOffset, "err", err)
		_ = unmap(files.index)
		_ = unmap(files.timeIndex)
		files.index, files.timeIndex = nil, nil
		rebuilt, err := l.rebuildSealedIndexes(s, tail.size, tail.nextOffset)
		if err == nil {
			err = mapIndexes()
		}
		if err != nil {
			files.release()
			return nil, err
		}
		s.tail.Store(rebuilt)
	}
	return files, nil
}

// openWritableFiles opens a segment for appending (recovery's scan, or a
// segment TruncateTo makes active again): the log read-write, the indexes
// sized to segment.index.bytes, or to the entries already trusted if more,
// and mapped writable.
func (l *Log) openWritableFiles(s *segment, trustedIndexEntries, trustedTimeIndexEntries int) (*segmentFiles, error) {
	logFile, err := os.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	files := &segmentFiles{segment: s, log: logFile, slot: -1}
	files.refs.Init(1)
	indexBytes := int64(l.conf().SegmentIndexBytes)
	files.index, err = mapIndexFile(s.path(indexSuffix),
		max(indexBytes/indexEntrySize, int64(trustedIndexEntries))*indexEntrySize, true, true)
	if err == nil {
		// One slot past the trusted entries, always: sealing adds the
		// entry that makes the last one the segment's max timestamp, which
		// a reopen reads as the segment's. A segment.index.bytes lowered
		// since the entries were written would otherwise leave none, and
		// the segment would seal without it.
		files.timeIndex, err = mapIndexFile(s.path(timeIndexSuffix),
			max(indexBytes/timeIndexEntrySize, int64(trustedTimeIndexEntries)+1)*timeIndexEntrySize, true, true)
	}
	if err != nil {
		files.release()
		return nil, err
	}
	return files, nil
}

// recoverSegments checks the segments from the recovery point on and
// returns them, the last one active with its files open. changedFiles
// reports that files were truncated or removed.
func (l *Log) recoverSegments(bases []int64, from recoveryPoint, info *RecoveryInfo) (segments []*segment, changedFiles bool, err error) {
	defer func() {
		if err != nil {
			for _, s := range segments {
				s.detach()
			}
		}
	}()
	next := from.offset
	for i, base := range bases {
		if i > 0 && base != next {
			// A gap or overlap: the segments from here on do not continue
			// the log, so they are cut like a torn tail.
			l.logger.Warn("hotlog: segment does not continue the log; removing it and all later segments",
				"segment", base, "expectedBase", next)
			truncated, err := l.removeSegmentsFrom(bases[i:])
			info.BytesTruncated += truncated
			if err != nil {
				return segments, true, err
			}
			changedFiles = true
			break
		}
		s := &segment{log: l, baseOffset: base}
		start := segmentStart(base)
		if i == 0 {
			start = from
		}
		files, err := l.openWritableFiles(s, start.indexEntries, start.timeIndexEntries)
		if err != nil {
			return segments, changedFiles, err
		}
		s.files.Store(files)
		segments = append(segments, s)
		tail, result, err := l.scanSegment(s, files, start)
		if err != nil {
			return segments, changedFiles, err
		}
		s.tail.Store(tail)
		info.SegmentsScanned++
		info.BytesScanned += result.scanned
		info.BytesTruncated += result.truncated
		next = tail.nextOffset
		if result.truncated > 0 {
			changedFiles = true
			truncated, err := l.removeSegmentsFrom(bases[i+1:])
			info.BytesTruncated += truncated
			if err != nil {
				return segments, changedFiles, err
			}
			break
		}
	}
	// Every recovered segment but the last is sealed; what was checked may
	// so far live only in the page cache, so make it durable before the
	// recovery point moves past it.
	for i, s := range segments {
		files, tail := s.files.Load(), s.tail.Load()
		if i == len(segments)-1 {
			if tail.size > s.syncedSize || changedFiles {
				if err := l.syncLogLocked(s, files.log, tail.size); err != nil {
					return segments, changedFiles, err
				}
			}
			break
		}
		sealedTail := *tail
		sealedTail.sealTimeIndex(s.baseOffset, files)
		s.tail.Store(&sealedTail)
		if err := l.sealLocked(s); err != nil {
			return segments, changedFiles, err
		}
	}
	return segments, changedFiles, nil
}

// scanResult counts a segment scan's work.
type scanResult struct {
	scanned   int64 // bytes checked
	truncated int64 // bytes cut off
}

// scanSegment checks a segment's batches from start on and truncates the
// log at the first one that is torn, corrupt, out of sequence or
// unindexable. It returns the tail of what remains, with the indexes
// rebuilt for the checked part.
func (l *Log) scanSegment(s *segment, files *segmentFiles, start recoveryPoint) (*segmentTail, scanResult, error) {
	stat, err := files.log.Stat()
	if err != nil {
		return nil, scanResult{}, err
	}
	fileSize := stat.Size()
	tail, err := l.trustedTail(s, files, start, fileSize)
	if err != nil {
		l.logger.Warn("hotlog: recovery point does not match the files; checking the whole segment",
			"segment", s.baseOffset, "err", err)
		tail = emptyTail(s.baseOffset)
	}
	s.syncedSize = tail.size
	from := tail.size
	reader := batchReader{file: files.log, size: fileSize}
	var cause error
	for tail.size < fileSize {
		batch, err := reader.batch(tail.size)
		var h record.Header
		if err == nil {
			h, err = record.Validate(batch)
		}
		switch {
		case err != nil:
			cause = err
		case h.BaseOffset != tail.nextOffset:
			cause = fmt.Errorf("base offset %d, want %d", h.BaseOffset, tail.nextOffset)
		case h.LastOffset()-s.baseOffset > math.MaxUint32 || tail.size+int64(h.Size()) > math.MaxUint32:
			cause = fmt.Errorf("batch at offset %d does not fit the segment's 32-bit index", h.BaseOffset)
		}
		if cause != nil {
			break
		}
		if err := files.reserveIndexes(tail.indexEntries, tail.timeIndexEntries); err != nil {
			return nil, scanResult{}, err
		}
		tail.addBatch(h, tail.size, s.baseOffset, files, l.indexInterval)
	}
	result := scanResult{scanned: fileSize - from}
	if cause != nil {
		result.truncated = fileSize - tail.size
		l.logger.Warn("hotlog: cutting torn or corrupt tail", "segment", s.baseOffset, "position", tail.size,
			"offset", tail.nextOffset, "bytes", result.truncated, "cause", cause)
		if err := files.log.Truncate(tail.size); err != nil {
			return nil, result, err
		}
	}
	return tail, result, nil
}

// trustedTail rebuilds the tail for the part of a segment the recovery
// point vouches for, after checking that the files agree with it.
func (l *Log) trustedTail(s *segment, files *segmentFiles, start recoveryPoint, fileSize int64) (*segmentTail, error) {
	if start.position > fileSize {
		return nil, fmt.Errorf("%w: log is %d bytes, recovery point at %d", ErrCorruptFile, fileSize, start.position)
	}
	relativeEnd := start.offset - s.baseOffset
	if err := files.index.check(start.indexEntries, max(start.position, 1), max(relativeEnd, 1)); err != nil {
		return nil, err
	}
	if err := files.timeIndex.check(start.timeIndexEntries, max(relativeEnd, 1)); err != nil {
		return nil, err
	}
	// The entries are ordered and in range; check the last of each against
	// the log too, so a damaged but plausible index is caught here rather
	// than on every later lookup.
	trusted := &segmentTail{size: start.position, indexEntries: start.indexEntries}
	r := newHeaderReader(files.log, start.position)
	defer r.close()
	if n := start.indexEntries; n > 0 {
		rel, pos := files.index.entry(n - 1)
		if _, err := s.entryHeader(r, rel, int64(pos)); err != nil {
			return nil, err
		}
	}
	if n := start.timeIndexEntries; n > 0 {
		maxTimestamp, rel := files.timeIndex.entry(n - 1)
		_, h, err := s.locate(files, trusted, r, s.baseOffset+int64(rel))
		if err != nil {
			return nil, err
		}
		if h.BaseOffset != s.baseOffset+int64(rel) || h.MaxTimestamp != maxTimestamp {
			return nil, fmt.Errorf("%w: time index entry (%d, %d) names a batch at %d with max timestamp %d",
				errIndexMismatch, maxTimestamp, rel, h.BaseOffset, h.MaxTimestamp)
		}
	}
	return restoreTail(s, files, start.position, start.offset, start.indexEntries, start.timeIndexEntries)
}

// removeSegmentsFrom deletes the files of the given segments (the cut-off
// part of a log) and returns their size.
func (l *Log) removeSegmentsFrom(bases []int64) (int64, error) {
	var total int64
	for _, base := range bases {
		if info, err := os.Stat(filepath.Join(l.dir, segmentFileName(base, logSuffix))); err == nil {
			total += info.Size()
		}
		if err := l.removeSegmentFiles(base); err != nil {
			return total, err
		}
	}
	return total, nil
}

// removeSegmentFiles deletes a segment's three files, the log first so a
// crash midway leaves only orphaned indexes, which Open removes.
func (l *Log) removeSegmentFiles(base int64) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		errs = append(errs, removeIfExists(filepath.Join(l.dir, segmentFileName(base, suffix))))
	}
	return errors.Join(errs...)
}
