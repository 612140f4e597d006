package hotlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// writebackBytes is how many bytes a periodically flushed log appends
// before the flusher asks the kernel to start writing them out
// (sync_file_range), RocksDB's bytes_per_sync. Left to itself the kernel
// lets gigabytes go dirty (vm.dirty_background_ratio of memory) before
// writing any, and the next fsync then writes them all inside one journal
// commit, which stalls appends to the file for its duration: at 100 MB/s
// with flush.ms 1000 the p99 produce latency was 250 ms. Started early,
// writeback trickles along and the fsync finds little left to do. 2 MiB was
// chosen by measurement (docs/bench.md): 1 MiB cost a third of the peak
// rate in syscalls and queueing, 8 MiB let the p99 back up to 50-75 ms.
const writebackBytes = 2 << 20

// flusher makes appended data durable. One goroutine per Log, owned by the
// Log (started by Open, stopped by Close), runs flush rounds: each round
// fsyncs everything appended before it started, so every appender waiting
// at that moment shares the one fsync (group commit). Appenders wait on a
// ticket: the channel of the round that will cover them. Rounds run when an
// appender waits (SyncBeforeAck), after flush.messages messages, after
// flush.ms, or when the recovery point is due to be persisted. Before a
// round that appenders asked for, the flusher waits, briefly and only on
// events, for the appenders the previous round released
// (lingerForAppenders).
//
// All the flusher's durability work (rounds, sealing, checkpoint writes)
// happens under round, and what a round changes under syncing too; disk
// rounds (DiskSync.want) take only syncing. TruncateTo and ResetTo take
// both, so they stop all of it while they rearrange files; a deletion
// (DeleteBefore, ApplyRetention) takes both to move the log start, then
// round alone to persist it and retire the files; appends take neither,
// so they proceed during an fsync.
type flusher struct {
	wakeup   chan struct{} // buffered 1: look at roundWanted and the timers
	stopping chan struct{}
	done     chan struct{}
	// roundWanted asks the woken flusher for a round; without it, a wakeup
	// only makes the flusher recompute its timers.
	roundWanted atomic.Bool
	// writebackWanted asks the woken flusher to start writeback of what
	// was appended since the last hint; unhinted counts those bytes.
	writebackWanted atomic.Bool
	unhinted        atomic.Int64
	// dirty says something was appended since the last round started.
	dirty atomic.Bool
	// queued says the Log waits in its DiskSync's queue for a disk round.
	queued atomic.Bool

	round sync.Mutex
	// checkpointFile is what the log-checkpoint file holds: the newest
	// checkpoint's number, and whether the next may go in place.
	// Guarded by round.
	checkpointFile checkpointFile

	// syncing is held, inside round, by whatever moves the flushed point or
	// an active segment's durable size, swaps the round's ticket, or
	// rearranges the files a round syncs. Disk rounds take only syncing,
	// so they go on while the flusher holds round for the rest of its
	// work: sealing indexes and writing checkpoints. Lock order: round,
	// then syncing.
	syncing sync.Mutex

	// writebackPhase shifts where the journal's writeback hints of this
	// Log's segments fall (hintWriteback), whole pages below
	// journalWritebackBytes. Set before the flusher starts.
	writebackPhase int64

	// messages counts records appended since the last round (flush.messages).
	messages atomic.Int64
	// truncations counts TruncateTo and ResetTo calls; a waiter whose
	// batches may have been removed gets ErrTruncated instead of a false
	// acknowledgement.
	// Changed under mu.
	truncations atomic.Uint64

	mu struct {
		sync.Mutex
		// flushed: everything before flushed.offset is fsynced.
		flushed recoveryPoint
		// checkpointed is the recovery point persisted in log-checkpoint.
		checkpointed recoveryPoint
		// startUnpersisted says the log start moved on while the disk was
		// too full to persist it (persistNewStartLocked): the flusher's next
		// checkpoint carries it.
		startUnpersisted bool
		// refused says the last checkpoint found no room
		// (checkpointRefused): only the interval brings the next.
		refused   bool
		lastFlush time.Time
		// lastCheckpoint is the point of the checkpoint grid (origin
		// plus whole intervals) at or before the last checkpoint, or
		// refused one; the interval counts from it. checkpointOrigin is
		// the Log's start, less its phase (DiskSync.phase), so
		// a checkpoint that comes early (a seal, the first after an idle
		// spell) does not move the next one off the Log's phase.
		lastCheckpoint   time.Time
		checkpointOrigin time.Time
		// nextRound is closed when the next round to start completes, and
		// registered counts the waits on it. Of the last round, released
		// counts the waits it ended, and carried the waits registered for
		// the round after it while it ran: together, how many appenders
		// are at work.
		nextRound  chan struct{}
		registered int
		released   int
		carried    int
		// lingerTarget, while the flusher lingers, is how many waits it
		// lingers for: only the one that completes the group wakes it.
		lingerTarget int
		// syncTime is a moving average of log fsync durations.
		syncTime time.Duration
		// pendingSeals are rolled segments whose files still need sealing.
		pendingSeals []*segment
		// dirDirty says segment files were created since the directory was
		// last fsynced.
		dirDirty bool
		closed   bool
	}
}

