package hotlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
)

// retentionFixture is a log of several segments whose batches carry
// timestamps one second apart, ending at the fake clock's now.
func retentionFixture(t *testing.T, c Config) (*Log, *fakeClock, []appended) {
	t.Helper()
	rng := rand.New(rand.NewPCG(90, 91))
	clock := newFakeClock()
	c.Clock = clock
	l := openLog(t, t.TempDir(), c)
	const count = 1500
	var batches []appended
	for i := range count {
		ts := clock.Now().UnixMilli() - int64(count-i)*1000
		batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 1+rng.IntN(10), 1+rng.IntN(100), ts))...)
	}
	if len(l.Segments()) < 5 {
		t.Fatalf("%d segments", len(l.Segments()))
	}
	return l, clock, batches
}

func TestRetentionByTime(t *testing.T) {
	t.Parallel()
	c := testConfig()
	l, clock, batches := retentionFixture(t, c)
	before := l.Segments()
	// Keep what is newer than the third segment's newest batch.
	cutoff := time.UnixMilli(before[2].MaxTimestamp)
	c.RetentionMs = clock.Now().Sub(cutoff).Milliseconds()
	reconfigure(t, l, c)
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if !equalSegments(deleted, before[:2]) {
		t.Fatalf("deleted %+v, want the first two segments", deleted)
	}
	if l.LogStartOffset() != before[2].BaseOffset {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), before[2].BaseOffset)
	}
	clock.Advance(time.Millisecond)
	if deleted, _ = l.ApplyRetention(); len(deleted) != 1 || deleted[0] != before[2] {
		t.Fatalf("a millisecond later, deleted %+v, want segment %d", deleted, before[2].BaseOffset)
	}
	// The active segment stays however old it gets.
	clock.Advance(365 * 24 * time.Hour)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if segments := l.Segments(); len(segments) != 1 || segments[0] != before[len(before)-1] {
		t.Fatalf("segments %+v, want only the active one", segments)
	}
	checkReadsBack(t, l, batches[len(batches)-3:])
	// The new log start survives a restart.
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r := openLog(t, dir, c); r.LogStartOffset() != before[len(before)-1].BaseOffset {
		t.Fatalf("log start after reopen %d", r.LogStartOffset())
	}
}

func TestRetentionByBytes(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.RetentionMs = -1
	l, _, _ := retentionFixture(t, c)
	before := l.Segments()
	var total int64
	for _, s := range before {
		total += s.Size
	}
	// Room for everything but the first two segments and a byte less.
	c.RetentionBytes = total - before[0].Size - before[1].Size + 1
	reconfigure(t, l, c)
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if !equalSegments(deleted, before[:1]) {
		t.Fatalf("deleted %+v, want only the first segment", deleted)
	}
	c.RetentionBytes = 0
	reconfigure(t, l, c)
	if deleted, _ = l.ApplyRetention(); !equalSegments(deleted, before[1:len(before)-1]) {
		t.Fatalf("deleted %+v, want every sealed segment", deleted)
	}
}

func TestRetentionHonoursCanDelete(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.RetentionBytes = 0
	l, _, _ := retentionFixture(t, c)
	before := l.Segments()
	var asked []int64
	hooked := *l.conf() // CanDelete is fixed at Open; the fixture made the log
	hooked.CanDelete = func(info SegmentInfo) bool {
		asked = append(asked, info.BaseOffset)
		return info.BaseOffset < before[2].BaseOffset // "uploaded" so far
	}
	l.config.Store(&hooked)
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if !equalSegments(deleted, before[:2]) || !slices.Equal(asked, []int64{before[0].BaseOffset, before[1].BaseOffset, before[2].BaseOffset}) {
		t.Fatalf("deleted %+v after asking about %v", deleted, asked)
	}
}

func TestRetentionWithoutTimestampsUsesFileTime(t *testing.T) {
	t.Parallel()
	c := testConfig()
	clock := newFakeClock()
	clock.now = time.Now()
	c.Clock = clock
	c.RetentionMs = time.Hour.Milliseconds()
	l := openLog(t, t.TempDir(), c)
	noTimestamp, err := record.Build(record.BuildOptions{FirstTimestamp: NoTimestamp, ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Value: make([]byte, 100)}})
	if err != nil {
		t.Fatal(err)
	}
	for len(l.Segments()) < 3 {
		appendBatches(t, l, slices.Clone(noTimestamp))
	}
	if s := l.Segments()[0]; s.MaxTimestamp != NoTimestamp {
		t.Fatalf("segment max timestamp %d, want none", s.MaxTimestamp)
	}
	if deleted, _ := l.ApplyRetention(); len(deleted) != 0 {
		t.Fatalf("deleted fresh segments: %+v", deleted)
	}
	clock.Advance(2 * time.Hour)
	if deleted, _ := l.ApplyRetention(); len(deleted) != 2 {
		t.Fatalf("deleted %+v two hours after the files were written, want both sealed segments", deleted)
	}
}

