package hotlog

import "time"

// EventListener receives a Log's lifecycle events, for metrics, logs and
// the components built on the log (an uploader waits for Sealed). Callbacks
// run on the goroutine that caused the event, sometimes with internal locks
// held: they must return quickly and must not call back into the Log.
type EventListener struct {
	// Synced follows every fsync of a segment's log file. It is called
	// with the Log's syncing lock held, on its flusher or, in a disk
	// round, on the DiskSync's goroutine while it holds other Logs'
	// syncing locks too: it
	// must not block or call into a Log.
	Synced func(SyncInfo)
	// Sealed follows the sealing of a segment: its log and trimmed indexes
	// are durable and will never change again.
	Sealed func(SegmentInfo)
	// Deleted follows the removal of a segment's files by retention,
	// DeleteBefore, TruncateTo or ResetTo.
	Deleted func(SegmentInfo)
	// Recovered reports what Open did to bring the files to a valid state.
	Recovered func(RecoveryInfo)
	// Failed follows the first I/O failure that stopped the Log (a write
	// or an fsync failed; Failure returns it from then on). It may be
	// called with the Log's locks held, and other Logs' in a disk round:
	// it must not block or call into a Log.
	Failed func(error)
}

// SyncInfo describes one fsync of a segment's log file.
type SyncInfo struct {
	BaseOffset int64         // the segment's base offset
	Size       int64         // bytes of the segment now durable
	Duration   time.Duration // time spent in the system call
}

// RecoveryInfo describes the work Open did.
type RecoveryInfo struct {
	// CleanShutdown is true when the previous Close completed.
	CleanShutdown bool
	// SegmentsScanned and BytesScanned count the segments and bytes whose
	// batches were read and checked (header, CRC, dense offsets) because they
	// lay beyond the persisted recovery point.
	SegmentsScanned int
	BytesScanned    int64
	// BytesTruncated counts bytes cut off because they were torn, corrupt, or
	// followed a torn or corrupt batch, whole removed segments included.
	BytesTruncated int64
	// LogStartOffset and LogEndOffset are the offsets after recovery.
	LogStartOffset int64
	LogEndOffset   int64
	Duration       time.Duration
}

func (e *EventListener) synced(info SyncInfo) {
	if e.Synced != nil {
		e.Synced(info)
	}
}

func (e *EventListener) failed(err error) {
	if e.Failed != nil {
		e.Failed(err)
	}
}

func (e *EventListener) sealed(info SegmentInfo) {
	if e.Sealed != nil {
		e.Sealed(info)
	}
}

func (e *EventListener) deleted(info SegmentInfo) {
	if e.Deleted != nil {
		e.Deleted(info)
	}
}

func (e *EventListener) recovered(info RecoveryInfo) {
	if e.Recovered != nil {
		e.Recovered(info)
	}
}
