package compact

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// sealedLog is a log of sealed segments of ten updates each over two keys
// (with distinct, every record its own key),
// then an active segment holding one record past the recovery point (so
// that every sealed segment may be rewritten), every record timestamped at
// stamp.
func sealedLog(t *testing.T, segments int, stamp time.Time, distinct ...bool) *hotlog.Log {
	t.Helper()
	l, err := hotlog.Open(t.TempDir(), hotlog.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for n := range segments + 1 {
		for i := range 10 {
			if n == segments && i > 0 {
				break
			}
			b, err := record.Build(record.BuildOptions{FirstTimestamp: stamp.UnixMilli(), ProducerID: -1, BaseSequence: -1},
				[]record.Record{{Key: testKey(n, i, len(distinct) > 0 && distinct[0]), Value: []byte("value")}})
			if err != nil {
				t.Fatal(err)
			}
			batch, err := record.Check(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(batch); err != nil {
				t.Fatal(err)
			}
		}
		if n < segments {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitRewritable(t, l)
	return l
}

// waitRewritable waits until every sealed segment of l may be rewritten:
// the flusher persists the recovery point after the round a Sync waited
// for, so it may lag for a moment.
func waitRewritable(tb testing.TB, l *hotlog.Log) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); l.RewritableEnd() < l.ActiveSegment().BaseOffset; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("the recovery point stays in segment %d, before the active segment %d", l.RewritableEnd(), l.ActiveSegment().BaseOffset)
		}
	}
}

// testKey is record i of segment n's key: one of two, or its own.
func testKey(n, i int, distinct bool) []byte {
	if distinct {
		return fmt.Appendf(nil, "key-%d-%d", n, i)
	}
	return []byte{byte('a' + i%2)}
}

func testCleaner(t *testing.T, now time.Time) *Cleaner {
	t.Helper()
	c, err := New(DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return now }
	return c
}

func add(c *Cleaner, l *hotlog.Log, policy Policy) *partState {
	c.Add(Partition{Topic: "t", Partition: 0, Log: l, HighWatermark: l.LogEndOffset, Policy: func() Policy { return policy }})
	return c.parts[partKey{"t", 0}]
}

// TestMinCleanableDirtyRatio: a partition is cleaned once its dirty bytes
// reach min.cleanable.dirty.ratio of its cleanable bytes, not before.
func TestMinCleanableDirtyRatio(t *testing.T) {
	now := time.Now()
	l := sealedLog(t, 4, now.Add(-time.Hour))
	segments := l.Segments()
	for _, tc := range []struct {
		firstDirty int64 // the checkpoint: below it, clean
		ratio      float64
		due        bool
	}{
		{0, 0.5, true},                       // all dirty: ratio 1
		{segments[2].BaseOffset, 0.5, true},  // half dirty: 0.5
		{segments[3].BaseOffset, 0.5, false}, // a quarter dirty
		{segments[3].BaseOffset, 0.25, true},
		{segments[4].BaseOffset, 0.01, false}, // nothing dirty
	} {
		c := testCleaner(t, now)
		st := add(c, l, Policy{Compact: true, MinCleanableRatio: tc.ratio, MaxCompactionLag: time.Duration(math.MaxInt64)})
		st.firstDirty = tc.firstDirty
		if _, due := c.assess(st, now); due != tc.due {
			t.Errorf("first dirty %d, min.cleanable.dirty.ratio %g: due %v, want %v", tc.firstDirty, tc.ratio, due, tc.due)
		}
		if got, _ := c.next(t.Context()); (got != nil) != tc.due {
			t.Errorf("first dirty %d, min.cleanable.dirty.ratio %g: picked %v", tc.firstDirty, tc.ratio, got != nil)
		}
	}
	c := testCleaner(t, now)
	if _, due := c.assess(add(c, l, Policy{Compact: false, MinCleanableRatio: 0}), now); due {
		t.Error("a partition of a topic that is not compacted is due for cleaning")
	}
}