func TestDeleteBefore(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(92, 93))
	c := testConfig()
	dir := t.TempDir()
	l := openLog(t, dir, c)
	batches := fill(t, l, rng, 1500, 10)
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	segments := l.Segments()
	start := segments[1].BaseOffset + 7 // inside segment 1
	deleted, err := l.DeleteBefore(start)
	if err != nil {
		t.Fatal(err)
	}
	if !equalSegments(deleted, segments[:1]) || l.LogStartOffset() != start {
		t.Fatalf("deleted %+v, log start %d", deleted, l.LogStartOffset())
	}
	if _, err := l.Read(start-1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	if got := l.Epochs(); len(got) != 1 || got[0] != (EpochEntry{Epoch: 1, StartOffset: start}) {
		t.Fatalf("epochs %v, want epoch 1 from the new log start", got)
	}
	if _, err := l.DeleteBefore(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteBefore past the end: %v", err)
	}
	if deleted, err := l.DeleteBefore(start - 5); err != nil || len(deleted) != 0 || l.LogStartOffset() != start {
		t.Fatalf("DeleteBefore below the start: %+v, %v", deleted, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, dir, c)
	if l.LogStartOffset() != start {
		t.Fatalf("log start after reopen %d, want %d", l.LogStartOffset(), start)
	}
	// Deleting everything rolls the active segment so it can go too.
	end := l.LogEndOffset()
	if _, err := l.DeleteBefore(end); err != nil {
		t.Fatal(err)
	}
	if segments := l.Segments(); len(segments) != 1 || segments[0].BaseOffset != end || segments[0].Size != 0 {
		t.Fatalf("after deleting everything: %+v", segments)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if base, _, ok := parseSegmentFileName(e.Name()); ok && base != end {
			t.Fatalf("file %s left behind", filepath.Join(dir, e.Name()))
		}
	}
	appended := appendBatches(t, l, makeBatch(t, rng, 1, 1, 1))
	if appended[0].base != end || batches[len(batches)-1].last+1 != end {
		t.Fatalf("append after deleting everything at %d, want %d", appended[0].base, end)
	}
}

// reconfigure applies c's live settings to l, failing the test on error.
func reconfigure(t *testing.T, l *Log, c Config) {
	t.Helper()
	if err := l.Reconfigure(c); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
}

// TestDeletionLeavesAppendsGoing: a deletion persists its new log start
// without the writer lock or the syncing lock, so appends to the
// partition, and the disk rounds that acknowledge every partition's, go
// on while its checkpoint's fsync waits; of sealed segments below the
// flushed point it runs no round first; and it trims the epoch cache in
// memory only, which a crash then recovers trimmed all the same.
func TestDeletionLeavesAppendsGoing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(94, 95))
	c := testConfig()
	var armed, epochFileSynced atomic.Bool
	var logsSynced atomic.Int64 // segment logs' fsyncs while armed
	inCheckpoint, release := make(chan struct{}), make(chan struct{})
	c.fsync = func(f *os.File, _ bool) error {
		switch name := filepath.Base(f.Name()); {
		case name == logCheckpointName:
			if armed.Swap(false) {
				close(inCheckpoint)
				<-release
			}
		case strings.HasPrefix(name, epochCheckpointName): // or its temporary
			epochFileSynced.Store(true)
		case strings.HasSuffix(name, logSuffix) && armed.Load():
			logsSynced.Add(1)
		}
		return nil
	}
	l := openLog(t, t.TempDir(), c)
	fill(t, l, rng, 1500, 10)
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	syncSealed(t, l)
	// Unsynced bytes in the active segment, which a round would fsync.
	appendBatches(t, l, makeBatch(t, rng, 3, 50, 0))
	start := l.Segments()[2].BaseOffset
	epochFileSynced.Store(false)
	armed.Store(true)
	deleted := make(chan error, 1)
	go func() {
		_, err := l.DeleteBefore(start)
		deleted <- err
	}()
	<-inCheckpoint
	if n := logsSynced.Load(); n != 0 {
		close(release)
		t.Fatalf("a deletion of sealed segments below the flushed point ran a round (%d segment fsyncs)", n)
	}
	if !l.mu.TryLock() {
		close(release)
		t.Fatal("the deletion holds Log.mu while it persists the new start")
	}
	l.mu.Unlock()
	if !l.flusher.syncing.TryLock() {
		close(release)
		t.Fatal("the deletion holds the syncing lock while it persists the new start")
	}
	l.flusher.syncing.Unlock()
	more := appendBatches(t, l, makeBatch(t, rng, 3, 50, 0))
	close(release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != start || l.LogEndOffset() != more[0].last+1 {
		t.Fatalf("log [%d, %d), want [%d, %d)", l.LogStartOffset(), l.LogEndOffset(), start, more[0].last+1)
	}
	if epochFileSynced.Load() {
		t.Fatal("the deletion replaced the epoch cache's file")
	}
	want := []EpochEntry{{Epoch: 1, StartOffset: start}}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	r := openLog(t, crashCopy(t, l, nil), testConfig())
	if got := r.Epochs(); r.LogStartOffset() != start || !slices.Equal(got, want) {
		t.Fatalf("after a crash: log start %d, epochs %v; want %d, %v", r.LogStartOffset(), got, start, want)
	}
}
