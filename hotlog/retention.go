package hotlog

import (
	"os"
	"slices"
	"time"
)

// DeleteBefore advances the log start offset to offset (Kafka's
// DeleteRecords, or the start a replica adopts) and deletes the segments
// wholly below it. An offset inside a segment keeps that segment; reads
// below the new start fail all the same. The new start is persisted before
// any file is deleted, unless the disk has no room for it (then later:
// persistNewStartLocked). It returns the deleted segments.
func (l *Log) DeleteBefore(offset int64) ([]SegmentInfo, error) {
	l.mu.Lock()
	d, err := l.deleteBeforeLocked(offset)
	l.mu.Unlock()
	return l.finishDeletion(d, err)
}

// deleteBeforeLocked is DeleteBefore under Log.mu.
func (l *Log) deleteBeforeLocked(offset int64) (*deletion, error) {
	if err := l.checkWritableLocked(); err != nil {
		return nil, err
	}
	st := l.state.Load()
	if offset > st.logEndOffset() {
		return nil, outOfRange(offset, st.logStartOffset, st.logEndOffset())
	}
	if offset <= st.logStartOffset {
		return nil, nil
	}
	return l.startDeletionLocked(offset)
}

// ApplyRetention deletes the oldest sealed segments that local retention
// lets go: while a segment's newest timestamp is more than retention.ms old
// (the file's modification time stands in when no batch has a timestamp),
// or while the log would still hold retention.bytes without it, and while
// Config.CanDelete agrees. It stops at the first segment that must stay, so
// the log remains contiguous, and never deletes the active segment. The
// owner calls it periodically; it returns the deleted segments.
func (l *Log) ApplyRetention() ([]SegmentInfo, error) {
	l.mu.Lock()
	d, err := l.applyRetentionLocked()
	l.mu.Unlock()
	return l.finishDeletion(d, err)
}

// applyRetentionLocked is ApplyRetention under Log.mu.
func (l *Log) applyRetentionLocked() (*deletion, error) {
	if err := l.checkWritableLocked(); err != nil {
		return nil, err
	}
	now, cfg := l.clock.Now(), l.conf()
	st := l.state.Load()
	var total int64
	for _, s := range st.segments {
		total += s.tail.Load().size
	}
	cut := int64(-1)
	for _, s := range st.segments[:len(st.segments)-1] {
		info := s.info()
		retention, limited := millis(cfg.RetentionMs)
		expired := cfg.RetentionMs >= 0 && limited && now.Sub(l.segmentTime(s, info)) > retention
		oversized := cfg.RetentionBytes >= 0 && total-info.Size >= cfg.RetentionBytes
		if !expired && !oversized {
			break
		}
		if cfg.CanDelete != nil && !cfg.CanDelete(info) {
			break
		}
		total -= info.Size
		cut = info.NextOffset
	}
	if cut < 0 {
		return nil, nil
	}
	return l.startDeletionLocked(cut)
}

// segmentTime is the time retention.ms measures a segment's age from: its
// max timestamp, or its .log's modification time when it has none (as
// Kafka does).
func (l *Log) segmentTime(s *segment, info SegmentInfo) time.Time {
	if info.MaxTimestamp != NoTimestamp {
		return time.UnixMilli(info.MaxTimestamp)
	}
	stat, err := os.Stat(s.path(logSuffix))
	if err != nil {
		// Unknown age: treat the segment as new rather than delete it.
		return l.clock.Now()
	}
	return stat.ModTime()
}

// persistNewStartLocked persists a log start moved on to offset in the
// log checkpoint. The epoch cache is trimmed in memory only: Open trims
// its file to the persisted log start all the same (loadEpochs), and the
// next change of the cache writes it whole, so a deletion costs no
// replacement of that file (two fsyncs). A disk too full for the
// checkpoint (where it replaces its file, see doc.go) is not a failure
// (deleting segments is how a full disk gets room): the flusher persists
// the log start once there is room. A crash before that reopens the log
// at its first segment that was not deleted: the same start for
// retention, whose cuts fall between segments, and one below it for a
// DeleteBefore inside a segment, as Kafka's log start offsets,
// checkpointed periodically, may come back lower after a crash; that
// Open also scans the segments left, the recovery point being in a
// deleted one. It reports whether the start is persisted. round must be
// held.
func (l *Log) persistNewStartLocked(offset int64) (persisted bool, err error) {
	err = l.writeCheckpointLocked()
	if isNoSpace(err) {
		l.logger.Warn("hotlog: log start not persisted: the disk is full; the flusher persists it once there is room",
			"logStart", offset, "err", err)
		l.checkpointRefused(true)
		return false, nil
	}
	return err == nil, err
}

