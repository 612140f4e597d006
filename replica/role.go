package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// roleChange is what setRole did to a partition.
type roleChange uint8

const (
	roleSame          roleChange = iota // at most the ISR changed
	roleBecameLeader                    // a new leadership of this broker
	roleBecameFollow                    // another broker (or none) leads now
	roleStillFollower                   // another epoch, still following
)

// setRole applies the metadata's replica set to an open partition. A new
// leadership of this broker continues what the partition's bucket holds
// (continueBucketLocked), starts its leader epoch at the log end and
// forgets what it knew of followers; a broker that stops leading wakes the
// fetches and produces that wait on it, which then find they are no longer
// served here.
func (p *Partition) setRole(next *role) (roleChange, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	prev := p.role.Load()
	self := p.manager.config.BrokerID
	change := roleSame
	switch {
	case next.leader == self && (prev.leader != self || next.leaderEpoch != prev.leaderEpoch):
		if err := p.continueBucketLocked(); err != nil {
			return roleSame, fmt.Errorf("restarting the log at its bucket's end: %w", err)
		}
		if err := p.assignEpoch(next.leaderEpoch); err != nil {
			return roleSame, fmt.Errorf("recording leader epoch %d: %w", next.leaderEpoch, err)
		}
		p.followers.reset(next.replicas, self, time.Now())
		change = roleBecameLeader
	case next.leader != self && prev.leader == self:
		change = roleBecameFollow
	case next.leader != self && next.leaderEpoch != prev.leaderEpoch:
		change = roleStillFollower
	}
	if next.leader == self {
		if change == roleSame {
			p.followers.track(next.replicas, time.Now())
		}
		p.followers.committedISR(next.isr, next.partitionEpoch)
	}
	p.role.Store(next)
	if change != roleSame {
		p.watchers.wakeAll()
		p.replicaWatchers.wakeAll()
	}
	p.notifyWaiters()
	// A shrunk ISR may let the high watermark move; a sole leader's is its
	// durable end.
	p.advanceHighWatermark()
	return change, nil
}

// errStaleFetch is a fetched response that arrived after the partition's
// leadership changed: it is dropped, and the fetcher starts again from
// the new leader.
var errStaleFetch = errors.New("replica: the leadership changed during the fetch")

