package hotlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// TestDeletedSegmentWaitsForItsReaders: DeleteBefore takes a segment's
// .log out of the log at once (retired), but its bytes stay whole while a
// Section from before the deletion is held; once released, the retired
// file is reclaimed. In a synctest bubble, so that "the reclaim waits" is
// an observed state (every goroutine of the log blocked), not a race.
func TestDeletedSegmentWaitsForItsReaders(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(71, 72))
		l := openLog(t, t.TempDir(), testConfig())
		fill(t, l, rng, 600, 10)
		first := l.Segments()[0]
		s, err := l.Read(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.DeleteBefore(l.Segments()[2].BaseOffset); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		name := filepath.Join(l.Dir(), segmentFileName(first.BaseOffset, logSuffix))
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Fatalf("segment %d's .log is still in the log: %v", first.BaseOffset, err)
		}
		retired := name + deletedSuffix
		if size := fileSize(t, retired); size != first.Size {
			t.Fatalf("the retired .log is %d bytes while a reader holds it, want all %d", size, first.Size)
		}
		if got, err := s.ReadAll(); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the held section changed after the deletion: %v", err)
		}
		s.Release()
		synctest.Wait()
		if _, err := os.Stat(retired); !os.IsNotExist(err) {
			t.Fatalf("the retired .log is still there once its reader is gone: %v", err)
		}
	})
}

