package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
)

// partitionKey names a partition.
type partitionKey struct {
	topic     string
	partition int32
}

// partitionManager opens a hot log for every partition this broker leads,
// as the metadata says, and closes (and, for deleted topics, removes) the
// ones it no longer leads.
//
// Goroutines: run (owned by the broker, stopped by cancelling its context)
// applies metadata changes one at a time; advance (same owner and stop)
// moves high watermarks forward after fsyncs. Handlers look partitions up
// with get, which never blocks on either.
type partitionManager struct {
	broker *Broker
	files  *hotlog.FileCache
	fsync  prometheus.Histogram
	// descriptors is the broker's descriptor budget; maxPartitions is
	// max.broker.partitions in force (descriptors.go).
	descriptors   descriptorBudget
	maxPartitions int
	offlineGauge  prometheus.Gauge

	mu struct {
		sync.RWMutex
		open map[partitionKey]*partition
		// offline holds the partitions this broker leads that failed to
		// open, each retried with backoff by the reconcile loop.
		offline map[partitionKey]*offlinePartition
		// reconciledIndex is the metadata index of the last state
		// reconciled; reconciled is closed, and replaced, after each.
		reconciledIndex uint64
		reconciled      chan struct{}
	}
	// synced holds partitions whose log fsynced since advance last ran;
	// wake tells advance there are some.
	syncedMu sync.Mutex
	synced   map[*partition]struct{}
	wake     chan struct{}
}

// maxOpenSegmentFiles is the most open sealed-segment files shared by
// every partition log (active segments are always open); a low descriptor
// limit lowers it (descriptors.go).
const maxOpenSegmentFiles = 1024

// newPartitionManager builds the manager within the broker's descriptor
// budget (descriptors.go). b.config has been validated, so the budget can
// be read.
func newPartitionManager(b *Broker, reg prometheus.Registerer) *partitionManager {
	budget, err := b.config.descriptorBudget()
	if err != nil {
		panic(fmt.Sprintf("ingest: descriptor budget of a validated config: %v", err))
	}
	factory := promauto.With(reg)
	m := &partitionManager{
		broker:        b,
		files:         hotlog.NewFileCache(budget.segmentFiles),
		descriptors:   budget,
		maxPartitions: b.config.maxBrokerPartitions(budget),
		fsync: factory.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_ingest_fsync_duration_seconds",
			Help:    "Time spent in each fsync of a partition's log file.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		offlineGauge: factory.NewGauge(prometheus.GaugeOpts{
			Name: "strata_ingest_offline_partitions",
			Help: "Partitions this broker leads that failed to open and are being retried.",
		}),
		synced: map[*partition]struct{}{},
		wake:   make(chan struct{}, 1),
	}
	factory.NewGauge(prometheus.GaugeOpts{
		Name: "strata_ingest_max_broker_partitions",
		Help: "max.broker.partitions in force: the most partitions this broker may hold.",
	}).Set(float64(m.maxPartitions))
	descriptorGauge := factory.NewGaugeVec(prometheus.GaugeOpts{
		Name: "strata_ingest_descriptor_budget",
		Help: "The descriptor limit (use=\"limit\") and its shares: reserved, sockets, segment_cache, partitions (descriptors for max.broker.partitions).",
	}, []string{"use"})
	descriptorGauge.WithLabelValues("limit").Set(float64(budget.limit))
	descriptorGauge.WithLabelValues("reserved").Set(float64(budget.reserved))
	descriptorGauge.WithLabelValues("sockets").Set(float64(budget.sockets))
	descriptorGauge.WithLabelValues("segment_cache").Set(float64(budget.segmentFiles))
	descriptorGauge.WithLabelValues("partitions").Set(float64(budget.partitions * descriptorsPerPartition))
	m.mu.open = map[partitionKey]*partition{}
	m.mu.offline = map[partitionKey]*offlinePartition{}
	m.mu.reconciled = make(chan struct{})
	if reg != nil {
		reg.MustRegister(newPartitionCollector(m))
	}
	return m
}

