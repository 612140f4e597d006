package hotlog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRollOnSegmentBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20, 21))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 1500, 10)
	segments := l.Segments()
	if len(segments) < 4 {
		t.Fatalf("%d segments", len(segments))
	}
	sizes := map[int64]int{}
	for _, b := range batches {
		sizes[b.base] = len(b.bytes)
	}
	for i, s := range segments[:len(segments)-1] {
		if !s.Sealed || s.Size > c.SegmentBytes {
			t.Fatalf("segment %+v: sealed %v, size over %d", s, s.Sealed, c.SegmentBytes)
		}
		// It rolled because the next batch would not fit.
		if next := segments[i+1]; s.Size+int64(sizes[next.BaseOffset]) <= c.SegmentBytes || next.BaseOffset != s.NextOffset {
			t.Fatalf("segment %+v rolled early before %+v", s, next)
		}
	}
	if segments[len(segments)-1].Sealed {
		t.Fatal("active segment reported sealed")
	}
}

func TestRollOnSegmentMs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 23))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.SegmentMs = 1000
	l := openLog(t, t.TempDir(), c)
	// An empty segment does not age.
	clock.Advance(time.Hour)
	fill(t, l, rng, 1, 1)
	clock.Advance(999 * time.Millisecond)
	fill(t, l, rng, 1, 1)
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments before segment.ms elapsed", n)
	}
	clock.Advance(time.Millisecond)
	fill(t, l, rng, 1, 1)
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("%d segments after segment.ms elapsed, want 2", n)
	}
}

// TestRollOnSegmentMsWithJitter: with segment.jitter.ms each segment rolls
// a random amount sooner than segment.ms, never later: segments made by an
// append every 100 ms roll at ages from 100 ms to segment.ms, not all at
// segment.ms as without jitter.
func TestRollOnSegmentMsWithJitter(t *testing.T) {
	t.Parallel()
	for _, jitter := range []int64{0, 900} {
		rng := rand.New(rand.NewPCG(26, 27))
		c := testConfig()
		clock := newFakeClock()
		c.Clock = clock
		c.SegmentMs, c.SegmentJitterMs = 1000, jitter
		l := openLog(t, t.TempDir(), c)
		ages := map[int]int{} // batches per rolled segment
		for range 40 * 11 {
			fill(t, l, rng, 1, 1)
			clock.Advance(100 * time.Millisecond)
		}
		segments := l.Segments()
		for _, s := range segments[:len(segments)-1] {
			n := int(s.NextOffset - s.BaseOffset) // one record per batch, one batch per 100 ms
			ages[n]++
			if n > 10 {
				t.Fatalf("jitter %d: a segment took %d appends 100 ms apart: it rolled after segment.ms", jitter, n)
			}
		}
		switch {
		case jitter == 0 && (len(ages) != 1 || ages[10] == 0):
			t.Fatalf("without jitter segments took %v appends, want 10 each", ages)
		case jitter > 0 && len(ages) < 3:
			t.Fatalf("with jitter 900 ms segments took %v appends, want many different counts", ages)
		}
	}
}

func TestRollOnFullIndex(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(24, 25))
	c := testConfig()
	c.IndexIntervalBytes = 0 // every batch after the first gets an entry
	c.SegmentIndexBytes = minSegmentIndexBytes
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 40, 2) // increasing timestamps: a time entry per index entry
	segments := l.Segments()
	// The time index (4 entries, one kept for sealing) fills first: the
	// first batch has no entry, the next three do, so four batches each.
	for _, s := range segments[:len(segments)-1] {
		count := 0
		for _, b := range batches {
			if b.base >= s.BaseOffset && b.last < s.NextOffset {
				count++
			}
		}
		if count != 4 {
			t.Fatalf("segment %d holds %d batches, want 4", s.BaseOffset, count)
		}
	}
	checkReadsBack(t, l, batches)
}