// TestDeletedSegmentWaitsOutFileDeleteDelay: with file.delete.delay.ms, a
// deleted segment's log, once no reader holds it, lingers that long before
// it is freed; Close does not wait for the delay.
func TestDeletedSegmentWaitsOutFileDeleteDelay(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(75, 76))
	c := testConfig()
	clock := newFakeClock()
	// Not the checkpoint interval (60 s), so that the flushers' timers
	// are never due when the reclaimer's is.
	c.Clock, c.FileDeleteDelayMs = clock, 90_000
	delay := time.Duration(c.FileDeleteDelayMs) * time.Millisecond
	l := openLog(t, t.TempDir(), c)
	fill(t, l, rng, 600, 10)
	first := l.Segments()[0]
	// timers counts the timers due file.delete.delay.ms from now: the
	// flusher's come and go too, and counting them all found one of
	// those while the reclaimer's came after the clock had moved.
	timers := func() int {
		clock.mu.Lock()
		defer clock.mu.Unlock()
		due := clock.now.Add(delay)
		n := 0
		for _, w := range clock.waiters {
			if w.at.Equal(due) {
				n++
			}
		}
		return n
	}
	before := timers()
	second := l.Segments()[1]
	if _, err := l.DeleteBefore(l.Segments()[2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	// The space is still used, and on its way back: what the disk
	// pressure watch counts as free.
	if got, logs := l.Unreclaimed(), first.Size+second.Size; got < logs {
		t.Fatalf("Unreclaimed is %d right after the delete, want at least the two logs' %d", got, logs)
	}
	retired := filepath.Join(l.Dir(), segmentFileName(first.BaseOffset, logSuffix)) + deletedSuffix
	waitFor(t, "the reclaimer's timer", func() bool { return timers() > before })
	clock.Advance(delay - time.Second)
	if size := fileSize(t, retired); size != first.Size {
		t.Fatalf("the retired .log is %d bytes before file.delete.delay.ms passed, want all %d", size, first.Size)
	}
	if l.Unreclaimed() < first.Size+second.Size {
		t.Fatalf("Unreclaimed fell to %d before file.delete.delay.ms passed", l.Unreclaimed())
	}
	clock.Advance(time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(retired); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retired .log is still there after file.delete.delay.ms")
		}
	}
	waitFor(t, "nothing left unreclaimed", func() bool { return l.Unreclaimed() == 0 })
	fill(t, l, rng, 600, 10)
	before = timers()
	if _, err := l.DeleteBefore(l.Segments()[len(l.Segments())-2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reclaimer's timer", func() bool { return timers() > before })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseLeavesRetiredSegmentsToOpen: Close does not wait for a reader
// that still holds a deleted segment; the retired file stays, and the
// next Open reclaims it, as it does what a crash leaves retired.
func TestCloseLeavesRetiredSegmentsToOpen(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(73, 74))
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	batches := fill(t, l, rng, 600, 10)
	first := l.Segments()[0]
	s, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	start := l.Segments()[2].BaseOffset
	if _, err := l.DeleteBefore(start); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, l, nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	retired := segmentFileName(first.BaseOffset, logSuffix) + deletedSuffix
	for _, dir := range []string{dir, crashed} {
		if _, err := os.Stat(filepath.Join(dir, retired)); err != nil {
			t.Fatalf("%s: the retired .log is gone before Open: %v", dir, err)
		}
		r := openLog(t, dir, testConfig())
		if _, err := os.Stat(filepath.Join(dir, retired)); !os.IsNotExist(err) {
			t.Fatalf("%s: Open left the retired .log: %v", dir, err)
		}
		if got := r.LogStartOffset(); got != start {
			t.Fatalf("%s: log start %d after Open, want %d", dir, got, start)
		}
		checkReadsBack(t, r, batchesFrom(batches, start))
	}
}

// TestReclaimTurn: a paced reclaim frees the whole file and takes it off
// the disk's backlog; one whose Log is closing cuts nothing more and
// leaves the file for Open; above reclaimPacedBelow (unpaced) a reclaim
// frees the file and leaves the backlog as it found it.
func TestReclaimTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	retired := func(size int64) string {
		f, err := os.CreateTemp(dir, "*"+deletedSuffix)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	reclaimed := func(turn *reclaimTurn, path string, stop <-chan struct{}) int64 {
		t.Helper()
		taken := turn.take(filesSize([]string{path}))
		freed, err := reclaim(path, turn, stop, nil)
		if err != nil {
			t.Fatal(err)
		}
		turn.release(taken, freed)
		return freed
	}
	gone := func(path string) {
		t.Helper()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", path, err)
		}
	}
	const size = 3*reclaimChunk + 5
	const cuts = (size + reclaimChunk - 1) / reclaimChunk
	turn := newReclaimTurn()
	// The turn's pauses are counted and end at once (the test's goroutine
	// runs every reclaim).
	pauses := 0
	turn.pause = func(time.Duration) <-chan time.Time {
		pauses++
		over := make(chan time.Time, 1)
		over <- time.Time{}
		return over
	}
	path := retired(size)
	if freed := reclaimed(turn, path, nil); freed != size {
		t.Fatalf("a paced reclaim freed %d bytes, want %d", freed, size)
	}
	gone(path)
	if pauses != cuts {
		t.Fatalf("a paced reclaim paused %d times, want once after each of its %d cuts", pauses, cuts)
	}
	if n := turn.backlog.Load(); n != 0 {
		t.Fatalf("backlog %d after the reclaim, want 0", n)
	}

	closing := make(chan struct{})
	close(closing)
	path = retired(size)
	if freed := reclaimed(turn, path, closing); freed != 0 || fileSize(t, path) != size {
		t.Fatalf("a reclaim of a closing Log freed %d bytes, left %d; want none freed", freed, fileSize(t, path))
	}
	if n := turn.backlog.Load(); n != 0 {
		t.Fatalf("backlog %d after a stopped reclaim, want 0", n)
	}
	if freed := reclaimed(nil, path, nil); freed != size {
		t.Fatalf("Open's reclaim freed %d bytes, want %d", freed, size)
	}
	gone(path)

	// A Log closing in a pause: the cut before it is freed and counted.
	closing = make(chan struct{})
	counted := turn.pause
	turn.pause = func(time.Duration) <-chan time.Time {
		close(closing)
		return nil // never fires
	}
	path = retired(size)
	if freed := reclaimed(turn, path, closing); freed != reclaimChunk || fileSize(t, path) != size-reclaimChunk {
		t.Fatalf("a reclaim stopped in its first pause freed %d bytes, left %d; want %d freed", freed, fileSize(t, path), reclaimChunk)
	}
	if n := turn.backlog.Load(); n != 0 {
		t.Fatalf("backlog %d after a reclaim stopped in a pause, want 0", n)
	}
	if freed := reclaimed(nil, path, nil); freed != size-reclaimChunk {
		t.Fatalf("Open's reclaim freed %d bytes, want %d", freed, size-reclaimChunk)
	}
	gone(path)

	turn.pause, pauses = counted, 0
	turn.backlog.Store(reclaimPacedBelow)
	path = retired(size)
	if freed := reclaimed(turn, path, nil); freed != size {
		t.Fatalf("a reclaim above reclaimPacedBelow freed %d bytes, want %d", freed, size)
	}
	gone(path)
	if pauses != 0 {
		t.Fatalf("a reclaim above reclaimPacedBelow paused %d times, want none", pauses)
	}
	if n := turn.backlog.Load(); n != reclaimPacedBelow {
		t.Fatalf("backlog %d, want the %d it started from", n, reclaimPacedBelow)
	}
}
