package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/record"
)

// producerIDExpiration is producer.id.expiration.ms: a producer that has not
// written to a partition for this long is forgotten there.
const producerIDExpiration = 24 * time.Hour

// Partition is one partition of which this broker holds a replica: its hot
// log, its idempotent producer state, its role, its high watermark and the
// fetches waiting on it. As leader it takes produces and tracks what each
// follower holds; as follower the manager's fetcher copies the leader's log
// into it (fetcher.go).
//
// The high watermark is the offset below which records may be read by
// consumers. It is the smallest log end over the ISR, where the leader's
// own log end counts once it is durable (the hot log's flushed offset
// under fsync before ack, the default; the log end under periodic
// flushing), and it never moves back while the partition is open, but on a
// follower dropping what an unclean election gave up (truncateTo). With one
// replica in the ISR it is the leader's durable end. A follower's is the
// leader's, as its last fetch was told, up to what it holds itself.
type Partition struct {
	manager *Manager
	topic   string
	topicID uuid.UUID
	index   int32
	dir     string
	log     *hotlog.Log
	// tiered and periodicFlush are fixed for the partition's life: a topic
	// change that alters either reopens it.
	tiered, periodicFlush bool
	// logConfig is the hot log configuration in force; the rest of a topic
	// change reaches the open log through reconfigure. Owned by the
	// manager's reconcile loop once the partition is open.
	logConfig logSettings

	settings atomic.Pointer[partitionSettings]
	// remote is what the bucket holds of the log (read.go).
	remote atomic.Pointer[remoteRange]
	// role is the metadata's last word on the replica set; replaced whole by
	// the reconcile loop (setRole).
	role atomic.Pointer[role]
	// followers is what the leader knows of each follower; reset whenever
	// this broker becomes leader.
	followers followers
	// leaderHighWatermark is, on a follower, the high watermark the leader
	// sent with the last fetch.
	leaderHighWatermark atomic.Int64

	highWatermark atomic.Int64
	// appendedBytes counts bytes appended: waiting fetches are told of
	// those they were not yet told of (Watchers.appendedTo), a follower's
	// as they are appended, a consumer's once below the high watermark.
	appendedBytes atomic.Int64
	hwmMu         sync.Mutex
	// unreadable marks the appends the high watermark has not passed yet,
	// oldest first (under hwmMu): each append's offsets and appendedBytes
	// after it, so that an advance tells consumers' fetches of the bytes
	// it made readable, no more.
	unreadable []appendMark
	// hwmChanged, once an acks=all produce waits on it, is closed and
	// cleared when the high watermark or the role changes (under hwmMu).
	// The waiter makes it: most advances have none (at RF 1 the
	// produce's own advance reaches its records), and a channel made at
	// each was a tenth of the broker's allocated bytes at 64 partitions.
	hwmChanged chan struct{}

	// watchers are consumer fetches, woken as the high watermark advances;
	// replicaWatchers are follower fetches, woken as the log grows
	// (WakeFollowers).
	watchers, replicaWatchers Watchers

	// appendMu serializes appends with their idempotence checks, so the
	// checks see every earlier append of the partition; follower appends,
	// truncations and role changes take it too.
	appendMu struct {
		sync.Mutex
		producers  *producerStates
		lastExpiry time.Time
		// changes counts the idempotent appends; snapshotted is its value
		// at the last producer state snapshot.
		changes, snapshotted uint64
		// truncations counts the truncations of the log, so a snapshot
		// pass does not put in place a state encoded before one.
		truncations uint64
		// snapshotFile is where the next producer state snapshot goes.
		snapshotFile snapshotFile
	}
	// Background fsyncs for acks=0 appends, which nobody waits for: at most
	// one goroutine per partition (owned by the partition, ended by close).
	syncRequests atomic.Int64
	syncRunning  atomic.Bool
	syncs        sync.WaitGroup
	closing      chan struct{}
}