// start launches the flusher goroutine. The Log's files and recovery point
// must be loaded.
func (f *flusher) start(l *Log) {
	now := l.clock.Now()
	f.mu.lastFlush = now
	f.mu.checkpointOrigin = now
	if d := l.syncer.disk; d != nil {
		d.logs.Add(1)
		phase := d.phase()
		interval, _ := millis(l.conf().RecoveryPointCheckpointMs)
		f.mu.checkpointOrigin = now.Add(-time.Duration(phase * float64(interval)))
		f.writebackPhase = writebackPhase(phase)
		l.preparer.phase = phase
	}
	f.mu.lastCheckpoint = f.mu.checkpointOrigin
	f.wakeup = make(chan struct{}, 1)
	f.stopping = make(chan struct{})
	f.done = make(chan struct{})
	go l.runFlusher()
}

// stop ends the flusher goroutine and waits for it. Rounds can still be run
// by the caller under round.
func (f *flusher) stop() {
	close(f.stopping)
	<-f.done
}

// close wakes every waiter for the last time; later waits return at once.
// round must be held.
func (f *flusher) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.closed = true
	close(f.mu.nextRound)
}

// requestRound asks for a round without blocking.
func (f *flusher) requestRound() {
	f.roundWanted.Store(true)
	f.wake()
}

// wake makes the flusher look at roundWanted and its timers.
func (f *flusher) wake() {
	select {
	case f.wakeup <- struct{}{}:
	default:
	}
}

// appended tells the flusher about an append of messages records and
// bytes bytes: it requests a round when flush.messages is reached, and
// otherwise wakes an idle flusher so it arms the flush.ms timer. Under
// SyncPeriodically it also asks for a writeback hint every writebackBytes.
func (l *Log) appended(messages, bytes int64) {
	f := &l.flusher
	if l.conf().Durability == SyncPeriodically && f.unhinted.Add(bytes) >= writebackBytes && !f.writebackWanted.Swap(true) {
		f.wake()
	}
	switch {
	case f.messages.Add(messages) >= l.conf().FlushMessages:
		f.requestRound()
	case !f.dirty.Swap(true):
		if _, set := millis(l.conf().FlushMs); set {
			f.wake()
		}
	}
}

func (l *Log) runFlusher() {
	f := &l.flusher
	defer close(f.done)
	for {
		var timer <-chan time.Time
		if wait, ok := l.flusherWait(); ok {
			timer = l.clock.After(wait)
		}
		select {
		case <-f.stopping:
			return
		case <-f.wakeup:
			if f.writebackWanted.Swap(false) {
				l.startWriteback()
			}
			if !f.roundWanted.Swap(false) {
				continue
			}
			if stopped := l.lingerForAppenders(); stopped {
				return
			}
		case <-timer:
		}
		f.round.Lock()
		f.syncing.Lock()
		if sealed, err := l.flushRoundLocked(true); err == nil {
			l.checkpointIfDueLocked(sealed)
		}
		f.round.Unlock()
	}
}

// checkpointIfDueLocked writes the checkpoint checkpointDue asks for after
// a flusher's round. A full disk is refused, not a failure: the previous
// recovery point stands (Open checks more), and the flusher tries again
// an interval later. round must be held.
func (l *Log) checkpointIfDueLocked(sealed bool) {
	due, atSegmentStart := l.checkpointDue(sealed)
	if !due {
		return
	}
	switch err := l.checkpointLocked(atSegmentStart); {
	case isNoSpace(err):
		l.logger.Warn("hotlog: recovery point not persisted: the disk is full", "err", err)
		l.checkpointRefused(false)
	case err != nil:
		l.fail(err)
	}
}

