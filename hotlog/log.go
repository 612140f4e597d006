package hotlog

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Log is one partition's local log. Appends, rolls, truncation, deletion
// and Close are serialized by one writer lock; Read, the offset lookups and
// the accessors never take it. See doc.go for the threading model.
type Log struct {
	dir string
	// config is the configuration in force: Open's, with Reconfigure's
	// changes. Replaced whole under mu; read anywhere through conf.
	config atomic.Pointer[Config]
	clock  Clock
	logger *slog.Logger
	events *EventListener
	files  *FileCache
	syncer syncer
	// indexInterval is index.interval.bytes; read and changed under mu.
	indexInterval int64

	state    atomic.Pointer[state]
	retirees retirees
	// reclaiming counts the goroutines reclaiming retired segment files
	// (reclaim.go); Close waits for them.
	reclaiming sync.WaitGroup
	// reclaimStop is closed by Close: reclaimers waiting out
	// file.delete.delay.ms stop at once, leaving their files to Open.
	reclaimStop chan struct{}
	// unreclaimed is the size of the retired files whose reclaim has not
	// finished (Unreclaimed).
	unreclaimed atomic.Int64
	// epochs is the leader epoch cache, an immutable slice replaced under mu.
	epochs  atomic.Pointer[[]EpochEntry]
	failure stickyError
	// closed is set by Close, for readers, which do not take mu.
	closed atomic.Bool

	// mu is the writer lock. Lock order: mu, then flusher.round, then
	// flusher.mu, then segment.openMu, then FileCache.mu.
	mu struct {
		sync.Mutex
		closed bool
		// firstAppend is when the active segment got its first batch (for
		// segment.ms); zero while it is empty.
		firstAppend time.Time
		// rollJitter is how much sooner than segment.ms the active
		// segment rolls (segment.jitter.ms), drawn when it gets its first
		// batch.
		rollJitter time.Duration
	}
	preparer preparer
	flusher  flusher
}

// Open opens the log in dir, creating the directory and an empty log when
// there is none, and recovering the files when the last shutdown was not
// clean (doc.go, "Recovery").
func Open(dir string, config Config) (*Log, error) {
	if err := config.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hotlog: %w", err)
	}
	l := &Log{
		dir:           dir,
		clock:         config.Clock,
		logger:        config.Logger,
		files:         config.FileCache,
		syncer:        newSyncer(config.fsync, config.writeback),
		indexInterval: int64(config.IndexIntervalBytes),
		reclaimStop:   make(chan struct{}),
	}
	l.config.Store(&config)
	events := config.Events
	l.events = &events
	if l.clock == nil {
		l.clock = SystemClock()
	}
	if l.logger == nil {
		l.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l.logger = l.logger.With("dir", dir)
	if l.files == nil {
		l.files = NewFileCache(DefaultFileCacheSegments)
	}
	if disk := config.DiskSync; disk != nil {
		covered, err := disk.covers(dir)
		if err != nil {
			return nil, fmt.Errorf("hotlog: %w", err)
		}
		if covered {
			l.syncer.disk = disk
		} else {
			l.logger.Warn("log directory is on another file system than the data directory; it fdatasyncs its own files")
		}
	}
	l.retirees.drained.L = &l.retirees.mu
	l.preparer.init()
	if err := l.load(); err != nil {
		return nil, fmt.Errorf("hotlog: open %s: %w", dir, err)
	}
	l.flusher.start(l)
	return l, nil
}

// Close flushes everything, persists the recovery point at the log end,
// leaves the clean-shutdown marker and releases the files. Sections still
// held keep their files open until released. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	l.closed.Store(true)
	l.preparer.stop(l)
	l.flusher.stop()

	l.flusher.round.Lock()
	l.flusher.syncing.Lock()
	_, err := l.flushRoundLocked(false)
	if err == nil {
		err = l.writeCheckpointLocked()
	}
	if err == nil {
		// The marker is a hint, checked against log-checkpoint on Open, so
		// it needs no directory fsync.
		var marker *os.File
		if marker, err = os.Create(filepath.Join(l.dir, cleanShutdownName)); err == nil {
			err = marker.Close()
		}
	}
	l.flusher.close()
	var journaledIn uint64
	for _, s := range l.state.Load().segments {
		journaledIn = max(journaledIn, s.journaledIn)
	}
	l.flusher.syncing.Unlock()
	l.flusher.round.Unlock()
	l.syncer.disk.journaledAtClose(l.dir, journaledIn)
	if d := l.syncer.disk; d != nil {
		d.logs.Add(-1)
	}

	for _, s := range l.state.Load().segments {
		s.detach()
	}
	l.retirees.wake()
	close(l.reclaimStop)
	l.reclaiming.Wait()
	if err != nil {
		return fmt.Errorf("hotlog: close %s: %w", l.dir, err)
	}
	return nil
}