// role is a partition's replica set as the metadata last said.
type role struct {
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
	// adding are the replicas a reassignment in progress adds.
	adding []int32
	// uncleanEpoch is the leader epoch of the partition's newest unclean
	// election, 0 if none (meta.Partition.UncleanLeaderEpoch).
	uncleanEpoch int32
}

func roleOf(p meta.Partition) *role {
	return &role{leader: p.Leader, leaderEpoch: p.LeaderEpoch, partitionEpoch: p.PartitionEpoch,
		replicas: slices.Clone(p.Replicas), isr: slices.Clone(p.ISR), adding: slices.Clone(p.AddingReplicas),
		uncleanEpoch: p.UncleanLeaderEpoch}
}

func newPartition(m *Manager, topic meta.Topic, assignment meta.Partition) *Partition {
	p := &Partition{
		manager:   m,
		topic:     topic.Name,
		topicID:   topic.ID,
		index:     assignment.Partition,
		logConfig: m.logSettingsOf(topic),
		closing:   make(chan struct{}),
	}
	p.tiered, p.periodicFlush = p.logConfig.tiered, p.logConfig.periodicFlush
	p.settings.Store(settingsOf(topic, p.index, p.manager.config.BrokerID, p.tiered))
	p.role.Store(roleOf(assignment))
	return p
}

// Topic, TopicID and Index name the partition.
func (p *Partition) Topic() string      { return p.topic }
func (p *Partition) TopicID() uuid.UUID { return p.topicID }
func (p *Partition) Index() int32       { return p.index }

// Log is the partition's hot log.
func (p *Partition) Log() *hotlog.Log { return p.log }

// Tiered reports whether the partition is tiered: its log keeps local
// retention and offload uploads it while this broker leads.
func (p *Partition) Tiered() bool { return p.tiered }

// LogConfig is the hot log configuration in force.
func (p *Partition) LogConfig() hotlog.Config { return p.logConfig.hotlogConfig(p.index) }

// HighWatermark is the offset below which consumers may read.
func (p *Partition) HighWatermark() int64 { return p.highWatermark.Load() }

// LocalBytes is the size of the partition's segments on this broker's
// disk: the hot tail only, what is below its log start being in the bucket.
func (p *Partition) LocalBytes() int64 {
	var n int64
	for _, s := range p.log.Segments() {
		n += s.Size
	}
	return n
}

// LeaderEpoch is the partition's leader epoch as the metadata last said.
func (p *Partition) LeaderEpoch() int32 { return p.role.Load().leaderEpoch }

// ledEpoch is the leader epoch this broker leads the partition at, -1 once
// it does not: offload's commands carry it, so a pass still running when
// the leadership moved is fenced, not taken for the new leader's.
func (p *Partition) ledEpoch() int32 {
	if r := p.role.Load(); p.leads(r) {
		return r.leaderEpoch
	}
	return -1
}

// leads reports whether this broker leads the partition at the role's epoch.
func (p *Partition) leads(r *role) bool { return r.leader == p.manager.config.BrokerID }

