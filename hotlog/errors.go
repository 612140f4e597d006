package hotlog

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each is returned wrapped with the detail that caused it;
// test with errors.Is.
var (
	// ErrClosed means the Log was closed.
	ErrClosed = errors.New("hotlog: log closed")
	// ErrOffsetOutOfRange means an offset below the log start or above the
	// log end. The returned error is an *OffsetOutOfRangeError.
	ErrOffsetOutOfRange = errors.New("hotlog: offset out of range")
	// ErrBatchTooLarge means a batch larger than segment.bytes.
	ErrBatchTooLarge = errors.New("hotlog: batch larger than segment.bytes")
	// ErrFailed means an earlier write or fsync failed. After a failed fsync
	// the kernel may have dropped dirty pages, so the Log refuses all further
	// writes and durability waits; reopen it to recover from the files.
	ErrFailed = errors.New("hotlog: log failed after an I/O error")
	// ErrNoSpace means the file system had no room for an append (ENOSPC or
	// EDQUOT). The append wrote nothing that stays: its bytes were cut off
	// again, and the Log goes on taking appends once there is room.
	ErrNoSpace = errors.New("hotlog: no space left on the hot disk")
	// ErrCorruptFile means a checkpoint or index file that cannot be parsed.
	ErrCorruptFile = errors.New("hotlog: corrupt file")
	// ErrInvalidConfig means Config.Validate refused a setting.
	ErrInvalidConfig = errors.New("hotlog: invalid config")
	// ErrTruncated means TruncateTo or ResetTo ran between an append and
	// its acknowledgement, so the append's durability cannot be confirmed.
	ErrTruncated = errors.New("hotlog: log truncated before the append was acknowledged")
	// ErrInvalidArgument means a negative epoch, offset or similar.
	ErrInvalidArgument = errors.New("hotlog: invalid argument")
	// ErrNotContiguous means AppendReplicated was given batches whose base
	// offsets do not continue the log: the first must start at the log end
	// and each next one where the one before ends. Nothing was written. A
	// follower gets it when it appends a fetch made from another offset
	// than its log end.
	ErrNotContiguous = errors.New("hotlog: batch does not continue the log")
	// ErrStaleEpoch means AppendReplicated was given a batch whose leader
	// epoch is below the log's latest: it comes from a deposed leader.
	// Nothing was written.
	ErrStaleEpoch = errors.New("hotlog: batch leader epoch below the log's latest")
)

// OffsetOutOfRangeError reports a requested offset outside
// [LogStartOffset, LogEndOffset]. It matches ErrOffsetOutOfRange.
type OffsetOutOfRangeError struct {
	Offset         int64
	LogStartOffset int64
	LogEndOffset   int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("hotlog: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.LogEndOffset)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

func outOfRange(offset, logStart, logEnd int64) error {
	return &OffsetOutOfRangeError{Offset: offset, LogStartOffset: logStart, LogEndOffset: logEnd}
}
