package hotlog

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stratalog/strata/record"
)

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset. A log's entries increase in both fields.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// UndefinedEpoch and UndefinedOffset are Kafka's answers for an epoch the
// cache cannot place (OffsetForLeaderEpoch's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// The functions below work on immutable slices: the Log publishes a new
// slice for every change, so readers never lock.

// assignEpoch adds entry the way Kafka's LeaderEpochFileCache.assign does:
// nothing changes when entry's epoch is already the latest and its start
// offset is not lower; otherwise every entry with an epoch or start offset at
// or above entry's is dropped (a new leader overrides a deposed one's claim)
// and entry appended.
func assignEpoch(entries []EpochEntry, entry EpochEntry) (updated []EpochEntry, changed bool) {
	if n := len(entries); n > 0 {
		latest := entries[n-1]
		if latest.Epoch == entry.Epoch && entry.StartOffset >= latest.StartOffset {
			return entries, false
		}
	}
	keep := len(entries)
	for keep > 0 && (entries[keep-1].Epoch >= entry.Epoch || entries[keep-1].StartOffset >= entry.StartOffset) {
		keep--
	}
	updated = append(append(make([]EpochEntry, 0, keep+1), entries[:keep]...), entry)
	return updated, true
}

// truncateEpochsFromEnd drops the entries that start at or after offset
// (inclusive) or strictly after it (!inclusive).
func truncateEpochsFromEnd(entries []EpochEntry, offset int64, inclusive bool) (updated []EpochEntry, changed bool) {
	keep := len(entries)
	for keep > 0 && (entries[keep-1].StartOffset > offset || (inclusive && entries[keep-1].StartOffset == offset)) {
		keep--
	}
	if keep == len(entries) {
		return entries, false
	}
	return entries[:keep:keep], true
}

// truncateEpochsFromStart drops the entries that end at or before offset and
// moves the start of the entry covering offset up to it, as Kafka does when
// the log start offset advances (an entry starting exactly at offset covers
// it, and the ones before it go).
func truncateEpochsFromStart(entries []EpochEntry, offset int64) (updated []EpochEntry, changed bool) {
	first := 0
	for first+1 < len(entries) && entries[first+1].StartOffset <= offset {
		first++
	}
	if len(entries) == 0 || (first == 0 && entries[0].StartOffset >= offset) {
		return entries, false
	}
	updated = append([]EpochEntry(nil), entries[first:]...)
	updated[0].StartOffset = offset
	return updated, true
}

// epochForOffset returns the epoch that wrote offset: the entry with the
// largest start offset at or below it.
func epochForOffset(entries []EpochEntry, offset int64) (int32, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].StartOffset <= offset {
			return entries[i].Epoch, true
		}
	}
	return UndefinedEpoch, false
}

// endOffsetForEpoch answers OffsetForLeaderEpoch exactly as Kafka's
// LeaderEpochFileCache.endOffsetFor does: for the latest epoch, the log end
// offset; for an older one, the start offset of the first later epoch,
// paired with the largest known epoch at or below the requested one (or the
// requested epoch itself when it precedes every entry); for an epoch above
// every entry, undefined.
func endOffsetForEpoch(entries []EpochEntry, epoch int32, logEndOffset int64) (int32, int64) {
	if epoch == UndefinedEpoch || len(entries) == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if entries[len(entries)-1].Epoch == epoch {
		return epoch, logEndOffset
	}
	higher := -1
	for i, e := range entries {
		if e.Epoch > epoch {
			higher = i
			break
		}
	}
	if higher < 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if higher == 0 {
		return epoch, entries[0].StartOffset
	}
	return entries[higher-1].Epoch, entries[higher].StartOffset
}

// formatEpochCheckpoint renders the leader-epoch-checkpoint file.
func formatEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", checkpointFileVersion)
	writeEpochEntries(&b, entries)
	return b.Bytes()
}

// writeEpochEntries writes the count line and the entry lines of an epoch
// history, as leader-epoch-checkpoint and reset-intent hold it.
func writeEpochEntries(b *bytes.Buffer, entries []EpochEntry) {
	fmt.Fprintf(b, "%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
}

// parseEpochCheckpoint reads a leader-epoch-checkpoint file, refusing
// anything but the exact format with increasing, non-negative values.
func parseEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return nil, err
	}
	return parseEpochEntries(epochCheckpointName, lines[1:])
}

