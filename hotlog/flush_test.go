package hotlog

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor spins until cond holds, failing the test if that takes longer
// than a generous deadline (which only a hang would reach).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// TestGroupCommitSharesOneFsync holds the first fsync while fifteen more
// appenders append and wait: all fifteen are covered by the one next
// fsync, and each returns only once an fsync covers its batch.
func TestGroupCommitSharesOneFsync(t *testing.T) {
	t.Parallel()
	c := testConfig()
	gate := make(chan struct{})
	var logSyncs atomic.Int64
	c.fsync = func(f *os.File, dataOnly bool) error {
		if dataOnly && strings.HasSuffix(f.Name(), logSuffix) && logSyncs.Add(1) == 1 {
			<-gate
		}
		return nil
	}
	var synced atomic.Int64 // bytes of the (single) segment known durable
	c.Events.Synced = func(info SyncInfo) { synced.Store(info.Size) }
	l := openLog(t, t.TempDir(), c)

	const appenders = 16
	var wg sync.WaitGroup
	appendAndWait := func(seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 70))
		res, err := l.Append(checked(t, makeBatch(t, rng, 2, 50, 1))...)
		if err != nil {
			t.Error(err)
			return
		}
		if err := res.WaitAck(context.Background()); err != nil {
			t.Error(err)
			return
		}
		s, err := l.Read(res.FirstOffset, 1)
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Release()
		if end := s.Position + s.Length; synced.Load() < end || l.FlushedOffset() <= res.LastOffset {
			t.Errorf("WaitAck for batch ending at byte %d returned with %d bytes synced", end, synced.Load())
		}
	}
	wg.Add(1)
	go appendAndWait(0)
	waitFor(t, "the first fsync", func() bool { return logSyncs.Load() == 1 })
	for i := 1; i < appenders; i++ {
		wg.Add(1)
		go appendAndWait(uint64(i))
	}
	waitFor(t, "every append", func() bool { return l.LogEndOffset() == 2*appenders })
	close(gate)
	wg.Wait()
	if got := logSyncs.Load(); got != 2 {
		t.Fatalf("%d appenders caused %d fsyncs, want 2 (one held, one shared by the other %d)", appenders, got, appenders-1)
	}
}

// TestGroupCommitRegroupsReleasedAppenders: appenders that a round
// releases come back at once, and the next fsync waits for them rather than
// leaving them a round behind. Four appenders append twice each: the first
// fsync is held while three of them queue behind it; then one fsync covers
// those three and the first appender's second batch, and one more the
// three second batches.
func TestGroupCommitRegroupsReleasedAppenders(t *testing.T) {
	t.Parallel()
	c := testConfig()
	gate := make(chan struct{})
	var logSyncs atomic.Int64
	c.fsync = func(f *os.File, dataOnly bool) error {
		if dataOnly && strings.HasSuffix(f.Name(), logSuffix) && logSyncs.Add(1) == 1 {
			<-gate
		}
		return nil
	}
	l := openLog(t, t.TempDir(), c)
	// Pretend the disk is slow, so the flusher may wait up to 100ms for
	// the appenders it released: ample time, and only once spent whole
	// (the last round, when the first appender has finished).
	l.flusher.mu.Lock()
	l.flusher.mu.syncTime = 200 * time.Millisecond
	l.flusher.mu.Unlock()

	var wg sync.WaitGroup
	appendTwice := func(seed uint64) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 78))
		for range 2 {
			res, err := l.Append(checked(t, makeBatch(t, rng, 1, 20, 1))...)
			if err == nil {
				err = res.WaitAck(context.Background())
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(1)
	go appendTwice(0)
	waitFor(t, "the first fsync", func() bool { return logSyncs.Load() == 1 })
	for i := 1; i < 4; i++ {
		wg.Add(1)
		go appendTwice(uint64(i))
	}
	waitFor(t, "three queued appenders", func() bool {
		l.flusher.mu.Lock()
		defer l.flusher.mu.Unlock()
		return l.flusher.mu.registered == 3
	})
	close(gate)
	wg.Wait()
	if got := logSyncs.Load(); got != 3 {
		t.Fatalf("8 durable appends by 4 appenders took %d fsyncs, want 3", got)
	}
}

// TestGroupCommitUnderLoad runs concurrent durable appenders with real
// fsyncs and counts them.
func TestGroupCommitUnderLoad(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.fsync = nil
	c.SegmentBytes = 1 << 20
	var syncs atomic.Int64
	c.Events.Synced = func(SyncInfo) { syncs.Add(1) }
	l := openLog(t, t.TempDir(), c)
	const appenders, each = 16, 40
	var wg sync.WaitGroup
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 71))
			for range each {
				res, err := l.Append(checked(t, makeBatch(t, rng, 1, 100, 1))...)
				if err == nil {
					err = res.WaitAck(context.Background())
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	appends := int64(appenders * each)
	t.Logf("%d durable appends, %d fsyncs (%.1f appends per fsync)", appends, syncs.Load(), float64(appends)/float64(syncs.Load()))
	if syncs.Load()*2 > appends {
		t.Fatalf("%d fsyncs for %d concurrent durable appends: not shared", syncs.Load(), appends)
	}
}

func TestSyncPeriodicallyOnFlushMessages(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(72, 73))
	c := testConfig()
	c.Durability = SyncPeriodically
	c.FlushMessages = 10
	syncs := make(chan SyncInfo, 10)
	c.Events.Synced = func(info SyncInfo) { syncs <- info }
	l := openLog(t, t.TempDir(), c)
	for range 2 {
		res, err := l.Append(checked(t, makeBatch(t, rng, 4, 10, 1))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WaitAck(context.Background()); err != nil {
			t.Fatal(err) // returns at once: nothing to wait for
		}
	}
	if l.FlushedOffset() != 0 {
		t.Fatalf("flushed to %d before flush.messages", l.FlushedOffset())
	}
	appendBatches(t, l, makeBatch(t, rng, 4, 10, 1)) // 12 messages
	select {
	case <-syncs:
	case <-time.After(20 * time.Second):
		t.Fatal("no fsync after flush.messages")
	}
	waitFor(t, "the flushed offset", func() bool { return l.FlushedOffset() == 12 })
}

func TestSyncPeriodicallyOnFlushMs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(74, 75))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.Durability = SyncPeriodically
	c.FlushMs = 1000
	c.RecoveryPointCheckpointMs = 60_000
	syncs := make(chan SyncInfo, 10)
	c.Events.Synced = func(info SyncInfo) { syncs <- info }
	l := openLog(t, t.TempDir(), c)
	appendBatches(t, l, makeBatch(t, rng, 3, 10, 1))
	clock.waitForTimer(t) // the flusher armed flush.ms
	clock.Advance(999 * time.Millisecond)
	if l.FlushedOffset() != 0 {
		t.Fatal("flushed before flush.ms")
	}
	clock.Advance(time.Millisecond)
	select {
	case <-syncs:
	case <-time.After(20 * time.Second):
		t.Fatal("no fsync after flush.ms")
	}
	waitFor(t, "the flushed offset", func() bool { return l.FlushedOffset() == 3 })
	// The recovery point follows after its own interval.
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d before the interval", l.RecoveryPoint())
	}
	clock.waitForTimer(t)
	clock.Advance(time.Minute)
	waitFor(t, "the recovery point", func() bool { return l.RecoveryPoint() == 3 })
}