// get returns the open partition, or why there is none: ErrUnknownTopic
// when the metadata has no such partition, ErrPartitionOffline when this
// broker leads it but could not open it (it is retried), ErrNotLeader when
// another broker leads it or it is not open yet.
func (m *partitionManager) get(st *meta.State, topic string, index int32) (*partition, error) {
	key := partitionKey{topic, index}
	m.mu.RLock()
	p, ok := m.mu.open[key]
	offline := m.mu.offline[key]
	m.mu.RUnlock()
	if ok {
		return p, nil
	}
	if offline != nil {
		return nil, fmt.Errorf("%w: %s-%d: %v", ErrPartitionOffline, topic, index, offline.err)
	}
	if _, exists := st.Partition(topic, index); !exists {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownTopic, topic, index)
	}
	return nil, fmt.Errorf("%w: %s-%d", ErrNotLeader, topic, index)
}

// all returns the open partitions.
func (m *partitionManager) all() []*partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*partition, 0, len(m.mu.open))
	for _, p := range m.mu.open {
		out = append(out, p)
	}
	return out
}

// start removes directories of topics that no longer exist, opens the
// partitions this broker leads, and starts the goroutines that follow the
// metadata. st must hold every committed change (a linearizable read), so a
// directory is never removed for a topic this broker merely has not heard of
// yet.
func (m *partitionManager) start(ctx context.Context, st *meta.State) error {
	if err := os.MkdirAll(m.broker.config.DataDir, 0o755); err != nil {
		return fmt.Errorf("ingest: data dir: %w", err)
	}
	if err := m.removeStrays(st); err != nil {
		return err
	}
	if held := partitionsPerBroker(st)[m.broker.config.BrokerID]; held > m.maxPartitions {
		// They exist, so they are served; only new ones are refused.
		m.broker.log.Warn("this broker holds more partitions than max.broker.partitions; creates that add to it are refused",
			"partitions", held, "max_broker_partitions", m.maxPartitions, "descriptor_limit", m.descriptors.limit)
	}
	watch := m.broker.meta.Watch(meta.WatchOptions{Kinds: []meta.ChangeKind{meta.ChangeTopic, meta.ChangePartition}})
	m.reconcile(st)
	m.broker.background.Add(2)
	go func() {
		defer m.broker.background.Done()
		m.run(ctx, watch)
	}()
	go func() {
		defer m.broker.background.Done()
		m.advance(ctx)
	}()
	return nil
}

// run applies metadata changes until ctx ends, then closes every partition.
func (m *partitionManager) run(ctx context.Context, watch *meta.Watch) {
	defer m.closeAll()
	retention := time.NewTicker(retentionCheckInterval)
	defer retention.Stop()
	// retry fires when the first offline partition is due another attempt.
	retry := time.NewTimer(0)
	defer retry.Stop()
	m.scheduleRetry(retry)
	snapshots := time.NewTicker(producerSnapshotInterval)
	defer snapshots.Stop()
	for {
		select {
		case <-ctx.Done():
			watch.Cancel()
			return
		case <-retention.C:
			m.applyRetention()
		case <-retry.C:
			m.reconcile(m.broker.meta.State())
			m.scheduleRetry(retry)
		case <-snapshots.C:
			m.snapshotProducers(ctx)
		case update, ok := <-watch.C:
			if ok {
				m.reconcile(update.State)
				m.scheduleRetry(retry)
				continue
			}
			if err := watch.Err(); err != nil && !errors.Is(err, meta.ErrWatchOverflow) {
				m.broker.log.Error("metadata watch ended; partitions no longer follow the metadata", "error", err)
				<-ctx.Done()
				return
			}
			// Fell behind: subscribe again; the first update is the whole state.
			watch = m.broker.meta.Watch(meta.WatchOptions{Kinds: []meta.ChangeKind{meta.ChangeTopic, meta.ChangePartition}})
		}
	}
}