// TestMinCompactionLag: a segment holding a record younger than
// min.compaction.lag.ms, and every segment after it, is left out of the
// pass; once the records are old enough it is cleaned.
func TestMinCompactionLag(t *testing.T) {
	now := time.Now()
	l := sealedLog(t, 3, now.Add(-time.Minute))
	policy := Policy{Compact: true, MinCleanableRatio: 0.01, MaxCompactionLag: time.Duration(math.MaxInt64)}
	for _, tc := range []struct {
		lag time.Duration
		end int64
		due bool
	}{
		{0, l.ActiveSegment().BaseOffset, true},
		{30 * time.Second, l.ActiveSegment().BaseOffset, true},
		{2 * time.Minute, 0, false},
	} {
		c := testCleaner(t, now)
		policy.MinCompactionLag = tc.lag
		cand, due := c.assess(add(c, l, policy), now)
		if due != tc.due || due && cand.end != tc.end {
			t.Errorf("min.compaction.lag.ms %v: due %v, end %d; want %v, %d", tc.lag, due, cand.end, tc.due, tc.end)
		}
	}
	c := testCleaner(t, now)
	policy.MinCompactionLag = 2 * time.Minute
	st := add(c, l, policy)
	c.clean(mustNext(t, c, false, st))
	if removed := c.metricsRemoved(); removed != 0 {
		t.Fatalf("%v records removed from segments younger than min.compaction.lag.ms", removed)
	}
	c.now = func() time.Time { return now.Add(2 * time.Minute) }
	c.clean(mustNext(t, c, true, st))
	if removed := c.metricsRemoved(); removed == 0 {
		t.Fatal("nothing removed once the records were older than min.compaction.lag.ms")
	}
}

// TestMaxCompactionLag: a partition below its min.cleanable.dirty.ratio is
// cleaned anyway once its first dirty record is older than
// max.compaction.lag.ms.
func TestMaxCompactionLag(t *testing.T) {
	now := time.Now()
	l := sealedLog(t, 4, now.Add(-time.Hour))
	segments := l.Segments()
	for _, tc := range []struct {
		lag         time.Duration
		overdue     bool
		dueAnywayBy bool
	}{
		{time.Duration(math.MaxInt64), false, false},
		{2 * time.Hour, false, false},
		{30 * time.Minute, true, true},
	} {
		c := testCleaner(t, now)
		st := add(c, l, Policy{Compact: true, MinCleanableRatio: 0.99, MaxCompactionLag: tc.lag})
		st.firstDirty = segments[3].BaseOffset // a quarter dirty
		cand, due := c.assess(st, now)
		if cand.overdue != tc.overdue || due != tc.dueAnywayBy {
			t.Errorf("max.compaction.lag.ms %v: overdue %v, due %v; want %v, %v", tc.lag, cand.overdue, due, tc.overdue, tc.dueAnywayBy)
		}
	}
}

// mustNext is c.next, which must pick st when want is set and nothing
// otherwise; with nothing picked it returns st marked taken, for a clean
// call that finds it not due; and the pass's context.
func mustNext(t *testing.T, c *Cleaner, want bool, st *partState) (context.Context, *partState) {
	t.Helper()
	got, ctx := c.next(t.Context())
	if (got != nil) != want || got != nil && got != st {
		t.Fatalf("the cleaner picked %v, want %v", got != nil, want)
	}
	if got == nil {
		st.cleaning, st.done, st.cancel = true, make(chan struct{}), func() {}
		return t.Context(), st
	}
	return ctx, got
}

// metricsRemoved is the records the cleaner has removed so far.
func (c *Cleaner) metricsRemoved() float64 {
	return testutil.ToFloat64(c.metrics.recordsRemoved)
}

// TestCleanWholeTheSegmentHoldingTheLogStart: with the log start inside
// a segment (DeleteRecords, a follower taking its leader's start), a pass
// cleans that segment too, whole. It used to be left as it was: an older
// value of a key above the start stayed after the key's tombstone expired,
// and a consumer reading from the start found the deleted key again.
func TestCleanWholeTheSegmentHoldingTheLogStart(t *testing.T) {
	l := openLog(t, t.TempDir())
	roll := func() {
		t.Helper()
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The recovery point's checkpoint, which bounds what may be
		// rewritten, follows the sync in the background.
		for deadline := time.Now().Add(30 * time.Second); l.RewritableEnd() < l.ActiveSegment().BaseOffset; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("rewritable end %d, not the active segment's base %d within 30 s", l.RewritableEnd(), l.ActiveSegment().BaseOffset)
			}
		}
	}
	produce(t, l, []string{"x", "k", "y"}, [][]byte{[]byte("x"), []byte("deleted"), []byte("y")}, record.CodecNone)
	roll()
	produce(t, l, []string{"k"}, [][]byte{nil}, record.CodecNone) // k's tombstone at 3
	roll()
	produce(t, l, []string{"z"}, [][]byte{[]byte("z")}, record.CodecNone)
	roll()
	if _, err := l.DeleteBefore(1); err != nil {
		t.Fatal(err)
	}
	firstDirty := int64(0)
	for pass := range 2 { // the tombstone stays in the first, expires in the second
		if pass == 1 {
			produce(t, l, []string{"w"}, [][]byte{[]byte("w")}, record.CodecNone) // something dirty again
			roll()
		}
		res, err := Clean(context.Background(), Pass{Log: l, FirstDirty: firstDirty, End: l.ActiveSegment().BaseOffset,
			Now: time.Now().Add(2 * time.Hour), DeleteRetention: time.Hour, MaxKeys: 1000, DecompressLimit: 1 << 20})
		if err != nil {
			t.Fatalf("pass %d over a log starting inside a segment: %v", pass+1, err)
		}
		firstDirty = res.NextDirty
	}
	for _, r := range readAll(t, l) {
		if r.key == "k" {
			t.Fatalf("k reads %q at %d after its tombstone expired, want it gone", r.value, r.offset)
		}
	}
	checkReadsFromEveryOffset(t, l)
}

