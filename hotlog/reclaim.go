package hotlog

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Deleting a segment frees its blocks, and on a file system mounted with
// online discard (ext4 -o discard, common on cloud disks) the journal
// commit that frees them also discards them, while every fdatasync on the
// disk that needs a commit (an append that grew a file) waits for it.
// Unlinking a 110 MiB segment at once stalled other files' fdatasyncs for
// 26-31 ms; cut away 8 MiB at a time, each cut fsynced so that it commits
// alone, for at most 3-9 ms, and the whole deletion took as long
// (docs/bench.md, "Produce latency while tiering"). And a segment is
// deleted outside the log's locks: under them, appends to the partition
// waited for the deletion. So a deletion retires a segment's .log, a
// rename to <name>.deleted, and reclaims it after releasing the log's
// locks; Open reclaims what a crash left retired.
//
// Cuts back to back still took the journal from the appenders: with 8
// logs deleting their oldest segments as fast as they rolled, an
// acknowledged append's p99 was twice what it was without deletions. So
// on a DiskSync's disk one cut runs at a time, and after each the
// reclaimer yields the journal for reclaimYield times as long as the cut
// took, while the disk's reclaims have less than reclaimPacedBelow still
// to free; above it they free at full speed, room mattering more than
// latency then (docs/bench.md, "Segment deletes off the append path").

// deletedSuffix marks a retired segment log awaiting reclaim.
const deletedSuffix = ".deleted"

// reclaimChunk is how much of a retired log one cut frees.
const reclaimChunk = 8 << 20

// reclaimYield is how many times a cut's duration a paced reclaimer waits
// before its next cut: reclaims take at most a quarter of the disk's time.
// Measured with BenchmarkAppendBesideDeletion: yielding once as long
// (half the time) left a p99 of 1.2-1.3 times the one without deletions,
// three times as long 1.0-1.06.
const reclaimYield = 3

// reclaimPacedBelow is the backlog of a disk's reclaims under way (bytes
// not yet freed) below which they are paced.
const reclaimPacedBelow = 1 << 30

// reclaimTurn paces the reclaims on one disk (DiskSync.reclaims).
type reclaimTurn struct {
	// turn holds one token, taken for a cut and the pause after it: the
	// disk's reclaims take their turns, and the pauses are the disk's,
	// not each reclaimer's. A channel, so that a reclaimer waiting for
	// its turn sees its Log close.
	turn chan struct{}
	// backlog is the bytes still to free of the files reclaimers have
	// taken on: each reclaimLater's, once their readers and
	// file.delete.delay.ms have let them go.
	backlog atomic.Int64
	// pause is the wait after a paced cut: time.After, or a test's.
	pause func(time.Duration) <-chan time.Time
}

func newReclaimTurn() *reclaimTurn {
	t := &reclaimTurn{turn: make(chan struct{}, 1), pause: time.After}
	t.turn <- struct{}{}
	return t
}

// cut truncates f from size to next and fsyncs it, then, while the
// backlog is under reclaimPacedBelow, waits reclaimYield times as long as
// that took (after a file's last cut too: the next file's first would
// follow at once), all in the disk's turn when there is one (nil: no
// turn, no pause). done says f was cut. A close of stop, before the cut
// or in the pause, ends it: stopped, and done only if it came in the
// pause.
func (t *reclaimTurn) cut(f *os.File, size, next int64, stop <-chan struct{}) (done, stopped bool, err error) {
	if t == nil {
		err := truncateAndSync(f, next)
		return err == nil, false, err
	}
	select {
	case <-t.turn:
	case <-stop:
		return false, true, nil
	}
	defer func() { t.turn <- struct{}{} }()
	select {
	case <-stop: // a closed stop wins over a free turn
		return false, true, nil
	default:
	}
	start := time.Now()
	if err := truncateAndSync(f, next); err != nil {
		return false, false, err
	}
	if t.backlog.Add(next-size) >= reclaimPacedBelow {
		return true, false, nil
	}
	select {
	case <-t.pause(reclaimYield * time.Since(start)):
		return true, false, nil
	case <-stop:
		return true, true, nil
	}
}

// take adds size, the retired files' (filesSize), to the backlog and
// returns what it added, for release to take off what the reclaims did
// not free.
func (t *reclaimTurn) take(size int64) int64 {
	if t == nil {
		return 0
	}
	t.backlog.Add(size)
	return size
}