func TestWaitAckFailsAfterTruncation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(76, 77))
	l := openLog(t, t.TempDir(), testConfig())
	fill(t, l, rng, 3, 2)
	res, err := l.Append(checked(t, makeBatch(t, rng, 2, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(res.FirstOffset); err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); !errors.Is(err, ErrTruncated) {
		t.Fatalf("WaitAck of a truncated append: %v, want ErrTruncated", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = l.Append(checked(t, makeBatch(t, rng, 2, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitAck with a cancelled context: %v", err)
	}
}

// TestWritebackHintsUnderPeriodicFlush: a periodically flushed log asks
// the kernel to start writeback every writebackBytes appended, in whole
// pages that follow one another and never reach past what was written,
// long before flush.ms; a log that fsyncs before ack gives no hints.
func TestWritebackHintsUnderPeriodicFlush(t *testing.T) {
	t.Parallel()
	for _, durability := range []Durability{SyncPeriodically, SyncBeforeAck} {
		rng := rand.New(rand.NewPCG(81, 82))
		c := testConfig()
		c.SegmentBytes = 64 << 20
		c.Durability = durability
		type hint struct{ offset, n int64 }
		hints := make(chan hint, 100)
		c.writeback = func(_ *os.File, offset, n int64) error {
			hints <- hint{offset, n}
			return nil
		}
		l := openLog(t, t.TempDir(), c)
		var appended int64
		for appended < 3*writebackBytes {
			res := appendBatches(t, l, makeBatch(t, rng, 16, 4000, 1))
			appended += int64(len(res[0].bytes))
			if durability == SyncBeforeAck {
				if err := l.Sync(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if durability == SyncBeforeAck {
			select {
			case h := <-hints:
				t.Fatalf("a writeback hint %+v under fsync before ack", h)
			default:
			}
			continue
		}
		var next int64
		deadline := time.After(20 * time.Second)
		for next < 2*writebackBytes {
			select {
			case h := <-hints:
				if h.offset != next || h.n <= 0 || (h.offset+h.n)%int64(pageSize) != 0 || h.offset+h.n > appended {
					t.Fatalf("hint [%d, %d) after [0, %d), with %d bytes appended: want whole pages, in order, written", h.offset, h.offset+h.n, next, appended)
				}
				next = h.offset + h.n
			case <-deadline:
				t.Fatalf("writeback hinted up to %d of %d bytes appended", next, appended)
			}
		}
	}
}
