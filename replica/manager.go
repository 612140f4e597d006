package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/interbroker"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/quota"
)

// partitionKey names a partition.
type partitionKey struct {
	topic     string
	partition int32
}

// Config is what a Manager needs to know of its broker.
type Config struct {
	// BrokerID is this broker's id.
	BrokerID int32
	// DataDir holds one directory per partition, <topic>-<partition>.
	DataDir string
	// ProducerStateScanBytes bounds how much of a partition's log tail is
	// read to rebuild idempotent producer state without a snapshot.
	ProducerStateScanBytes int64
	// JournalBytes, above 0, starts a disk journal in DataDir with files
	// of this many bytes (hotlog.OpenDiskSync); 0 is off.
	JournalBytes int64
	// SegmentFiles is the most sealed-segment files open at once, shared by
	// every partition (active segments are always open).
	SegmentFiles int
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower not caught
	// up with its leader for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// Listener names the leaders' listener followers fetch from
	// (inter.broker.listener.name), unless a leader registered an
	// InterBrokerListener address; "" is a leader's first listener.
	Listener string
	// Dialer is how followers connect and authenticate to leaders: TLS and
	// SASL as the inter-broker listener's security protocol asks (its
	// ClientID is set per follower).
	Dialer interbroker.Dialer
}

// Metadata is what a Manager asks of the metadata group (a *meta.Node).
type Metadata interface {
	State() *meta.State
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, error)
	Watch(opts meta.WatchOptions) *meta.Watch
}

// Offloader is the part of *offload.Manager that uploads what this broker
// leads.
type Offloader interface {
	Add(p offload.Partition) error
	Remove(topic string, partition int32)
	Notify(topic string, partition int32)
	NotifyLogStart(topic string, partition int32)
	// Purge deletes the bucket's objects of a deleted topic's partition,
	// in the background, and calls done once they are all gone.
	Purge(topic string, topicID uuid.UUID, partition int32, done func())
}

// Cleaner is the part of *compact.Cleaner that compacts this broker's
// replicas: every open partition is handed to it, and its topic's
// cleanup.policy says whether it is cleaned.
type Cleaner interface {
	Add(p compact.Partition)
	Remove(topic string, partition int32)
	// Truncated lowers the partition's cleaner checkpoint to a log cut
	// back to offset.
	Truncated(topic string, partition int32, offset int64)
}

// Deps are what a Manager is built from besides its configuration.
type Deps struct {
	Meta Metadata
	// Logger receives the manager's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Offload uploads the tiered partitions this broker leads; nil when
	// the broker has no tiered storage.
	Offload Offloader
	// Tiered reports whether a topic's partitions are tiered here.
	Tiered func(meta.Topic) bool
	// Cleaner compacts the partitions of compacted topics; nil when the
	// broker does not clean (log.cleaner.enable=false).
	Cleaner Cleaner
	// Lease returns nil while this broker may lead: its heartbeats to the
	// controller succeed within the session timeout, so no successor can
	// have been elected. A leader without it takes no writes.
	Lease func() error
	// Incarnation is this broker's registration epoch, sent with its
	// follower fetches.
	Incarnation func() int64
}

// Manager opens a partition for every replica this broker holds, as the
// metadata says, gives each its role (leader or follower), and closes
// (and, for deleted topics, removes) the ones it no longer holds.
//
// Goroutines: run (owned by the manager, stopped by cancelling Start's
// context) applies metadata changes one at a time and checks the ISRs this
// broker leads; advance (same owner and stop) moves high watermarks forward
// after fsyncs; snapshots (same owner and stop) writes the producer state
// snapshot passes, off run's loop, which a pass at 4,000 partitions held
// for over a second; the fetcher's sessions copy leaders' logs. Handlers
// look partitions up with Leader, which never blocks on any of them.
type Manager struct {
	config Config
	deps   Deps
	log    *slog.Logger
	files  *hotlog.FileCache
	// disk makes every partition's appends durable in shared rounds; set
	// by Start, closed when run ends.
	disk    atomic.Pointer[hotlog.DiskSync]
	metrics *metrics
	fetcher *fetcher
	// leaderThrottle and followerThrottle are this broker's replication
	// throttles (throttle.go), their rates from its dynamic broker configs.
	leaderThrottle, followerThrottle *quota.Bucket

	mu struct {
		sync.RWMutex
		open map[partitionKey]*Partition
		// offline holds the partitions that failed to open, each retried
		// with backoff by the reconcile loop.
		offline map[partitionKey]*offlinePartition
		// reconciledIndex is the metadata index of the last state
		// reconciled or whose manifests were noted; reconciled is
		// closed, and replaced, after each.
		reconciledIndex uint64
		reconciled      chan struct{}
	}
	// snapshotting is held by a snapshot pass over one group of
	// partitions and by closePartition: a closing partition writes its
	// own snapshot into the same file (or its temporary file), and its
	// directory may then be removed or opened again by another Partition.
	snapshotting sync.Mutex
	// synced holds partitions whose log fsynced since advance last ran;
	// wake tells advance there are some.
	syncedMu sync.Mutex
	synced   map[*Partition]struct{}
	wake     chan struct{}
	// alters counts the ISR changes in flight, waited for by run's end.
	alters sync.WaitGroup
	// stopping is closed when run's context ends: ISR changes whose
	// outcome is unknown stop proposing again.
	stopping chan struct{}
	done     chan struct{}
	// logFailed is closed once, by logFailedOnce, when the first
	// partition's log fails after an I/O error (LogFailed).
	logFailed     chan struct{}
	logFailedOnce sync.Once
}