func TestRollOnRelativeOffsetOverflow(t *testing.T) {
	t.Parallel()
	l := openLog(t, t.TempDir(), testConfig())
	const delta = math.MaxInt32 - 1 // 2^31-1 offsets per batch
	for range 2 {
		appendBatches(t, l, batchWithOffsetDelta(t, delta))
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments after 2^32-2 offsets", n)
	}
	// The third batch's last offset would be 2^32-2 + 2^31-2 past the base.
	third := appendBatches(t, l, batchWithOffsetDelta(t, delta))
	segments := l.Segments()
	if len(segments) != 2 || segments[1].BaseOffset != third[0].base {
		t.Fatalf("segments %+v, want a roll at %d", segments, third[0].base)
	}
	if third[0].base-segments[0].BaseOffset > math.MaxUint32 {
		t.Fatal("a batch base offset overflowed its segment's 32-bit relative offsets")
	}
}

func TestRollSealsSegmentOnDisk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(26, 27))
	c := testConfig()
	var mu sync.Mutex
	var sealed []SegmentInfo
	c.Events.Sealed = func(info SegmentInfo) {
		mu.Lock()
		sealed = append(sealed, info)
		mu.Unlock()
	}
	l := openLog(t, t.TempDir(), c)
	if err := l.Roll(); err != nil || len(l.Segments()) != 1 {
		t.Fatalf("Roll of an empty segment: %v, %d segments", err, len(l.Segments()))
	}
	fill(t, l, rng, 20, 10)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	fill(t, l, rng, 2000, 10)
	syncSealed(t, l)
	segments := l.Segments()
	mu.Lock()
	defer mu.Unlock()
	if !equalSegments(sealed, segments[:len(segments)-1]) {
		t.Fatalf("Sealed events %+v, want %+v", sealed, segments[:len(segments)-1])
	}
	st := l.state.Load()
	for _, s := range st.segments[:len(st.segments)-1] {
		tail := s.tail.Load()
		if got := fileSize(t, s.path(indexSuffix)); got != int64(tail.indexEntries)*indexEntrySize {
			t.Errorf("sealed index of %d is %d bytes for %d entries", s.baseOffset, got, tail.indexEntries)
		}
		if got := fileSize(t, s.path(timeIndexSuffix)); got != int64(tail.timeIndexEntries)*timeIndexEntrySize || tail.timeIndexEntries == 0 {
			t.Errorf("sealed time index of %d is %d bytes for %d entries", s.baseOffset, got, tail.timeIndexEntries)
		}
	}
	active := st.active()
	if got := fileSize(t, active.path(indexSuffix)); got != int64(c.SegmentIndexBytes) {
		t.Errorf("active index is %d bytes, want preallocated %d", got, c.SegmentIndexBytes)
	}
}

