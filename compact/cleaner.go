package compact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/quota"
	"github.com/stratalog/strata/record"
)

// Config is the broker's cleaner settings, Kafka's names.
type Config struct {
	// Threads is log.cleaner.threads: logs cleaned at once.
	Threads int
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size, shared by the
	// threads: each pass's offset map holds at most
	// DedupeBufferBytes / Threads / MapEntryBytes keys.
	DedupeBufferBytes int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second: the
	// bytes every thread together reads and writes per second; 0 or less
	// is unlimited.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms: how long a thread with nothing
	// to clean sleeps.
	Backoff time.Duration
	// DecompressLimit caps one batch's decompressed records.
	DecompressLimit int
}

// MapEntryBytes is what one key costs in a pass's offset map (a 16-byte
// hash, an 8-byte offset and the map's own overhead in Go), the unit
// log.cleaner.dedupe.buffer.size is divided by.
const MapEntryBytes = 48

// DefaultConfig is Kafka's defaults: one thread, a 128 MiB map, no I/O
// limit, 15 s backoff.
func DefaultConfig() Config {
	return Config{Threads: 1, DedupeBufferBytes: 128 << 20, Backoff: 15 * time.Second, DecompressLimit: record.MaxDecompressedBytes}
}

// Validate refuses settings the cleaner cannot run with, naming Kafka's
// setting.
func (c Config) Validate() error {
	switch {
	case c.Threads < 1:
		return fmt.Errorf("log.cleaner.threads=%d: at least 1", c.Threads)
	case c.DedupeBufferBytes/int64(c.Threads)/MapEntryBytes < 1024:
		return fmt.Errorf("log.cleaner.dedupe.buffer.size=%d: at least %d bytes per thread (1,024 keys of %d bytes)", c.DedupeBufferBytes, 1024*MapEntryBytes, MapEntryBytes)
	case c.Backoff <= 0:
		return fmt.Errorf("log.cleaner.backoff.ms=%d: must be positive", c.Backoff.Milliseconds())
	}
	return nil
}

// Policy is how one partition is cleaned: its topic's configs, read at
// every pass so that a change applies without a reopen.
type Policy struct {
	// Compact is cleanup.policy including compact; a partition without it
	// is not cleaned.
	Compact bool
	// DeleteRetention is delete.retention.ms.
	DeleteRetention time.Duration
	// MinCompactionLag is min.compaction.lag.ms: a segment whose newest
	// record is younger is not cleaned yet.
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms: a log whose first dirty
	// record is older is cleaned whatever its dirty ratio.
	MaxCompactionLag time.Duration
	// MinCleanableRatio is min.cleanable.dirty.ratio.
	MinCleanableRatio float64
	// KeepTombstones is set on a tiered topic: older versions of a
	// tombstone's key may lie in the bucket, so the tombstone must reach
	// the bucket, whose recompaction (offload) removes it.
	KeepTombstones bool
}

// Partition is one replica's log handed to the cleaner.
type Partition struct {
	Topic     string
	Partition int32
	Log       *hotlog.Log
	// HighWatermark bounds cleaning: nothing at or above it is cleaned,
	// since a replica may still truncate there.
	HighWatermark func() int64
	// Policy is the topic's current cleaning configuration.
	Policy func() Policy
}

// checkpointName is the file in a partition's directory holding the next
// dirty offset: where the last pass stopped mapping keys.
const checkpointName = "cleaner-checkpoint"

