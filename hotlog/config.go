package hotlog

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/stratalog/strata/record"
)

// Durability says when an append may be acknowledged.
type Durability int8

const (
	// SyncBeforeAck acknowledges an append only after an fsync covers it:
	// AppendResult.WaitAck blocks for the shared (group-committed) fsync. The
	// default, and the only safe choice with a single replica.
	SyncBeforeAck Durability = iota
	// SyncPeriodically acknowledges at once and fsyncs every FlushMessages
	// messages or FlushMs milliseconds (Kafka's flush.messages, flush.ms),
	// for topics whose durability comes from replicas.
	SyncPeriodically
)

func (d Durability) String() string {
	switch d {
	case SyncBeforeAck:
		return "sync-before-ack"
	case SyncPeriodically:
		return "sync-periodically"
	}
	return fmt.Sprintf("Durability(%d)", int8(d))
}

// Defaults. Segments are smaller than Kafka's 1 GiB because a sealed segment
// is the unit of upload to the bucket: 128 MiB is one multipart-friendly PUT,
// bounds the restart scan of an unflushed active segment, and at 10 MB/s seals
// every ~13 s. segment.ms seals a slow partition within ten minutes, so its
// data reaches the bucket within minutes rather than Kafka's seven days.
const (
	DefaultSegmentBytes       = 128 << 20
	DefaultSegmentMs          = 10 * 60 * 1000
	DefaultIndexIntervalBytes = 4096
	// DefaultSegmentIndexBytes holds every entry a full 128 MiB segment can
	// need down to a 1 KiB index interval (128 Ki offset entries × 8 bytes).
	// The files are sparse: an idle partition's preallocated index costs
	// address space, not disk or memory.
	DefaultSegmentIndexBytes         = 1 << 20
	DefaultRetentionMs               = 7 * 24 * 60 * 60 * 1000
	DefaultRetentionBytes            = -1
	DefaultFlushMessages             = math.MaxInt64
	DefaultFlushMs                   = math.MaxInt64
	DefaultRecoveryPointCheckpointMs = 60 * 1000
	// DefaultFileCacheSegments is the size of a Log's private FileCache when
	// Config.FileCache is nil.
	DefaultFileCacheSegments = 64
)

// Config is one partition log's configuration. Field names follow Kafka's
// topic configs, with the same meaning and unit.
type Config struct {
	// SegmentBytes (segment.bytes) is the size at which the active segment
	// rolls (a log's first segment sooner, by FirstSegmentCut). A batch
	// larger than this is refused.
	SegmentBytes int64
	// FirstSegmentCut, in [0, 1/2], is the share of SegmentBytes by which
	// the log's first segment (based at offset 0) rolls sooner: partitions
	// created together and written round-robin fill at one rate, and
	// given different cuts they roll spread rather than in the same
	// second, every later segment a whole SegmentBytes keeping the spread.
	// Replicas of one partition must be given the same cut, so that their
	// segments end at the same offsets. Set at Open; Reconfigure keeps it.
	FirstSegmentCut float64
	// SegmentMs (segment.ms) rolls the active segment when an append arrives
	// this long after its first batch.
	SegmentMs int64
	// SegmentJitterMs (segment.jitter.ms): each segment rolls a random
	// [0, min(SegmentJitterMs, SegmentMs)) sooner than SegmentMs says, so
	// partitions created together do not all roll at once.
	SegmentJitterMs int64
	// Preallocate (preallocate) allocates each new segment's log blocks,
	// SegmentBytes of them, when the segment is created; sealing frees
	// what it did not use.
	Preallocate bool
	// FileDeleteDelayMs (file.delete.delay.ms) is how long a deleted
	// segment's log lingers, renamed, once no reader holds it, before its
	// blocks are freed.
	FileDeleteDelayMs int64
	// IndexIntervalBytes (index.interval.bytes) is the number of log bytes
	// between offset-index entries.
	IndexIntervalBytes int32
	// SegmentIndexBytes (segment.index.bytes) is the preallocated size of the
	// active segment's offset and time index; a full index rolls the segment.
	SegmentIndexBytes int32
	// RetentionMs (retention.ms; the local retention of a tiered topic) lets
	// ApplyRetention delete a sealed segment whose newest timestamp is older
	// than this. -1 keeps segments forever.
	RetentionMs int64
	// RetentionBytes (retention.bytes) lets ApplyRetention delete the oldest
	// sealed segments while the log is larger than this. -1 means no limit.
	RetentionBytes int64
	// Durability says when appends may be acknowledged.
	Durability Durability
	// FlushMessages (flush.messages) fsyncs after this many messages under
	// SyncPeriodically. The default, math.MaxInt64, never does.
	FlushMessages int64
	// FlushMs (flush.ms) fsyncs unflushed data this long after the last fsync
	// under SyncPeriodically. The default, math.MaxInt64, never does.
	FlushMs int64
	// RecoveryPointCheckpointMs (log.flush.offset.checkpoint.interval.ms) is
	// how often the recovery point is persisted once it has advanced. A seal
	// persists the new segment's start at once (or, if the disk has no room
	// for it, at the interval), Close the log's end. Restart after a crash
	// scans at most the data appended since the last persisted recovery
	// point.
	RecoveryPointCheckpointMs int64

	// FileCache bounds the open files of sealed segments across every Log
	// sharing it. Nil gives the Log a private cache of
	// DefaultFileCacheSegments.
	FileCache *FileCache
	// DiskSync, when set, makes appended data durable in rounds shared with
	// every other Log using it: one syncfs per round instead of one
	// fdatasync per Log. A Log whose directory is on another file system
	// fdatasyncs its own files.
	DiskSync *DiskSync
	// CanDelete, when set, is asked before retention deletes a sealed
	// segment; returning false keeps that segment and every later one (an
	// uploader answers true only once the segment is safely in the bucket).
	CanDelete func(SegmentInfo) bool
	// Clock tells time. Nil means the system clock.
	Clock Clock
	// Logger receives key/value logs. Nil discards them.
	Logger *slog.Logger
	// Events receives lifecycle callbacks; nil fields are skipped.
	Events EventListener

	// fsync replaces the fsync/fdatasync system calls in tests (fault
	// injection, and fast tests that simulate crashes by copying files).
	fsync func(f *os.File, dataOnly bool) error
	// writeback replaces sync_file_range's writeback hints in tests; with
	// fsync replaced and writeback nil, hints are skipped.
	writeback func(f *os.File, offset, n int64) error
}