// NewManager builds a manager; Start opens the partitions.
func NewManager(cfg Config, deps Deps) (*Manager, error) {
	switch {
	case deps.Meta == nil:
		return nil, errors.New("replica: no metadata")
	case deps.Lease == nil || deps.Incarnation == nil:
		return nil, errors.New("replica: no leadership lease or incarnation")
	case cfg.ReplicaLagTimeMax <= 0:
		return nil, fmt.Errorf("replica: replica.lag.time.max.ms must be positive, not %v", cfg.ReplicaLagTimeMax)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if deps.Tiered == nil {
		deps.Tiered = func(meta.Topic) bool { return false }
	}
	m := &Manager{
		config: cfg,
		deps:   deps,
		log:    log,
		files:  hotlog.NewFileCache(cfg.SegmentFiles),
		synced: map[*Partition]struct{}{},
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),

		stopping: make(chan struct{}),

		logFailed: make(chan struct{}),

		leaderThrottle:   quota.NewBucket(),
		followerThrottle: quota.NewBucket(),
	}
	m.metrics = newMetrics(m, deps.Registerer)
	m.fetcher = newFetcher(m)
	m.mu.open = map[partitionKey]*Partition{}
	m.mu.offline = map[partitionKey]*offlinePartition{}
	m.mu.reconciled = make(chan struct{})
	return m, nil
}

// Leader returns the open partition this broker leads, or why there is
// none: ErrUnknownPartition when the metadata has no such partition,
// ErrPartitionOffline when this broker holds it but could not open it (it
// is retried), ErrNotLeader when another broker leads it, this one only
// follows it, it is not open yet, or this broker's leadership lease lapsed
// (it may have been deposed without knowing: it serves no reads and takes
// no writes until the metadata group hears from it again).
func (m *Manager) Leader(st *meta.State, topic string, index int32) (*Partition, error) {
	key := partitionKey{topic, index}
	m.mu.RLock()
	p, ok := m.mu.open[key]
	offline := m.mu.offline[key]
	m.mu.RUnlock()
	if ok {
		if err := p.checkLeading(p.role.Load()); err != nil {
			return nil, err
		}
		return p, nil
	}
	if offline != nil {
		return nil, fmt.Errorf("%w: %s-%d: %v", ErrPartitionOffline, topic, index, offline.err)
	}
	if _, exists := st.Partition(topic, index); !exists {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, index)
	}
	return nil, fmt.Errorf("%w: %s-%d", ErrNotLeader, topic, index)
}

// All returns the open partitions, led and followed.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.mu.open))
	for _, p := range m.mu.open {
		out = append(out, p)
	}
	return out
}

// Led counts the open partitions this broker leads.
func (m *Manager) Led() int {
	n := 0
	for _, p := range m.All() {
		if p.leads(p.role.Load()) {
			n++
		}
	}
	return n
}

// LogFailed is closed once a partition's log has failed after an I/O
// error (a write or an fsync of the data directory's disk), or a syncfs
// of the data directory failed: the broker stops then, as Kafka does
// when its log directories are offline.
func (m *Manager) LogFailed() <-chan struct{} { return m.logFailed }

// noteLogFailed is a partition log's Failed event: it closes LogFailed
// the first time. It runs with the log's locks held, so it only closes.
func (m *Manager) noteLogFailed() {
	m.logFailedOnce.Do(func() { close(m.logFailed) })
}