// Cleaner compacts the logs of compacted topics, as Kafka's log cleaner:
// Threads goroutines, each repeatedly taking the partition that most needs
// cleaning (the highest dirty ratio at or above its
// min.cleanable.dirty.ratio, or any past max.compaction.lag.ms) and running
// one Clean pass over it. Start runs them; Close stops them.
type Cleaner struct {
	cfg      Config
	log      *slog.Logger
	metrics  *metrics
	throttle *quota.Bucket
	now      func() time.Time

	mu     sync.Mutex
	parts  map[partKey]*partState
	wake   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type partKey struct {
	topic     string
	partition int32
}

// partState is the cleaner's view of one partition.
type partState struct {
	Partition
	firstDirty int64
	// truncatedTo is the lowest offset the log was cut back to while a
	// pass was under way (math.MaxInt64: none): the pass's end must not
	// take the checkpoint above it.
	truncatedTo int64
	// persisting serializes the checkpoint's writes, each of firstDirty
	// as it is when written, so the file ends at the newest value.
	persisting sync.Mutex
	cleaning   bool               // a thread is on it
	done       chan struct{}      // closed when that thread is done
	cancel     context.CancelFunc // stops that thread's pass
	failures   int
	retryAt    time.Time
}

// New returns a cleaner; Start runs it.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Cleaner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cleaner{
		cfg: cfg, log: logger, throttle: quota.NewBucket(), now: time.Now,
		parts: map[partKey]*partState{}, wake: make(chan struct{}, 1),
	}
	if cfg.IOMaxBytesPerSecond > 0 {
		c.throttle.SetRate(cfg.IOMaxBytesPerSecond)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Start runs the cleaner threads until Close.
func (c *Cleaner) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for range c.cfg.Threads {
		c.wg.Go(func() { c.run(ctx) })
	}
}

// Close stops the threads, waiting for passes in flight to stop.
func (c *Cleaner) Close() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	c.metrics.unregister()
}

// Add hands a partition to the cleaner, starting from its checkpoint, or
// from the log end if that is lower: a log restarted before it was handed
// over (a tiered leader continuing at its bucket's end, as it opens) may
// end below a checkpoint it had, and what it gets there is dirty.
func (c *Cleaner) Add(p Partition) {
	firstDirty := min(readCheckpoint(p.Log.Dir()), p.Log.LogEndOffset())
	c.mu.Lock()
	c.parts[partKey{p.Topic, p.Partition}] = &partState{Partition: p, firstDirty: firstDirty, truncatedTo: math.MaxInt64, done: make(chan struct{})}
	c.mu.Unlock()
	c.Notify()
}

// Remove takes a partition back, waiting for a pass over it to end, so the
// caller may close its log.
func (c *Cleaner) Remove(topic string, partition int32) {
	c.mu.Lock()
	st, ok := c.parts[partKey{topic, partition}]
	if !ok {
		c.mu.Unlock()
		return
	}
	delete(c.parts, partKey{topic, partition})
	cleaning, done, cancel := st.cleaning, st.done, st.cancel
	c.mu.Unlock()
	if cleaning {
		// A throttled pass may have minutes to go: it stops at its next
		// chunk, leaving the old segments.
		cancel()
		<-done
	}
}

// Truncated tells the cleaner that a partition's log was cut back to
// offset (a follower truncating what an unclean election gave up, or
// restarting its log): a checkpoint above offset would take the records
// the log gets there next for clean, and their keys' older values there
// would never be superseded, outliving the keys' tombstones. It lowers
// the checkpoint to offset, as Kafka's maybeTruncateCheckpoint, and
// keeps a pass under way from raising it past offset.
func (c *Cleaner) Truncated(topic string, partition int32, offset int64) {
	c.mu.Lock()
	st, ok := c.parts[partKey{topic, partition}]
	if !ok {
		c.mu.Unlock()
		return
	}
	lowered := offset < st.firstDirty
	st.firstDirty = min(st.firstDirty, offset)
	if st.cleaning {
		st.truncatedTo = min(st.truncatedTo, offset)
	}
	c.mu.Unlock()
	if lowered {
		c.persist(st)
	}
}

// persist writes st's checkpoint.
func (c *Cleaner) persist(st *partState) {
	st.persisting.Lock()
	defer st.persisting.Unlock()
	c.mu.Lock()
	firstDirty := st.firstDirty
	c.mu.Unlock()
	if err := writeCheckpoint(st.Log.Dir(), firstDirty); err != nil {
		c.log.Warn("persisting the cleaner checkpoint", "topic", st.Topic, "partition", st.Partition, "error", err)
	}
}

