package hotlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/stratalog/strata/record"
	"golang.org/x/sys/unix"
)

// AppendResult says where an Append put its batches.
type AppendResult struct {
	FirstOffset int64 // base offset of the first batch
	LastOffset  int64 // last offset of the last batch
	// LogAppendTime is the log's clock when it appended (Config.Clock),
	// for AppendReplicated too, which stamps nothing with it.
	LogAppendTime time.Time

	log         *Log
	truncations uint64
}

// WaitAck blocks until the append may be acknowledged under the log's
// durability policy. Under SyncBeforeAck that is when an fsync covers it;
// the fsync is shared with every append waiting at the time. Under
// SyncPeriodically it returns at once. It fails with ErrTruncated if the
// log was truncated or reset since the append, and with ErrFailed after an
// I/O error.
func (r AppendResult) WaitAck(ctx context.Context) error {
	return r.Expect().Wait(ctx)
}

// Expect registers the wait WaitAck would make, asking for the round that
// covers the append, without blocking; Wait on the result then blocks as
// WaitAck does. A caller waiting for appends to many logs registers every
// wait first and then waits in turn, with one goroutine: every round is
// asked for before the first wait, so the rounds run meanwhile.
func (r AppendResult) Expect() Ack {
	if r.log.conf().Durability == SyncPeriodically {
		return Ack{}
	}
	a := Ack{log: r.log, offset: r.LastOffset + 1, truncations: r.truncations}
	a.round, _ = r.log.registerFlushWait(a.offset, a.truncations)
	return a
}

// An Ack is a wait for an append's acknowledgement registered by
// AppendResult.Expect.
type Ack struct {
	err         error // what Wait returns at once, when set
	log         *Log  // nil when the append needs no wait
	offset      int64
	truncations uint64
	// round is the flush round registered for; nil when there was none
	// to wait for, and Wait only reports why.
	round chan struct{}
}