// open opens the hot log in dir (recovering it after a crash), makes what
// it holds durable, starts the leader epoch if this broker leads and
// rebuilds producer state.
func (p *Partition) open(dir string) error {
	p.dir = dir
	cfg := p.logConfig.hotlogConfig(p.index)
	cfg.FileCache = p.manager.files
	cfg.DiskSync = p.manager.disk.Load()
	cfg.Logger = p.manager.log.With("topic", p.topic, "partition", p.index)
	cfg.Events.Synced = func(info hotlog.SyncInfo) { p.manager.noteSynced(p, info) }
	cfg.Events.Failed = func(error) { p.manager.noteLogFailed() }
	if p.tiered {
		off := p.manager.deps.Offload
		canDelete := offload.LocalDeletionHook(p.manager.deps.Meta.State, p.topic, p.index, func() (int64, int64) { return p.log.Retention() })
		cfg.CanDelete = func(info hotlog.SegmentInfo) bool {
			if !canDelete(info) {
				return false
			}
			// The bucket holds it: say so before the local log start
			// moves past it, so no read finds it in neither place.
			p.noteManifest(p.manager.deps.Meta.State())
			return true
		}
		cfg.Events.Sealed = func(hotlog.SegmentInfo) { off.Notify(p.topic, p.index) }
	}
	log, err := hotlog.Open(dir, cfg)
	if err != nil {
		return err
	}
	p.log = log
	// Whatever survived the restart is the log now: make it durable before
	// any of it is served.
	if err := log.Sync(context.Background()); err != nil {
		log.Close()
		return err
	}
	if r := p.role.Load(); p.leads(r) {
		err := p.continueBucketLocked()
		if err == nil {
			err = p.assignEpoch(r.leaderEpoch)
		}
		if err != nil {
			log.Close()
			return err
		}
		p.followers.reset(r.replicas, p.manager.config.BrokerID, time.Now())
	}
	producers, err := p.loadProducerStates(log, p.manager.config.ProducerStateScanBytes)
	if err != nil {
		log.Close()
		return err
	}
	p.appendMu.producers = producers
	p.appendMu.lastExpiry = time.Now()
	// Only a sole replica knows its whole log is committed; one of several
	// learns its high watermark from the ISR.
	if r := p.role.Load(); len(r.replicas) <= 1 {
		p.highWatermark.Store(log.LogEndOffset())
	} else {
		p.highWatermark.Store(log.LogStartOffset())
		// A leader alone in its ISR (one that registered again after every
		// other member was fenced) has its whole durable log committed.
		p.advanceHighWatermark()
	}
	return nil
}

// assignEpoch starts leader epoch epoch at the log end, if it is new.
func (p *Partition) assignEpoch(epoch int32) error {
	if latest := p.log.Epochs(); len(latest) > 0 && latest[len(latest)-1].Epoch >= epoch {
		return nil
	}
	return p.log.AssignEpoch(epoch, p.log.LogEndOffset())
}

// keepsLog reports whether an open partition can take the hot log
// settings s without a reopen: everything but tiering and the durability
// policy applies to the open log.
func (p *Partition) keepsLog(s logSettings) bool {
	return s.tiered == p.tiered && s.periodicFlush == p.periodicFlush
}

// update applies a metadata change to an open partition: its topic's
// settings and log settings (which keepsLog accepted). Role changes go
// through setRole.
func (p *Partition) update(topic meta.Topic, log logSettings) {
	p.settings.Store(settingsOf(topic, p.index, p.manager.config.BrokerID, p.tiered))
	if log != p.logConfig {
		if err := p.log.Reconfigure(log.hotlogConfig(p.index)); err != nil {
			p.manager.log.Error("applying changed topic configs to the open log", "topic", p.topic, "partition", p.index, "error", err)
		} else {
			p.logConfig = log
			p.manager.log.Info("applied changed topic configs", "topic", p.topic, "partition", p.index)
		}
	}
}

// close stops the partition: waiting fetches and produces are woken,
// background fsyncs end, the hot log is closed cleanly and, if idempotent
// producers wrote since the last one, the producer state is snapshotted at
// the log end.
func (p *Partition) close() error {
	close(p.closing)
	p.watchers.wakeAll()
	p.replicaWatchers.wakeAll()
	p.notifyWaiters()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	err := p.log.Close()
	p.syncs.Wait()
	if err == nil && p.appendMu.changes != p.appendMu.snapshotted {
		// Everything is durable now: the snapshot's offset is the log end.
		err = p.writeClosingSnapshotLocked(encodeProducerSnapshot(p.appendMu.producers, p.log.LogEndOffset()))
	}
	return err
}

