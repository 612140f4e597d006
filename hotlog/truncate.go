package hotlog

import (
	"fmt"
	"time"

	"github.com/stratalog/strata/record"
)

// TruncateTo removes every batch that holds an offset at or above offset,
// as a follower does after a leader change. If offset falls inside a batch
// that whole batch goes, so the log end becomes that batch's base offset.
// At the log end it removes only the leader epochs that start there (they
// cover no batch); past it, nothing; below the log start it is an
// *OffsetOutOfRangeError.
//
// The truncation is durable when TruncateTo returns: the removed bytes
// never reappear, even after a crash. It waits until no reader still holds
// a Section over bytes it removes (so a Section's bytes never change under
// it); a caller must not hold a Section while calling it. Appends waiting
// for acknowledgement get ErrTruncated.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	st := l.state.Load()
	if offset == st.logEndOffset() {
		// Nothing to cut but leader epochs that start at the end and
		// cover no batch, as Kafka's truncateFromEnd drops them: a follower
		// that recorded an epoch it never wrote in must be able to take
		// the leader's older batches there.
		if epochs, changed := truncateEpochsFromEnd(*l.epochs.Load(), offset, true); changed {
			return l.setEpochsLocked(epochs)
		}
		return nil
	}
	if offset > st.logEndOffset() {
		return nil
	}
	if offset < st.logStartOffset {
		return outOfRange(offset, st.logStartOffset, st.logEndOffset())
	}
	// With durability work stopped and every rolled segment sealed, the
	// files can be rearranged without the flusher.
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	l.flusher.syncing.Lock()
	defer l.flusher.syncing.Unlock()
	if _, err := l.flushRoundLocked(false); err != nil {
		return err
	}
	if err := l.truncateLocked(st, offset); err != nil {
		return l.fail(fmt.Errorf("truncate to %d: %w", offset, err))
	}
	return nil
}

// truncateLocked does TruncateTo's work. Log.mu and the round lock must be
// held, with no seal pending.
func (l *Log) truncateLocked(st *state, offset int64) error {
	i := st.segmentFor(offset)
	s := st.segments[i]
	files, oldTail, position, h, err := s.locateWithRepair(offset)
	if err != nil {
		return err
	}
	defer files.release()
	newEnd := h.BaseOffset
	indexEntries := files.index.countBelow(min(oldTail.indexEntries, files.index.capacity()), position)
	timeIndexEntries := files.timeIndex.countBelow(min(oldTail.timeIndexEntries, files.timeIndex.capacity()), uint32(newEnd-s.baseOffset))
	tail, err := restoreTail(s, files, position, newEnd, indexEntries, timeIndexEntries)
	if err != nil {
		return err
	}

	// Readers first: lower the segment's end, publish a state without the
	// later segments, and wait until no reader holds an older state. From
	// then on nobody looks at the bytes being removed.
	s.tail.Store(tail)
	removed := st.segments[i+1:]
	l.publishStateLocked(&state{segments: st.segments[: i+1 : i+1], logStartOffset: min(st.logStartOffset, newEnd)})
	l.retirees.wait()

	// Files go newest first, and the deletions are durable before s is cut:
	// a crash at any point leaves a prefix of the old log, never s cut
	// short with later segments still behind it.
	for i := len(removed) - 1; i >= 0; i-- {
		gone := removed[i]
		info := gone.info()
		gone.detach()
		if err := l.removeSegmentFiles(gone.baseOffset); err != nil {
			return err
		}
		l.events.deleted(info)
	}
	if len(removed) > 0 {
		if err := l.syncer.syncPath(l.dir); err != nil {
			return err
		}
		// The segment was sealed: make it the active one again, with
		// writable, full-size indexes.
		if err := l.reactivateLocked(s, tail); err != nil {
			return err
		}
	}
	// No journal entry may bring the removed bytes back after a crash.
	if d := l.syncer.disk; d != nil {
		if err := d.journalBarrier(s.journaledIn); err != nil {
			return err
		}
	}
	active := s.files.Load()
	if err := active.log.Truncate(position); err != nil {
		return err
	}
	if err := l.syncLogLocked(s, active.log, position); err != nil {
		return err
	}
	s.writebackFrom = min(s.writebackFrom, position)
	s.indexesSynced = false
	if position == 0 {
		l.mu.firstAppend = time.Time{}
	} else if len(removed) > 0 {
		l.mu.firstAppend = l.clock.Now()
	}

	f := &l.flusher
	f.mu.Lock()
	f.truncations.Add(1)
	f.mu.flushed = tail.point(s.baseOffset)
	f.mu.Unlock()
	if err := l.writeCheckpointLocked(); err != nil {
		return err
	}
	if epochs, changed := truncateEpochsFromEnd(*l.epochs.Load(), newEnd, true); changed {
		return l.setEpochsLocked(epochs)
	}
	return nil
}

// locateWithRepair finds the batch holding offset, rebuilding a sealed
// segment's indexes once if they disagree with its log. The caller
// releases the returned files.
func (s *segment) locateWithRepair(offset int64) (*segmentFiles, *segmentTail, int64, record.Header, error) {
	for attempt := 0; ; attempt++ {
		tail := s.tail.Load()
		files, err := s.acquireFiles()
		if err != nil {
			return nil, nil, 0, record.Header{}, err
		}
		r := newHeaderReader(files.log, tail.size)
		position, h, err := s.locate(files, tail, r, offset)
		r.close()
		if err == nil {
			return files, tail, position, h, nil
		}
		files.release()
		if attempt > 0 || !s.repairAfter(err) {
			return nil, nil, 0, record.Header{}, err
		}
	}
}

// reactivateLocked reopens sealed segment s for appending after TruncateTo
// made it the last: its cached read-only files give way to writable ones
// whose indexes are sized back to segment.index.bytes.
func (l *Log) reactivateLocked(s *segment, tail *segmentTail) error {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.dropFilesLocked()
	files, err := l.openWritableFiles(s, tail.indexEntries, tail.timeIndexEntries)
	if err != nil {
		return err
	}
	s.files.Store(files)
	return nil
}