// startWriteback asks the kernel to start writing out the active
// segment's bytes appended since the last hint, without waiting for them
// (sync_file_range SYNC_FILE_RANGE_WRITE): no durability is claimed, the
// next round's fsync still makes them durable, but it finds them written
// or in flight. A failure is only logged: the hint is an optimization.
func (l *Log) startWriteback() {
	f := &l.flusher
	f.round.Lock()
	defer f.round.Unlock()
	f.syncing.Lock()
	defer f.syncing.Unlock()
	f.unhinted.Store(0)
	st := l.acquireState()
	defer st.release()
	active := st.active()
	// Whole pages only: the page the next append writes into stays out of
	// writeback, so that append need not wait for the page to be written.
	from, to := max(active.writebackFrom, active.syncedSize), active.tail.Load().size&^(int64(pageSize)-1)
	if to <= from {
		return
	}
	if err := l.syncer.writeback(active.files.Load().log, from, to-from); err != nil {
		l.logger.Debug("hotlog: writeback hint failed", "segment", active.baseOffset, "err", err)
		return
	}
	active.writebackFrom = to
}

// lingerForAppenders delays a round until every appender at work during
// the previous one waits for it, for at most one fsync's time. When a round
// ends, the appenders it releases append again within microseconds, but the
// first of them wakes the flusher at once: without the wait, the next fsync
// would cover that first one and those that came during the last fsync,
// the rest would wait for the one after, and the appenders would settle
// into two alternating groups, halving what one fsync covers. The wait ends
// as soon as the group is complete, so it costs nothing under steady load
// and at most one fsync's time when load drops. It reports whether the
// flusher was stopped.
func (l *Log) lingerForAppenders() (stopped bool) {
	f := &l.flusher
	f.mu.Lock()
	target, budget := f.mu.released+f.mu.carried, f.mu.syncTime
	complete := f.mu.registered >= target
	lingers := !complete && target >= 2 && budget > 0
	if lingers {
		f.mu.lingerTarget = target
	}
	f.mu.Unlock()
	if !lingers {
		return false
	}
	defer func() {
		f.mu.Lock()
		f.mu.lingerTarget = 0
		f.mu.Unlock()
	}()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	for {
		select {
		case <-f.wakeup:
		case <-timer.C:
			return false
		case <-f.stopping:
			return true
		}
		f.mu.Lock()
		complete := f.mu.registered >= target
		f.mu.Unlock()
		if complete {
			return false
		}
	}
}

// flusherWait returns how long the flusher may sleep before flush.ms or the
// recovery-point interval needs it; ok=false means it may sleep until woken.
func (l *Log) flusherWait() (wait time.Duration, ok bool) {
	f := &l.flusher
	f.mu.Lock()
	flushed := f.mu.flushed.offset
	// A point past the persisted one, by offset or only by segment (a
	// roll at the flushed end whose checkpoint found no room), arms the
	// interval: an idle log makes no round that would ask again.
	checkpointBehind := l.checkpointBehindLocked()
	lastFlush, lastCheckpoint := f.mu.lastFlush, f.mu.lastCheckpoint
	f.mu.Unlock()
	if l.failure.get() != nil {
		return 0, false
	}
	now := l.clock.Now()
	if interval, set := millis(l.conf().FlushMs); set && l.LogEndOffset() > flushed {
		wait, ok = interval-now.Sub(lastFlush), true
	}
	if checkpointBehind {
		interval, _ := millis(l.conf().RecoveryPointCheckpointMs)
		if w := interval - now.Sub(lastCheckpoint); !ok || w < wait {
			wait, ok = w, true
		}
	}
	return max(wait, 0), ok
}

// checkpointDue says whether the flusher should persist the recovery point
// now: after a seal, when the flushed point has moved into a later segment
// (a round that sealed a segment may have begun before the roll, leaving
// the point at the sealed segment's end; the segments below the persisted
// point's segment are the ones a rewrite may replace), or once the
// interval has passed since the last time (also for a log start a full
// disk kept from being persisted). atSegmentStart says a roll is the only
// reason (checkpointLocked). After a checkpoint the disk had no room for,
// only the interval brings the next (checkpointRefused).
func (l *Log) checkpointDue(sealed bool) (due, atSegmentStart bool) {
	f := &l.flusher
	f.mu.Lock()
	defer f.mu.Unlock()
	if !l.checkpointBehindLocked() {
		return false, false
	}
	interval, _ := millis(l.conf().RecoveryPointCheckpointMs)
	if l.clock.Now().Sub(f.mu.lastCheckpoint) >= interval {
		return true, false
	}
	rolled := !f.mu.refused && (sealed || f.mu.flushed.segmentBase != f.mu.checkpointed.segmentBase)
	return rolled, rolled
}

