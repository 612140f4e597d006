package hotlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func TestTruncateThenAppend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		where func(segments []SegmentInfo, batches []appended) int64
	}{
		{"inside the active segment", func(s []SegmentInfo, b []appended) int64 { return b[len(b)-3].base }},
		{"inside a batch", func(s []SegmentInfo, b []appended) int64 { return b[len(b)/2].last }},
		{"at a sealed segment's base", func(s []SegmentInfo, b []appended) int64 { return s[1].BaseOffset }},
		{"inside the first segment", func(s []SegmentInfo, b []appended) int64 { return b[5].base + 1 }},
		{"to the log start", func(s []SegmentInfo, b []appended) int64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(80, 81))
			dir := t.TempDir()
			c := testConfig()
			var mu sync.Mutex
			var deleted []int64
			c.Events.Deleted = func(info SegmentInfo) {
				mu.Lock()
				deleted = append(deleted, info.BaseOffset)
				mu.Unlock()
			}
			l := openLog(t, dir, c)
			batches := fill(t, l, rng, 1500, 10)
			if err := l.AssignEpoch(1, 0); err != nil {
				t.Fatal(err)
			}
			if err := l.AssignEpoch(2, batches[len(batches)-2].base); err != nil {
				t.Fatal(err)
			}
			segments := l.Segments()
			offset := tc.where(segments, batches)
			// Everything from the batch holding offset on goes.
			var kept []appended
			for _, b := range batches {
				if b.last < offset {
					kept = append(kept, b)
				}
			}
			newEnd := int64(0)
			if len(kept) > 0 {
				newEnd = kept[len(kept)-1].last + 1
			}
			if err := l.TruncateTo(offset); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != newEnd || l.FlushedOffset() != newEnd {
				t.Fatalf("after TruncateTo(%d): end %d flushed %d, want %d", offset, l.LogEndOffset(), l.FlushedOffset(), newEnd)
			}
			var wantDeleted []int64
			for _, s := range segments {
				if s.BaseOffset > newEnd {
					wantDeleted = append(wantDeleted, s.BaseOffset)
					if _, err := os.Stat(filepath.Join(dir, segmentFileName(s.BaseOffset, logSuffix))); !os.IsNotExist(err) {
						t.Errorf("segment %d still on disk: %v", s.BaseOffset, err)
					}
				}
			}
			mu.Lock()
			if len(deleted) != len(wantDeleted) {
				t.Errorf("Deleted events for %v, want %v", deleted, wantDeleted)
			}
			mu.Unlock()
			if _, err := l.Read(newEnd+1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("read past the truncation: %v", err)
			}
			var wantEpochs []EpochEntry
			for _, e := range []EpochEntry{{1, 0}, {2, batches[len(batches)-2].base}} {
				if e.StartOffset < newEnd {
					wantEpochs = append(wantEpochs, e)
				}
			}
			if got := l.Epochs(); !slices.Equal(got, wantEpochs) {
				t.Fatalf("epochs after truncation %v, want %v", got, wantEpochs)
			}
			checkReadsBack(t, l, kept)
			more := fill(t, l, rng, 400, 10)
			if more[0].base != newEnd {
				t.Fatalf("append after truncation at %d, want %d", more[0].base, newEnd)
			}
			all := append(kept, more...)
			checkReadsBack(t, l, all)
			checkTimestampLookups(t, l, all)

			// Both a crash and a clean restart see the truncated log.
			var info RecoveryInfo
			crashed := openLog(t, crashCopy(t, l, nil), recoveryEvents(c, &info))
			checkReadsBack(t, crashed, all)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			checkReadsBack(t, openLog(t, dir, c), all)
		})
	}
}

func TestTruncateBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(82, 83))
	l := openLog(t, t.TempDir(), testConfig())
	batches := fill(t, l, rng, 50, 3)
	end := l.LogEndOffset()
	if err := l.TruncateTo(end + 10); err != nil || l.LogEndOffset() != end {
		t.Fatalf("TruncateTo past the end: %v, end %d", err, l.LogEndOffset())
	}
	if _, err := l.DeleteBefore(batches[10].base); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(batches[9].base); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("TruncateTo below the log start: %v", err)
	}
}

