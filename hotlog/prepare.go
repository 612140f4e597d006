package hotlog

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// preparer creates the next segment's files ahead of need, so a roll
// renames three files instead of creating, sizing and mapping them while
// appends wait (etcd's file_pipeline, with a twist): it starts only once
// the active segment is half full, so an idle partition never holds a
// spare segment, and up to three quarters full by the Log's phase, so
// partitions that fill at one rate do not all create their files at once
// (512 of them doing so put 100-155 ms on produce's p99 in that second,
// between rolls; docs/bench.md). Each preparation is one short-lived
// goroutine owned by the Log: started under Log.mu, it hands its result
// to the buffered ready channel and exits; Close waits for it and deletes
// an unused result.
type preparer struct {
	ready chan preparedFiles // buffered 1
	// running says a goroutine is preparing, or its result waits in ready.
	// Guarded by Log.mu.
	running bool
	wg      sync.WaitGroup
	// phase, in [0, 1), is the Log's (DiskSync.phase; 0 without one):
	// a preparation starts at (1/2 + phase/4) of the size the segment
	// rolls at (Log.rollBytes). Set before the first append.
	phase float64
}

type preparedFiles struct {
	files *segmentFiles
	err   error
}

func (p *preparer) init() { p.ready = make(chan preparedFiles, 1) }

func (l *Log) preparedPath(suffix string) string {
	return filepath.Join(l.dir, preparedName+suffix)
}

// maybeStart starts a preparation when the active segment, which rolls
// past rollBytes, has reached its start (half of rollBytes, and a quarter
// more by the phase) and none is under way. Log.mu must be held.
func (p *preparer) maybeStart(l *Log, activeSize, rollBytes int64) {
	if p.running || activeSize < rollBytes/2+int64(p.phase*float64(rollBytes/4)) {
		return
	}
	p.running = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		files, err := createSegmentFiles(l.preparedPath(logSuffix), l.preparedPath(indexSuffix),
			l.preparedPath(timeIndexSuffix), l.conf().SegmentIndexBytes, l.conf().preallocation())
		p.ready <- preparedFiles{files: files, err: err}
	}()
}

// take returns the prepared files if they are ready, or nil. Log.mu must be
// held.
func (p *preparer) take(l *Log) *segmentFiles {
	if !p.running {
		return nil
	}
	select {
	case prepared := <-p.ready:
		p.running = false
		if prepared.err != nil {
			l.logger.Warn("hotlog: preparing the next segment failed; creating it at roll", "err", prepared.err)
			return nil
		}
		return prepared.files
	default:
		return nil
	}
}

// install renames the prepared files, taken by take, to segment s's names,
// and reopens the log under its new name (so errors and Sections name the
// file as it is now called; the index mappings do not care).
func (p *preparer) install(l *Log, s *segment, files *segmentFiles) error {
	var errs []error
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := os.Rename(l.preparedPath(suffix), s.path(suffix)); err != nil {
			errs = append(errs, err, removeIfExists(l.preparedPath(suffix)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(err, l.removeSegmentFiles(s.baseOffset))
	}
	renamed, err := os.OpenFile(s.path(logSuffix), os.O_RDWR, 0)
	if err != nil {
		return errors.Join(err, l.removeSegmentFiles(s.baseOffset))
	}
	_ = files.log.Close() // nothing was written through it
	files.log = renamed
	return nil
}

// stop waits for a running preparation and deletes its unused files.
// Log.mu must be held.
func (p *preparer) stop(l *Log) {
	p.wg.Wait()
	if !p.running {
		return
	}
	p.running = false
	prepared := <-p.ready
	if prepared.err != nil {
		return
	}
	prepared.files.release()
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := removeIfExists(l.preparedPath(suffix)); err != nil {
			l.logger.Warn("hotlog: removing unused prepared segment", "err", err)
		}
	}
}