// checkpointBehindLocked says whether the persisted checkpoint lags: the
// flushed point differs from it, or a log start awaits persisting.
// flusher.mu must be held.
func (l *Log) checkpointBehindLocked() bool {
	f := &l.flusher
	return f.mu.flushed != f.mu.checkpointed || f.mu.startUnpersisted
}

// flushRoundLocked fsyncs everything appended before it started: the
// segments rolled since the last round, the directory if segment files
// were created, and the active segment's log. It then advances the
// flushed point and releases the waiters of this round, and only then
// seals the rolled segments' indexes, which no acknowledgement needs (a
// checkpoint, which would vouch for them, comes after the round). round
// and syncing must be held; with unlockSyncing, the round unlocks syncing when
// it releases its waiters (the flusher's own rounds: disk rounds may then
// go on while it seals).
func (l *Log) flushRoundLocked(unlockSyncing bool) (sealed bool, err error) {
	r := l.beginRoundLocked()
	released := false
	release := func() {
		if !released {
			released = true
			l.endRoundLocked(r)
			if unlockSyncing {
				l.flusher.syncing.Unlock()
			}
		}
	}
	defer release()
	if err := l.failure.get(); err != nil {
		return false, err
	}
	// Acquire the state before taking the pending seals: a roll queues its
	// segment before publishing the state without it, so any segment this
	// state shows as sealed is either sealed already or in the queue now.
	st := l.acquireState()
	defer st.release()
	f := &l.flusher
	f.mu.Lock()
	seals, dirDirty := f.mu.pendingSeals, f.mu.dirDirty
	f.mu.pendingSeals, f.mu.dirDirty = nil, false
	f.mu.Unlock()
	active := st.active()
	tail := active.tail.Load()
	point := tail.point(active.baseOffset)

	for _, s := range seals {
		if err := truncatePreallocated(s); err != nil {
			return false, l.fail(err)
		}
	}
	// The rolled segments' logs, the directory that names the new one
	// and the active segment are made durable together: one Sync round
	// where the DiskSync shares its calls, not three one after another
	// while the partition's appenders wait. In the flusher's own rounds
	// a journal takes the active segment on its own (syncActiveLocked).
	syncActive := tail.size > active.syncedSize
	files, full := make([]*os.File, 0, len(seals)+2), make([]bool, 0, len(seals)+2)
	for _, s := range seals {
		files, full = append(files, s.files.Load().log), append(full, false)
	}
	if dirDirty {
		dir, err := os.Open(l.dir)
		if err != nil {
			return false, l.fail(fmt.Errorf("fsync %s: %w", l.dir, err))
		}
		defer dir.Close()
		files, full = append(files, dir), append(full, true)
	}
	withActive := syncActive && !(unlockSyncing && l.syncer.journaled())
	if withActive {
		files, full = append(files, active.files.Load().log), append(full, false)
	}
	start := time.Now()
	if len(files) > 0 {
		if err := l.syncer.syncFiles(files, full); err != nil {
			return false, l.fail(err)
		}
	}
	took := time.Since(start)
	for _, s := range seals {
		l.syncedLocked(s, s.tail.Load().size, took)
	}
	if syncActive && !withActive {
		start := time.Now()
		if err := l.syncActiveLocked(active, tail, unlockSyncing); err != nil {
			return false, l.fail(err)
		}
		took = time.Since(start)
	}
	// The flushed point moves before the Synced event, whose listener
	// reads it.
	l.flushedTo(point)
	if syncActive {
		l.syncedLocked(active, tail.size, took)
	}
	release()
	for _, s := range seals {
		if err := l.sealIndexesLocked(s); err != nil {
			return false, l.fail(err)
		}
	}
	return len(seals) > 0, nil
}