// parseEpochEntries reads the count line and entry lines that
// writeEpochEntries wrote into the file name.
func parseEpochEntries(name string, lines []string) ([]EpochEntry, error) {
	if len(lines) < 1 {
		return nil, fmt.Errorf("%w: %s: no entry count", ErrCorruptFile, name)
	}
	count, err := strconv.Atoi(lines[0])
	if err != nil || count != len(lines)-1 {
		return nil, fmt.Errorf("%w: %s: count %q for %d entries", ErrCorruptFile, name, lines[0], len(lines)-1)
	}
	entries := make([]EpochEntry, 0, count)
	for _, line := range lines[1:] {
		fields, err := checkpointFields(line, 2)
		if err != nil || fields[0] > 1<<31-1 {
			return nil, fmt.Errorf("%w: %s: entry %q", ErrCorruptFile, name, line)
		}
		e := EpochEntry{Epoch: int32(fields[0]), StartOffset: fields[1]}
		if n := len(entries); n > 0 && (e.Epoch <= entries[n-1].Epoch || e.StartOffset <= entries[n-1].StartOffset) {
			return nil, fmt.Errorf("%w: %s: entry %q does not follow %v", ErrCorruptFile, name, line, entries[n-1])
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// checkpointLines splits a checkpoint file into lines and checks the
// version line.
func checkpointLines(data []byte) ([]string, error) {
	var lines []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptFile, err)
	}
	if len(lines) == 0 || lines[0] != strconv.Itoa(checkpointFileVersion) {
		return nil, fmt.Errorf("%w: checkpoint version line missing or unknown", ErrCorruptFile)
	}
	return lines, nil
}

// checkpointFields parses a line of exactly n non-negative integers
// separated by single spaces.
func checkpointFields(line string, n int) ([]int64, error) {
	parts := strings.Split(line, " ")
	if len(parts) != n {
		return nil, fmt.Errorf("%w: %d fields in %q, want %d", ErrCorruptFile, len(parts), line, n)
	}
	values := make([]int64, n)
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: field %q in %q", ErrCorruptFile, p, line)
		}
		values[i] = v
	}
	return values, nil
}

// latestEpoch is the epoch Append stamps: the latest assigned, or
// UndefinedEpoch before any.
func (l *Log) latestEpoch() int32 {
	entries := *l.epochs.Load()
	if len(entries) == 0 {
		return UndefinedEpoch
	}
	return entries[len(entries)-1].Epoch
}

// AssignEpoch records that leader epoch epoch starts at startOffset
// (normally the log end, when this replica becomes leader); later appends
// are stamped with it. It follows Kafka's LeaderEpochFileCache.assign:
// reassigning the latest epoch at a later offset changes nothing, and
// entries with an epoch or start offset at or above the new one are
// replaced. The leader-epoch-checkpoint is rewritten before it returns.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("%w: epoch %d at offset %d", ErrInvalidArgument, epoch, startOffset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if end := l.LogEndOffset(); startOffset > end {
		return fmt.Errorf("%w: epoch %d start offset %d is past the log end %d", ErrInvalidArgument, epoch, startOffset, end)
	}
	updated, changed := assignEpoch(*l.epochs.Load(), EpochEntry{Epoch: epoch, StartOffset: startOffset})
	if !changed {
		return nil
	}
	return l.setEpochsLocked(updated)
}

// epochsStartedBy returns entries with the epochs that replicated batches
// start: a batch whose leader epoch is above the latest starts it at its
// base offset (assignEpoch's rule). A batch whose epoch is below the latest
// is refused with ErrStaleEpoch.
func epochsStartedBy(entries []EpochEntry, headers []record.Header) (updated []EpochEntry, changed bool, err error) {
	latest := UndefinedEpoch
	if n := len(entries); n > 0 {
		latest = entries[n-1].Epoch
	}
	updated = entries
	for i, h := range headers {
		switch epoch := h.PartitionLeaderEpoch; {
		case epoch < latest:
			return entries, false, fmt.Errorf("%w: batch %d at offset %d has epoch %d, the log has reached %d",
				ErrStaleEpoch, i, h.BaseOffset, epoch, latest)
		case epoch > latest:
			updated, _ = assignEpoch(updated, EpochEntry{Epoch: epoch, StartOffset: h.BaseOffset})
			latest, changed = epoch, true
		}
	}
	return updated, changed, nil
}