// Start removes directories of topics that no longer exist, opens the
// partitions this broker holds, and starts the goroutines that follow the
// metadata. st must hold every committed change (a linearizable read), so a
// directory is never removed for a topic this broker merely has not heard of
// yet. The goroutines stop when ctx ends; Wait waits for them.
func (m *Manager) Start(ctx context.Context, st *meta.State) error {
	if err := os.MkdirAll(m.config.DataDir, 0o755); err != nil {
		return fmt.Errorf("replica: data dir: %w", err)
	}
	disk, err := hotlog.OpenDiskSync(m.config.DataDir, m.config.JournalBytes)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if r := disk.Replayed(); r.Files > 0 {
		m.log.Info("replayed the disk journal of the last run", "files", r.Files, "entries", r.Entries, "written", r.Written, "skipped", r.Skipped, "bytes", r.Bytes)
	}
	switch disk.Errors() {
	case hotlog.SyncfsMayMiss:
		m.log.Warn("a syncfs on the data directory's file system may miss a failed write (it needs Linux 5.8 and ext4, or Linux 5.17 and xfs, btrfs or a journaled ext4): every partition fsyncs its own files", "dir", m.config.DataDir)
	case hotlog.SyncfsReportsOnce:
		m.log.Warn("the data directory is on ext4 without a journal, which reports a failed metadata write to one syncfs only: partitions share their syncfs calls one at a time, and another process's sync on the same file system could take the error first; put the data directory on a journaled file system", "dir", m.config.DataDir)
	}
	m.disk.Store(disk)
	if err := m.removeStrays(st); err != nil {
		return errors.Join(err, disk.Close())
	}
	m.fetcher.start(ctx)
	watch := m.deps.Meta.Watch(meta.WatchOptions{Kinds: watchedChanges})
	m.reconcile(st)
	var goroutines sync.WaitGroup
	goroutines.Add(3)
	go func() {
		// A failed syncfs (or disk journal write) takes the disk
		// offline for every partition on it, but one with nothing more
		// to sync would not fail by itself.
		defer goroutines.Done()
		select {
		case <-disk.Offline():
			m.log.Error("a sync of the data directory failed: every partition on it is failed", "dir", m.config.DataDir, "error", disk.Failure())
			m.noteLogFailed()
		case <-ctx.Done():
		}
	}()
	snapshotsDone := make(chan struct{})
	go func() {
		defer close(snapshotsDone)
		m.snapshots(ctx)
	}()
	go func() {
		defer goroutines.Done()
		m.run(ctx, watch, snapshotsDone)
	}()
	go func() {
		defer goroutines.Done()
		m.advance(ctx)
	}()
	go func() {
		goroutines.Wait()
		close(m.done)
	}()
	return nil
}

// Wait waits until the goroutines Start began have ended and every
// partition is closed.
func (m *Manager) Wait() { <-m.done }

// run applies metadata changes until ctx ends, then closes every partition.
func (m *Manager) run(ctx context.Context, watch *meta.Watch, snapshotsDone <-chan struct{}) {
	defer func() {
		close(m.stopping)
		<-snapshotsDone // its passes use the partitions and the disk sync
		m.closeAll()
		if err := m.disk.Load().Close(); err != nil {
			m.log.Error("closing the disk sync", "error", err)
		}
	}()
	retention := time.NewTicker(retentionCheckInterval)
	defer retention.Stop()
	// retry fires when the first offline partition is due another attempt.
	retry := time.NewTimer(0)
	defer retry.Stop()
	m.scheduleRetry(retry)
	// Kafka checks for lagging followers every half replica.lag.time.max.ms.
	isrCheck := time.NewTicker(m.config.ReplicaLagTimeMax / 2)
	defer isrCheck.Stop()
	for {
		select {
		case <-ctx.Done():
			watch.Cancel()
			return
		case <-retention.C:
			m.applyRetention()
		case <-retry.C:
			m.reconcile(m.deps.Meta.State())
			m.scheduleRetry(retry)
		case <-isrCheck.C:
			m.shrinkISRs()
		case update, ok := <-watch.C:
			if ok && manifestsOnly(update.Changes) {
				m.noteManifests(update)
				continue
			}
			if ok {
				m.reconcile(update.State)
				m.scheduleRetry(retry)
				continue
			}
			if err := watch.Err(); err != nil && !errors.Is(err, meta.ErrWatchOverflow) {
				m.log.Error("metadata watch ended; partitions no longer follow the metadata", "error", err)
				<-ctx.Done()
				return
			}
			// Fell behind: subscribe again; the first update is the whole state.
			watch = m.deps.Meta.Watch(meta.WatchOptions{Kinds: watchedChanges})
		}
	}
}

// watchedChanges are the metadata changes the run loop follows: topics and
// partitions (what is held here, in which role), brokers (a leader's
// address), dynamic broker configs (the replication throttles), each by a
// reconcile, and manifests (what the bucket serves), by noteManifests
// alone.
var watchedChanges = []meta.ChangeKind{meta.ChangeTopic, meta.ChangePartition, meta.ChangeBroker, meta.ChangeManifest, meta.ChangeBrokerConfig}

