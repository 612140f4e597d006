package ingest

import (
	"context"
	"fmt"
	"strconv"
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

// partition is one partition this broker leads: its hot log, its
// idempotent producer state, its high watermark and the fetches waiting
// on it.
//
// The high watermark is the offset below which records may be read. With
// one replica it is the log end once the data is durable: the hot log's
// flushed offset under fsync-before-ack (the default), the log end under
// periodic flushing. It only grows while the partition is open.
type partition struct {
	manager *partitionManager
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
	// partition manager's reconcile loop once the partition is open.
	logConfig logSettings

	settings      atomic.Pointer[partitionSettings]
	leaderEpoch   atomic.Int32
	highWatermark atomic.Int64
	// appendedBytes counts bytes appended; notifiedBytes (under hwmMu) those
	// already reported to waiting fetches.
	appendedBytes atomic.Int64
	hwmMu         sync.Mutex
	notifiedBytes int64

	watchers fetchWatchers

	// appendMu serializes appends with their idempotence checks, so the
	// checks see every earlier append of the partition.
	appendMu struct {
		sync.Mutex
		producers  *producerStates
		lastExpiry time.Time
		// changes counts the idempotent appends; snapshotted is its value
		// at the last producer state snapshot.
		changes, snapshotted uint64
	}
	// Background fsyncs for acks=0 appends, which nobody waits for: at most
	// one goroutine per partition (owned by the partition, ended by close).
	syncRequests atomic.Int64
	syncRunning  atomic.Bool
	syncs        sync.WaitGroup
	closing      chan struct{}
}

// partitionSettings are the topic configs the partition applies on its own.
type partitionSettings struct {
	maxMessageBytes int
	logAppendTime   bool
	compacted       bool // cleanup.policy includes compact: records need keys
	// message.timestamp.before.max.ms and .after.max.ms, for CreateTime.
	timestampBeforeMaxMs, timestampAfterMaxMs int64
}

// logSettings are the topic configs the hot log is opened with.
type logSettings struct {
	segmentBytes       int64
	segmentMs          int64
	indexIntervalBytes int32
	segmentIndexBytes  int32
	retentionMs        int64
	retentionBytes     int64
	periodicFlush      bool
	flushMessages      int64
	flushMs            int64
	// tiered: the log keeps local retention (local.retention.ms, .bytes)
	// and deletes only what the bucket holds; offload uploads it.
	tiered bool
}

func topicInt(t meta.Topic, name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func settingsOf(t meta.Topic) *partitionSettings {
	timestampType, _ := t.Config("message.timestamp.type")
	return &partitionSettings{
		maxMessageBytes: int(topicInt(t, "max.message.bytes")),
		logAppendTime:   timestampType == "LogAppendTime",
		compacted:       compactedTopic(t),

		timestampBeforeMaxMs: topicInt(t, "message.timestamp.before.max.ms"),
		timestampAfterMaxMs:  topicInt(t, "message.timestamp.after.max.ms"),
	}
}

// logSettingsOf derives the hot log configuration from a topic. A tiered
// partition's local retention is local.retention.ms and .bytes
// (offload.LocalRetention); total retention is then remote, offload's. An
// untiered one keeps the topic's total retention (retention.ms,
// retention.bytes): local data is the only copy. A topic that sets flush.ms or
// flush.messages explicitly opts out of fsync before ack and gets Kafka's
// periodic flushing instead.
func logSettingsOf(t meta.Topic, tiered bool) logSettings {
	_, flushMessagesSet := t.Configs["flush.messages"]
	_, flushMsSet := t.Configs["flush.ms"]
	s := logSettings{
		segmentBytes:       topicInt(t, "segment.bytes"),
		segmentMs:          topicInt(t, "segment.ms"),
		indexIntervalBytes: int32(topicInt(t, "index.interval.bytes")),
		segmentIndexBytes:  int32(topicInt(t, "segment.index.bytes")),
		retentionMs:        topicInt(t, "retention.ms"),
		retentionBytes:     topicInt(t, "retention.bytes"),
		periodicFlush:      flushMessagesSet || flushMsSet,
		flushMessages:      topicInt(t, "flush.messages"),
		flushMs:            topicInt(t, "flush.ms"),
		tiered:             tiered,
	}
	if tiered {
		s.retentionMs, s.retentionBytes = offload.LocalRetention(t)
	}
	return s
}

func (s logSettings) hotlogConfig() hotlog.Config {
	c := hotlog.DefaultConfig()
	c.SegmentBytes = s.segmentBytes
	c.SegmentMs = s.segmentMs
	c.IndexIntervalBytes = s.indexIntervalBytes
	c.SegmentIndexBytes = s.segmentIndexBytes
	c.RetentionMs = s.retentionMs
	c.RetentionBytes = s.retentionBytes
	if s.periodicFlush {
		c.Durability = hotlog.SyncPeriodically
		c.FlushMessages = s.flushMessages
		c.FlushMs = s.flushMs
	}
	return c
}

func newPartition(m *partitionManager, topic meta.Topic, index, leaderEpoch int32) *partition {
	p := &partition{
		manager:   m,
		topic:     topic.Name,
		topicID:   topic.ID,
		index:     index,
		logConfig: m.logSettingsOf(topic),
		closing:   make(chan struct{}),
	}
	p.tiered, p.periodicFlush = p.logConfig.tiered, p.logConfig.periodicFlush
	p.settings.Store(settingsOf(topic))
	p.leaderEpoch.Store(leaderEpoch)
	return p
}

// open opens the hot log in dir (recovering it after a crash), makes what
// it holds durable, starts the leader epoch and rebuilds producer state.
func (p *partition) open(dir string) error {
	p.dir = dir
	cfg := p.logConfig.hotlogConfig()
	cfg.FileCache = p.manager.files
	cfg.Logger = p.manager.broker.log.With("topic", p.topic, "partition", p.index)
	cfg.Events.Synced = func(info hotlog.SyncInfo) { p.manager.noteSynced(p, info) }
	if p.tiered {
		off := p.manager.broker.tiering.Offload
		cfg.CanDelete = offload.LocalDeletionHook(p.manager.broker.meta.State, p.topic, p.index)
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
	if err := p.assignEpoch(p.leaderEpoch.Load()); err != nil {
		log.Close()
		return err
	}
	producers, err := p.loadProducerStates(log, p.manager.broker.config.ProducerStateScanBytes)
	if err != nil {
		log.Close()
		return err
	}
	p.appendMu.producers = producers
	p.appendMu.lastExpiry = time.Now()
	p.highWatermark.Store(log.LogEndOffset())
	return nil
}

// assignEpoch starts leader epoch epoch at the log end, if it is new.
func (p *partition) assignEpoch(epoch int32) error {
	if latest := p.log.Epochs(); len(latest) > 0 && latest[len(latest)-1].Epoch >= epoch {
		return nil
	}
	return p.log.AssignEpoch(epoch, p.log.LogEndOffset())
}

// keepsLog reports whether an open partition can take the hot log
// settings s without a reopen: everything but tiering and the durability
// policy applies to the open log.
func (p *partition) keepsLog(s logSettings) bool {
	return s.tiered == p.tiered && s.periodicFlush == p.periodicFlush
}

// update applies a metadata change to an open partition: its topic's
// settings, log settings (which keepsLog accepted) and leader epoch.
func (p *partition) update(topic meta.Topic, log logSettings, leaderEpoch int32) {
	p.settings.Store(settingsOf(topic))
	if log != p.logConfig {
		if err := p.log.Reconfigure(log.hotlogConfig()); err != nil {
			p.manager.broker.log.Error("applying changed topic configs to the open log", "topic", p.topic, "partition", p.index, "error", err)
		} else {
			p.logConfig = log
			p.manager.broker.log.Info("applied changed topic configs", "topic", p.topic, "partition", p.index)
		}
	}
	if leaderEpoch > p.leaderEpoch.Load() {
		p.appendMu.Lock()
		if err := p.assignEpoch(leaderEpoch); err != nil {
			p.manager.broker.log.Error("recording a new leader epoch", "topic", p.topic, "partition", p.index, "epoch", leaderEpoch, "error", err)
		} else {
			p.leaderEpoch.Store(leaderEpoch)
		}
		p.appendMu.Unlock()
	}
}

// close stops the partition: waiting fetches are woken, background fsyncs
// end, the hot log is closed cleanly and, if idempotent producers wrote
// since the last one, the producer state is snapshotted at the log end.
func (p *partition) close() error {
	close(p.closing)
	p.watchers.wakeAll()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	err := p.log.Close()
	p.syncs.Wait()
	if err == nil && p.appendMu.changes != p.appendMu.snapshotted {
		// Everything is durable now: the snapshot's offset is the log end.
		err = writeProducerSnapshot(p.dir, encodeProducerSnapshot(p.appendMu.producers, p.log.LogEndOffset()))
	}
	return err
}

// snapshotProducers writes the producer state, if idempotent producers
// wrote since the last snapshot, at an offset the log has made durable.
func (p *partition) snapshotProducers(ctx context.Context) error {
	p.appendMu.Lock()
	changes := p.appendMu.changes
	if changes == p.appendMu.snapshotted {
		p.appendMu.Unlock()
		return nil
	}
	data := encodeProducerSnapshot(p.appendMu.producers, p.log.LogEndOffset())
	p.appendMu.Unlock()
	if err := p.log.Sync(ctx); err != nil {
		return err
	}
	if err := writeProducerSnapshot(p.dir, data); err != nil {
		return err
	}
	p.appendMu.Lock()
	p.appendMu.snapshotted = max(p.appendMu.snapshotted, changes)
	p.appendMu.Unlock()
	return nil
}

// appendOutcome is what a produce learns from a partition append.
type appendOutcome struct {
	baseOffset    int64
	logAppendTime int64 // -1 unless the topic uses LogAppendTime
	// waitAck blocks until the records may be acknowledged.
	waitAck func(ctx context.Context) error
}

// append writes one produce request's batches for this partition, all or
// nothing: every batch is checked first (size, transactions, idempotence),
// then they are appended in one call. A retried idempotent batch is not
// written again; it is answered with its original offset once that is
// durable.
func (p *partition) append(batches []record.Batch) (appendOutcome, error) {
	settings := p.settings.Load()
	for i, b := range batches {
		h := b.Header()
		if h.Size() > settings.maxMessageBytes {
			return appendOutcome{}, fmt.Errorf("%w: batch %d is %d bytes, max.message.bytes is %d", ErrRecordsTooLarge, i, h.Size(), settings.maxMessageBytes)
		}
		if h.Attributes.Transactional() {
			return appendOutcome{}, fmt.Errorf("%w: batch %d is transactional", ErrTransactionsUnsupported, i)
		}
	}

	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	producers := p.appendMu.producers
	for i, b := range batches {
		check, err := producers.check(b.Header())
		if err != nil {
			return appendOutcome{}, err
		}
		if check.duplicate != nil {
			if len(batches) > 1 {
				return appendOutcome{}, fmt.Errorf("%w: batch %d of %d repeats an earlier batch", ErrOutOfOrderSequence, i, len(batches))
			}
			return p.duplicateOutcome(*check.duplicate, settings), nil
		}
	}
	now := time.Now()
	logAppendTime := int64(-1)
	if settings.logAppendTime {
		logAppendTime = now.UnixMilli()
		for i := range batches {
			batches[i].StampLogAppendTime(logAppendTime)
		}
	}
	result, err := p.log.Append(batches...)
	if err != nil {
		return appendOutcome{}, err
	}
	offset := result.FirstOffset
	var size int64
	for _, b := range batches {
		h := b.Header() // with the max timestamp as stamped: a retry is answered with it
		if h.ProducerID != noProducerID {
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
	p.appendedBytes.Add(size)
	if p.periodicFlush {
		p.advanceHighWatermark()
	}
	return appendOutcome{
		baseOffset:    result.FirstOffset,
		logAppendTime: logAppendTime,
		waitAck: func(ctx context.Context) error {
			if err := result.WaitAck(ctx); err != nil {
				return err
			}
			p.advanceHighWatermark()
			return nil
		},
	}, nil
}

// duplicateOutcome answers a retried batch with where it was first written,
// acknowledged once everything up to it is durable.
func (p *partition) duplicateOutcome(original producerBatch, settings *partitionSettings) appendOutcome {
	logAppendTime := int64(-1)
	if settings.logAppendTime {
		logAppendTime = original.timestamp
	}
	return appendOutcome{
		baseOffset:    original.baseOffset,
		logAppendTime: logAppendTime,
		waitAck: func(ctx context.Context) error {
			if err := p.log.Sync(ctx); err != nil {
				return err
			}
			p.advanceHighWatermark()
			return nil
		},
	}
}

// syncInBackground makes an unacknowledged (acks=0) append durable, and
// so readable, without anyone waiting for it.
func (p *partition) syncInBackground() {
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

// advanceHighWatermark raises the high watermark to what is now durable and
// tells waiting fetches how many bytes became readable.
func (p *partition) advanceHighWatermark() {
	target := p.log.LogEndOffset()
	if !p.periodicFlush {
		target = p.log.FlushedOffset()
	}
	p.hwmMu.Lock()
	defer p.hwmMu.Unlock()
	if target <= p.highWatermark.Load() {
		return
	}
	p.highWatermark.Store(target)
	appended := p.appendedBytes.Load()
	if delta := appended - p.notifiedBytes; delta > 0 {
		p.notifiedBytes = appended
		p.watchers.appended(delta)
	}
}

// readResult is a partition's answer to one fetch.
type readResult struct {
	records        []section
	highWatermark  int64
	logStartOffset int64
}

// read returns whole batches from offset, as many as fit in maxBytes but at
// least one, and never a batch at or above the high watermark.
func (p *partition) read(offset int64, maxBytes int) (readResult, error) {
	hwm := p.highWatermark.Load()
	logStart := p.log.LogStartOffset()
	r := readResult{highWatermark: hwm, logStartOffset: logStart}
	if offset < logStart || offset > hwm {
		return r, &hotlog.OffsetOutOfRangeError{Offset: offset, LogStartOffset: logStart, LogEndOffset: hwm}
	}
	if offset == hwm {
		return r, nil
	}
	s, err := p.log.Read(offset, maxBytes)
	if err != nil {
		return r, err
	}
	if s.NextOffset > hwm {
		if err := trimToOffset(s, hwm); err != nil {
			s.Release()
			return r, err
		}
	}
	if s.Length == 0 {
		s.Release()
		return r, nil
	}
	r.records = []section{{file: s.File, position: s.Position, length: s.Length, release: s.Release}}
	return r, nil
}

// trimToOffset shortens s to the batches below limit, reading only their
// headers. Sections from the log hold whole batches, and the high watermark
// falls between batches, so the cut is at a batch boundary.
func trimToOffset(s *hotlog.Section, limit int64) error {
	var header [record.HeaderSize]byte
	position, end := s.Position, s.Position+s.Length
	for position < end {
		if _, err := s.File.ReadAt(header[:], position); err != nil {
			return fmt.Errorf("ingest: reading a batch header of %s at %d: %w", s.File.Name(), position, err)
		}
		h, err := record.ParseHeader(header[:])
		if err != nil {
			return fmt.Errorf("ingest: batch header of %s at %d: %w", s.File.Name(), position, err)
		}
		if h.BaseOffset >= limit {
			break
		}
		position += int64(h.Size())
	}
	s.Length = position - s.Position
	s.NextOffset = limit
	return nil
}

// loadProducerStates is the producer state of a partition being opened: its
// snapshot and the batch headers after it, or, without a snapshot that
// fits the log, what rebuildProducerStates finds in the log's tail.
func (p *partition) loadProducerStates(log *hotlog.Log, scanBytes int64) (*producerStates, error) {
	states, offset, ok, err := readProducerSnapshot(p.dir)
	switch {
	case err != nil:
		p.manager.broker.log.Warn("ignoring the producer state snapshot", "topic", p.topic, "partition", p.index, "error", err)
	case ok && (offset > log.LogEndOffset() || offset < log.LogStartOffset()):
		p.manager.broker.log.Info("the producer state snapshot does not fit the log; scanning its tail instead", "topic", p.topic,
			"partition", p.index, "snapshot", offset, "log_start", log.LogStartOffset(), "log_end", log.LogEndOffset())
		ok = false
	}
	if !ok {
		return rebuildProducerStates(log, scanBytes)
	}
	return states, scanProducerStates(log, states, offset)
}

// rebuildProducerStates recovers idempotent producer state from the tail of
// the log, for a partition without a usable snapshot: the batch headers of
// the newest segments, at least scanBytes of them when the log holds that
// much (so at most scanBytes plus one segment is read). Producers whose
// last batch is older than that are unknown, and Kafka's rule for unknown
// producers applies to them: their next batch is accepted at any sequence.
func rebuildProducerStates(log *hotlog.Log, scanBytes int64) (*producerStates, error) {
	states := newProducerStates()
	segments := log.Segments()
	start := log.LogEndOffset()
	var covered int64
	for i := len(segments) - 1; i >= 0 && covered < scanBytes; i-- {
		start = segments[i].BaseOffset
		covered += segments[i].Size
	}
	return states, scanProducerStates(log, states, max(start, log.LogStartOffset()))
}

// scanProducerStates records the idempotent batches from offset start to
// the log end into states.
func scanProducerStates(log *hotlog.Log, states *producerStates, start int64) error {
	for offset := start; offset < log.LogEndOffset(); {
		chunk, err := log.ReadBytes(offset, 1<<20)
		if err != nil {
			return fmt.Errorf("ingest: rebuilding producer state at offset %d: %w", offset, err)
		}
		if len(chunk) == 0 {
			break
		}
		for len(chunk) > 0 {
			h, err := record.ParseHeader(chunk)
			if err != nil {
				return fmt.Errorf("ingest: rebuilding producer state at offset %d: %w", offset, err)
			}
			if h.ProducerID != noProducerID && h.LastOffset() >= offset {
				states.record(h, h.BaseOffset, h.MaxTimestamp)
			}
			offset = h.NextOffset()
			chunk = chunk[h.Size():]
		}
	}
	return nil
}