// Wait blocks until the append may be acknowledged, as WaitAck.
func (a Ack) Wait(ctx context.Context) error {
	if a.err != nil || a.log == nil {
		return a.err
	}
	if a.round != nil {
		select {
		case <-a.round: // a round that ended counts even if ctx has too
		default:
			select {
			case <-a.round:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return a.log.waitFlushed(ctx, a.offset, a.truncations)
}

// maxBatchesOnStack is how many batches an append takes without a heap
// allocation.
const maxBatchesOnStack = 8

// appendMode says who gives a batch its offsets and leader epoch.
type appendMode int8

const (
	// leaderAppend gives batches dense offsets from the log end and the
	// latest epoch, stamped in place (Append).
	leaderAppend appendMode = iota
	// followerAppend keeps the offsets and epochs a leader gave them
	// (AppendReplicated).
	followerAppend
)

// Append takes batches that record.Check or record.ValidateProduced has
// checked (header, length, CRC-32C, record count), so it hashes nothing
// again, and refuses all of them if any is larger than segment.bytes:
// nothing is written then. Otherwise it gives them dense
// offsets from the log end, stamping each batch's base offset and the
// current leader epoch in place (the caller's slices are modified; the CRC
// does not cover these fields), writes them, and publishes them to
// readers. A batch never spans segments; the log rolls between batches when
// segment.bytes, segment.ms, a full index or 32-bit relative offsets
// require it.
//
// A file system without room fails Append with ErrNoSpace and the log
// stays writable: the run of batches that did not fit is cut off again.
// Batches of the same call that went to a segment before a roll within it
// stay appended (the broker appends one batch per call, as Produce allows
// no more, so this cannot split a request).
//
// Append does not wait for durability: call WaitAck on the result before
// acknowledging.
func (l *Log) Append(checked ...record.Batch) (AppendResult, error) {
	return l.append(checked, leaderAppend)
}

// AppendReplicated is a follower's Append: it takes batches a leader has
// already given offsets and leader epochs, as a Fetch returned them, and
// keeps both (nothing is stamped). The first batch must start at the log
// end and each next one at the offset after the one before; otherwise it
// fails with ErrNotContiguous. Leader epochs never go back: a batch whose
// epoch is below the log's latest fails the call with ErrStaleEpoch. In
// both cases nothing is written. A batch whose epoch is above the latest
// starts that epoch at its base offset, as AssignEpoch would, and the
// leader-epoch-checkpoint is rewritten before any batch is written, so the
// history survives a crash (Open drops the entries of batches that did not).
//
// Everything else is as for Append: the segment.bytes limit, rolling
// between batches, the indexes, ErrNoSpace (the epochs the lost batches
// started are dropped again), what WaitAck means, and what readers see.
func (l *Log) AppendReplicated(checked ...record.Batch) (AppendResult, error) {
	return l.append(checked, followerAppend)
}

// append is Append and AppendReplicated: the checks outside the writer
// lock, and, for a follower, the offset and epoch checks inside it.
func (l *Log) append(checked []record.Batch, mode appendMode) (AppendResult, error) {
	if len(checked) == 0 {
		return AppendResult{}, fmt.Errorf("%w: no batches to append", ErrInvalidArgument)
	}
	var headerStack [maxBatchesOnStack]record.Header
	var bytesStack [maxBatchesOnStack][]byte
	headers, batches := headerStack[:0], bytesStack[:0]
	for i, c := range checked {
		h := c.Header()
		if int64(h.Size()) > l.conf().SegmentBytes {
			return AppendResult{}, fmt.Errorf("%w: batch %d is %d bytes, segment.bytes is %d", ErrBatchTooLarge, i, h.Size(), l.conf().SegmentBytes)
		}
		headers = append(headers, h)
		batches = append(batches, c.Bytes())
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendResult{}, err
	}
	if mode == leaderAppend {
		return l.appendLocked(headers, batches, mode)
	}
	if err := l.checkContiguousLocked(headers); err != nil {
		return AppendResult{}, err
	}
	previous, adopted, err := l.adoptEpochsLocked(headers)
	if err != nil {
		return AppendResult{}, err
	}
	result, err := l.appendLocked(headers, batches, mode)
	if err != nil && adopted {
		l.dropUnwrittenEpochsLocked(previous, headers)
	}
	return result, err
}

// checkContiguousLocked refuses replicated batches that do not continue
// the log with their own base offsets. Log.mu must be held.
func (l *Log) checkContiguousLocked(headers []record.Header) error {
	next := l.LogEndOffset()
	for i, h := range headers {
		if h.BaseOffset != next {
			return fmt.Errorf("%w: batch %d has base offset %d, want %d", ErrNotContiguous, i, h.BaseOffset, next)
		}
		next = h.NextOffset()
	}
	return nil
}

// appendLocked writes batches, whose parsed headers are headers, at the log
// end, rolling between them as needed; under leaderAppend it first stamps
// each one's offset and epoch. Log.mu must be held.
func (l *Log) appendLocked(headers []record.Header, batches [][]byte, mode appendMode) (AppendResult, error) {
	now := l.clock.Now()
	epoch := l.latestEpoch()
	active := l.state.Load().active()
	files := active.files.Load()
	tail := *active.tail.Load()
	first := tail.nextOffset
	runStart, runPosition := 0, tail.size
	var messages int64
	for i, b := range batches {
		h := headers[i]
		if l.shouldRollLocked(active, &tail, files, h, now) {
			if err := l.writeRunLocked(active, files, &tail, batches[runStart:i], runPosition); err != nil {
				return AppendResult{}, err
			}
			if err := l.rollLocked(); err != nil {
				return AppendResult{}, err
			}
			active = l.state.Load().active()
			files = active.files.Load()
			tail = *active.tail.Load()
			runStart, runPosition = i, tail.size
		}
		if tail.size == 0 {
			l.mu.firstAppend = now
			l.mu.rollJitter = 0
			// Drawn below segment.ms too, as Kafka draws it: a jitter
			// past the age limit would roll at nearly every append.
			if jitter := min(l.conf().SegmentJitterMs, l.conf().SegmentMs, math.MaxInt64/int64(time.Millisecond)); jitter > 0 {
				l.mu.rollJitter = time.Duration(rand.Int64N(jitter)) * time.Millisecond
			}
		}
		if err := files.reserveIndexes(tail.indexEntries, tail.timeIndexEntries); err != nil {
			return AppendResult{}, err // nothing of this run is written yet
		}
		if mode == leaderAppend {
			h.BaseOffset = tail.nextOffset
			h.PartitionLeaderEpoch = epoch
			record.SetBaseOffset(b, h.BaseOffset)
			record.SetPartitionLeaderEpoch(b, epoch)
		}
		tail.addBatch(h, tail.size, active.baseOffset, files, l.indexInterval)
		messages += int64(h.NumRecords)
	}
	if err := l.writeRunLocked(active, files, &tail, batches[runStart:], runPosition); err != nil {
		return AppendResult{}, err
	}
	l.preparer.maybeStart(l, tail.size, l.rollBytes(active.baseOffset))
	l.appended(messages, tail.size-runPosition)
	return AppendResult{
		FirstOffset:   first,
		LastOffset:    tail.nextOffset - 1,
		LogAppendTime: now,
		log:           l,
		truncations:   l.flusher.truncations.Load(),
	}, nil
}

// shouldRollLocked says whether the batch h must go to a new segment. An
// empty segment takes any batch. Positions cannot overflow 32 bits:
// segment.bytes is at most math.MaxInt32.
func (l *Log) shouldRollLocked(active *segment, tail *segmentTail, files *segmentFiles, h record.Header, now time.Time) bool {
	if tail.size == 0 {
		return false
	}
	segmentAge, ageLimited := millis(l.conf().SegmentMs)
	return tail.size+int64(h.Size()) > l.rollBytes(active.baseOffset) ||
		(ageLimited && now.Sub(l.mu.firstAppend) >= max(segmentAge-l.mu.rollJitter, 0)) ||
		tail.indexEntries >= files.index.capacity() ||
		tail.timeIndexEntries >= files.timeIndex.capacity()-1 ||
		tail.nextOffset+int64(h.LastOffsetDelta)-active.baseOffset > math.MaxUint32
}

// rollBytes is the size past which the active segment, based at base,
// rolls: segment.bytes, less Config.FirstSegmentCut of it for a log's
// first segment (based at offset 0). The partitions of a topic, created
// together and written round-robin, fill at one rate, and every one's
// segments rolled in the same second, each roll's files, seal and
// checkpoint going through the same disk rounds (docs/bench.md, "First
// segments cut by the partition's index").
func (l *Log) rollBytes(base int64) int64 {
	c := l.conf()
	bytes := c.SegmentBytes
	if base == 0 {
		bytes -= int64(c.FirstSegmentCut * float64(bytes))
	}
	return bytes
}

// writeRunLocked writes batches, which tail already accounts for, at
// position and publishes tail. A write that finds the file system full
// is undone: the file is cut back to position (shrinking a file needs no
// space), nothing is published, and ErrNoSpace tells the caller to try
// again later. Any other failed write leaves the file state in doubt, so
// the log fails.
func (l *Log) writeRunLocked(active *segment, files *segmentFiles, tail *segmentTail, batches [][]byte, position int64) error {
	if len(batches) == 0 {
		return nil
	}
	if err := writeFullyAt(files.log, batches, position); err != nil {
		err = fmt.Errorf("write %s at %d: %w", active.path(logSuffix), position, err)
		if !isNoSpace(err) {
			return l.fail(err)
		}
		if cut := files.log.Truncate(position); cut != nil {
			return l.fail(errors.Join(err, fmt.Errorf("cut back after running out of space: %w", cut)))
		}
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	published := *tail
	active.tail.Store(&published)
	return nil
}

// maxIovecs bounds the buffers of one pwritev (the kernel's IOV_MAX).
const maxIovecs = 1024

// writeFullyAt writes the buffers back to back at position, with one
// pwrite for a single buffer and pwritev for several, retrying short
// writes. The buffers slice itself is not modified.
func writeFullyAt(file *os.File, buffers [][]byte, position int64) error {
	if len(buffers) == 1 {
		_, err := file.WriteAt(buffers[0], position)
		return err
	}
	fd := int(file.Fd())
	copied := false
	for len(buffers) > 0 {
		n, err := unix.Pwritev(fd, buffers[:min(len(buffers), maxIovecs)], position)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		position += int64(n)
		for len(buffers) > 0 && n >= len(buffers[0]) {
			n -= len(buffers[0])
			buffers = buffers[1:]
		}
		if n > 0 {
			if !copied {
				buffers, copied = append([][]byte(nil), buffers...), true
			}
			buffers[0] = buffers[0][n:]
		}
	}
	return nil
}

// Roll seals the active segment, if it holds any batch, and starts a new
// one. Appends roll by themselves; an owner calls Roll to seal a quiet
// partition's segment, for example so it can be uploaded.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	return l.rollLocked()
}

// rollLocked seals the active segment in memory, queues it for sealing on
// disk, and publishes a state with a new, empty active segment. An empty
// active segment is left as it is. Log.mu must be held.
func (l *Log) rollLocked() error {
	st := l.state.Load()
	old := st.active()
	files := old.files.Load()
	tail := *old.tail.Load()
	if tail.size == 0 {
		return nil
	}
	base := tail.nextOffset
	s := &segment{log: l, baseOffset: base}
	newFiles, err := l.newSegmentFiles(s)
	if err != nil {
		return fmt.Errorf("roll to segment %d: %w", base, err)
	}
	newFiles.segment = s
	s.files.Store(newFiles)
	s.tail.Store(emptyTail(base))

	tail.sealTimeIndex(old.baseOffset, files)
	old.tail.Store(&tail)
	l.queueSealLocked(old)
	segments := append(st.segments[:len(st.segments):len(st.segments)], s)
	l.publishStateLocked(&state{segments: segments, logStartOffset: st.logStartOffset})
	l.mu.firstAppend = time.Time{}
	// Requested only now: a round that took the state before this one may
	// seal the segment already, but its flushed point stays in the rolled
	// segment, and with it the recovery point's segment (RewritableEnd)
	// until the next append. The round requested here starts with this
	// state and moves both into the new segment.
	l.flusher.requestRound()
	return nil
}

// newSegmentFiles returns files for a new active segment: the prepared
// ones, renamed, when the preparer has them ready, or new ones.
func (l *Log) newSegmentFiles(s *segment) (*segmentFiles, error) {
	if files := l.preparer.take(l); files != nil {
		if err := l.preparer.install(l, s, files); err != nil {
			files.release()
			return nil, err
		}
		return files, nil
	}
	return createSegmentFiles(s.path(logSuffix), s.path(indexSuffix), s.path(timeIndexSuffix), l.conf().SegmentIndexBytes, l.conf().preallocation())
}