// manifestsOnly reports whether changes are all of remote manifests, as
// every upload makes two (its copy begun, then committed). Those need no
// reconcile: what a reconcile decides (the partitions held, their roles
// and settings) does not depend on them, and it takes every partition's
// append lock (setRole), so a reconcile per manifest change made every
// upload hold up appends to every partition.
func manifestsOnly(changes []meta.Change) bool {
	for _, c := range changes {
		if c.Kind != meta.ChangeManifest {
			return false
		}
	}
	return len(changes) > 0
}

// noteManifests gives the open partitions that update's manifest changes
// name their remote range from its state. The partitions then follow that
// state, as after a reconcile: updates come in order, and this one changed
// nothing else a reconcile follows.
func (m *Manager) noteManifests(update meta.Update) {
	m.mu.RLock()
	for _, c := range update.Changes {
		if p := m.mu.open[partitionKey{c.Topic, c.Partition}]; p != nil {
			p.noteManifest(update.State)
		}
	}
	m.mu.RUnlock()
	m.mu.Lock()
	m.markReconciledLocked(update.State.Index())
	m.mu.Unlock()
}

// markReconciledLocked records that the partitions follow the metadata
// state at index, and wakes WaitReconciled and Reconciled's waiters.
func (m *Manager) markReconciledLocked(index uint64) {
	m.mu.reconciledIndex = max(m.mu.reconciledIndex, index)
	close(m.mu.reconciled)
	m.mu.reconciled = make(chan struct{})
}

// held is a partition this broker holds a replica of, as the metadata says.
type held struct {
	topic      meta.Topic
	assignment meta.Partition
}

// reconcile makes the open partitions those st says this broker holds, in
// the roles it says.
func (m *Manager) reconcile(st *meta.State) {
	self := m.config.BrokerID
	m.leaderThrottle.SetRate(throttleRate(st.BrokerRate(self, meta.LeaderThrottledRate)))
	m.followerThrottle.SetRate(throttleRate(st.BrokerRate(self, meta.FollowerThrottledRate)))
	want := map[partitionKey]held{}
	for _, t := range st.Topics() {
		for _, p := range st.Partitions(t.Name) {
			if slices.Contains(p.Replicas, self) {
				want[partitionKey{t.Name, p.Partition}] = held{t, p}
			}
		}
	}
	m.mu.RLock()
	current := maps.Clone(m.mu.open)
	m.mu.RUnlock()

	// What partitions reopened for a changed log setting keep: the same
	// log, committed as far as before, and the ISR additions still
	// counted, which may commit after the reopen.
	type kept struct {
		highWatermark int64
		leaderEpoch   int32 // -1 unless it led
		adding        map[int32]int32
	}
	reopened := map[partitionKey]kept{}
	for key, p := range current {
		h, keep := want[key]
		if log := m.logSettingsOf(h.topic); keep && h.topic.ID == p.topicID && p.keepsLog(log) {
			p.update(h.topic, log)
			p.noteManifest(st)
			m.applyRole(p, h.assignment)
			continue
		}
		m.mu.Lock()
		delete(m.mu.open, key)
		m.mu.Unlock()
		// Not a replica here any more (its topic deleted or recreated, or
		// the partition reassigned away): its copy goes.
		gone := !keep || h.topic.ID != p.topicID
		if !gone {
			k := kept{highWatermark: p.HighWatermark(), leaderEpoch: -1}
			if r := p.role.Load(); p.leads(r) {
				k.leaderEpoch, k.adding = r.leaderEpoch, p.followers.additions()
			}
			reopened[key] = k
		}
		m.closePartition(p, gone)
	}
	m.mu.Lock()
	var dropped []partitionKey
	var droppedIDs []uuid.UUID
	for key, o := range m.mu.offline {
		if h, keep := want[key]; !keep || h.topic.ID != o.topicID {
			delete(m.mu.offline, key)
			dropped, droppedIDs = append(dropped, key), append(droppedIDs, o.topicID)
		}
	}
	offline := maps.Clone(m.mu.offline)
	m.mu.Unlock()
	for i, key := range dropped {
		m.purgeIfDeleted(key.topic, droppedIDs[i], key.partition)
	}
	now := time.Now()
	for key, h := range want {
		if p, ok := current[key]; ok && p.topicID == h.topic.ID && p.keepsLog(m.logSettingsOf(h.topic)) {
			continue
		}
		if o := offline[key]; o != nil && now.Before(o.retryAt) {
			continue
		}
		p, err := m.openPartition(h.topic, h.assignment)
		if err == nil {
			if k, ok := reopened[key]; ok {
				p.keepHighWatermark(k.highWatermark)
				p.keepAdditions(k.leaderEpoch, k.adding)
			}
			p.noteManifest(st)
		}
		m.mu.Lock()
		if err != nil {
			o := m.mu.offline[key]
			if o == nil {
				o = &offlinePartition{topicID: h.topic.ID}
				m.mu.offline[key] = o
			}
			o.failed(err, now)
			m.mu.Unlock()
			m.log.Error("cannot open partition; it is offline and retried", "topic", key.topic, "partition", key.partition,
				"error", err, "attempts", o.attempts, "retry_in", o.retryAt.Sub(now))
			continue
		}
		if o := m.mu.offline[key]; o != nil {
			delete(m.mu.offline, key)
			m.log.Info("partition is back online", "topic", key.topic, "partition", key.partition, "failed_attempts", o.attempts)
		}
		m.mu.open[key] = p
		m.mu.Unlock()
		switch {
		case m.deps.Cleaner != nil:
			m.deps.Cleaner.Add(compact.Partition{
				Topic: p.topic, Partition: p.index, Log: p.log,
				HighWatermark: p.highWatermark.Load,
				Policy:        func() compact.Policy { return p.settings.Load().cleaning },
			})
		case p.settings.Load().compacted:
			// The broker refuses new compacted topics without a cleaner;
			// one made compacted before is kept whole, and says so.
			m.log.Warn("a compacted topic's partition is not compacted: this broker runs with log.cleaner.enable=false",
				"topic", p.topic, "partition", p.index)
		}
		m.startRole(p)
	}
	m.mu.Lock()
	m.metrics.offline.Set(float64(len(m.mu.offline)))
	m.markReconciledLocked(st.Index())
	m.mu.Unlock()
}

