package hotlog

import (
	"errors"
	"os"
	"path/filepath"
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
// waited for the deletion. So retention retires a segment's .log under the
// locks, a rename to <name>.deleted, and reclaims it after releasing them;
// Open reclaims what a crash left retired.

// deletedSuffix marks a retired segment log awaiting reclaim.
const deletedSuffix = ".deleted"

// reclaimChunk is how much of a retired log one cut frees.
const reclaimChunk = 8 << 20

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
// fsyncing each cut, then removes it.
func reclaim(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var size int64
	stat, err := f.Stat()
	if err == nil {
		size = stat.Size()
	}
	for err == nil && size > 0 {
		size = max(0, size-reclaimChunk)
		if err = f.Truncate(size); err == nil {
			// For pacing, not durability: Config.fsync, which tests use
			// to count and fail durability work, does not see it.
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return removeIfExists(path)
}

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
	l.reclaiming.Go(func() {
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
		for _, path := range paths {
			if l.closed.Load() {
				return
			}
			if err := reclaim(path); err != nil {
				l.logger.Warn("hotlog: reclaiming a deleted segment", "file", path, "err", err)
			}
		}
	})
}
