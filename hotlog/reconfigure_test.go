package hotlog

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestReconfigureSegmentBytes: a lowered segment.bytes rolls at the new
// size from the next append on, and an invalid configuration changes
// nothing.
func TestReconfigureSegmentBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(91, 92))
	c := testConfig() // 64 KiB segments
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 20, 4) // well under 64 KiB: one segment
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments before the change, want 1", n)
	}

	bad := c
	bad.SegmentBytes = 0
	if err := l.Reconfigure(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Reconfigure with segment.bytes 0: %v, want ErrInvalidConfig", err)
	}
	if got := l.conf().SegmentBytes; got != c.SegmentBytes {
		t.Fatalf("a refused Reconfigure changed segment.bytes to %d", got)
	}

	c.SegmentBytes = 1024
	reconfigure(t, l, c)
	for range 20 {
		batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 1, 600, 1))...)
	}
	segments := l.Segments()
	if len(segments) < 10 {
		t.Fatalf("%d segments after 20 appends of ~700 bytes with segment.bytes 1024, want one per append or so", len(segments))
	}
	for _, s := range segments[1 : len(segments)-1] {
		if s.Size > 1024 {
			t.Fatalf("segment %d is %d bytes after segment.bytes was lowered to 1024", s.BaseOffset, s.Size)
		}
	}
	checkReadsBack(t, l, batches)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Reconfigure(c); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reconfigure after Close: %v, want ErrClosed", err)
	}
}

// TestReconfigureFlushMs: a log flushing periodically picks up a shorter
// flush.ms at once: the flusher, asleep on the old interval, rearms on the
// new one.
func TestReconfigureFlushMs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(93, 94))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.Durability = SyncPeriodically
	c.FlushMs = math.MaxInt64
	c.RecoveryPointCheckpointMs = 60_000
	l := openLog(t, t.TempDir(), c)
	appendBatches(t, l, makeBatch(t, rng, 3, 10, 1))
	clock.Advance(time.Hour)
	if l.FlushedOffset() != 0 {
		t.Fatal("flushed with flush.ms unset")
	}

	c.FlushMs = 100
	reconfigure(t, l, c)
	waitFor(t, "a timer on the new flush.ms", func() bool {
		clock.Advance(100 * time.Millisecond)
		return l.FlushedOffset() == 3
	})
}

// TestReconfigureDurability: switching a log from periodic flushing to
// fsync before ack makes the next WaitAck wait for an fsync.
func TestReconfigureDurability(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(95, 96))
	c := testConfig()
	c.Durability = SyncPeriodically
	c.FlushMs = math.MaxInt64
	l := openLog(t, t.TempDir(), c)
	res, err := l.Append(checked(t, makeBatch(t, rng, 2, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(t.Context()); err != nil || l.FlushedOffset() != 0 {
		t.Fatalf("periodic WaitAck: %v, flushed %d: want at once, nothing flushed", err, l.FlushedOffset())
	}

	c.Durability = SyncBeforeAck
	reconfigure(t, l, c)
	res, err = l.Append(checked(t, makeBatch(t, rng, 2, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := l.FlushedOffset(); got != 4 {
		t.Fatalf("flushed offset %d after WaitAck under fsync before ack, want 4", got)
	}
}

// TestReconfigureTakesEveryTopicSetting: every Config field a topic config
// sets is applied by Reconfigure; the others (the broker's wiring and the
// checkpoint interval) keep what Open was given. A new field fails this
// until Reconfigure applies it or it is listed as fixed.
func TestReconfigureTakesEveryTopicSetting(t *testing.T) {
	t.Parallel()
	fixed := map[string]bool{"RecoveryPointCheckpointMs": true, "FileCache": true, "DiskSync": true, "CanDelete": true, "Clock": true, "Logger": true, "Events": true}
	l := openLog(t, t.TempDir(), testConfig())
	c := *l.conf()
	c.SegmentBytes, c.SegmentMs, c.SegmentJitterMs, c.Preallocate, c.FileDeleteDelayMs = 1<<20, 5000, 700, true, 9000
	c.IndexIntervalBytes, c.SegmentIndexBytes, c.RetentionMs, c.RetentionBytes = 100, 8<<10, 1234, 5678
	c.Durability, c.FlushMessages, c.FlushMs = SyncPeriodically, 77, 88
	c.RecoveryPointCheckpointMs = 99
	if err := l.Reconfigure(c); err != nil {
		t.Fatal(err)
	}
	got, want, before := reflect.ValueOf(*l.conf()), reflect.ValueOf(c), reflect.ValueOf(testConfig())
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		if !got.Type().Field(i).IsExported() || got.Field(i).Kind() == reflect.Func || got.Field(i).Kind() == reflect.Pointer || got.Field(i).Kind() == reflect.Interface || got.Field(i).Kind() == reflect.Struct {
			continue
		}
		switch {
		case fixed[name] && got.Field(i).Interface() != before.Field(i).Interface():
			t.Errorf("%s changed by Reconfigure to %v; it is fixed at Open", name, got.Field(i).Interface())
		case !fixed[name] && got.Field(i).Interface() != want.Field(i).Interface():
			t.Errorf("%s is %v after Reconfigure to %v: the topic setting is not applied", name, got.Field(i).Interface(), want.Field(i).Interface())
		}
	}
}