// appendFromLeader appends the batches a fetch from the leader at epoch
// returned, with the offsets and leader epochs the leader gave them
// (hotlog.AppendReplicated), records their producers and registers the
// wait for their durability under the topic's policy, without blocking:
// a fetch response carries many partitions, and its appends all go
// before any waits (leaderAppend.finish), so their fsyncs run at once
// (one shared round, with a shared DiskSync) rather than one partition's
// after another.
func (p *Partition) appendFromLeader(epoch int32, records []byte, leaderHighWatermark int64) (leaderAppend, error) {
	a := leaderAppend{p: p, highWatermark: leaderHighWatermark}
	batches, err := splitBatches(records)
	if err != nil || len(batches) == 0 {
		return a, err
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if r := p.role.Load(); r.leaderEpoch != epoch || p.leads(r) {
		return a, errStaleFetch
	}
	if batches, err = alignToLogEnd(batches, p.log.LogEndOffset()); err != nil {
		return a, err
	}
	if err := p.startAtBatchLocked(batches[0].Header()); err != nil {
		return a, err
	}
	result, err := p.log.AppendReplicated(batches...)
	if err != nil {
		// A roll that failed for space leaves the batches before it in
		// the log: their producers are noted all the same, or a retry of
		// theirs after a failover to this replica would be taken twice.
		if end := p.log.LogEndOffset(); end > batches[0].Header().BaseOffset {
			written := slices.DeleteFunc(slices.Clone(batches), func(b record.Batch) bool { return b.Header().NextOffset() > end })
			p.recordProducers(written, batches[0].Header().BaseOffset, time.Now())
		}
		return a, err
	}
	p.recordProducers(batches, result.FirstOffset, result.LogAppendTime)
	a.result = &result
	return a, nil
}

// leaderAppend is a follower's append of what a fetch returned, waiting
// to be durable.
type leaderAppend struct {
	p             *Partition
	result        *hotlog.AppendResult // nil when nothing was appended
	ack           hotlog.Ack
	highWatermark int64
}

// expect registers the wait for the append's durability, asking for the
// round that covers it. The fetcher registers a response's waits once
// every partition is appended: registered at each append, the first
// partitions' round started while the rest were still being appended,
// and they needed more.
func (a *leaderAppend) expect() {
	if a.result != nil {
		a.ack = a.result.Expect()
	}
}

// finish waits until the append is durable under the topic's policy (the
// next fetch tells the leader this replica holds it) and then takes the
// leader's high watermark. expect must have been called.
func (a leaderAppend) finish(ctx context.Context) error {
	if err := a.ack.Wait(ctx); err != nil {
		return err
	}
	a.p.takeLeaderHighWatermark(a.highWatermark)
	return nil
}

// takeLeaderHighWatermark moves a follower's high watermark towards the
// leader's.
func (p *Partition) takeLeaderHighWatermark(hwm int64) {
	for {
		old := p.leaderHighWatermark.Load()
		if hwm <= old || p.leaderHighWatermark.CompareAndSwap(old, hwm) {
			break
		}
	}
	p.advanceHighWatermark()
}

// fetchOffset is where a follower fetches next: its log end, made durable
// first. The leader takes a fetch offset as this replica's durable log end
// (followers in progress.go): it counts towards the high watermark, and
// reaching the high watermark brings the follower into the ISR. Appends
// from the leader are durable before the next fetch, but a log end can
// also be a tail this broker wrote as leader and had not fsynced when it
// lost the leadership, or an append whose fsync failed; claimed without
// the fsync, a power loss takes records the ISR was counted as holding,
// and a clean election of this broker then loses committed records.
func (p *Partition) fetchOffset(ctx context.Context) (int64, error) {
	end := p.log.LogEndOffset()
	if p.durableEnd() < end {
		if err := p.log.Sync(ctx); err != nil {
			return 0, fmt.Errorf("replica: %s-%d: making the log durable to %d before fetching there: %w", p.topic, p.index, end, err)
		}
	}
	return end, nil
}

// alignToLogEnd fits a leader's batches to a follower's log end. The
// leader's cleaner joins runs of batches that lost every record into one
// empty batch (package compact), so a follower that had copied part of
// such a run asks from inside it and gets the empty batch from its start;
// the part it already holds is cut off (an empty batch has no record to
// lose), and an empty batch wholly below the log end is dropped. A batch
// with records never starts below the log end: cleaning keeps those
// batches' offsets.
func alignToLogEnd(batches []record.Batch, logEnd int64) ([]record.Batch, error) {
	for len(batches) > 0 {
		h := batches[0].Header()
		if h.BaseOffset >= logEnd || h.NumRecords > 0 {
			return batches, nil
		}
		if h.LastOffset() < logEnd {
			batches = batches[1:]
			continue
		}
		h.LastOffsetDelta = int32(h.LastOffset() - logEnd)
		h.BaseOffset = logEnd
		rebuilt, err := record.Rebuild(h, nil)
		if err != nil {
			return nil, err
		}
		first, err := record.Check(rebuilt)
		if err != nil {
			return nil, err
		}
		return append([]record.Batch{first}, batches[1:]...), nil
	}
	return batches, nil
}

// givenUp reports whether the records below hwm that a truncation would
// remove were given up by the partition's newest unclean election: all
// written at epochs before it (the one at hwm-1, epochs growing with
// offsets). Records written since, at its epoch or later, were committed
// by an ISR that the unclean leader began, and are never given up.
func (p *Partition) givenUp(r *role, hwm int64) bool {
	epoch, ok := p.log.EpochForOffset(hwm - 1)
	return r.uncleanEpoch > 0 && ok && epoch < r.uncleanEpoch
}

// splitBatches cuts fetched records into checked batches. A fetch returns
// whole batches; a partial one at the end (a response cut by its size
// limit) is left for the next fetch.
func splitBatches(records []byte) ([]record.Batch, error) {
	var out []record.Batch
	for len(records) >= record.HeaderSize {
		h, err := record.ParseHeader(records)
		if err != nil {
			return nil, err
		}
		if h.Size() > len(records) {
			break
		}
		b, err := record.Check(records[:h.Size()])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		records = records[h.Size():]
	}
	return out, nil
}

// truncateTo cuts a follower's log back to offset, where it diverges from
// the leader's at epoch, and rebuilds the producer state of what is left.
// An offset below the high watermark would take committed records back,
// and is refused, unless an unclean election gave those records up (they
// were all written at epochs before it, givenUp), or the topic flushes
// periodically (flush.ms, flush.messages): its records are acknowledged
// before they are durable, and a leader that lost power and was elected
// again lost the ones it had not flushed, however clean the election. The
// high watermark then moves back to offset, as Kafka's follower truncates
// below it; refused, this follower would never follow again. (Restarted,
// a replica's high watermark starts at its log start, so this is a
// replica that kept running through the leader's loss.)
func (p *Partition) truncateTo(epoch int32, offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	r := p.role.Load()
	if r.leaderEpoch != epoch || p.leads(r) {
		return errStaleFetch
	}
	if offset > p.log.LogEndOffset() {
		return nil
	}
	if hwm := p.highWatermark.Load(); offset < hwm {
		switch {
		case p.givenUp(r, hwm):
			p.manager.log.Warn("truncating committed records an unclean election gave up", "topic", p.topic, "partition", p.index,
				"leader_epoch", epoch, "unclean_leader_epoch", r.uncleanEpoch, "to", offset, "high_watermark", hwm)
		case p.periodicFlush:
			p.manager.log.Warn("truncating acknowledged records the leader lost: the topic flushes periodically (flush.ms, flush.messages), so they were acknowledged before they were durable",
				"topic", p.topic, "partition", p.index, "leader_epoch", epoch, "to", offset, "high_watermark", hwm)
		default:
			p.manager.metrics.truncatedBelowHighWatermark.Inc()
			return fmt.Errorf("replica: %s-%d: the leader's log diverges at %d, below the high watermark %d: refusing to take committed records back",
				p.topic, p.index, offset, hwm)
		}
		p.lowerHighWatermark(offset)
	}
	before := p.log.LogEndOffset()
	if offset < before {
		p.appendMu.truncations++
		removed, err := removeProducerSnapshotAfter(p.dir, offset)
		if removed {
			p.appendMu.snapshotFile.inPlace = false
		}
		if err != nil {
			return fmt.Errorf("replica: %s-%d: removing the producer state snapshot past the truncation: %w", p.topic, p.index, err)
		}
	}
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	p.forgetAppendsAfter(offset)
	if offset == before {
		return nil // at most epochs that covered nothing went
	}
	p.cleanerTruncated(offset)
	producers, err := rebuildProducerStates(p.log, p.manager.config.ProducerStateScanBytes)
	if err != nil {
		return err
	}
	p.appendMu.producers = producers
	p.appendMu.changes++
	p.manager.log.Info("truncated the follower's log to the leader's", "topic", p.topic, "partition", p.index,
		"leader_epoch", epoch, "from", before, "to", offset)
	return nil
}

// cleanerTruncated tells the log cleaner, if any, that the log was cut
// back to offset.
func (p *Partition) cleanerTruncated(offset int64) {
	if c := p.manager.deps.Cleaner; c != nil {
		c.Truncated(p.topic, p.index, offset)
	}
}

// resetTo restarts a follower's log empty at offset, the leader's local log
// start, for a follower whose log end the leader no longer holds locally:
// what is below is in the bucket (or deleted by retention). epochs is the
// leader epoch history up to offset.
func (p *Partition) resetTo(epoch int32, offset int64, epochs []hotlog.EpochEntry) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if r := p.role.Load(); r.leaderEpoch != epoch || p.leads(r) {
		return errStaleFetch
	}
	before := p.log.LogEndOffset()
	if err := p.resetLocked(offset, epochs); err != nil {
		return err
	}
	p.manager.log.Info("the follower starts at the leader's local log start", "topic", p.topic, "partition", p.index,
		"leader_epoch", epoch, "log_end_was", before, "start", offset)
	return nil
}