// conf returns the configuration in force.
func (l *Log) conf() *Config { return l.config.Load() }

// Reconfigure applies the settings of c that a topic config change may
// alter on an open log, as Kafka applies them without a restart:
// segment.bytes, segment.ms and index.interval.bytes from the next append
// on, segment.index.bytes from the next segment, retention.ms and
// retention.bytes at the next ApplyRetention, and the durability policy,
// flush.messages and flush.ms at once. The rest of c (clock, logger, file
// cache, hooks, events, checkpoint interval, first segment cut) is
// ignored: those stay as opened. An invalid c changes nothing.
func (l *Log) Reconfigure(c Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	next := *l.conf()
	next.SegmentBytes, next.SegmentMs = c.SegmentBytes, c.SegmentMs
	next.IndexIntervalBytes, next.SegmentIndexBytes = c.IndexIntervalBytes, c.SegmentIndexBytes
	next.RetentionMs, next.RetentionBytes = c.RetentionMs, c.RetentionBytes
	next.Durability, next.FlushMessages, next.FlushMs = c.Durability, c.FlushMessages, c.FlushMs
	next.SegmentJitterMs, next.Preallocate, next.FileDeleteDelayMs = c.SegmentJitterMs, c.Preallocate, c.FileDeleteDelayMs
	if err := next.Validate(); err != nil {
		return err
	}
	l.config.Store(&next)
	l.indexInterval = int64(next.IndexIntervalBytes)
	// The flusher sleeps on flush.ms: let it take the new interval, and
	// give a lowered flush.messages its round.
	if l.flusher.messages.Load() >= next.FlushMessages {
		l.flusher.requestRound()
	} else {
		l.flusher.wake()
	}
	return nil
}

// Retention is the retention in force, Config.RetentionMs and
// RetentionBytes as Open or Reconfigure last set them.
func (l *Log) Retention() (ms, bytes int64) {
	c := l.conf()
	return c.RetentionMs, c.RetentionBytes
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset returns the first offset that may be read.
func (l *Log) LogStartOffset() int64 { return l.state.Load().logStartOffset }

// LogEndOffset returns the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.state.Load().logEndOffset() }

// Segments describes every segment, oldest first; the last is the active
// one.
func (l *Log) Segments() []SegmentInfo {
	s := l.state.Load()
	infos := make([]SegmentInfo, len(s.segments))
	for i, seg := range s.segments {
		infos[i] = seg.info()
	}
	return infos
}

// ActiveSegment describes the segment appends go to.
func (l *Log) ActiveSegment() SegmentInfo { return l.state.Load().active().info() }

// Failure returns the I/O failure that stopped the log (it wraps
// ErrFailed), or nil: after a failed write or fsync the log refuses all
// further work until it is reopened.
func (l *Log) Failure() error { return l.failure.get() }

// checkWritable reports why the log cannot take writes. l.mu must be held.
func (l *Log) checkWritableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	return l.failure.get()
}

// stickyError remembers the first I/O failure of a Log.
type stickyError struct{ err atomic.Pointer[error] }

// set records err (wrapped in ErrFailed) unless a failure is already
// recorded, and returns the recorded failure and whether it is err's.
func (s *stickyError) set(err error) (recorded error, first bool) {
	wrapped := fmt.Errorf("%w: %w", ErrFailed, err)
	first = s.err.CompareAndSwap(nil, &wrapped)
	return *s.err.Load(), first
}

func (s *stickyError) get() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records an I/O failure that leaves the files in doubt, and the
// first time logs it and tells the Failed listener.
func (l *Log) fail(err error) error {
	err, first := l.failure.set(err)
	if first {
		l.logger.Error("hotlog: log failed; reopen to recover", "err", err)
		l.events.failed(err)
	}
	return err
}
