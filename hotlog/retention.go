package hotlog

import (
	"os"
	"time"
)

// DeleteBefore advances the log start offset to offset (Kafka's
// DeleteRecords, or the start a replica adopts) and deletes the segments
// wholly below it. An offset inside a segment keeps that segment; reads
// below the new start fail all the same. The new start is persisted before
// any file is deleted, unless the disk has no room for it (then later:
// persistNewStartLocked). It returns the deleted segments.
func (l *Log) DeleteBefore(offset int64) ([]SegmentInfo, error) {
	var retired []string
	defer func() { l.reclaimLater(retired) }()
	l.mu.Lock()
	defer l.mu.Unlock()
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
	deleted, retired, err := l.deleteBeforeLocked(offset)
	return deleted, err
}

// ApplyRetention deletes the oldest sealed segments that local retention
// lets go: while a segment's newest timestamp is more than retention.ms old
// (the file's modification time stands in when no batch has a timestamp),
// or while the log would still hold retention.bytes without it, and while
// Config.CanDelete agrees. It stops at the first segment that must stay, so
// the log remains contiguous, and never deletes the active segment. The
// owner calls it periodically; it returns the deleted segments.
func (l *Log) ApplyRetention() ([]SegmentInfo, error) {
	var retired []string
	defer func() { l.reclaimLater(retired) }()
	l.mu.Lock()
	defer l.mu.Unlock()
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
	deleted, retired, err := l.deleteBeforeLocked(cut)
	return deleted, err
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

// persistNewStartLocked persists a log start moved on to offset, in the
// epoch cache and the log checkpoint. A disk too full for either (the
// epoch cache is replaced whole; the checkpoint only where it replaces
// its file, see doc.go) is not a failure (deleting segments is how a
// full disk gets room): the epoch
// cache is trimmed in memory only, whose file Open trims to the log start
// all the same, and the flusher persists the log start once there is
// room. A crash before that reopens the log at its first segment that
// was not deleted: the same start for retention, whose cuts fall between
// segments, and one below it for a DeleteBefore inside a segment, as
// Kafka's log start offsets, checkpointed periodically, may come back
// lower after a crash; that Open also scans the segments left, the
// recovery point being in a deleted one. It reports whether the start is
// persisted. round must be held.
func (l *Log) persistNewStartLocked(offset int64) (persisted bool, err error) {
	if epochs, changed := truncateEpochsFromStart(*l.epochs.Load(), offset); changed {
		if err := l.setEpochsLocked(epochs); isNoSpace(err) {
			l.logger.Warn("hotlog: trimmed epoch cache not persisted: the disk is full", "logStart", offset, "err", err)
			l.epochs.Store(&epochs)
		} else if err != nil {
			return false, err
		}
	}
	err = l.writeCheckpointLocked()
	if isNoSpace(err) {
		l.logger.Warn("hotlog: log start not persisted: the disk is full; the flusher persists it once there is room",
			"logStart", offset, "err", err)
		l.checkpointRefused(true)
		return false, nil
	}
	return err == nil, err
}

// deleteBeforeLocked moves the log start to offset and deletes the
// segments that end at or below it: their .log files are retired, for the
// caller to reclaim once it has released Log.mu (reclaim.go). If that is
// every batch, the active segment is rolled first so it can go too.
// Log.mu must be held.
func (l *Log) deleteBeforeLocked(offset int64) (deleted []SegmentInfo, retired []string, err error) {
	st := l.state.Load()
	if offset >= st.logEndOffset() {
		if err := l.rollLocked(); err != nil {
			return nil, nil, err
		}
		st = l.state.Load()
	}
	// Seal whatever is pending, so the flusher holds no segment about to go.
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	l.flusher.syncing.Lock()
	defer l.flusher.syncing.Unlock()
	if _, err := l.flushRoundLocked(false); err != nil {
		return nil, nil, err
	}
	k := 0
	for k < len(st.segments)-1 && st.segments[k].tail.Load().nextOffset <= offset {
		k++
	}
	l.publishStateLocked(&state{segments: st.segments[k:], logStartOffset: offset})
	persisted, err := l.persistNewStartLocked(offset)
	if err != nil {
		return nil, nil, l.fail(err)
	}
	deleted = make([]SegmentInfo, 0, k)
	retiring := true
	for _, s := range st.segments[:k] {
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
				return deleted, retired, l.fail(err)
			}
		}
		deleted = append(deleted, info)
		l.events.deleted(info)
	}
	return deleted, retired, nil
}
