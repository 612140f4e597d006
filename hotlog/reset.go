package hotlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ResetTo removes every segment and restarts the log empty at offset, with
// epochs as its leader epoch history: afterwards LogStartOffset,
// LogEndOffset and FlushedOffset are offset, and the next append,
// replicated or not, gets offset. It is for a follower whose leader no
// longer holds the follower's log end locally (the data below is in the
// bucket), and for a new replica, which starts at the leader's local log
// start rather than at 0. offset may be below, at or above the log end.
//
// epochs must increase in both fields, with non-negative values and start
// offsets at or below offset; anything else is refused with
// ErrInvalidArgument and changes nothing. The history is kept the way the
// log keeps every history, after DeleteBefore and on Open: it describes the
// log from its start on, so the entry covering offset is moved up to start
// there and the older ones are dropped. What remains is the latest entry,
// starting at offset (none if epochs is empty): later AppendReplicated calls
// check their batches' epochs against it, and Epochs returns it, before and
// after a reopen alike.
//
// ResetTo is crash safe and durable when it returns. It first persists
// its intent, the file reset-intent holding offset and the history
// (written whole and atomically); until that file is durable the old log
// is untouched, and once it is, Open finishes the reset whatever else a
// crash left: it removes every segment file and rewrites both checkpoints
// before it removes the intent. ResetTo does that same work itself: it
// removes the old segments' files, creates the new empty segment, fsyncs
// the directory, rewrites leader-epoch-checkpoint and log-checkpoint, and
// only then removes reset-intent and fsyncs the directory once more. A
// crash at any point therefore recovers the old log whole or the new empty
// one at offset, never a mix, and the intent cannot outlive the reset and
// undo later appends.
//
// Readers of the old log are not disturbed: its files are only unlinked,
// so a Section keeps its file open and its bytes unchanged until released.
// Like TruncateTo, ResetTo waits until no reader holds the old log before
// it goes on (so the old files' space is free when it returns), and a
// caller must not hold a Section while calling it. Appends waiting for
// acknowledgement get ErrTruncated. An I/O error once the intent is
// durable fails the log (ErrFailed); reopening it finishes the reset.
func (l *Log) ResetTo(offset int64, epochs []EpochEntry) error {
	if err := checkResetArguments(offset, epochs); err != nil {
		return err
	}
	trimmed, _ := truncateEpochsFromStart(epochs, offset)
	intent := resetIntent{offset: offset, epochs: append([]EpochEntry(nil), trimmed...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	// With the flusher paused, nothing touches the files being removed.
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	l.flusher.syncing.Lock()
	defer l.flusher.syncing.Unlock()
	if err := l.writeResetIntentLocked(intent); err != nil {
		return err
	}
	if err := l.resetLocked(intent); err != nil {
		return l.fail(fmt.Errorf("reset to %d: %w", offset, err))
	}
	return nil
}

// checkResetArguments refuses an offset or an epoch history ResetTo
// cannot take.
func checkResetArguments(offset int64, epochs []EpochEntry) error {
	if offset < 0 {
		return fmt.Errorf("%w: reset to offset %d", ErrInvalidArgument, offset)
	}
	for i, e := range epochs {
		switch {
		case e.Epoch < 0 || e.StartOffset < 0:
			return fmt.Errorf("%w: epoch entry %v is negative", ErrInvalidArgument, e)
		case e.StartOffset > offset:
			return fmt.Errorf("%w: epoch entry %v starts past the reset offset %d", ErrInvalidArgument, e, offset)
		case i > 0 && (e.Epoch <= epochs[i-1].Epoch || e.StartOffset <= epochs[i-1].StartOffset):
			return fmt.Errorf("%w: epoch entry %v does not follow %v", ErrInvalidArgument, e, epochs[i-1])
		}
	}
	return nil
}

// resetIntent is the content of reset-intent: where the log restarts, and
// the epoch history it restarts with.
type resetIntent struct {
	offset int64
	epochs []EpochEntry
}

func formatResetIntent(intent resetIntent) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointFileVersion, intent.offset)
	writeEpochEntries(&b, intent.epochs)
	return b.Bytes()
}

func parseResetIntent(data []byte) (resetIntent, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return resetIntent{}, err
	}
	if len(lines) < 2 {
		return resetIntent{}, fmt.Errorf("%w: %s: %d lines", ErrCorruptFile, resetIntentName, len(lines))
	}
	offset, err := checkpointFields(lines[1], 1)
	if err != nil {
		return resetIntent{}, fmt.Errorf("%s: %w", resetIntentName, err)
	}
	epochs, err := parseEpochEntries(resetIntentName, lines[2:])
	if err != nil {
		return resetIntent{}, err
	}
	if n := len(epochs); n > 0 && epochs[n-1].StartOffset > offset[0] {
		return resetIntent{}, fmt.Errorf("%w: %s: epoch %v starts past offset %d", ErrCorruptFile, resetIntentName, epochs[n-1], offset[0])
	}
	return resetIntent{offset: offset[0], epochs: epochs}, nil
}