// beginRoundLocked starts a round: the waits registered so far are the
// round's, later ones wait for the next. round must be held; pass the
// result to endRoundLocked when the round's work is done.
func (l *Log) beginRoundLocked() (done chan struct{}) {
	f := &l.flusher
	f.mu.Lock()
	done = f.mu.nextRound
	f.mu.nextRound = make(chan struct{})
	f.mu.released, f.mu.registered = f.mu.registered, 0
	f.mu.Unlock()
	f.messages.Store(0)
	f.dirty.Store(false)
	return done
}

// endRoundLocked releases the waits of the round begun with done.
func (l *Log) endRoundLocked(done chan struct{}) {
	f := &l.flusher
	f.mu.Lock()
	f.mu.carried = f.mu.registered
	f.mu.Unlock()
	close(done)
}

// flushedTo advances the flushed point to point, unless it is there
// already, once a round has made everything before point durable. It
// reports whether the point moved away from the persisted recovery point
// for the first time since a checkpoint: the flusher, which may be asleep
// without a timer, must then arm the checkpoint interval.
func (l *Log) flushedTo(point recoveryPoint) (checkpointArmed bool) {
	f := &l.flusher
	f.mu.Lock()
	defer f.mu.Unlock()
	before := f.mu.flushed
	if point.offset >= f.mu.flushed.offset {
		f.mu.flushed = point
	}
	f.mu.lastFlush = l.clock.Now()
	return before == f.mu.checkpointed && f.mu.flushed != f.mu.checkpointed
}

// syncLogLocked fdatasyncs a segment's log, of which size bytes are
// written. round must be held.
func (l *Log) syncLogLocked(s *segment, file *os.File, size int64) error {
	start := time.Now()
	if err := l.syncer.syncData(file); err != nil {
		return err
	}
	l.syncedLocked(s, size, time.Since(start))
	return nil
}

// syncActiveLocked makes the active segment's log durable up to tail in
// a round of the Log's own. A flusher's round (flusher) goes through the
// DiskSync's journal where it takes the round (DiskSync.journalOwn), as a
// disk round would; the rounds of TruncateTo, DeleteBefore and Close,
// rare and about to change the files, sync the file itself, as does a
// round the journal does not take. round and syncing must be held.
func (l *Log) syncActiveLocked(active *segment, tail *segmentTail, flusher bool) error {
	file := active.files.Load().log
	if d := l.syncer.disk; d != nil && flusher {
		m := diskMember{log: l, active: active, tail: tail, file: file}
		if taken, err := d.journalOwn(m); taken {
			if err != nil {
				return fmt.Errorf("sync %s: %w", file.Name(), err)
			}
			return nil
		}
	}
	return l.syncer.syncData(file)
}

// syncedLocked records that size bytes of s's log are durable, by a call
// that took took. round must be held.
func (l *Log) syncedLocked(s *segment, size int64, took time.Duration) {
	s.syncedSize = size
	f := &l.flusher
	f.mu.Lock()
	f.mu.syncTime += (took - f.mu.syncTime) / 8
	f.mu.Unlock()
	l.events.synced(SyncInfo{BaseOffset: s.baseOffset, Size: size, Duration: took})
}

// sealLocked makes a rolled segment immutable on disk: its log fsynced, its
// indexes trimmed to their entries and fsynced. Its files then pass to the
// FileCache. round must be held.
func (l *Log) sealLocked(s *segment) error {
	if err := truncatePreallocated(s); err != nil {
		return l.fail(err)
	}
	if err := l.syncLogLocked(s, s.files.Load().log, s.tail.Load().size); err != nil {
		return err
	}
	return l.sealIndexesLocked(s)
}

// truncatePreallocated frees any blocks preallocated past what a rolled
// segment holds (preallocate, now or when the segment was created): its
// size does not change, so neither does what a reader sees.
func truncatePreallocated(s *segment) error {
	return s.files.Load().log.Truncate(s.tail.Load().size)
}

// sealIndexesLocked finishes the seal of a rolled segment whose log is
// durable: its indexes trimmed to their entries and fsynced; its files
// then pass to the FileCache. round must be held.
func (l *Log) sealIndexesLocked(s *segment) error {
	files, tail := s.files.Load(), s.tail.Load()
	if err := l.persistIndexesLocked(files, tail.indexEntries, tail.timeIndexEntries, true); err != nil {
		return err
	}
	s.indexesSynced = true
	l.files.insert(files)
	l.events.sealed(s.info())
	return nil
}