// TestRemoveStopsAPass: Remove cancels a pass under way (here one held to
// a byte a second by the I/O throttle) and returns once it has stopped,
// leaving the log as it was.
func TestRemoveStopsAPass(t *testing.T) {
	l := sealedLog(t, 3, time.Now().Add(-time.Hour))
	cfg := DefaultConfig()
	cfg.IOMaxBytesPerSecond, cfg.Backoff = 1, 10*time.Millisecond
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.throttle.Record(1<<20, time.Now()) // the throttle's first second is spent
	c.Start()
	defer c.Close()
	c.Add(Partition{Topic: "t", Partition: 0, Log: l, HighWatermark: l.LogEndOffset,
		Policy: func() Policy { return Policy{Compact: true, MaxCompactionLag: time.Duration(math.MaxInt64)} }})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		cleaning := c.parts[partKey{"t", 0}].cleaning
		c.mu.Unlock()
		if cleaning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no pass started")
		}
	}
	removed := make(chan struct{})
	go func() {
		c.Remove("t", 0)
		close(removed)
	}()
	select {
	case <-removed:
	case <-time.After(30 * time.Second):
		t.Fatal("Remove still waits for a pass held by the throttle")
	}
	if n := testutil.ToFloat64(c.metrics.recordsRemoved); n != 0 {
		t.Fatalf("%v records removed by a pass that was stopped", n)
	}
}

// TestRemoveRightAfterAPassIsPickedStopsIt: a Remove between a thread
// picking a partition and its pass starting stops the pass as one during
// it does. The pass's cancel used to be set only once the pass began, so
// such a Remove cancelled nothing and waited for the whole pass (here one
// held to a byte a second), and the replica manager's reconcile with it.
func TestRemoveRightAfterAPassIsPickedStopsIt(t *testing.T) {
	l := sealedLog(t, 3, time.Now().Add(-time.Hour))
	c := testCleaner(t, time.Now())
	c.throttle.SetRate(1)
	c.throttle.Record(1<<20, time.Now()) // the throttle's first second is spent
	add(c, l, Policy{Compact: true, MaxCompactionLag: time.Duration(math.MaxInt64)})
	st, ctx := c.next(t.Context())
	if st == nil {
		t.Fatal("nothing picked")
	}
	removed := make(chan struct{})
	go func() {
		c.Remove("t", 0)
		close(removed)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		_, still := c.parts[partKey{"t", 0}]
		c.mu.Unlock()
		if !still {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Remove did not take the partition")
		}
	}
	go c.clean(ctx, st)
	select {
	case <-removed:
	case <-time.After(30 * time.Second):
		t.Fatal("Remove still waits for a pass it came before")
	}
}

// TestATruncationLowersTheCheckpoint: a log cut back below the cleaner's
// checkpoint (a follower after an unclean election) lowers it, in memory
// and on disk, also when a pass under way ends after the truncation: left
// above the log end, the checkpoint took the records the log got there
// next for clean, and their keys' older values outlived the tombstones.
func TestATruncationLowersTheCheckpoint(t *testing.T) {
	l := sealedLog(t, 3, time.Now().Add(-time.Hour))
	cfg := DefaultConfig()
	// No pass but the one Add's notice starts: a thread looks again only
	// after an hour's backoff.
	cfg.IOMaxBytesPerSecond, cfg.Backoff = 1<<20, time.Hour
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.throttle.Record(2<<20, time.Now()) // the pass's first read waits two seconds
	c.Start()
	defer c.Close()
	c.Add(Partition{Topic: "t", Partition: 0, Log: l, HighWatermark: l.LogEndOffset,
		// Once the checkpoint is in the last segment, the log is not
		// dirty enough for another pass.
		Policy: func() Policy {
			return Policy{Compact: true, MaxCompactionLag: time.Duration(math.MaxInt64), MinCleanableRatio: 0.99}
		}})
	state := func() (firstDirty int64, cleaning bool, passes float64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		st := c.parts[partKey{"t", 0}]
		return st.firstDirty, st.cleaning, testutil.ToFloat64(c.metrics.passes.WithLabelValues("ok"))
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s", what)
			}
		}
	}
	waitFor("a pass under way", func() bool { _, cleaning, _ := state(); return cleaning })
	c.Truncated("t", 0, 25) // the pass maps past 25, from a log as it was
	waitFor("the pass's end, its checkpoint written", func() bool {
		_, cleaning, passes := state()
		return passes == 1 && !cleaning
	})
	if firstDirty, _, _ := state(); firstDirty != 25 || readCheckpoint(l.Dir()) != 25 {
		t.Fatalf("checkpoint %d (file %d) after a pass under way met a truncation to 25, want 25", firstDirty, readCheckpoint(l.Dir()))
	}
	c.Truncated("t", 0, 27) // above the checkpoint: nothing to lower
	c.Truncated("t", 0, 2)
	if firstDirty, _, _ := state(); firstDirty != 2 || readCheckpoint(l.Dir()) != 2 {
		t.Fatalf("checkpoint %d (file %d) after truncations to 27 and 2, want 2", firstDirty, readCheckpoint(l.Dir()))
	}
}

