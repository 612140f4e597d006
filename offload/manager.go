package offload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// Meta is what the Manager needs of the metadata group; *meta.Node
// satisfies it. State is the local, possibly lagging, state; the orphan
// sweep alone needs LinearizableState (sweep.go says why).
type Meta interface {
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, error)
	State() *meta.State
	LinearizableState(ctx context.Context) (*meta.State, error)
}

// Manager is the remote storage manager of one broker: it uploads the
// sealed segments of the partitions the broker leads, commits them to
// meta, publishes each partition's bucket manifest, applies local and
// remote retention, sweeps orphaned objects and watches the hot disk.
// doc.go describes the protocol. All methods are safe for concurrent use.
//
// Goroutines, each owned by the Manager and stopped by Close: the
// scheduler (run), which starts the tasks; one goroutine per running copy
// or expiry pass, at most UploadConcurrency + ExpiryConcurrency at once;
// one per partition being purged (Purge, at most ExpiryConcurrency of them
// working at once); the disk watch (watchDisk) when
// Config.DataDir is set. Short-lived
// helpers (attempt watchdogs, the object writer of a PUT) belong to the
// call that starts them and end before it returns.
//
// Lock order: partition.copyMu or partition.expiryMu, then
// partition.publisher.mu; Manager.mu, partitionStatus.mu, pressure.mu and
// randMu are leaves.
type Manager struct {
	cfg     Config
	meta    Meta
	store   objstore.Store
	logger  *slog.Logger
	clock   Clock
	metrics *metrics

	randMu sync.Mutex
	rand   Rand

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// wake prompts the scheduler to look for due tasks.
	wake chan struct{}

	mu struct {
		sync.Mutex
		started, closed bool
		partitions      map[topicPartition]*partition
		// order is the partitions in the order the scheduler serves them;
		// next is where its round-robin resumes.
		order []*partition
		next  int
		// unsettled holds, by segment id, the commits a pass proposed
		// without learning whether they were applied (commit).
		unsettled map[uuid.UUID]unsettledCommit
	}
	copySlots   chan struct{}
	expirySlots chan struct{}
	// purgeSlots bounds the purges of deleted topics' partitions running
	// at once (Purge) to ExpiryConcurrency.
	purgeSlots chan struct{}
	// pace caps upload reads (Config.CopyMaxBytesPerSecond,
	// CopyDrainTime; pace.go); nil: no cap. drain recomputes it.
	pace  *rate.Limiter
	drain drain

	pressure pressure

	// crashAt, set by tests only, is called after each protocol step; an
	// error stops the pass right there, as a crash would.
	crashAt func(step) error
}

// New returns a Manager over a metadata group and a store. It starts
// nothing: Add partitions, then Start, or drive passes with Sync.
func New(cfg Config, m Meta, store objstore.Store) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil || store == nil {
		return nil, fmt.Errorf("%w: a Manager needs meta and a store", ErrInvalidConfig)
	}
	mgr := &Manager{
		cfg:         cfg,
		meta:        m,
		store:       store,
		logger:      cfg.Logger,
		clock:       cfg.Clock,
		rand:        cfg.Rand,
		wake:        make(chan struct{}, 1),
		pressure:    pressure{wake: make(chan struct{}, 1)},
		copySlots:   make(chan struct{}, uploadSlots(cfg)),
		pace:        newPace(cfg),
		expirySlots: make(chan struct{}, cfg.ExpiryConcurrency),
		purgeSlots:  make(chan struct{}, cfg.ExpiryConcurrency),
	}
	if mgr.logger == nil {
		mgr.logger = slog.New(slog.DiscardHandler)
	}
	if mgr.clock == nil {
		mgr.clock = hotlog.SystemClock()
	}
	if mgr.rand == nil {
		mgr.rand = globalRand{}
	}
	// Spool files are unlinked as soon as they are made; one left by a
	// crash in between is removed here, from a directory of this
	// broker's own (not os.TempDir, which other processes share).
	if cfg.SpoolDir != "" {
		stale, _ := filepath.Glob(filepath.Join(cfg.SpoolDir, spoolPattern))
		for _, f := range stale {
			os.Remove(f)
		}
	}
	if mgr.cfg.DiskUsage == nil {
		mgr.cfg.DiskUsage = Statfs
	}
	mgr.ctx, mgr.cancel = context.WithCancel(context.Background())
	mgr.mu.partitions = make(map[topicPartition]*partition)
	mgr.mu.unsettled = make(map[uuid.UUID]unsettledCommit)
	mgr.metrics = newMetrics(mgr)
	if err := mgr.metrics.register(cfg.Registerer); err != nil {
		return nil, err
	}
	return mgr, nil
}

// globalRand draws from math/rand/v2's global source.
type globalRand struct{}

func (globalRand) Float64() float64 { return rand.Float64() }

func (m *Manager) jitter() float64 {
	m.randMu.Lock()
	defer m.randMu.Unlock()
	return m.rand.Float64()
}

// Start starts the scheduler and, if Config.DataDir is set, the disk watch.
func (m *Manager) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.mu.closed:
		return ErrClosed
	case m.mu.started:
		return nil
	}
	m.mu.started = true
	m.wg.Go(m.run)
	if m.cfg.DataDir != "" {
		m.wg.Go(m.watchDisk)
	}
	return nil
}

// Close stops every task, waits for them, and unregisters the metrics.
// Uploads in flight are abandoned mid-way; the next Manager over the same
// meta and store finishes or cleans up after them (doc.go, "Crashes"). It
// closes neither meta nor the store. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	m.metrics.unregister()
	return nil
}