// persistIndexesLocked makes the first indexEntries offset-index entries
// and timeIndexEntries time-index entries of files durable: it copies
// them from the private mappings into the index files (pwrite), cuts each
// file to its entries when trim is set (a seal), and fsyncs both in one
// call where the DiskSync shares its calls (syncFiles), through one
// descriptor per file. Entries below those counts no longer change while
// round is held (appends only add entries; TruncateTo, which removes
// some, holds round), so appends may go on. The blocks written were
// allocated by reserveIndexes. round must be held.
func (l *Log) persistIndexesLocked(files *segmentFiles, indexEntries, timeIndexEntries int, trim bool) (err error) {
	var opened []*os.File
	defer func() {
		for _, f := range opened {
			if closeErr := f.Close(); err == nil && closeErr != nil {
				err = fmt.Errorf("persist %s: %w", f.Name(), closeErr)
			}
		}
	}()
	for _, w := range []struct {
		suffix string
		bytes  []byte
	}{
		{indexSuffix, files.index[:indexEntries*indexEntrySize]},
		{timeIndexSuffix, files.timeIndex[:timeIndexEntries*timeIndexEntrySize]},
	} {
		path := files.segment.path(w.suffix)
		file, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		opened = append(opened, file)
		_, err = file.WriteAt(w.bytes, 0)
		if err == nil && trim {
			err = file.Truncate(int64(len(w.bytes)))
		}
		if err != nil {
			return fmt.Errorf("persist %s: %w", path, err)
		}
	}
	if err := l.syncer.syncFiles(opened, []bool{true, true}); err != nil {
		return fmt.Errorf("persist indexes: %w", err)
	}
	return nil
}

// writeCheckpointLocked persists the log start offset and the flushed
// point as the recovery point, first fsyncing the index entries the point
// vouches for. round must be held.
func (l *Log) writeCheckpointLocked() error { return l.checkpointLocked(false) }

// checkpointLocked is writeCheckpointLocked, but with atSegmentStart a
// flushed point inside a segment whose indexes are not sealed (the active
// one, after a roll) is taken back to that segment's start, which needs
// none of its index entries: what a roll's checkpoint is for (recovery and
// rewrites past the sealed segments) without a round for the new
// segment's first entries before the checkpoint's own. When every
// partition rolls at once those rounds come all together; the interval's
// checkpoint takes the point on. round must be held.
func (l *Log) checkpointLocked(atSegmentStart bool) error {
	f := &l.flusher
	// The point first: a disk round may move it on meanwhile, within the
	// active segment of a state at least this new.
	f.mu.Lock()
	point := f.mu.flushed
	f.mu.Unlock()
	st := l.state.Load()
	i := st.segmentFor(point.segmentBase)
	if i < 0 || st.segments[i].baseOffset != point.segmentBase {
		return fmt.Errorf("recovery point segment %d is not in the log", point.segmentBase)
	}
	switch s := st.segments[i]; {
	case s.indexesSynced:
	case atSegmentStart:
		point = segmentStart(s.baseOffset)
	default:
		if err := l.persistIndexesLocked(s.files.Load(), point.indexEntries, point.timeIndexEntries, false); err != nil {
			return err
		}
	}
	if err := l.persistCheckpointLocked(logCheckpoint{logStartOffset: st.logStartOffset, recoveryPoint: point}); err != nil {
		return err
	}
	f.mu.Lock()
	f.mu.checkpointed = point
	f.mu.startUnpersisted, f.mu.refused = false, false
	l.checkpointedAtLocked(l.clock.Now())
	f.mu.Unlock()
	return nil
}

// persistCheckpointLocked makes c the log's durable checkpoint. It writes
// c into the log-checkpoint slot that does not hold the newest checkpoint
// and fdatasyncs the file: one sync of a block that is already allocated,
// where replacing the file would also create an inode, rename and fsync
// the directory. A crash in the write leaves that slot torn and the other
// one, the checkpoint before, in force. A log whose file is not in the
// slot format yet (new, of an older release, or damaged) gets it whole,
// replaced atomically, and so does the next checkpoint after a write that
// failed, whose slot may hold anything. round must be held.
func (l *Log) persistCheckpointLocked(c logCheckpoint) error {
	f := &l.flusher
	if !f.checkpointFile.inPlace {
		return l.rewriteCheckpointLocked(c)
	}
	seq := f.checkpointFile.seq + 1
	path := filepath.Join(l.dir, logCheckpointName)
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return l.rewriteCheckpointLocked(c)
	}
	if err != nil {
		return err
	}
	_, err = file.WriteAt(encodeCheckpointSlot(seq, c), checkpointSlotOffset(seq))
	if err == nil {
		err = l.syncer.syncData(file)
	}
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		f.checkpointFile.inPlace = false
		return fmt.Errorf("write %s: %w", path, err)
	}
	f.checkpointFile = checkpointFile{checkpoint: c, seq: seq, inPlace: true}
	return nil
}