// adoptEpochsLocked records the epochs that replicated batches start, and
// persists them before any of the batches is written: a crash then leaves
// entries past the recovered log end, which Open drops, never batches
// whose epoch the history lacks. It returns the history before, and
// whether it changed. Log.mu must be held.
func (l *Log) adoptEpochsLocked(headers []record.Header) (previous []EpochEntry, changed bool, err error) {
	previous = *l.epochs.Load()
	updated, changed, err := epochsStartedBy(previous, headers)
	if err != nil || !changed {
		return previous, false, err
	}
	if err := l.setEpochsLocked(updated); err != nil {
		if isNoSpace(err) {
			return previous, false, fmt.Errorf("%w: %w", ErrNoSpace, err)
		}
		return previous, false, err
	}
	return previous, true, nil
}

// dropUnwrittenEpochsLocked undoes what adoptEpochsLocked recorded for
// batches a failed append did not write, so the history claims only what
// the log holds. Should the rewrite fail too (the disk is full), the cache
// is corrected all the same: the file then still has entries at or past
// the log end, which Open drops or which, starting at the end, claim no
// batch. A failed log is left alone; Open trims the history. Log.mu must
// be held.
func (l *Log) dropUnwrittenEpochsLocked(previous []EpochEntry, headers []record.Header) {
	if l.failure.get() != nil {
		return
	}
	end := l.LogEndOffset()
	written := 0
	for written < len(headers) && headers[written].NextOffset() <= end {
		written++
	}
	kept, _, _ := epochsStartedBy(previous, headers[:written])
	if slices.Equal(kept, *l.epochs.Load()) {
		return
	}
	if err := l.setEpochsLocked(kept); err != nil {
		l.logger.Warn("hotlog: restoring the epoch history after a failed append", "err", err)
		l.epochs.Store(&kept)
	}
}

// setEpochsLocked persists and publishes a new epoch cache. Log.mu must be
// held (or, in Open, the Log not yet shared).
func (l *Log) setEpochsLocked(entries []EpochEntry) error {
	if err := l.syncer.writeFileAtomic(l.dir, epochCheckpointName, formatEpochCheckpoint(entries)); err != nil {
		return err
	}
	l.epochs.Store(&entries)
	return nil
}

// Epochs returns a copy of the epoch cache, oldest first.
func (l *Log) Epochs() []EpochEntry {
	return append([]EpochEntry(nil), *l.epochs.Load()...)
}

// EpochForOffset returns the leader epoch that wrote offset, according to
// the epoch cache.
func (l *Log) EpochForOffset(offset int64) (int32, bool) {
	return epochForOffset(*l.epochs.Load(), offset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch at or
// below epoch that the cache knows, and the offset where it ended (the log
// end for the latest epoch); UndefinedEpoch and UndefinedOffset when epoch
// is above every known epoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return endOffsetForEpoch(*l.epochs.Load(), epoch, l.LogEndOffset())
}

// EndOffsetForEpochBelow is EndOffsetForEpoch over the log's epochs
// preceded by below, the epochs of offsets under the log start that the
// log no longer holds (a tiered partition's, from its bucket: the cache
// starts at the local log start, and Kafka's at the log start of all).
// Entries of below from the cache's first start on, or of a later epoch
// than its first, are ignored. One of the cache's first epoch is kept: it
// is where that epoch began, which an older epoch's answer needs (the
// repeated epoch after it changes no answer).
func (l *Log) EndOffsetForEpochBelow(below []EpochEntry, epoch int32) (int32, int64) {
	entries := *l.epochs.Load()
	if len(entries) > 0 {
		first := entries[0]
		n := 0
		for n < len(below) && below[n].StartOffset < first.StartOffset && below[n].Epoch <= first.Epoch {
			n++
		}
		entries = append(slices.Clip(below[:n]), entries...)
	}
	return endOffsetForEpoch(entries, epoch, l.LogEndOffset())
}
