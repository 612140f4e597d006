package offload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
)

// Log is what the Manager needs of a partition's hot log; *hotlog.Log
// satisfies it. The Manager reads sealed segment files directly (by the
// names hotlog/format.go gives them, under Dir) and never takes the log's
// writer lock to upload; only local deletion (ApplyRetention, DeleteBefore)
// goes through the log's writer, as any retention does.
type Log interface {
	Dir() string
	Segments() []hotlog.SegmentInfo
	Epochs() []hotlog.EpochEntry
	LogStartOffset() int64
	ApplyRetention() ([]hotlog.SegmentInfo, error)
	DeleteBefore(offset int64) ([]hotlog.SegmentInfo, error)
	Unreclaimed() int64
}

// Partition is one partition the broker leads and hands to the Manager:
// the partitions of tiered topics (remote.storage.enable). The copy task
// checks the topic's configs on every pass: with remote.log.copy.disable
// it stops uploading and remote retention goes on; a topic that turns
// remote.storage.enable off has its partitions reopened untiered and
// taken out of the Manager, and its objects stay (docs/architecture.md).
type Partition struct {
	Topic     string
	TopicID   uuid.UUID
	Partition int32
	// Log is the partition's hot log. Open it with CanDelete set to
	// LocalDeletionHook and local retention set by LocalRetention.
	Log Log
	// HighWatermark returns the partition's high watermark: only segments
	// that end at or below it are uploaded.
	HighWatermark func() int64
	// LeaderEpoch returns the leader epoch this broker leads the partition
	// at; every meta command carries it, so a deposed leader is fenced.
	LeaderEpoch func() int32
}

func (p Partition) validate() error {
	switch {
	case p.Topic == "":
		return fmt.Errorf("%w: no topic", ErrInvalidPartition)
	case p.TopicID == uuid.Nil:
		return fmt.Errorf("%w: %s-%d has no topic id", ErrInvalidPartition, p.Topic, p.Partition)
	case p.Partition < 0:
		return fmt.Errorf("%w: partition %d", ErrInvalidPartition, p.Partition)
	case p.Log == nil || p.HighWatermark == nil || p.LeaderEpoch == nil:
		return fmt.Errorf("%w: %s-%d needs Log, HighWatermark and LeaderEpoch", ErrInvalidPartition, p.Topic, p.Partition)
	}
	return nil
}

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

// partition is the Manager's state of one partition. Its copy task and its
// expiry task may run at the same time (they touch different manifest
// entries, and meta arbitrates); each runs one pass at a time.
type partition struct {
	// The fields of the Partition it was added as.
	Topic         string
	TopicID       uuid.UUID
	Partition     int32
	Log           Log
	HighWatermark func() int64
	LeaderEpoch   func() int32

	tp     topicPartition
	prefix string // the partition's key prefix, ending in '/'

	// ctx ends when the partition is removed or the Manager closes; tasks
	// tracks the passes running for it.
	ctx    context.Context
	cancel context.CancelFunc
	tasks  sync.WaitGroup

	// copyMu is held by a copy pass, expiryMu by an expiry pass, so the
	// background tasks and Sync never run the same kind of pass at once.
	copyMu   sync.Mutex
	expiryMu sync.Mutex
	// sweepDue is when the next orphan sweep is due. expiryMu guards it.
	sweepDue time.Time

	publisher publisher

	// copy and expiry are the scheduler's bookkeeping of the two tasks;
	// Manager.mu guards them.
	copy, expiry taskSchedule

	status partitionStatus
}

// partitionStatus is what Status and the metrics report of a partition
// beyond what the log and meta say. Its mutex is a leaf.
type partitionStatus struct {
	mu sync.Mutex
	// lastUpload is when the last upload was committed.
	lastUpload time.Time
	// lastError and lastErrorTime describe the last failed pass; a pass
	// of the same task that succeeds clears them.
	lastError     string
	lastErrorTime time.Time
	lastErrorTask string
	// waitingBase is the base offset of the oldest segment that could be
	// uploaded but is not yet, and waitingSince when the copy task first
	// saw it so (zero when nothing waits). alarmed is set once the wait
	// passed Config.StallAlarm and was logged.
	waitingBase  int64
	waitingSince time.Time
	alarmed      bool
	// puts counts the PUT attempts of the waiting segment, across passes,
	// and failedPuts those that failed. refused says the last one failed
	// in a way no retry can cure (permanent: a key or bucket the store
	// refuses).
	puts       int
	failedPuts int
	refused    bool
}

// stallLocked reports whether the waiting segment's upload counts as
// stalled at now, and why: it has waited Config.StallAlarm, or its PUT
// failed Config.StallAttempts times, or the store refused it for good.
// The partition keeps retrying in every case; the alarm is for an
// operator. Lock should be held.
func (s *partitionStatus) stallLocked(now time.Time, cfg *Config) (bool, string) {
	switch {
	case s.waitingSince.IsZero():
		return false, ""
	case s.refused:
		return true, "the store refuses the upload; retrying cannot help"
	case s.failedPuts >= cfg.StallAttempts:
		return true, fmt.Sprintf("%d failed attempts", s.failedPuts)
	case now.Sub(s.waitingSince) >= cfg.StallAlarm:
		return true, fmt.Sprintf("waiting %s", now.Sub(s.waitingSince).Round(time.Second))
	}
	return false, ""
}