// TestTruncateWaitsForReaders holds a Section over bytes TruncateTo
// removes: the bytes stay intact until the Section is released.
func TestTruncateWaitsForReaders(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(84, 85))
	l := openLog(t, t.TempDir(), testConfig())
	batches := fill(t, l, rng, 20, 3)
	victim := batches[10]
	s, err := l.Read(victim.base, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	path := lastSegmentLog(l)
	size := fileSize(t, path)
	done := make(chan error)
	go func() { done <- l.TruncateTo(victim.base) }()
	waitFor(t, "the truncated state", func() bool { return l.LogEndOffset() == victim.base })
	// TruncateTo now waits for the section.
	if got := fileSize(t, path); got != size {
		t.Fatalf("file cut to %d while a reader held a section", got)
	}
	got, err := s.ReadAll()
	if err != nil || !bytes.Equal(got[:len(victim.bytes)], victim.bytes) {
		t.Fatalf("section changed under its reader: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("TruncateTo returned (%v) while a reader held a section", err)
	default:
	}
	s.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got >= size {
		t.Fatalf("file not cut after the release: %d bytes", got)
	}
}

// TestTruncateAndDeleteAreCrashSafe snapshots the directory at every fsync
// that TruncateTo and DeleteBefore issue, as a crash at that moment would
// leave it, and opens each snapshot: the log must be the old log or the
// new one, or in between, a prefix of the old one with every batch intact.
func TestTruncateAndDeleteAreCrashSafe(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(86, 87))
	c := testConfig()
	var mu sync.Mutex
	var armed bool
	var snapshots []string
	var l *Log
	c.fsync = func(*os.File, bool) error {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			snapshots = append(snapshots, copyDir(t, l.Dir(), func(name string, data []byte) []byte {
				if name == cleanShutdownName {
					return nil
				}
				return data
			}))
		}
		return nil
	}
	l = openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 1500, 10)
	segments := l.Segments()
	run := func(op func() error) {
		t.Helper()
		mu.Lock()
		armed, snapshots = true, nil
		mu.Unlock()
		if err := op(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		armed = false
		mu.Unlock()
		if len(snapshots) == 0 {
			t.Fatal("no fsync to crash at")
		}
	}
	check := func(minStart, maxStart, minEnd, maxEnd int64) {
		t.Helper()
		for i, dir := range snapshots {
			r, err := Open(dir, c)
			if err != nil {
				t.Fatalf("crash at fsync %d: Open: %v", i, err)
			}
			start, end := r.LogStartOffset(), r.LogEndOffset()
			if start < minStart || start > maxStart || end < minEnd || end > maxEnd {
				t.Fatalf("crash at fsync %d: log [%d, %d), want start in [%d, %d], end in [%d, %d]", i, start, end, minStart, maxStart, minEnd, maxEnd)
			}
			var kept []appended
			for _, b := range batches {
				if b.base >= start && b.last < end {
					kept = append(kept, b)
				}
			}
			checkReadsBack(t, r, kept)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}

	end := l.LogEndOffset()
	cut := segments[1].NextOffset - 3 // inside a sealed segment: later ones go
	run(func() error { return l.TruncateTo(cut) })
	newEnd := l.LogEndOffset()
	check(0, 0, newEnd, end)
	for i, b := range batches {
		if b.last >= newEnd {
			batches = batches[:i]
			break
		}
	}

	start := batches[len(batches)/2].base + 1
	run(func() error { _, err := l.DeleteBefore(start); return err })
	check(0, start, newEnd, newEnd)
}

// TestTruncateToTheEndDropsEmptyEpochs: an epoch started at the log end
// and never written in is dropped by a truncation to the end, durably, so
// a follower can take the leader's older batches there (Kafka's
// truncateFromEnd); earlier epochs stay.
func TestTruncateToTheEndDropsEmptyEpochs(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	if err := l.AssignEpoch(0, 0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	appendBatches(t, l, makeBatch(t, rng, 3, 10, 1000))
	if err := l.AssignEpoch(1, 3); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); len(got) != 1 || got[0].Epoch != 0 {
		t.Fatalf("epochs after truncating to the end: %v, want only epoch 0", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, testConfig())
	if got := l.Epochs(); len(got) != 1 || got[0].Epoch != 0 || l.LogEndOffset() != 3 {
		t.Fatalf("after a reopen: epochs %v, log end %d; want only epoch 0 and 3", got, l.LogEndOffset())
	}
}

// TestAReaderDuringTruncateLeavesTheSegmentActive: while TruncateTo into a
// sealed segment waits for older readers, the segment's tail is cut and
// no longer sealed but its files are still the sealed ones. A reader of
// the new state that reopens them (the file cache evicted them) must not
// rebuild its indexes and store a sealed tail: the segment becomes the
// active one, and offload would take it for one to upload.
func TestAReaderDuringTruncateLeavesTheSegmentActive(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.FileCache = NewFileCache(1)
	c.SegmentBytes = 8 << 10
	l := openLog(t, fastTempDir(t)+"/p", c)
	rng := rand.New(rand.NewPCG(1, 2))
	batches := fill(t, l, rng, 300, 3)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	syncSealed(t, l)
	segs := l.Segments()
	first := segs[0]
	i := slices.IndexFunc(batches, func(b appended) bool { return b.base > (first.BaseOffset+first.NextOffset)/2 })
	cut := batches[i].base
	// A reader of the old state holds TruncateTo in its wait.
	held, err := l.Read(segs[1].BaseOffset, 100)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.TruncateTo(cut) }()
	waitFor(t, "the truncation's state", func() bool { return len(l.state.Load().segments) == 1 })
	s := l.state.Load().segments[0]
	s.openMu.Lock()
	s.dropFilesLocked() // as the file cache evicts them
	s.openMu.Unlock()
	if _, err := l.ReadBytes(first.BaseOffset, 100); err != nil {
		t.Fatalf("reading below the cut during the truncation: %v", err)
	}
	held.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a := l.ActiveSegment(); a.Sealed || a.NextOffset != cut {
		t.Fatalf("after TruncateTo(%d) the active segment is %+v, want it unsealed and ending there", cut, a)
	}
	fill(t, l, rng, 5, 3)
	if a := l.ActiveSegment(); a.BaseOffset == first.BaseOffset && a.Sealed {
		t.Fatalf("the active segment reports sealed after appends: %+v", a)
	}
}