// Notify asks an idle thread to look for work now rather than after its
// backoff (a segment sealed, a config changed).
func (c *Cleaner) Notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Cleaner) run(ctx context.Context) {
	for {
		if st, passCtx := c.next(ctx); st != nil {
			c.clean(passCtx, st)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-time.After(c.cfg.Backoff):
		}
	}
}

// candidate is a partition's need for cleaning at one moment.
type candidate struct {
	end        int64   // the pass's End
	dirty      int64   // cleanable bytes at or above firstDirty
	ratio      float64 // dirty bytes over cleanable bytes
	overdue    bool    // max.compaction.lag.ms passed
	firstDirty int64
}

// assess measures how much p needs cleaning now. c.mu must be held.
func (c *Cleaner) assess(st *partState, now time.Time) (candidate, bool) {
	pol := st.Policy()
	if !pol.Compact {
		return candidate{}, false
	}
	log := st.Log
	segments := log.Segments()
	end := min(st.HighWatermark(), log.ActiveSegment().BaseOffset, log.RewritableEnd())
	for _, s := range segments {
		// Kafka's min.compaction.lag.ms: a segment holding a record
		// younger than the lag ends what may be cleaned.
		if pol.MinCompactionLag > 0 && s.Sealed && s.MaxTimestamp > now.Add(-pol.MinCompactionLag).UnixMilli() {
			end = min(end, s.BaseOffset)
			break
		}
	}
	firstDirty := max(st.firstDirty, log.LogStartOffset())
	var clean, dirty int64
	var firstDirtySegment *hotlog.SegmentInfo
	for i, s := range cleanable(segments, end) {
		switch {
		case s.NextOffset <= firstDirty:
			clean += s.Size
		default:
			dirty += s.Size
			if firstDirtySegment == nil {
				firstDirtySegment = &segments[i]
			}
		}
	}
	if dirty == 0 {
		return candidate{}, false
	}
	cand := candidate{end: end, dirty: dirty, ratio: float64(dirty) / float64(clean+dirty), firstDirty: firstDirty}
	if firstDirtySegment != nil && pol.MaxCompactionLag < time.Duration(math.MaxInt64) {
		if first, ok := firstTimestamp(log, max(firstDirty, firstDirtySegment.BaseOffset)); ok {
			cand.overdue = now.Sub(time.UnixMilli(first)) > pol.MaxCompactionLag
		}
	}
	return cand, cand.overdue || cand.ratio >= pol.MinCleanableRatio
}

// firstTimestamp is the first timestamp of the batch holding offset.
func firstTimestamp(log *hotlog.Log, offset int64) (int64, bool) {
	section, err := log.Read(offset, record.HeaderSize)
	if err != nil {
		return 0, false
	}
	defer section.Release()
	if section.Length < record.HeaderSize {
		return 0, false
	}
	header := make([]byte, record.HeaderSize)
	if _, err := section.File.ReadAt(header, section.Position); err != nil {
		return 0, false
	}
	h, err := record.ParseHeader(header)
	return h.FirstTimestamp, err == nil
}

// next picks the partition that most needs cleaning and marks it taken:
// one past max.compaction.lag.ms first, then the highest dirty ratio.
func (c *Cleaner) next(ctx context.Context) (*partState, context.Context) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *partState
	var bestCand candidate
	maxRatio, dirty := 0.0, int64(0)
	for _, st := range c.parts {
		cand, due := c.assess(st, now)
		maxRatio, dirty = max(maxRatio, cand.ratio), dirty+cand.dirty
		if !due || st.cleaning || now.Before(st.retryAt) {
			continue
		}
		if best == nil || cand.overdue && !bestCand.overdue || cand.overdue == bestCand.overdue && cand.ratio > bestCand.ratio {
			best, bestCand = st, cand
		}
	}
	c.metrics.maxDirtyRatio.Set(maxRatio)
	c.metrics.dirtyBytes.Set(float64(dirty))
	if best == nil {
		return nil, nil
	}
	// The pass's context is made here, under the lock that marks the
	// partition taken, so that a Remove from now on stops the pass at
	// once rather than waiting for all of it.
	passCtx, cancel := context.WithCancel(ctx)
	best.cleaning = true
	best.done = make(chan struct{})
	best.cancel = cancel
	best.firstDirty = bestCand.firstDirty
	best.truncatedTo = math.MaxInt64
	return best, passCtx
}