// applyRole gives an open partition the role the metadata now says.
func (m *Manager) applyRole(p *Partition, assignment meta.Partition) {
	next := roleOf(assignment)
	change, err := p.setRole(next)
	if err != nil {
		m.log.Error("changing the partition's role", "topic", p.topic, "partition", p.index, "error", err)
		return
	}
	switch change {
	case roleBecameLeader:
		m.fetcher.unfollow(p)
		m.startRole(p)
	case roleBecameFollow:
		if p.tiered {
			m.deps.Offload.Remove(p.topic, p.index)
		}
		m.startRole(p)
	case roleStillFollower:
		m.startRole(p)
	}
}

// startRole starts what the partition's role needs: a leader of a tiered
// partition uploads it; a follower fetches from its leader.
func (m *Manager) startRole(p *Partition) {
	r := p.role.Load()
	if !p.leads(r) {
		m.fetcher.follow(p, r.leader, r.leaderEpoch)
		m.log.Info("following", "topic", p.topic, "partition", p.index, "leader", r.leader, "leader_epoch", r.leaderEpoch,
			"log_end", p.log.LogEndOffset())
		return
	}
	m.log.Info("leading", "topic", p.topic, "partition", p.index, "leader_epoch", r.leaderEpoch, "isr", r.isr,
		"log_end", p.log.LogEndOffset(), "high_watermark", p.highWatermark.Load())
	if !p.tiered {
		return
	}
	err := m.deps.Offload.Add(offload.Partition{
		Topic: p.topic, TopicID: p.topicID, Partition: p.index, Log: offloadLog{p.log, p},
		HighWatermark: p.highWatermark.Load, LeaderEpoch: p.ledEpoch,
	})
	if err != nil {
		// The log still deletes nothing the bucket lacks (CanDelete):
		// it only keeps growing until a reopen adds it.
		m.log.Error("cannot hand the partition to offload; it is not tiered until reopened", "topic", p.topic, "partition", p.index, "error", err)
	}
}

// offloadLog is a tiered leader's hot log as offload sees it. Offload
// deletes uploaded segments by DeleteBefore (under disk pressure, and up
// to the remote log start); the partition then notes the bucket's range
// from the newest metadata first, as retention's CanDelete does, so that
// no read between the two finds its offset below the local log start and
// past the range the bucket was last noted to serve (OFFSET_OUT_OF_RANGE,
// on which a consumer may reset its position).
type offloadLog struct {
	*hotlog.Log
	p *Partition
}

func (l offloadLog) DeleteBefore(offset int64) ([]hotlog.SegmentInfo, error) {
	l.p.noteManifest(l.p.manager.deps.Meta.State())
	return l.Log.DeleteBefore(offset)
}

// WaitReconciled waits until the partitions follow the metadata state at
// index or later: a topic created at index has had its partitions opened
// (or has failed to), so a client told the topic exists can write to it at
// once. It gives up when ctx ends.
func (m *Manager) WaitReconciled(ctx context.Context, index uint64) {
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

// Reconciled returns a channel closed after the next reconcile (the only
// event that changes which partitions are open, or offline) or the next
// manifest update noted.
func (m *Manager) Reconciled() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.reconciled
}