// DefaultConfig returns Kafka's defaults, with strata's smaller segments and
// shorter segment.ms (see the Default constants for why).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:              DefaultSegmentBytes,
		SegmentMs:                 DefaultSegmentMs,
		IndexIntervalBytes:        DefaultIndexIntervalBytes,
		SegmentIndexBytes:         DefaultSegmentIndexBytes,
		RetentionMs:               DefaultRetentionMs,
		RetentionBytes:            DefaultRetentionBytes,
		Durability:                SyncBeforeAck,
		FlushMessages:             DefaultFlushMessages,
		FlushMs:                   DefaultFlushMs,
		RecoveryPointCheckpointMs: DefaultRecoveryPointCheckpointMs,
	}
}

// Validate reports the first setting outside its allowed range.
func (c Config) Validate() error {
	bad := func(name string, value any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, name, value, want)
	}
	switch {
	case c.SegmentBytes < record.HeaderSize || c.SegmentBytes > math.MaxInt32:
		return bad("segment.bytes", c.SegmentBytes, fmt.Sprintf("%d..%d", record.HeaderSize, math.MaxInt32))
	case !(c.FirstSegmentCut >= 0 && c.FirstSegmentCut <= 0.5):
		return bad("first segment cut", c.FirstSegmentCut, "0..0.5")
	case c.SegmentMs < 1:
		return bad("segment.ms", c.SegmentMs, ">= 1")
	case c.SegmentJitterMs < 0:
		return bad("segment.jitter.ms", c.SegmentJitterMs, ">= 0")
	case c.FileDeleteDelayMs < 0:
		return bad("file.delete.delay.ms", c.FileDeleteDelayMs, ">= 0")
	case c.IndexIntervalBytes < 0:
		return bad("index.interval.bytes", c.IndexIntervalBytes, ">= 0")
	case c.SegmentIndexBytes < minSegmentIndexBytes:
		return bad("segment.index.bytes", c.SegmentIndexBytes, fmt.Sprintf(">= %d", minSegmentIndexBytes))
	case c.RetentionMs < -1:
		return bad("retention.ms", c.RetentionMs, ">= -1")
	case c.RetentionBytes < -1:
		return bad("retention.bytes", c.RetentionBytes, ">= -1")
	case c.Durability != SyncBeforeAck && c.Durability != SyncPeriodically:
		return bad("durability", c.Durability, "SyncBeforeAck or SyncPeriodically")
	case c.FlushMessages < 1:
		return bad("flush.messages", c.FlushMessages, ">= 1")
	case c.FlushMs < 0:
		return bad("flush.ms", c.FlushMs, ">= 0")
	case c.RecoveryPointCheckpointMs < 1:
		return bad("log.flush.offset.checkpoint.interval.ms", c.RecoveryPointCheckpointMs, ">= 1")
	}
	return nil
}

// preallocation is how many bytes of a new segment's log to allocate
// ahead: SegmentBytes with Preallocate, else none.
func (c *Config) preallocation() int64 {
	if !c.Preallocate {
		return 0
	}
	return c.SegmentBytes
}

// minSegmentIndexBytes fits a few entries of each index.
const minSegmentIndexBytes = 4 * timeIndexEntrySize

// millis converts a Kafka millisecond setting to a Duration; values too large
// for a Duration (Kafka's "never", Long.MAX_VALUE) become ok=false.
func millis(ms int64) (d time.Duration, ok bool) {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}