// TestRollUsesPreparedSegment checks that a half-full segment gets its
// successor prepared, and that the roll installs it.
func TestRollUsesPreparedSegment(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 29))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	prepared := filepath.Join(l.Dir(), preparedName+logSuffix)
	for l.ActiveSegment().Size < c.SegmentBytes/2 {
		fill(t, l, rng, 1, 10)
		// The append that reaches half full starts the preparation, which
		// may already have made the file: look only below half.
		if _, err := os.Stat(prepared); err == nil && l.ActiveSegment().Size < c.SegmentBytes/2 {
			t.Fatal("next segment prepared before the active one was half full")
		}
	}
	l.preparer.wg.Wait()
	preparedFile, err := os.Stat(prepared)
	if err != nil {
		t.Fatalf("next segment not prepared at half full: %v", err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(prepared); !os.IsNotExist(err) {
		t.Fatalf("prepared files still there after the roll: %v", err)
	}
	activeFile, err := os.Stat(lastSegmentLog(l))
	if err != nil || !os.SameFile(activeFile, preparedFile) {
		t.Fatalf("the new segment is not the prepared file: %v", err)
	}
	batches := fill(t, l, rng, 10, 3)
	checkReadsBack(t, l, batches)

	// An unused preparation is removed by Close.
	for l.ActiveSegment().Size < c.SegmentBytes/2 {
		fill(t, l, rng, 1, 10)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(prepared); !os.IsNotExist(err) {
		t.Fatalf("Close left prepared files: %v", err)
	}
}

// TestPreparationStartsAtTheLogsPhase: Logs sharing a DiskSync prepare
// their next segment at different fill levels, half of segment.bytes and
// a quarter more by each one's phase (the second Log's is 0.618), so
// partitions filled at one rate do not all create their files at once.
func TestPreparationStartsAtTheLogsPhase(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	c := testConfig()
	c.DiskSync = d
	rng := rand.New(rand.NewPCG(30, 31))
	for i, phase := range []float64{0, (math.Sqrt(5) - 1) / 2} {
		l := openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		start := c.SegmentBytes/2 + int64(phase*float64(c.SegmentBytes/4))
		preparing := func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.preparer.running
		}
		for l.ActiveSegment().Size < start {
			if preparing() {
				t.Fatalf("log %d (phase %.3f): next segment prepared from %d bytes, before %d", i, phase, l.ActiveSegment().Size, start)
			}
			fill(t, l, rng, 1, 10)
		}
		if !preparing() {
			t.Fatalf("log %d (phase %.3f): next segment not prepared at %d bytes", i, phase, l.ActiveSegment().Size)
		}
	}
}

// TestFirstSegmentRollsSoonerByItsCut: a log's first segment rolls at
// segment.bytes less Config.FirstSegmentCut of it, preparing the next
// segment's files by that size, and every later segment at
// segment.bytes; a cut outside [0, 1/2] is refused.
func TestFirstSegmentRollsSoonerByItsCut(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(32, 33))
	const largestBatch = 2 << 10 // fill's batches: up to 10 records of up to 100 bytes
	for _, cut := range []float64{0, 0.309, 0.5} {
		c := testConfig()
		c.FirstSegmentCut = cut
		l := openLog(t, filepath.Join(root, fmt.Sprint(cut)), c)
		first := c.SegmentBytes - int64(cut*float64(c.SegmentBytes))
		prepared := false
		for len(l.Segments()) < 3 {
			if len(l.Segments()) == 1 {
				l.mu.Lock()
				prepared = prepared || l.preparer.running
				l.mu.Unlock()
			}
			fill(t, l, rng, 1, 10)
		}
		if !prepared {
			t.Errorf("cut %.3f: the second segment was not prepared before the first rolled at %d bytes", cut, first)
		}
		segments := l.Segments()
		for j, limit := range []int64{first, c.SegmentBytes} {
			// A segment rolls before the batch that would take it past its
			// limit, so it ends within a batch of it.
			if size := segments[j].Size; size > limit || size <= limit-largestBatch {
				t.Errorf("cut %.3f: segment %d rolled at %d bytes, want within a batch below %d", cut, j, size, limit)
			}
		}
	}
	for _, cut := range []float64{-0.1, 0.6, math.NaN()} {
		c := testConfig()
		c.FirstSegmentCut = cut
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("a first segment cut of %v: %v, want ErrInvalidConfig", cut, err)
		}
	}
}

// allocated is the bytes of disk a file holds.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestPreallocate: with preallocate, a new segment's log holds
// segment.bytes of disk before it holds data, its size is only what was
// appended (recovery reads a log to its size), sealing gives back what it
// did not use, and the log reads back after a reopen. Without it, a log
// holds only what was written.
func TestPreallocate(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 29))
	for _, preallocate := range []bool{false, true} {
		c := testConfig()
		c.SegmentBytes, c.Preallocate = 4<<20, preallocate
		dir := t.TempDir()
		l := openLog(t, dir, c)
		batches := fill(t, l, rng, 3, 2)
		active := lastSegmentLog(l)
		size := fileSize(t, active)
		if got := allocated(t, active); preallocate && got < c.SegmentBytes || !preallocate && got >= c.SegmentBytes {
			t.Fatalf("preallocate %v: the active log holds %d bytes of disk for %d of data", preallocate, got, size)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if fileSize(t, active) != size {
			t.Fatalf("sealing changed the log's size from %d to %d", size, fileSize(t, active))
		}
		if got := allocated(t, active); got >= c.SegmentBytes {
			t.Fatalf("preallocate %v: the sealed log still holds %d bytes of disk for %d of data", preallocate, got, size)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		checkReadsBack(t, openLog(t, dir, c), batches)
	}
}