// readResetIntent reads reset-intent, reporting whether there is one.
func (l *Log) readResetIntent() (resetIntent, bool, error) {
	data, err := os.ReadFile(filepath.Join(l.dir, resetIntentName))
	if errors.Is(err, os.ErrNotExist) {
		return resetIntent{}, false, nil
	}
	if err != nil {
		return resetIntent{}, false, err
	}
	intent, err := parseResetIntent(data)
	return intent, err == nil, err
}

// writeResetIntentLocked makes the intent durable. If that fails the
// intent is taken back, durably, so the log goes on as it was; only when
// that fails too does the log fail, since an intent that surfaced after a
// crash would undo the appends that follow. Log.mu and the round lock must
// be held.
func (l *Log) writeResetIntentLocked(intent resetIntent) error {
	err := l.syncer.writeFileAtomic(l.dir, resetIntentName, formatResetIntent(intent))
	if err == nil {
		return nil
	}
	err = fmt.Errorf("persist the reset intent: %w", err)
	if undo := l.removeResetIntent(); undo != nil {
		return l.fail(errors.Join(err, undo))
	}
	if isNoSpace(err) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// removeResetIntent deletes reset-intent durably.
func (l *Log) removeResetIntent() error {
	if err := removeIfExists(filepath.Join(l.dir, resetIntentName)); err != nil {
		return err
	}
	return l.syncer.syncPath(l.dir)
}

// resetLocked does ResetTo's work once the intent is durable. Log.mu and
// the round lock must be held.
func (l *Log) resetLocked(intent resetIntent) error {
	st := l.state.Load()
	f := &l.flusher
	f.mu.Lock()
	f.mu.pendingSeals = nil // rolled segments no longer need sealing
	f.mu.Unlock()
	// Nobody opens the old segments' files again, and they are only
	// unlinked: a reader's Section keeps its file open, its bytes as they
	// were, even when the new segment takes the same name. Removing them
	// before creating the new segment also frees the room for it on a full
	// disk, once no reader holds them.
	for i := len(st.segments) - 1; i >= 0; i-- {
		old := st.segments[i]
		old.detach()
		if err := l.removeSegmentFiles(old.baseOffset); err != nil {
			return err
		}
		l.events.deleted(old.info())
	}
	s := &segment{log: l, baseOffset: intent.offset}
	files, err := createSegmentFiles(s.path(logSuffix), s.path(indexSuffix), s.path(timeIndexSuffix), l.conf().SegmentIndexBytes, l.conf().preallocation())
	if err != nil {
		return err
	}
	files.segment = s
	s.files.Store(files)
	s.tail.Store(emptyTail(intent.offset))

	// Publish the empty log, tell waiting appenders their batches are
	// gone, and wait until no reader holds the old log.
	point := segmentStart(intent.offset)
	l.publishStateLocked(&state{segments: []*segment{s}, logStartOffset: intent.offset})
	l.mu.firstAppend = time.Time{}
	f.mu.Lock()
	f.truncations.Add(1)
	f.mu.flushed = point
	f.mu.Unlock()
	f.messages.Store(0)
	f.unhinted.Store(0)
	l.retirees.wait()

	if err := l.finishReset(intent); err != nil {
		return err
	}
	f.mu.Lock()
	f.mu.checkpointed = point
	// The reset's checkpoint carried the new log start.
	f.mu.startUnpersisted, f.mu.refused = false, false
	l.checkpointedAtLocked(l.clock.Now())
	f.mu.Unlock()
	return nil
}

// finishReset completes a reset whose intent is durable and whose old
// segment files are removed (by ResetTo, or by Open after a crash): it
// makes the removals durable, persists the new epoch history and a
// log-checkpoint for the empty log at the intent's offset, and only then
// removes the intent. Log.mu must be held, or, in Open, the Log not yet
// shared.
func (l *Log) finishReset(intent resetIntent) error {
	if err := l.syncer.syncPath(l.dir); err != nil {
		return err
	}
	if err := l.setEpochsLocked(intent.epochs); err != nil {
		return err
	}
	point := segmentStart(intent.offset)
	if err := l.rewriteCheckpointLocked(logCheckpoint{logStartOffset: intent.offset, recoveryPoint: point}); err != nil {
		return err
	}
	return l.removeResetIntent()
}

// loadInterruptedReset finishes, in Open, a reset that a crash
// interrupted after its intent became durable, and loads the empty log it
// leaves. Every segment file is the old log's: the new segment, if it was
// created, is empty.
func (l *Log) loadInterruptedReset(intent resetIntent, bases []int64, info RecoveryInfo, started time.Time) error {
	l.logger.Warn("hotlog: finishing a reset interrupted by a crash", "offset", intent.offset, "segments", len(bases))
	if _, err := l.removeSegmentsFrom(bases); err != nil {
		return err
	}
	if err := l.finishReset(intent); err != nil {
		return err
	}
	return l.loadEmpty(intent.offset, false, intent.epochs, info, started)
}