// openPartition opens (creating or recovering) one partition's log.
func (m *Manager) openPartition(topic meta.Topic, assignment meta.Partition) (*Partition, error) {
	dir := filepath.Join(m.config.DataDir, DirName(topic.Name, assignment.Partition))
	if err := preparePartitionDir(dir, topic.ID); err != nil {
		return nil, err
	}
	p := newPartition(m, topic, assignment)
	if err := p.open(dir); err != nil {
		return nil, err
	}
	m.log.Info("opened partition", "topic", topic.Name, "partition", assignment.Partition,
		"log_start", p.log.LogStartOffset(), "log_end", p.log.LogEndOffset(), "producers", len(p.appendMu.producers.producers))
	return p, nil
}

// logSettingsOf is the hot log configuration of topic's partitions on this
// broker: tiered when the topic asks for it and the broker has offload.
func (m *Manager) logSettingsOf(topic meta.Topic) logSettings {
	return logSettingsOf(topic, m.deps.Offload != nil && m.deps.Tiered(topic))
}

// purgeIfDeleted has offload delete the bucket's objects of a partition of
// topic (id) once meta holds no topic of that id: it was deleted, and ids
// never come back. Tiered or not now, its bucket may hold objects. Every
// broker that held a replica calls it as the deletion reaches it (a
// partition closed, one offline dropped, or a directory found at start
// after the broker was down), and the purges overlap harmlessly. A purge
// marker in the data directory, written first and removed once the purge
// is done, has a broker stopped before then purge again at its next start
// (removeStrays).
func (m *Manager) purgeIfDeleted(topic string, id uuid.UUID, index int32) {
	if m.deps.Offload == nil {
		return
	}
	if _, exists := m.deps.Meta.State().TopicByID(id); exists {
		return
	}
	marker := filepath.Join(m.config.DataDir, purgeMarkerName(topic, index, id))
	if err := writePurgeMarker(marker); err != nil {
		m.log.Warn("writing a purge marker: a stop before the purge ends leaves the partition's bucket objects",
			"topic", topic, "partition", index, "marker", marker, "error", err)
	}
	m.deps.Offload.Purge(topic, id, index, func() {
		if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Warn("removing a done purge's marker: the next start purges again", "marker", marker, "error", err)
		}
	})
}

// closePartition closes p and, when this broker no longer holds a
// replica of it, removes its directory and, when its topic was deleted,
// has offload delete its objects in the bucket.
func (m *Manager) closePartition(p *Partition, deleted bool) {
	m.fetcher.unfollow(p)
	if m.deps.Cleaner != nil {
		m.deps.Cleaner.Remove(p.topic, p.index)
	}
	if p.tiered {
		m.deps.Offload.Remove(p.topic, p.index)
	}
	m.snapshotting.Lock()
	defer m.snapshotting.Unlock()
	if err := p.close(); err != nil {
		m.log.Error("closing partition", "topic", p.topic, "partition", p.index, "error", err)
	}
	m.syncedMu.Lock()
	delete(m.synced, p)
	m.syncedMu.Unlock()
	if !deleted {
		return
	}
	m.purgeIfDeleted(p.topic, p.topicID, p.index) // after Remove: no upload of this broker's lands later
	if err := removePartitionDir(p.dir, encodeTopicID(p.topicID)); err != nil {
		m.log.Error("removing the directory of a replica this broker no longer holds", "dir", p.dir, "error", err)
		return
	}
	m.log.Info("removed the partition's replica", "topic", p.topic, "partition", p.index)
}

func (m *Manager) closeAll() {
	m.alters.Wait()
	m.fetcher.stop()
	m.mu.Lock()
	open := m.mu.open
	m.mu.open = map[partitionKey]*Partition{}
	m.mu.offline = map[partitionKey]*offlinePartition{}
	m.mu.Unlock()
	for _, p := range open {
		m.closePartition(p, false)
	}
}

// shrinkISRs takes out of the ISR of every partition this broker leads the
// followers that have not caught up within replica.lag.time.max.ms.
func (m *Manager) shrinkISRs() {
	now := time.Now()
	for _, p := range m.All() {
		r := p.role.Load()
		if !p.leads(r) || len(r.isr) < 2 {
			continue
		}
		lagging := p.followers.lagging(r.isr, now, m.config.ReplicaLagTimeMax)
		if len(lagging) == 0 {
			continue
		}
		isr := slices.DeleteFunc(slices.Clone(r.isr), func(id int32) bool { return slices.Contains(lagging, id) })
		for _, id := range lagging {
			caughtUp, _ := p.followers.lastCaughtUp(id)
			m.log.Warn("a follower fell behind; taking it out of the ISR", "topic", p.topic, "partition", p.index,
				"follower", id, "log_end", p.followers.logEnd(id), "leader_log_end", p.log.LogEndOffset(),
				"last_caught_up", caughtUp, "replica_lag_time_max", m.config.ReplicaLagTimeMax)
		}
		m.shrinkISR(p, r, isr)
	}
}