// writeClosingSnapshotLocked writes data as the partition's snapshot,
// durably: in place where the file takes it (a write and an fsync),
// else the file whole.
func (p *Partition) writeClosingSnapshotLocked(data []byte) error {
	next, slot := p.appendMu.snapshotFile.next(data)
	if next.inPlace {
		err := p.writeSlotDurablyLocked(next, slot)
		if err == nil {
			p.appendMu.snapshotFile = next
			return nil
		}
		// The file whole, then, as after any failed write in place.
		p.manager.log.Warn("writing the producer state snapshot in place; writing it whole", "topic", p.topic, "partition", p.index, "error", err)
		next.stride, next.inPlace = snapshotStride(len(data)), false
	}
	if err := writeFileSynced(filepath.Join(p.dir, producerSnapshotFile), snapshotFileImage(next.seq, data, next.stride)); err != nil {
		return err
	}
	p.appendMu.snapshotFile = snapshotFile{seq: next.seq, stride: next.stride, inPlace: true}
	return nil
}

// writeSlotDurablyLocked writes slot, snapshot next.seq, in place and
// fsyncs the file.
func (p *Partition) writeSlotDurablyLocked(next snapshotFile, slot []byte) error {
	f, err := p.writeSlotLocked(next, slot)
	if err != nil {
		return err
	}
	err = f.Sync()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		p.appendMu.snapshotFile.inPlace = false
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

// writeSnapshot writes a snapshot pass's snapshot s and returns the file
// it went into, open, for the pass to make durable: in place, into the
// slot of the partition's file that does not hold its newest snapshot,
// or whole into the temporary file where the file cannot take it. The
// write in place is made under appendMu, so a truncation is either
// before it (s is refused) or after (and removes the file if s is past
// it).
func (p *Partition) writeSnapshot(s *dueSnapshot) (*os.File, error) {
	p.appendMu.Lock()
	if p.appendMu.truncations != s.truncations {
		p.appendMu.Unlock()
		return nil, errTruncatedSinceSnapshot
	}
	next, slot := p.appendMu.snapshotFile.next(s.data)
	s.written, s.whole = next, !next.inPlace
	if next.inPlace {
		defer p.appendMu.Unlock()
		return p.writeSlotLocked(next, slot)
	}
	p.appendMu.Unlock()
	// Written outside appendMu: creating a file may wait for the file
	// system's journal. installSnapshot checks for a truncation again.
	return createWritten(filepath.Join(p.dir, producerSnapshotTemporary), snapshotFileImage(next.seq, s.data, next.stride))
}

// writeSlotLocked writes slot, snapshot next.seq, into its place in the
// partition's snapshot file and returns the file open. Should that fail
// (the file was removed behind the broker's back), the next snapshot
// replaces the file whole.
func (p *Partition) writeSlotLocked(next snapshotFile, slot []byte) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(p.dir, producerSnapshotFile), os.O_RDWR, 0) // read back by a disk journal
	if err == nil {
		if _, err = f.WriteAt(slot, slotOffset(next.seq, next.stride)); err != nil {
			f.Close()
		}
	}
	if err != nil {
		p.appendMu.snapshotFile.inPlace = false
		return nil, err
	}
	return f, nil
}

// closed reports whether close has begun.
func (p *Partition) closed() bool {
	select {
	case <-p.closing:
		return true
	default:
		return false
	}
}

// dueSnapshot returns the partition's producer state snapshot for a
// snapshot pass, with the log's sync up to its offset registered, or nil
// if no idempotent producer wrote since the last snapshot.
func (p *Partition) dueSnapshot() *dueSnapshot {
	p.appendMu.Lock()
	changes := p.appendMu.changes
	if changes == p.appendMu.snapshotted {
		p.appendMu.Unlock()
		return nil
	}
	s := &dueSnapshot{p: p, changes: changes, truncations: p.appendMu.truncations,
		data: encodeProducerSnapshot(p.appendMu.producers, p.log.LogEndOffset())}
	p.appendMu.Unlock()
	s.synced = p.log.ExpectSync()
	return s
}