// deletion is a log start moved on whose segments are not yet deleted:
// what startDeletionLocked did under Log.mu, for finishDeletion to
// complete without it. Until then the Log's flusher round lock stays held.
type deletion struct {
	offset   int64
	segments []*segment // below the new start, oldest first
}

// startDeletionLocked moves the log start to offset and takes the
// segments that end at or below it out of the log's state; if that is
// every batch, the active segment is rolled first so it can go too.
// Log.mu must be held. On success it returns with the flusher's round
// lock held, and the caller must release Log.mu and then call
// finishDeletion, which persists the new start and retires the files
// under round alone: appends (Log.mu) and the disk rounds that
// acknowledge them (syncing) go on meanwhile. Held through those
// fsyncs, Log.mu and syncing stalled every partition's acknowledgements
// behind each segment deleted (docs/bench.md, "Segment deletes off the
// append path"). What still waits for finishDeletion: anything else that
// takes round (another deletion, TruncateTo, ResetTo, Close, which hold
// Log.mu meanwhile, so appends wait too), and the flusher's own rounds:
// the acknowledgements of a Log without a DiskSync, and a seal after a
// roll.
func (l *Log) startDeletionLocked(offset int64) (*deletion, error) {
	st := l.state.Load()
	if offset >= st.logEndOffset() {
		if err := l.rollLocked(); err != nil {
			return nil, err
		}
		st = l.state.Load()
	}
	f := &l.flusher
	f.round.Lock()
	f.syncing.Lock()
	// A round would find a failure; without one, check here: a failed
	// log refuses work until reopened.
	if err := l.failure.get(); err != nil {
		f.syncing.Unlock()
		f.round.Unlock()
		return nil, err
	}
	k := 0
	for k < len(st.segments)-1 && st.segments[k].tail.Load().nextOffset <= offset {
		k++
	}
	if l.roundBeforeDeletionLocked(offset, st.segments[:k], st.segments[k].baseOffset) {
		if _, err := l.flushRoundLocked(false); err != nil {
			f.syncing.Unlock()
			f.round.Unlock()
			return nil, err
		}
	}
	l.publishStateLocked(&state{segments: st.segments[k:], logStartOffset: offset})
	if epochs, changed := truncateEpochsFromStart(*l.epochs.Load(), offset); changed {
		l.epochs.Store(&epochs)
	}
	f.syncing.Unlock()
	return &deletion{offset: offset, segments: st.segments[:k]}, nil
}

// roundBeforeDeletionLocked reports whether a round must run before the
// log start moves to offset and segments go: when the start would pass
// the flushed point (a crash must not find it above the log's end), the
// flushed point lies below keptBase (the first segment kept; the
// checkpoint needs a recovery point in the log), or one of segments
// waits to be sealed (the flusher must not hold a segment that is gone).
// A deletion by retention, of segments sealed long before, needs none.
// syncing must be held.
func (l *Log) roundBeforeDeletionLocked(offset int64, segments []*segment, keptBase int64) bool {
	f := &l.flusher
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.flushed.offset < offset || f.mu.flushed.segmentBase < keptBase {
		return true
	}
	for _, s := range f.mu.pendingSeals {
		if slices.Contains(segments, s) {
			return true
		}
	}
	return false
}

// finishDeletion completes the deletion startDeletionLocked began (d; nil
// when there was none, err its error): it persists the new start, retires
// the segments' files and releases the round lock, then has the retired
// files reclaimed. Log.mu must not be held. It returns the deleted
// segments.
func (l *Log) finishDeletion(d *deletion, err error) (deleted []SegmentInfo, _ error) {
	if d == nil {
		return nil, err
	}
	var retired []string
	// reclaimLater before round goes: Close takes round before it waits
	// for the reclaimers.
	defer l.flusher.round.Unlock()
	defer func() { l.reclaimLater(retired) }()
	persisted, err := l.persistNewStartLocked(d.offset)
	if err != nil {
		return nil, l.fail(err)
	}
	deleted = make([]SegmentInfo, 0, len(d.segments))
	retiring := true
	for _, s := range d.segments {
		info := s.info()
		s.detach()
		if !retiring {
			continue
		}
		path, err := l.retireSegmentFiles(s.baseOffset)
		if path != "" {
			retired = append(retired, path)
		}
		if err != nil {
			l.logger.Warn("hotlog: deleting segment files", "segment", s.baseOffset, "err", err)
			// Open deletes the leftovers below a persisted start; below
			// one that is not, it starts the log at the first segment
			// left, so the rest stay until then.
			retiring = persisted
			continue
		}
		if !persisted {
			// Each retirement durable before the next: the segments a
			// crash leaves are contiguous.
			if err := l.syncer.syncPath(l.dir); err != nil {
				return deleted, l.fail(err)
			}
		}
		deleted = append(deleted, info)
		l.events.deleted(info)
	}
	return deleted, nil
}