// shrinkISR asks the controller to change p's ISR to isr, members taken
// out, unless a change is already in flight.
func (m *Manager) shrinkISR(p *Partition, r *role, isr []int32) {
	if p.followers.beginAlter(-1, false, r.partitionEpoch) {
		m.alterISR(p, r, isr, -1)
	}
}

// alterISR asks the controller to change p's ISR to isr, at the partition
// epoch of r, for the change the caller claimed (followers.beginAlter);
// adding names the follower it adds, or is -1. A stale epoch is refused
// by the metadata; the next fetch or check tries again from the new state.
// A proposal whose answer never came (a lost connection, a leader change,
// the deadline passing while it commits) may have committed: it is
// proposed again, as Kafka's AlterPartition manager resends, until the
// state machine answers, the leader's metadata moves past the epoch it
// was built on, or the partition is no longer led here; an addition keeps
// counting towards the high watermark meanwhile (followers.endAlter).
func (m *Manager) alterISR(p *Partition, r *role, isr []int32, adding int32) {
	add := adding >= 0
	m.alters.Add(1)
	go func() {
		defer m.alters.Done()
		cmd := &meta.AlterPartition{
			Topic: p.topic, TopicID: p.topicID, Partition: p.index,
			PartitionEpoch: r.partitionEpoch, Leader: m.config.BrokerID, ISR: isr,
		}
		var err error
		for backoff := alterRetryBackoff; ; backoff = min(2*backoff, 5*time.Second) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err = m.deps.Meta.Propose(ctx, cmd)
			cancel()
			if err == nil || stateMachineAnswered(err) || errors.Is(err, meta.ErrClosed) || errors.Is(err, meta.ErrStopped) || !p.awaitsAlter(r) {
				break
			}
			m.log.Warn("an ISR change's outcome is unknown; proposing it again", "topic", p.topic, "partition", p.index, "isr", isr, "error", err)
			if !m.sleepOrStop(p, backoff) {
				break
			}
		}
		p.followers.endAlter(adding, add, err != nil && stateMachineAnswered(err) && !errors.Is(err, meta.ErrStalePartitionEpoch))
		switch {
		case err != nil:
			m.log.Warn("changing the ISR failed", "topic", p.topic, "partition", p.index, "isr", isr, "error", err)
		case add:
			m.metrics.isrExpands.Inc()
			m.log.Info("a follower caught up; it is in the ISR again", "topic", p.topic, "partition", p.index, "follower", adding, "isr", isr)
		default:
			m.metrics.isrShrinks.Inc()
		}
	}()
}

// alterRetryBackoff is the first wait before an ISR change whose outcome
// is unknown is proposed again; it doubles up to 5 s.
const alterRetryBackoff = 100 * time.Millisecond

// stateMachineAnswered reports whether an AlterPartition's error is the
// state machine's refusal, so that it certainly did not commit: any other
// error leaves the outcome unknown.
func stateMachineAnswered(err error) bool {
	for _, answer := range []error{meta.ErrStalePartitionEpoch, meta.ErrIneligibleReplica, meta.ErrInvalidCommand,
		meta.ErrUnknownTopic, meta.ErrUnknownPartition, meta.ErrTopicIDMismatch} {
		if errors.Is(err, answer) {
			return true
		}
	}
	return false
}

// sleepOrStop waits d, and reports false instead if p closes or the
// manager stops first: the broker's shutdown waits for the ISR changes in
// flight (closeAll) before it closes any partition.
func (m *Manager) sleepOrStop(p *Partition, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-p.closing:
		return false
	case <-m.stopping:
		return false
	}
}