// filesSize is the sum of the sizes of the files at paths that exist.
func filesSize(paths []string) int64 {
	var total int64
	for _, path := range paths {
		if info, err := os.Stat(path); err == nil {
			total += info.Size()
		}
	}
	return total
}

// release takes off the backlog what remains of taken bytes once freed
// of them have been.
func (t *reclaimTurn) release(taken, freed int64) {
	if t != nil {
		t.backlog.Add(freed - taken)
	}
}

// truncateAndSync cuts f to size and fsyncs it: for pacing, not
// durability, so Config.fsync, which tests use to count and fail
// durability work, does not see it.
func truncateAndSync(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// retireSegmentFiles takes a deleted segment out of the log's namespace:
// its .log renamed to <name>.deleted and its small index files removed.
// It returns the retired path, for reclaim once the log's locks are
// released, or "" when the .log was already gone.
func (l *Log) retireSegmentFiles(base int64) (string, error) {
	name := filepath.Join(l.dir, segmentFileName(base, logSuffix))
	retired := name + deletedSuffix
	err := os.Rename(name, retired)
	if errors.Is(err, os.ErrNotExist) {
		retired = ""
	} else if err != nil {
		return "", err
	}
	return retired, errors.Join(
		removeIfExists(filepath.Join(l.dir, segmentFileName(base, indexSuffix))),
		removeIfExists(filepath.Join(l.dir, segmentFileName(base, timeIndexSuffix))))
}

// reclaim frees a retired file's blocks a chunk at a time, from its end,
// fsyncing each cut, then removes it, and returns the bytes it freed.
// With a turn (nil: unpaced, as at Open) the cuts are paced
// (reclaimTurn) and counted off its backlog, which the caller has
// charged with the file (reclaimTurn.take); a close of stop ends it
// between cuts, leaving the rest of the file to Open. cut, if not nil,
// is told the bytes of each cut once they are freed.
func reclaim(path string, turn *reclaimTurn, stop <-chan struct{}, cut func(freed int64)) (freed int64, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var size int64
	stat, err := f.Stat()
	if err == nil {
		size = stat.Size()
	}
	for err == nil && size > 0 {
		next := max(0, size-reclaimChunk)
		var done, stopped bool
		if done, stopped, err = turn.cut(f, size, next, stop); done {
			freed += size - next
			if cut != nil {
				cut(size - next)
			}
			size = next
		}
		if stopped {
			return freed, f.Close()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return freed, err
	}
	return freed, removeIfExists(path)
}

// Unreclaimed is the size of the segment files the log has deleted and
// not yet reclaimed (reclaimLater: after their readers,
// file.delete.delay.ms and paced cuts): space a statfs still counts as
// used, on its way back.
func (l *Log) Unreclaimed() int64 { return l.unreclaimed.Load() }

// reclaimLater reclaims retired files on a goroutine of their own, once
// no reader holds a state from before they were retired and then
// file.delete.delay.ms has passed: a Section keeps
// its file open, and a cut would shorten the bytes under it. A failure is
// logged, not fatal: the log start that made the files garbage is
// persisted, and the next Open reclaims what is left. Close stops the
// goroutine, leaving the rest to that Open.
func (l *Log) reclaimLater(paths []string) {
	if len(paths) == 0 {
		return
	}
	size := filesSize(paths)
	l.unreclaimed.Add(size)
	l.reclaiming.Go(func() {
		// Unreclaimed falls as each cut frees its bytes, so that a statfs
		// and it count a block twice for no longer than a cut and its
		// pause; the rest (a file left to Open) when this ends.
		var counted int64
		defer func() { l.unreclaimed.Add(counted - size) }()
		cut := func(n int64) {
			counted += n
			l.unreclaimed.Add(-n)
		}
		if !l.retirees.waitUnless(l.closed.Load) {
			return
		}
		if delay, ok := millis(l.conf().FileDeleteDelayMs); delay > 0 || !ok {
			var after <-chan time.Time // never, for a delay past what a Duration holds
			if ok {
				after = l.clock.After(delay)
			}
			select {
			case <-after:
			case <-l.reclaimStop:
				return
			}
		}
		turn := l.syncer.disk.reclaimTurn()
		taken := turn.take(size)
		var freed int64
		defer func() { turn.release(taken, freed) }()
		for _, path := range paths {
			if l.closed.Load() {
				return
			}
			n, err := reclaim(path, turn, l.reclaimStop, cut)
			freed += n
			if err != nil {
				l.logger.Warn("hotlog: reclaiming a deleted segment", "file", path, "err", err)
			}
		}
	})
}