// Add hands the Manager a partition this broker now leads. Its copy and
// expiry tasks run at once (when started), and its prefix is swept for
// orphans once. A partition already added is ErrPartitionExists.
func (m *Manager) Add(spec Partition) error {
	if err := spec.validate(); err != nil {
		return err
	}
	p := &partition{
		Topic: spec.Topic, TopicID: spec.TopicID, Partition: spec.Partition,
		Log: spec.Log, HighWatermark: spec.HighWatermark, LeaderEpoch: spec.LeaderEpoch,
		tp:     topicPartition{spec.Topic, spec.Partition},
		prefix: segmentobject.PartitionPrefix(m.cfg.KeyPrefix, spec.Topic, spec.TopicID, spec.Partition),
	}
	p.publisher.init(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return ErrClosed
	}
	if _, ok := m.mu.partitions[p.tp]; ok {
		return fmt.Errorf("%w: %s", ErrPartitionExists, p.tp)
	}
	p.ctx, p.cancel = context.WithCancel(m.ctx)
	now := m.clock.Now()
	p.copy.due, p.expiry.due, p.sweepDue = now, now, now
	m.mu.partitions[p.tp] = p
	m.mu.order = append(m.mu.order, p)
	m.signal()
	return nil
}

// Remove takes a partition away (the broker no longer leads it, or is
// closing its log) and waits until nothing of the Manager uses it (tasks,
// a Sync, the disk watch), so the caller may close the log. Removing an
// unknown partition does nothing.
func (m *Manager) Remove(topic string, partition int32) {
	tp := topicPartition{topic, partition}
	m.mu.Lock()
	p, ok := m.mu.partitions[tp]
	if ok {
		delete(m.mu.partitions, tp)
		for i, q := range m.mu.order {
			if q == p {
				m.mu.order = append(m.mu.order[:i], m.mu.order[i+1:]...)
				break
			}
		}
	}
	m.mu.Unlock()
	if ok {
		p.cancel()
		p.tasks.Wait()
	}
}

// Notify asks for a partition's copy task to run now, for example from
// the hot log's Sealed event (hotlog.EventListener). It never blocks and
// may be called with hot log locks held.
func (m *Manager) Notify(topic string, partition int32) {
	m.mu.Lock()
	if p, ok := m.mu.partitions[topicPartition{topic, partition}]; ok {
		p.copy.requestLocked(m.clock.Now())
	}
	m.mu.Unlock()
	m.signal()
}

// NotifyLogStart asks for a partition's expiry task to run now: its remote
// log start moved (DeleteRecords), so the segments wholly below it are
// deleted, its hot log follows and the bucket manifest is republished
// without waiting for ExpiryInterval; until then a batch job reading the
// bucket would still be shown the deleted records. It never blocks.
func (m *Manager) NotifyLogStart(topic string, partition int32) {
	m.mu.Lock()
	p, ok := m.mu.partitions[topicPartition{topic, partition}]
	m.mu.Unlock()
	if ok {
		m.requestExpiry(p)
	}
}

func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// partitions returns the partitions, in scheduling order.
func (m *Manager) partitions() []*partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*partition(nil), m.mu.order...)
}

// Sync runs one whole pass over every partition now, in the caller's
// goroutine: it uploads every segment that may be uploaded, publishes the
// bucket manifests, applies local and remote retention and sweeps orphans.
// It is idempotent: run again, it finishes whatever an earlier pass, or a
// crashed process, left half done, and otherwise changes nothing. It waits
// for background passes of the same partition rather than run beside them.
// The error joins every partition's.
func (m *Manager) Sync(ctx context.Context) error {
	if m.ctx.Err() != nil {
		return ErrClosed
	}
	var errs []error
	for _, p := range m.partitions() {
		if !m.hold(p) {
			continue // removed meanwhile
		}
		ctx, cancel := mergeCancel(ctx, p.ctx)
		if _, err := m.copyPass(ctx, p, -1); err != nil {
			errs = append(errs, fmt.Errorf("offload: %s: copy: %w", p.tp, err))
		}
		if err := m.expiryPass(ctx, p, true); err != nil {
			errs = append(errs, fmt.Errorf("offload: %s: expiry: %w", p.tp, err))
		}
		cancel()
		p.tasks.Done()
	}
	return errors.Join(errs...)
}

// hold counts work on p in p.tasks, so that Remove waits for it, unless p
// was removed; the caller calls p.tasks.Done when done.
func (m *Manager) hold(p *partition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.partitions[p.tp] != p {
		return false
	}
	p.tasks.Add(1)
	return true
}

// mergeCancel returns a context that ends when either ctx or other does.
func mergeCancel(ctx, other context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// tieredEnd is the offset after the tiered data: the next offset to upload.
func tieredEnd(man meta.Manifest) int64 {
	return max(man.HighestTieredOffset()+1, man.RemoteLogStartOffset)
}

// recordError notes a failed pass for Status, or clears the last error of
// the task after a pass that succeeded.
func (p *partition) recordError(task string, err error, now time.Time) {
	p.status.mu.Lock()
	defer p.status.mu.Unlock()
	switch {
	case err != nil:
		p.status.lastError, p.status.lastErrorTime, p.status.lastErrorTask = err.Error(), now, task
	case p.status.lastErrorTask == task:
		p.status.lastError, p.status.lastErrorTime, p.status.lastErrorTask = "", time.Time{}, ""
	}
}