// removeStrays removes partition directories whose topic st does not have
// (deleted while this broker was down) or whose replicas no longer include
// this broker (reassigned away meanwhile), and leftovers of interrupted
// deletions.
func (m *Manager) removeStrays(st *meta.State) error {
	entries, err := os.ReadDir(m.config.DataDir)
	if err != nil {
		return fmt.Errorf("replica: data dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			if topicName, index, id, ok := parsePurgeMarker(e.Name()); ok {
				m.purgeIfDeleted(topicName, id, index) // one the last run did not finish
			}
			continue
		}
		path := filepath.Join(m.config.DataDir, e.Name())
		if strings.HasSuffix(e.Name(), deletedDirSuffix) {
			if err := os.RemoveAll(path); err != nil {
				return fmt.Errorf("replica: removing %s: %w", path, err)
			}
			continue
		}
		topicName, index, ok := parsePartitionDirName(e.Name())
		if !ok {
			continue
		}
		id, hasID, err := readPartitionTopicID(path)
		if err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		topic, exists := st.Topic(topicName)
		if exists && (!hasID || id == encodeTopicID(topic.ID)) {
			if p, ok := st.Partition(topicName, index); ok && slices.Contains(p.Replicas, m.config.BrokerID) {
				continue
			}
			m.log.Info("removing the directory of a partition reassigned away from this broker", "dir", path)
		} else {
			m.log.Info("removing the directory of a deleted topic", "dir", path)
			if topicID, ok := decodeTopicID(id); hasID && ok {
				m.purgeIfDeleted(topicName, topicID, index)
			}
		}
		if err := removePartitionDir(path, id); err != nil {
			return fmt.Errorf("replica: removing %s: %w", path, err)
		}
	}
	return nil
}

// noteSynced is the hot log's Synced callback: it must not block or call
// into the log, so it only queues p for advance.
func (m *Manager) noteSynced(p *Partition, info hotlog.SyncInfo) {
	m.metrics.fsync.Observe(info.Duration.Seconds())
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
func (m *Manager) advance(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		m.syncedMu.Lock()
		batch := m.synced
		m.synced = make(map[*Partition]struct{}, len(batch))
		m.syncedMu.Unlock()
		for p := range batch {
			p.advanceHighWatermark()
		}
	}
}

// producerSnapshotInterval is how often a partition whose idempotent
// producers wrote snapshots their state (producer_snapshot.go).
const producerSnapshotInterval = 30 * time.Second

// snapshots runs a producer state snapshot pass every
// producerSnapshotInterval until ctx ends.
func (m *Manager) snapshots(ctx context.Context) {
	tick := time.NewTicker(producerSnapshotInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.snapshotProducers(ctx)
		}
	}
}

// snapshotProducers snapshots the producer state of every open partition
// that idempotent producers wrote to since its last snapshot, in passes of
// up to snapshotPassFiles partitions; every log's sync is asked for first,
// so they share their rounds. Each group holds snapshotting, so a
// partition closed meanwhile is either closed before its group, which
// leaves it alone, or after.
func (m *Manager) snapshotProducers(ctx context.Context) {
	var due []*dueSnapshot
	for _, p := range m.All() {
		if s := p.dueSnapshot(); s != nil {
			due = append(due, s)
		}
	}
	start := time.Now()
	for group := range slices.Chunk(due, snapshotPassFiles) {
		if ctx.Err() != nil {
			return // stopping: each partition snapshots as it closes
		}
		m.snapshotGroup(ctx, group)
	}
	if len(due) > 0 {
		m.log.Debug("snapshotted producer state", "partitions", len(due), "took", time.Since(start))
	}
}

// snapshotGroup is one group of a snapshot pass, under snapshotting.
func (m *Manager) snapshotGroup(ctx context.Context, group []*dueSnapshot) {
	m.snapshotting.Lock()
	defer m.snapshotting.Unlock()
	open := make([]*dueSnapshot, 0, len(group))
	for _, s := range group {
		if s.p.closed() {
			continue // it wrote its own snapshot as it closed
		}
		open = append(open, s)
	}
	snapshotPass(ctx, m.disk.Load(), open)
	for _, s := range open {
		switch {
		case s.err == nil:
			s.p.snapshotted(s)
		case errors.Is(s.err, errTruncatedSinceSnapshot), errors.Is(s.err, hotlog.ErrTruncated), ctx.Err() != nil:
			// The next pass snapshots the state after the truncation.
			m.log.Debug("producer state snapshot skipped", "topic", s.p.topic, "partition", s.p.index, "error", s.err)
		default:
			m.log.Warn("snapshotting producer state", "topic", s.p.topic, "partition", s.p.index, "error", s.err)
		}
	}
}

// retentionCheckInterval is log.retention.check.interval.ms.
const retentionCheckInterval = 5 * time.Minute

// applyRetention lets each open partition's log delete the segments its
// retention.ms and retention.bytes no longer keep.
func (m *Manager) applyRetention() {
	for _, p := range m.All() {
		deleted, err := p.log.ApplyRetention()
		if err != nil {
			m.log.Error("applying retention", "topic", p.topic, "partition", p.index, "error", err)
			continue
		}
		if len(deleted) > 0 {
			m.log.Info("retention deleted segments", "topic", p.topic, "partition", p.index,
				"segments", len(deleted), "log_start", p.log.LogStartOffset())
		}
	}
}