// TestThreadsShareTheDedupeBuffer: log.cleaner.dedupe.buffer.size is
// shared by log.cleaner.threads, so the same buffer maps a log of 1,500
// distinct keys in one pass with one thread and only part of it with two.
func TestThreadsShareTheDedupeBuffer(t *testing.T) {
	for _, tc := range []struct {
		threads int
		whole   bool
	}{{1, true}, {2, false}} {
		l := sealedLog(t, 150, time.Now().Add(-time.Hour), true)
		end := l.ActiveSegment().BaseOffset
		cfg := DefaultConfig()
		cfg.Threads, cfg.DedupeBufferBytes = tc.threads, 2048*MapEntryBytes
		c, err := New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := add(c, l, Policy{Compact: true, MaxCompactionLag: time.Duration(math.MaxInt64)})
		c.clean(mustNext(t, c, true, st))
		if got := st.firstDirty >= end; got != tc.whole {
			t.Fatalf("%d threads: the pass mapped up to %d of %d", tc.threads, st.firstDirty, end)
		}
	}
}

// TestBackoffIsTheIdleSleep: log.cleaner.backoff.ms is how long an idle
// thread sleeps before it looks again. A topic made compacted without a
// Notify is cleaned after a short backoff, and not while a thread sleeps
// an hour.
func TestBackoffIsTheIdleSleep(t *testing.T) {
	for _, backoff := range []time.Duration{time.Hour, 10 * time.Millisecond} {
		l := sealedLog(t, 3, time.Now().Add(-time.Hour))
		cfg := DefaultConfig()
		cfg.Backoff = backoff
		c, err := New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var compacted atomic.Bool
		c.Add(Partition{Topic: "t", Partition: 0, Log: l, HighWatermark: l.LogEndOffset, Policy: func() Policy {
			return Policy{Compact: compacted.Load(), MaxCompactionLag: time.Duration(math.MaxInt64)}
		}})
		c.Start()
		time.Sleep(200 * time.Millisecond) // the look Add asked for finds nothing to do
		compacted.Store(true)
		cleaned := func() bool { return testutil.ToFloat64(c.metrics.passes.WithLabelValues("ok")) > 0 }
		if backoff == time.Hour {
			time.Sleep(300 * time.Millisecond)
			if cleaned() {
				t.Fatal("a thread sleeping its hour-long backoff cleaned")
			}
		} else {
			for deadline := time.Now().Add(30 * time.Second); !cleaned(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a thread with a 10 ms backoff never looked again")
				}
			}
		}
		c.Close()
	}
}

// TestACheckpointAboveTheLogEndIsNotTaken: a log restarted before it is
// handed to the cleaner (a tiered leader continuing at its bucket's end
// as it opens) may end below the checkpoint its directory holds; the
// cleaner starts from the log end, not above it, where the records the
// log gets next would count as clean.
func TestACheckpointAboveTheLogEndIsNotTaken(t *testing.T) {
	l := sealedLog(t, 2, time.Now())
	if err := writeCheckpoint(l.Dir(), l.LogEndOffset()+100); err != nil {
		t.Fatal(err)
	}
	c := testCleaner(t, time.Now())
	st := add(c, l, Policy{Compact: true})
	if st.firstDirty != l.LogEndOffset() {
		t.Fatalf("first dirty offset %d from a checkpoint past the log end %d, want the log end", st.firstDirty, l.LogEndOffset())
	}
}