// rewriteCheckpointLocked replaces the log-checkpoint file with one
// holding c in its first slot. round must be held, or, in Open, the Log
// not yet shared.
func (l *Log) rewriteCheckpointLocked(c logCheckpoint) error {
	if err := l.syncer.writeFileAtomic(l.dir, logCheckpointName, checkpointFileImage(c)); err != nil {
		// The rename may have landed: the file's numbers are unknown.
		l.flusher.checkpointFile.inPlace = false
		return err
	}
	l.flusher.checkpointFile = checkpointFile{checkpoint: c, inPlace: true}
	return nil
}

// checkpointedAtLocked records a checkpoint made, or refused, at now: the
// next is due an interval after the grid point at or before now.
// flusher.mu must be held.
func (l *Log) checkpointedAtLocked(now time.Time) {
	f := &l.flusher
	f.mu.lastCheckpoint = now
	interval, _ := millis(l.conf().RecoveryPointCheckpointMs)
	if since := now.Sub(f.mu.checkpointOrigin); interval > 0 && since >= 0 {
		f.mu.lastCheckpoint = now.Add(-(since % interval))
	}
}

// checkpointRefused records a checkpoint the disk had no room for, so
// the flusher tries again a recovery-point interval later rather than at
// once (startMoved: the log start it carried is not persisted either).
func (l *Log) checkpointRefused(startMoved bool) {
	f := &l.flusher
	f.mu.Lock()
	l.checkpointedAtLocked(l.clock.Now())
	f.mu.startUnpersisted = f.mu.startUnpersisted || startMoved
	f.mu.refused = true
	f.mu.Unlock()
	f.wake()
}

// queueSealLocked hands a rolled segment to the flusher. Log.mu must be
// held, and the call must come before the state without the segment as
// active is published; the caller then requests the round that seals it.
func (l *Log) queueSealLocked(s *segment) {
	f := &l.flusher
	f.mu.Lock()
	f.mu.pendingSeals = append(f.mu.pendingSeals, s)
	f.mu.dirDirty = true
	f.mu.Unlock()
}