// installSnapshot renames a snapshot pass's temporary file, holding s,
// over the partition's snapshot file, unless the log was truncated since
// the state in it was encoded (truncateTo removes a snapshot past the new
// log end, which this one may be). The file's number and stride are s's
// from then on; its slots take writes in place once the rename is
// durable (snapshotted).
func (p *Partition) installSnapshot(tmp string, s *dueSnapshot) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.appendMu.truncations != s.truncations {
		return errTruncatedSinceSnapshot
	}
	if err := renameSnapshot(p.dir, tmp); err != nil {
		return err
	}
	p.appendMu.snapshotFile = snapshotFile{seq: s.written.seq, stride: s.written.stride}
	return nil
}

// snapshotted records that a pass made s durable: the snapshot covering
// its changes is in place, and the next goes into the other slot. A
// truncation since s was written either removed the file (the next is
// written whole) or left it, holding s, when nothing in it was past the
// cut; a file written whole then takes no write in place until the next
// is written whole, since the truncation may have come before its rename
// was durable.
func (p *Partition) snapshotted(s *dueSnapshot) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.appendMu.snapshotted = max(p.appendMu.snapshotted, s.changes)
	switch {
	case p.appendMu.truncations == s.truncations:
		p.appendMu.snapshotFile = snapshotFile{seq: s.written.seq, stride: s.written.stride, inPlace: true}
	case !s.whole && p.appendMu.snapshotFile.inPlace:
		p.appendMu.snapshotFile.seq = s.written.seq
	}
}

// AppendOutcome is what a produce learns from a partition append.
type AppendOutcome struct {
	BaseOffset    int64
	LogAppendTime int64 // -1 unless the topic uses LogAppendTime
	// What Expect registers: the log's acknowledgement of the append
	// (result), or of everything up to the log end for a retried batch
	// (retried), then replication as the target asks. Values, not a
	// closure: two allocations an append at tens of thousands of appends
	// a second.
	result  hotlog.AppendResult
	retried bool
	target  ackTarget
}

// ackTarget is what a produce waits for once its records are durable
// here: the records below end, appended under role r, as replicated as
// acks asks.
type ackTarget struct {
	p    *Partition
	acks Acks
	r    *role
	end  int64
}

// WaitAck blocks until the records may be acknowledged at the acks the
// produce asked for.
func (o AppendOutcome) WaitAck(ctx context.Context) error {
	return o.Expect().Wait(ctx)
}

// Expect registers the wait WaitAck makes, asking for the log's flush
// round, and returns it: a produce request registers every partition's
// wait, then waits for each in turn on one goroutine (hotlog's
// AppendResult.Expect).
func (o AppendOutcome) Expect() AckWait {
	if o.retried {
		return AckWait{ack: o.target.p.log.ExpectSync(), target: o.target}
	}
	return AckWait{ack: o.result.Expect(), target: o.target}
}

// AckWait is a produce's registered wait for one partition's records
// (AppendOutcome.Expect): durable here, then as replicated as acks asks.
type AckWait struct {
	ack    hotlog.Ack
	target ackTarget
}

// Wait blocks until the records may be acknowledged, or ctx ends.
func (w AckWait) Wait(ctx context.Context) error {
	if err := w.ack.Wait(ctx); err != nil {
		return err
	}
	t := w.target
	t.p.advanceHighWatermark()
	return t.p.waitAcks(ctx, t.acks, t.r, t.end)
}

// Acks is a produce's acks: how many replicas must have the records before
// it is answered.
type Acks int16

// The acks Kafka defines.
const (
	AcksNone   Acks = 0  // no answer
	AcksLeader Acks = 1  // the leader's log (durable under fsync before ack)
	AcksAll    Acks = -1 // every ISR member, and at least min.insync.replicas
)