// resetLocked restarts the log, empty, at offset. Its producer snapshots
// are of the log that goes, and one whose offset the new log reached again
// would be loaded after a restart: the file goes first, as a truncation's
// does (a crash between the two leaves the old log, whose state a scan
// rebuilds), and a snapshot pass that encoded the old state does not put
// it back. appendMu must be held.
func (p *Partition) resetLocked(offset int64, epochs []hotlog.EpochEntry) error {
	p.appendMu.truncations++
	removed, err := removeProducerSnapshotAfter(p.dir, -1)
	if removed {
		p.appendMu.snapshotFile.inPlace = false
	}
	if err != nil {
		return fmt.Errorf("replica: %s-%d: removing the producer state snapshot of the log it restarts: %w", p.topic, p.index, err)
	}
	if err := p.log.ResetTo(offset, epochs); err != nil {
		return err
	}
	p.forgetAppendsAfter(offset)
	p.cleanerTruncated(offset)
	p.appendMu.producers = newProducerStates()
	p.appendMu.changes++
	p.takeLeaderHighWatermark(offset)
	return nil
}

// startAtBatchLocked moves an empty log's start down to the base offset of
// h, the first batch a fetch returned, when it holds records and holds
// the log end inside it. A follower restarts at the leader's log start after
// OFFSET_OUT_OF_RANGE (resetTo), and DeleteRecords may have put that
// start inside a batch, which the leader's read from it returns whole:
// appended as it is, it would not continue the log, on every fetch.
// Kafka's follower starts its log at such a batch's base offset too; the
// leader's log start, which the fetch also carries, then moves this one
// back up past the batch's first offsets (session.finish). appendMu must
// be held.
func (p *Partition) startAtBatchLocked(h record.Header) error {
	end := p.log.LogEndOffset()
	if h.BaseOffset >= end || h.LastOffset() < end || h.NumRecords == 0 || p.log.LogStartOffset() != end {
		return nil
	}
	if err := p.resetLocked(h.BaseOffset, nil); err != nil {
		return err
	}
	p.manager.log.Info("the follower starts at the batch holding the leader's log start", "topic", p.topic, "partition", p.index,
		"start_was", end, "start", h.BaseOffset)
	return nil
}