// waitFlushed blocks until every offset below offset is fsynced. It fails
// with ErrTruncated if TruncateTo or ResetTo ran since the caller read
// truncations.
func (l *Log) waitFlushed(ctx context.Context, offset int64, truncations uint64) error {
	for {
		round, err := l.registerFlushWait(offset, truncations)
		if round == nil {
			return err
		}
		select {
		case <-round:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// registerFlushWait registers a wait for every offset below offset to be
// fsynced and asks for the round it waits for, which it returns. It
// returns no round when there is nothing to wait for, with the reason:
// nil when the offsets are fsynced, ErrTruncated, ErrClosed or the Log's
// failure.
func (l *Log) registerFlushWait(offset int64, truncations uint64) (round chan struct{}, err error) {
	if err := l.failure.get(); err != nil {
		return nil, err
	}
	f := &l.flusher
	f.mu.Lock()
	switch {
	case f.truncations.Load() != truncations:
		f.mu.Unlock()
		return nil, ErrTruncated
	case f.mu.flushed.offset >= offset:
		f.mu.Unlock()
		return nil, nil
	case f.mu.closed:
		f.mu.Unlock()
		return nil, ErrClosed
	}
	round = f.mu.nextRound
	f.mu.registered++
	flusherLingers := f.mu.lingerTarget > 0
	lingering := f.mu.registered < f.mu.lingerTarget
	f.mu.Unlock()
	switch {
	case lingering:
		// The flusher is waiting for the group to fill; the wait that
		// completes it wakes the flusher.
		f.roundWanted.Store(true)
	case !flusherLingers && l.disksRound():
		l.syncer.disk.want(l)
	default:
		f.requestRound()
	}
	return round, nil
}

// Sync blocks until everything appended before the call is fsynced,
// whatever the durability policy.
func (l *Log) Sync(ctx context.Context) error {
	return l.ExpectSync().Wait(ctx)
}

// ExpectSync registers the wait Sync makes, for everything appended
// before the call, without blocking; Wait on the result blocks as Sync
// does (AppendResult.Expect).
func (l *Log) ExpectSync() Ack {
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return Ack{err: err}
	}
	a := Ack{log: l, offset: l.LogEndOffset(), truncations: l.flusher.truncations.Load()}
	l.mu.Unlock()
	a.round, _ = l.registerFlushWait(a.offset, a.truncations)
	return a
}

// FlushedOffset returns the offset below which every record is fsynced.
func (l *Log) FlushedOffset() int64 {
	l.flusher.mu.Lock()
	defer l.flusher.mu.Unlock()
	return l.flusher.mu.flushed.offset
}

// RecoveryPoint returns the persisted recovery point: after a crash, Open
// trusts everything below it and checks everything above.
func (l *Log) RecoveryPoint() int64 {
	l.flusher.mu.Lock()
	defer l.flusher.mu.Unlock()
	return l.flusher.mu.checkpointed.offset
}

// disksRound says whether a waiting appender's round is the DiskSync's
// (disk rounds, disksync.go) rather than the flusher's: under
// SyncBeforeAck, with a DiskSync that shares its calls.
func (l *Log) disksRound() bool {
	d := l.syncer.disk
	return d != nil && d.Shared() && l.conf().Durability == SyncBeforeAck
}

// diskMember is one Log's round inside a disk round: begun, with the
// active segment's log to make durable up to tail (file is nil when it
// is durable already), holding the Log's syncing lock and state until
// finish.
type diskMember struct {
	log    *Log
	done   chan struct{}
	st     *state
	active *segment
	tail   *segmentTail
	file   *os.File
	call   int // file's place in the disk round's call
}

// joinDiskRound begins a round of l inside a disk round. It leaves the
// round to l's flusher, asking it for one, when syncing is held (a round
// of the flusher's, or a truncation) or when the round has more to do
// than one data sync: segments to seal, a directory to fsync. ok is false
// then, and when l is closed or failed (a failed Log's waiters are
// released at once, to see the failure).
func (l *Log) joinDiskRound() (m diskMember, ok bool) {
	f := &l.flusher
	if !f.syncing.TryLock() {
		f.requestRound()
		return m, false
	}
	f.mu.Lock()
	closed := f.mu.closed
	f.mu.Unlock()
	if closed {
		f.syncing.Unlock()
		return m, false
	}
	if l.failure.get() != nil {
		l.endRoundLocked(l.beginRoundLocked())
		f.syncing.Unlock()
		return m, false
	}
	// As in flushRoundLocked: with the state acquired first, an empty
	// seal queue means every segment but this state's active one is
	// sealed.
	st := l.acquireState()
	f.mu.Lock()
	handOff := len(f.mu.pendingSeals) > 0 || f.mu.dirDirty
	f.mu.Unlock()
	if handOff {
		st.release()
		f.syncing.Unlock()
		f.requestRound()
		return m, false
	}
	m = diskMember{log: l, done: l.beginRoundLocked(), st: st, active: st.active()}
	m.tail = m.active.tail.Load()
	if m.tail.size > m.active.syncedSize {
		m.file = m.active.files.Load().log
	}
	return m, true
}

// finish ends m's round once the call that made m.file durable returned
// err after took, as flushRoundLocked would have: the flushed point
// advances, or the Log fails; the waiters are released either way.
func (m diskMember) finish(err error, took time.Duration) {
	l, f := m.log, &m.log.flusher
	armCheckpoint := false
	if err != nil {
		// err names the call: a shared syncfs, or this file's own.
		l.fail(fmt.Errorf("sync %s: %w", m.file.Name(), err))
	} else {
		// The flushed point moves before the Synced event, whose
		// listener reads it.
		armCheckpoint = l.flushedTo(m.tail.point(m.active.baseOffset))
		if m.file != nil {
			l.syncedLocked(m.active, m.tail.size, took)
		}
	}
	m.st.release()
	l.endRoundLocked(m.done)
	f.syncing.Unlock()
	if armCheckpoint {
		f.wake()
	}
}