// Append writes one produce request's batches for this partition, all or
// nothing: every batch is checked first (size, transactions, leadership,
// the ISR against min.insync.replicas for acks=all, idempotence), then they
// are appended in one call. A retried idempotent batch is not written
// again; it is answered with its original offset once that is as
// replicated as acks asks. The followers' fetches see the batches once
// the caller calls WakeFollowers.
func (p *Partition) Append(batches []record.Batch, acks Acks) (AppendOutcome, error) {
	settings := p.settings.Load()
	for i, b := range batches {
		if settings.recompress {
			// compression.type names a codec: the batch is stored in
			// it, as Kafka's broker recompresses, and checked for size
			// as stored.
			rebuilt, err := record.Recompress(b, settings.codec, max(settings.maxMessageBytes, record.MaxDecompressedBytes))
			if err != nil {
				return AppendOutcome{}, fmt.Errorf("replica: recompressing batch %d to %v: %w", i, settings.codec, err)
			}
			batches[i], b = rebuilt, rebuilt
		}
		h := b.Header()
		if h.Size() > settings.maxMessageBytes {
			return AppendOutcome{}, fmt.Errorf("%w: batch %d is %d bytes, max.message.bytes is %d", ErrRecordsTooLarge, i, h.Size(), settings.maxMessageBytes)
		}
		if h.Attributes.Transactional() {
			return AppendOutcome{}, fmt.Errorf("%w: batch %d is transactional", ErrTransactionsUnsupported, i)
		}
	}

	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	r := p.role.Load()
	if err := p.checkLeading(r); err != nil {
		return AppendOutcome{}, err
	}
	if acks == AcksAll && len(r.isr) < settings.minInsyncReplicas {
		return AppendOutcome{}, fmt.Errorf("%w: the ISR %v has %d of the %d required", ErrNotEnoughReplicas, r.isr, len(r.isr), settings.minInsyncReplicas)
	}
	producers := p.appendMu.producers
	for i, b := range batches {
		check, err := producers.check(b.Header())
		if err != nil {
			return AppendOutcome{}, err
		}
		if check.duplicate != nil {
			if len(batches) > 1 {
				return AppendOutcome{}, fmt.Errorf("%w: batch %d of %d repeats an earlier batch", ErrOutOfOrderSequence, i, len(batches))
			}
			return p.duplicateOutcome(*check.duplicate, settings, acks, r), nil
		}
	}
	logAppendTime := int64(-1)
	if settings.logAppendTime {
		// Read under the append lock, so the stamps follow the offsets
		// as far as the wall clock does.
		logAppendTime = time.Now().UnixMilli()
		for i := range batches {
			batches[i].StampLogAppendTime(logAppendTime)
		}
	}
	result, err := p.log.Append(batches...)
	if err != nil {
		return AppendOutcome{}, err
	}
	p.recordProducers(batches, result.FirstOffset, result.LogAppendTime) // the log's reading of the clock
	if p.periodicFlush {
		p.advanceHighWatermark()
	}
	return AppendOutcome{
		BaseOffset:    result.FirstOffset,
		LogAppendTime: logAppendTime,
		result:        result,
		target:        ackTarget{p: p, acks: acks, r: r, end: result.LastOffset + 1},
	}, nil
}

// checkLeading refuses a write unless this broker leads the partition
// under role r and holds its leadership lease.
func (p *Partition) checkLeading(r *role) error {
	if !p.leads(r) {
		return fmt.Errorf("%w: %s-%d is led by broker %d", ErrNotLeader, p.topic, p.index, r.leader)
	}
	if err := p.manager.deps.Lease(); err != nil {
		return fmt.Errorf("%w: %s-%d: %v", ErrNotLeader, p.topic, p.index, err)
	}
	return nil
}

// recordProducers notes appended batches, which start at offset, in the
// producer state and counts their bytes. appendMu must be held.
func (p *Partition) recordProducers(batches []record.Batch, offset int64, now time.Time) {
	start := offset
	producers := p.appendMu.producers
	var size int64
	for _, b := range batches {
		h := b.Header() // with the max timestamp as stamped: a retry is answered with it
		if idempotent(h) {
			p.appendMu.changes++
		}
		producers.record(h, offset, now.UnixMilli())
		offset += int64(h.LastOffsetDelta) + 1
		size += int64(h.Size())
	}
	if now.Sub(p.appendMu.lastExpiry) > time.Minute {
		producers.expire(now.Add(-producerIDExpiration).UnixMilli())
		p.appendMu.lastExpiry = now
	}
	p.markAppended(start, offset, p.appendedBytes.Add(size))
}