// clean runs one pass over st, under ctx, which next made, and records
// its outcome.
func (c *Cleaner) clean(ctx context.Context, st *partState) {
	defer func() {
		c.mu.Lock()
		st.cancel()
		st.cleaning = false
		close(st.done)
		c.mu.Unlock()
	}()
	pol := st.Policy()
	now := c.now()
	c.mu.Lock() // Truncated may lower firstDirty meanwhile
	cand, due := c.assess(st, now)
	c.mu.Unlock()
	if !due {
		return
	}
	started := time.Now()
	res, err := Clean(ctx, Pass{
		Log: st.Log, FirstDirty: cand.firstDirty, End: cand.end, Now: now,
		DeleteRetention: pol.DeleteRetention, KeepTombstones: pol.KeepTombstones,
		MaxKeys:         int(c.cfg.DedupeBufferBytes / int64(c.cfg.Threads) / MapEntryBytes),
		Throttle:        c.spend,
		DecompressLimit: c.cfg.DecompressLimit,
	})
	c.metrics.bytesRead.Add(float64(res.BytesRead))
	c.metrics.bytesWritten.Add(float64(res.BytesWritten))
	c.metrics.recordsRemoved.Add(float64(res.RecordsRemoved))
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, hotlog.ErrClosed) {
			return
		}
		if errors.Is(err, hotlog.ErrOffsetOutOfRange) || errors.Is(err, hotlog.ErrNotRewritable) {
			// Retention (compact,delete) or a replica's new start
			// deleted or cut segments the pass was reading: the next
			// pass, after the backoff, starts from the log as it is.
			c.log.Debug("a cleaning pass met deleted segments; the next one starts afresh", "topic", st.Topic, "partition", st.Partition, "error", err)
			c.mu.Lock()
			st.retryAt = c.now().Add(c.cfg.Backoff)
			c.mu.Unlock()
			return
		}
		c.metrics.passes.WithLabelValues("error").Inc()
		c.mu.Lock()
		st.failures++
		st.retryAt = c.now().Add(min(time.Duration(st.failures)*c.cfg.Backoff, 10*time.Minute))
		c.mu.Unlock()
		c.log.Error("cleaning a compacted partition failed; retrying later", "topic", st.Topic, "partition", st.Partition,
			"first_dirty", cand.firstDirty, "error", err)
		return
	}
	c.metrics.passes.WithLabelValues("ok").Inc()
	c.mu.Lock()
	st.firstDirty, st.failures = min(res.NextDirty, st.truncatedTo), 0
	c.mu.Unlock()
	c.persist(st)
	c.log.Info("cleaned a compacted partition", "topic", st.Topic, "partition", st.Partition,
		"dirty_ratio", cand.ratio, "next_dirty", res.NextDirty, "segments", res.SegmentsRewritten,
		"records_removed", res.RecordsRemoved, "bytes_read", res.BytesRead, "bytes_written", res.BytesWritten,
		"duration", time.Since(started))
}

// spend waits until n more bytes fit log.cleaner.io.max.bytes.per.second.
func (c *Cleaner) spend(ctx context.Context, n int) error {
	c.throttle.Record(float64(n), time.Now())
	for {
		wait := c.throttle.Debt(time.Now())
		if wait == 0 {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// readCheckpoint is the next dirty offset persisted in dir, or 0.
func readCheckpoint(dir string) int64 {
	data, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// writeCheckpoint persists the next dirty offset in dir: a temporary file,
// fsynced, renamed over the checkpoint. A lost update only makes the next
// pass map keys it had mapped before.
func writeCheckpoint(dir string, offset int64) error {
	tmp := filepath.Join(dir, checkpointName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(offset, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, checkpointName))
}