// isrMember reports whether broker id is in the partition's ISR.
func (r *role) isrMember(id int32) bool { return slices.Contains(r.isr, id) }

// epochStart is where the current leader epoch starts in the log, or -1.
func (p *Partition) epochStart(r *role) int64 {
	epochs := p.log.Epochs()
	for i := len(epochs) - 1; i >= 0; i-- {
		if epochs[i].Epoch == r.leaderEpoch {
			return epochs[i].StartOffset
		}
	}
	return -1
}

// CheckOffsetsAvailable is what a leader asks before it answers
// ListOffsets for the latest offset, the largest timestamp or a timestamp
// (KIP-207): ErrOffsetNotAvailable while its high watermark is below the
// start of its leader epoch. A follower that became leader knew the old
// leader's high watermark only as of its last fetch, and a partition
// opened as leader starts from its log start, until the ISR's fetches
// raise it.
func (p *Partition) CheckOffsetsAvailable() error {
	r := p.role.Load()
	if start, hwm := p.epochStart(r), p.highWatermark.Load(); p.leads(r) && start >= 0 && hwm < start {
		return fmt.Errorf("%w: %s-%d's high watermark %d is below %d, where leader epoch %d starts", ErrOffsetNotAvailable,
			p.topic, p.index, hwm, start, r.leaderEpoch)
	}
	return nil
}

// followerFetched records follower id's fetch at offset and, when it has
// caught up to the high watermark within the current leader epoch, asks
// the controller to add it to the ISR.
func (p *Partition) followerFetched(r *role, id int32, offset int64) {
	if !p.followers.fetched(id, offset, p.log.LogEndOffset(), time.Now()) {
		return
	}
	p.advanceHighWatermark()
	if r.isrMember(id) {
		return
	}
	if start := p.epochStart(r); start >= 0 && offset >= start && p.beginAddition(r, id, offset) {
		p.manager.alterISR(p, r, append(slices.Clone(r.isr), id), id)
	}
}

// beginAddition claims the partition's ISR change for adding follower id,
// whose log ends at offset, if that reaches the high watermark. The look
// and the claim are one step under hwmMu, as an advance's work is: an
// advance between them, not counting the follower yet, could move the
// high watermark past records the follower lacks, and it would join the
// ISR without them.
func (p *Partition) beginAddition(r *role, id int32, offset int64) bool {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	return offset >= p.highWatermark.Load() && p.followers.beginAlter(id, true, r.partitionEpoch)
}

// keepAdditions counts the ISR additions a partition's previous Partition
// had pending when it led at leaderEpoch (followers.additions), if this
// one leads at the same epoch, and forgets at once those its metadata
// settles.
func (p *Partition) keepAdditions(leaderEpoch int32, adding map[int32]int32) {
	r := p.role.Load()
	if len(adding) == 0 || !p.leads(r) || r.leaderEpoch != leaderEpoch {
		return
	}
	p.followers.keepAdditions(adding)
	p.followers.committedISR(r.isr, r.partitionEpoch)
}

// awaitsAlter reports whether an ISR change built on role r still waits
// for its answer: the partition is open, led here at r's leader epoch,
// and its metadata has not moved past r's partition epoch.
func (p *Partition) awaitsAlter(r *role) bool {
	now := p.role.Load()
	return !p.closed() && now.leader == r.leader && now.leaderEpoch == r.leaderEpoch && now.partitionEpoch == r.partitionEpoch
}