// appendMark is an append's offsets [start, end) and the partition's
// appended byte count after it.
type appendMark struct {
	start, end, appended int64
}

// maxUnreadableMarks bounds a partition's marks while its high watermark
// stands still (a follower in the ISR stopped fetching, until
// replica.lag.time.max.ms takes it out): past it, the newest mark takes
// in the next append, so a consumer's fetch hears of those appends only
// once the high watermark passes them all.
const maxUnreadableMarks = 256

// markAppended notes an append of offsets [start, end), after which
// appended bytes were appended in all. An append the high watermark
// passed already (a follower fetched it before this call) is told at
// once.
func (p *Partition) markAppended(start, end, appended int64) {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	switch n := len(p.unreadable); {
	case end <= p.highWatermark.Load():
		p.watchers.appendedTo(appended)
	case n == maxUnreadableMarks:
		p.unreadable[n-1].end, p.unreadable[n-1].appended = end, appended
	default:
		p.unreadable = append(p.unreadable, appendMark{start: start, end: end, appended: appended})
	}
}

// keepHighWatermark raises a partition just reopened on the same log (a
// changed log setting) to the high watermark it had: a leader's would
// otherwise start again from the log start until the ISR's fetches raise
// it, and ListOffsets' latest would go back meanwhile. It is capped at the
// log end.
func (p *Partition) keepHighWatermark(hwm int64) {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	if hwm = min(hwm, p.log.LogEndOffset()); hwm > p.highWatermark.Load() {
		p.highWatermark.Store(hwm)
	}
}

// lowerHighWatermark moves a follower's high watermark back to offset, and
// the leader's high watermark it last learned with it, for the truncation
// an unclean election allows (truncateTo): both rise again from the new
// leader's answers.
func (p *Partition) lowerHighWatermark(offset int64) {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	p.highWatermark.Store(min(p.highWatermark.Load(), offset))
	p.leaderHighWatermark.Store(min(p.leaderHighWatermark.Load(), offset))
}

// forgetAppendsAfter drops the marks of appends a truncation to end
// removed, and cuts the one it cut into (its byte count stays: telling
// of removed bytes only wakes a fetch early).
func (p *Partition) forgetAppendsAfter(end int64) {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	p.unreadable = slices.DeleteFunc(p.unreadable, func(m appendMark) bool { return m.start >= end })
	if n := len(p.unreadable); n > 0 && p.unreadable[n-1].end > end {
		p.unreadable[n-1].end = end
	}
}

// duplicateOutcome answers a retried batch with where it was first written,
// acknowledged once everything up to it is durable and replicated as acks
// asks.
func (p *Partition) duplicateOutcome(original producerBatch, settings *partitionSettings, acks Acks, r *role) AppendOutcome {
	logAppendTime := int64(-1)
	if settings.logAppendTime {
		logAppendTime = original.timestamp
	}
	// Everything up to the log end, the retried batch included.
	return AppendOutcome{
		BaseOffset:    original.baseOffset,
		LogAppendTime: logAppendTime,
		retried:       true,
		target:        ackTarget{p: p, acks: acks, r: r, end: original.baseOffset + 1},
	}
}