// reconcile makes the open partitions those st says this broker leads.
func (m *partitionManager) reconcile(st *meta.State) {
	self := m.broker.config.BrokerID
	want := map[partitionKey]meta.Topic{}
	leaderEpochs := map[partitionKey]int32{}
	for _, t := range st.Topics() {
		for _, p := range st.Partitions(t.Name) {
			if p.Leader == self {
				key := partitionKey{t.Name, p.Partition}
				want[key] = t
				leaderEpochs[key] = p.LeaderEpoch
			}
		}
	}
	m.mu.RLock()
	current := make(map[partitionKey]*partition, len(m.mu.open))
	for k, p := range m.mu.open {
		current[k] = p
	}
	m.mu.RUnlock()

	for key, p := range current {
		topic, keep := want[key]
		if log := m.logSettingsOf(topic); keep && topic.ID == p.topicID && p.keepsLog(log) {
			p.update(topic, log, leaderEpochs[key])
			continue
		}
		m.mu.Lock()
		delete(m.mu.open, key)
		m.mu.Unlock()
		_, exists := st.Topic(key.topic)
		deleted := !exists || (keep && topic.ID != p.topicID)
		m.closePartition(p, deleted)
	}
	m.mu.Lock()
	for key, o := range m.mu.offline {
		if topic, keep := want[key]; !keep || topic.ID != o.topicID {
			delete(m.mu.offline, key)
		}
	}
	offline := maps.Clone(m.mu.offline)
	m.mu.Unlock()
	now := time.Now()
	for key, topic := range want {
		if p, ok := current[key]; ok && p.topicID == topic.ID && p.keepsLog(m.logSettingsOf(topic)) {
			continue
		}
		if o := offline[key]; o != nil && now.Before(o.retryAt) {
			continue
		}
		p, err := m.openPartition(topic, key.partition, leaderEpochs[key])
		m.mu.Lock()
		if err != nil {
			o := m.mu.offline[key]
			if o == nil {
				o = &offlinePartition{topicID: topic.ID}
				m.mu.offline[key] = o
			}
			o.failed(err, now)
			m.mu.Unlock()
			m.broker.log.Error("cannot open partition; it is offline and retried", "topic", key.topic, "partition", key.partition,
				"error", err, "attempts", o.attempts, "retry_in", o.retryAt.Sub(now))
			continue
		}
		if o := m.mu.offline[key]; o != nil {
			delete(m.mu.offline, key)
			m.broker.log.Info("partition is back online", "topic", key.topic, "partition", key.partition, "failed_attempts", o.attempts)
		}
		m.mu.open[key] = p
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.offlineGauge.Set(float64(len(m.mu.offline)))
	m.mu.reconciledIndex = max(m.mu.reconciledIndex, st.Index())
	close(m.mu.reconciled)
	m.mu.reconciled = make(chan struct{})
	m.mu.Unlock()
}

// waitReconciled waits until the partitions follow the metadata state at
// index or later: a topic created at index has had its partitions opened
// (or has failed to), so a client told the topic exists can write to it at
// once. It gives up when ctx ends.
func (m *partitionManager) waitReconciled(ctx context.Context, index uint64) {
	for {
		m.mu.RLock()
		done, reconciled := m.mu.reconciledIndex >= index, m.mu.reconciled
		m.mu.RUnlock()
		if done {
			return
		}
		select {
		case <-reconciled:
		case <-ctx.Done():
			return
		}
	}
}

// openPartition opens (creating or recovering) one partition's log.
func (m *partitionManager) openPartition(topic meta.Topic, index, leaderEpoch int32) (*partition, error) {
	dir := filepath.Join(m.broker.config.DataDir, partitionDirName(topic.Name, index))
	if err := preparePartitionDir(dir, topic.ID); err != nil {
		return nil, err
	}
	p := newPartition(m, topic, index, leaderEpoch)
	if err := p.open(dir); err != nil {
		return nil, err
	}
	if p.tiered {
		err := m.broker.tiering.Offload.Add(offload.Partition{
			Topic: topic.Name, TopicID: topic.ID, Partition: index, Log: p.log,
			HighWatermark: p.highWatermark.Load, LeaderEpoch: p.leaderEpoch.Load,
		})
		if err != nil {
			// The log still deletes nothing the bucket lacks (CanDelete):
			// it only keeps growing until a reopen adds it.
			m.broker.log.Error("cannot hand the partition to offload; it is not tiered until reopened", "topic", topic.Name, "partition", index, "error", err)
		}
	}
	m.broker.log.Info("opened partition", "topic", topic.Name, "partition", index,
		"log_start", p.log.LogStartOffset(), "log_end", p.log.LogEndOffset(), "producers", len(p.appendMu.producers.producers))
	return p, nil
}

// logSettingsOf is the hot log configuration of topic's partitions on this
// broker: tiered when the topic asks for it and the broker has offload.
func (m *partitionManager) logSettingsOf(topic meta.Topic) logSettings {
	return logSettingsOf(topic, m.broker.tieringEnabled(topic))
}

// closePartition closes p and, when its topic was deleted, removes its
// directory.
func (m *partitionManager) closePartition(p *partition, deleted bool) {
	if p.tiered {
		m.broker.tiering.Offload.Remove(p.topic, p.index)
	}
	if err := p.close(); err != nil {
		m.broker.log.Error("closing partition", "topic", p.topic, "partition", p.index, "error", err)
	}
	m.syncedMu.Lock()
	delete(m.synced, p)
	m.syncedMu.Unlock()
	if !deleted {
		return
	}
	if err := removePartitionDir(p.dir, encodeTopicID(p.topicID)); err != nil {
		m.broker.log.Error("removing a deleted partition's directory", "dir", p.dir, "error", err)
		return
	}
	m.broker.log.Info("deleted partition", "topic", p.topic, "partition", p.index)
}

func (m *partitionManager) closeAll() {
	m.mu.Lock()
	open := m.mu.open
	m.mu.open = map[partitionKey]*partition{}
	m.mu.offline = map[partitionKey]*offlinePartition{}
	m.mu.Unlock()
	for _, p := range open {
		m.closePartition(p, false)
	}
}

// removeStrays removes partition directories whose topic st does not have
// (deleted while this broker was down), and leftovers of interrupted
// deletions.
func (m *partitionManager) removeStrays(st *meta.State) error {
	entries, err := os.ReadDir(m.broker.config.DataDir)
	if err != nil {
		return fmt.Errorf("ingest: data dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(m.broker.config.DataDir, e.Name())
		if strings.HasSuffix(e.Name(), deletedDirSuffix) {
			if err := os.RemoveAll(path); err != nil {
				return fmt.Errorf("ingest: removing %s: %w", path, err)
			}
			continue
		}
		topicName, _, ok := parsePartitionDirName(e.Name())
		if !ok {
			continue
		}
		id, hasID, err := readPartitionTopicID(path)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		topic, exists := st.Topic(topicName)
		if exists && (!hasID || id == encodeTopicID(topic.ID)) {
			continue
		}
		m.broker.log.Info("removing the directory of a deleted topic", "dir", path)
		if err := removePartitionDir(path, id); err != nil {
			return fmt.Errorf("ingest: removing %s: %w", path, err)
		}
	}
	return nil
}

// noteSynced is the hot log's Synced callback: it must not block or call
// into the log, so it only queues p for advance.
func (m *partitionManager) noteSynced(p *partition, info hotlog.SyncInfo) {
	m.fsync.Observe(info.Duration.Seconds())
	m.syncedMu.Lock()
	m.synced[p] = struct{}{}
	m.syncedMu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// advance moves the high watermark of every partition that fsynced, until
// ctx ends.
func (m *partitionManager) advance(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		m.syncedMu.Lock()
		batch := m.synced
		m.synced = make(map[*partition]struct{}, len(batch))
		m.syncedMu.Unlock()
		for p := range batch {
			p.advanceHighWatermark()
		}
	}
}

// producerSnapshotInterval is how often a partition whose idempotent
// producers wrote snapshots their state (producer_snapshot.go).
const producerSnapshotInterval = 30 * time.Second

// snapshotProducers snapshots the producer state of every open partition
// that idempotent producers wrote to since its last snapshot.
func (m *partitionManager) snapshotProducers(ctx context.Context) {
	for _, p := range m.all() {
		if err := p.snapshotProducers(ctx); err != nil {
			m.broker.log.Warn("snapshotting producer state", "topic", p.topic, "partition", p.index, "error", err)
		}
	}
}

// retentionCheckInterval is log.retention.check.interval.ms.
const retentionCheckInterval = 5 * time.Minute

// applyRetention lets each open partition's log delete the segments its
// retention.ms and retention.bytes no longer keep.
func (m *partitionManager) applyRetention() {
	for _, p := range m.all() {
		deleted, err := p.log.ApplyRetention()
		if err != nil {
			m.broker.log.Error("applying retention", "topic", p.topic, "partition", p.index, "error", err)
			continue
		}
		if len(deleted) > 0 {
			m.broker.log.Info("retention deleted segments", "topic", p.topic, "partition", p.index,
				"segments", len(deleted), "log_start", p.log.LogStartOffset())
		}
	}
}