// waitAcks waits, for acks=all, until the high watermark reaches end under
// the leadership r the records were appended in: then every ISR member has
// them. It fails with ErrNotLeader when the leadership changed first (the
// records may be truncated), and with ErrNotEnoughReplicasAfterAppend when
// the ISR that took them was smaller than min.insync.replicas. A leader
// append (acks=1) is answered once durable here, after a last look at the
// lease.
func (p *Partition) waitAcks(ctx context.Context, acks Acks, appended *role, end int64) error {
	if acks != AcksAll {
		return p.checkLeading(p.role.Load())
	}
	for {
		// The look and the channel under one lock: an advance after the
		// look closes the channel taken with it.
		p.hwmMu.Lock()
		reached := p.highWatermark.Load() >= end
		if !reached && p.hwmChanged == nil {
			p.hwmChanged = make(chan struct{})
		}
		changed := p.hwmChanged
		p.hwmMu.Unlock()
		r := p.role.Load()
		if r.leaderEpoch != appended.leaderEpoch || !p.leads(r) {
			return fmt.Errorf("%w: %s-%d changed leader (epoch %d to %d) before the ISR had the records", ErrNotLeader, p.topic, p.index, appended.leaderEpoch, r.leaderEpoch)
		}
		if reached {
			if min := p.settings.Load().minInsyncReplicas; len(r.isr) < min {
				return fmt.Errorf("%w: the ISR %v has %d of the %d required", ErrNotEnoughReplicasAfterAppend, r.isr, len(r.isr), min)
			}
			return p.checkLeading(r)
		}
		select {
		case <-changed:
		case <-p.closing:
			return fmt.Errorf("%w: %s-%d closed", ErrNotLeader, p.topic, p.index)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SyncInBackground makes an unacknowledged (acks=0) append durable, and
// so readable, without anyone waiting for it.
func (p *Partition) SyncInBackground() {
	if p.periodicFlush {
		return
	}
	p.syncRequests.Add(1)
	if !p.syncRunning.CompareAndSwap(false, true) {
		return
	}
	p.syncs.Add(1)
	go func() {
		defer p.syncs.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-p.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		for {
			seen := p.syncRequests.Load()
			if err := p.log.Sync(ctx); err != nil {
				p.syncRunning.Store(false)
				return
			}
			p.advanceHighWatermark()
			p.syncRunning.Store(false)
			if p.syncRequests.Load() == seen || !p.syncRunning.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// durableEnd is the end of what this replica holds durably: the flushed
// offset under fsync before ack, the log end under periodic flushing.
func (p *Partition) durableEnd() int64 {
	if p.periodicFlush {
		return p.log.LogEndOffset()
	}
	return p.log.FlushedOffset()
}

// advanceHighWatermark raises the high watermark as far as the role
// allows (see Partition) and tells waiting fetches and produces.
func (p *Partition) advanceHighWatermark() {
	// The target is worked out under hwmMu, so that a follower's addition
	// to the ISR (beginAddition), and a truncation's lowering
	// (lowerHighWatermark), come wholly before or after it.
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	target := p.durableEnd()
	r := p.role.Load()
	if p.leads(r) {
		target = p.followers.committed(r.isr, target)
	} else {
		target = min(target, p.leaderHighWatermark.Load())
	}
	if target <= p.highWatermark.Load() {
		return
	}
	p.highWatermark.Store(target)
	readable := 0
	for readable < len(p.unreadable) && p.unreadable[readable].end <= target {
		readable++
	}
	if readable > 0 {
		p.watchers.appendedTo(p.unreadable[readable-1].appended)
		// Shifted down, not resliced: a slice cut from the front loses
		// that capacity, and the next appends grew a new array. The
		// array keeps its largest size (maxUnreadableMarks bounds it).
		p.unreadable = slices.Delete(p.unreadable, 0, readable)
	}
	if len(p.unreadable) > 0 && target > p.unreadable[0].start {
		// Inside an append of many batches (a follower's fetched chunk,
		// or appends the bound made one mark): some of it is readable.
		p.watchers.nudge()
	}
	p.wakeHighWatermarkWaitersLocked()
}

// notifyWaiters wakes every produce waiting on the high watermark, to look
// at the role again.
func (p *Partition) notifyWaiters() {
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	p.wakeHighWatermarkWaitersLocked()
}

// wakeHighWatermarkWaitersLocked wakes the produces waiting on hwmChanged,
// if any. hwmMu must be held.
func (p *Partition) wakeHighWatermarkWaitersLocked() {
	if p.hwmChanged != nil {
		close(p.hwmChanged)
		p.hwmChanged = nil
	}
}
