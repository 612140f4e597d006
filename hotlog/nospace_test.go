package hotlog

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/smallfs"
	"github.com/stratalog/strata/internal/syncbuf"
	"github.com/stratalog/strata/record"
)

// TestAppendOnAFullDiskIsRefusedAndRecovers fills a real 2 MiB file
// system: the append that finds no room fails with ErrNoSpace (not
// ErrFailed) and leaves nothing behind, everything appended before reads
// back, and once space returns the log takes appends again without a
// reopen; after a reopen every appended batch is there and nothing else.
func TestAppendOnAFullDiskIsRefusedAndRecovers(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(41, 42))
	c := testConfig()
	c.SegmentBytes = 256 << 10
	dir := filepath.Join(disk, "log")
	l := openLog(t, dir, c)

	var batches []appended
	var err error
	for range 1000 { // 10 MiB: five times the disk
		var res AppendResult
		b := makeBatch(t, rng, 4, 2500, int64(1_700_000_000_000+len(batches)))
		if res, err = l.Append(checked(t, b)...); err != nil {
			break
		}
		h, _ := record.ParseHeader(b)
		batches = append(batches, appended{base: res.FirstOffset, last: res.LastOffset, bytes: b, maxTime: h.MaxTimestamp})
	}
	if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
		t.Fatalf("appending 10 MiB to a 2 MiB disk: %v, want ErrNoSpace and not ErrFailed", err)
	}
	if len(batches) == 0 {
		t.Fatal("the disk was full before the first append")
	}
	end := batches[len(batches)-1].last + 1
	if got := l.LogEndOffset(); got != end {
		t.Fatalf("log end %d after the refused append, want %d", got, end)
	}
	checkReadsBack(t, l, batches)

	freeDisk(t, filler)
	batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 4, 2500, 1_800_000_000_000))...)
	if batches[len(batches)-1].base != end {
		t.Fatalf("the append after space returned got offset %d, want %d", batches[len(batches)-1].base, end)
	}
	checkReadsBack(t, l, batches)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, c)
	checkReadsBack(t, l, batches)
	if got, want := l.LogEndOffset(), batches[len(batches)-1].last+1; got != want {
		t.Fatalf("log end %d after reopening, want %d", got, want)
	}
}

// TestIndexPagesOnAFullDisk fills a real file system to the last block
// while a segment's indexes are about to need a new page: the index files
// are written through their mappings, and a page that cannot be allocated
// there would kill the process with SIGBUS. Appends instead succeed (the
// index was allocated ahead) or fail with ErrNoSpace, and everything
// appended reads back.
func TestIndexPagesOnAFullDisk(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(43, 44))
	c := testConfig()
	c.SegmentBytes = 1 << 20
	c.SegmentIndexBytes = 64 << 10
	c.IndexIntervalBytes = 0 // an index entry, and a time index entry, per batch
	l := openLog(t, filepath.Join(disk, "log"), c)
	// About 100-byte batches: the time index (12-byte entries) leaves its
	// first page at the 342nd, while the log (about 8.3 pages by then) has
	// room left in its last page.
	const before = 336
	var batches []appended
	for i := range before {
		batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 1, 30, int64(1_700_000_000_000+i)))...)
	}
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for page := make([]byte, 4096); ; {
		if _, err := filler.Write(page); err != nil {
			break // the file system is full
		}
	}
	filler.Close()

	for i := before; i < before+100; i++ {
		b := makeBatch(t, rng, 1, 30, int64(1_700_000_000_000+i))
		res, err := l.Append(checked(t, b)...)
		if err != nil {
			if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
				t.Fatalf("append %d on a full disk: %v, want ErrNoSpace", i, err)
			}
			continue
		}
		batches = append(batches, appended{base: res.FirstOffset, last: res.LastOffset, bytes: b})
	}
	if len(batches) <= before+8 {
		t.Fatalf("only %d appends after the disk filled: the time index never needed a new page", len(batches)-before)
	}
	checkReadsBack(t, l, batches)
	freeDisk(t, filepath.Join(disk, "filler"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkReadsBack(t, openLog(t, filepath.Join(disk, "log"), c), batches)
}

// TestCheckpointOnAFullDiskWaitsForRoom: a recovery point that finds the
// disk full is not persisted, and the log does not fail (which would stop
// the broker): the previous recovery point stands, and the next round
// after space returns persists it.
func TestCheckpointOnAFullDiskWaitsForRoom(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(45, 46))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.RecoveryPointCheckpointMs = 1000
	var logged syncbuf.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l := openLog(t, filepath.Join(disk, "log"), c)
	appendBatches(t, l, makeBatch(t, rng, 4, 100, 1))
	end := l.LogEndOffset()
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, disk)
	clock.waitForTimer(t) // the recovery point's interval
	clock.Advance(time.Second)
	waitFor(t, "the checkpoint to find the disk full", func() bool {
		return strings.Contains(logged.String(), "recovery point not persisted: the disk is full")
	})
	// It tries again an interval later, not at once and again.
	clock.waitForTimer(t)
	if n := strings.Count(logged.String(), "not persisted"); n != 1 {
		t.Fatalf("%d checkpoints refused with the clock stopped, want 1", n)
	}
	if err := l.Failure(); err != nil || l.RecoveryPoint() == end {
		t.Fatalf("after a checkpoint on a full disk: failure %v, recovery point %d (log end %d); want no failure and the old point", err, l.RecoveryPoint(), end)
	}
	freeDisk(t, filler)
	waitFor(t, "the recovery point once there is room", func() bool {
		clock.Advance(time.Second)
		return l.RecoveryPoint() == end
	})
}

// TestRetentionOnAFullDiskFreesItsRoom: retention is how a full disk gets
// room, so a log start that finds no room for its checkpoint does not
// fail the log (the epoch cache is trimmed in memory; no room needed).
// The segments below it are deleted all the same, and once their blocks
// are reclaimed the flusher persists the new start: a reopen finds it,
// and every batch above it.
func TestRetentionOnAFullDiskFreesItsRoom(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(47, 48))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.RecoveryPointCheckpointMs = 1000
	c.FileDeleteDelayMs = 0
	var logged syncbuf.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	dir := filepath.Join(disk, "log")
	l := openLog(t, dir, c)
	var batches []appended
	var base int64
	for epoch := int32(1); len(l.Segments()) < 4; epoch++ {
		b := leaderBatches(t, rng, base, epoch, epoch)
		batches = append(batches, appendReplicated(t, l, b...)...)
		base = batches[len(batches)-1].last + 1
	}
	syncSealed(t, l) // sealing trims the indexes, which would free room
	segments := l.Segments()
	start := segments[2].BaseOffset
	epochsBefore := len(l.Epochs())
	// A checkpoint in place needs no room (TestLogStartPersistsOnAFullDisk);
	// replacing an older release's file does.
	downgradeCheckpoint(t, l)

	filler := fillDisk(t, disk)

	deleted, err := l.DeleteBefore(start)
	if err != nil || len(deleted) != 2 {
		t.Fatalf("DeleteBefore(%d) on a full disk: deleted %d segments, err %v; want 2 and no error", start, len(deleted), err)
	}
	if err := l.Failure(); err != nil {
		t.Fatalf("the log failed: %v", err)
	}
	if want := "log start not persisted: the disk is full"; !strings.Contains(logged.String(), want) {
		t.Fatalf("log says %q, want %q", logged.String(), want)
	}
	if got := len(l.Epochs()); got >= epochsBefore || l.Epochs()[0].StartOffset > start {
		t.Fatalf("epoch cache %+v after the log start moved to %d (it had %d entries)", l.Epochs(), start, epochsBefore)
	}
	// The flusher waits an interval before it tries again.
	clock.waitForTimer(t)
	if n := strings.Count(logged.String(), "not persisted"); n != 1 {
		t.Fatalf("%d writes refused with the clock stopped, want 1 (the log start)", n)
	}
	waitFor(t, "the new log start in log-checkpoint once the deleted segments are reclaimed", func() bool {
		clock.Advance(time.Second)
		data, err := os.ReadFile(filepath.Join(dir, logCheckpointName))
		if err != nil {
			return false
		}
		f, err := parseCheckpointFile(data)
		return err == nil && f.checkpoint.logStartOffset == start
	})
	if err := l.Failure(); err != nil {
		t.Fatalf("the log failed: %v", err)
	}
	freeDisk(t, filler)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, c)
	if got := l.LogStartOffset(); got != start {
		t.Fatalf("log start after reopening %d, want %d", got, start)
	}
	checkReadsBack(t, l, batchesFrom(batches, start))
}

// TestCrashWithTheLogStartUnpersisted: DeleteBefore inside a segment on a
// full disk deletes the segments below it, but cannot persist the new
// start where log-checkpoint must be replaced (an older release's file);
// a crash then reopens the log at the first segment left (as
// Kafka's periodically checkpointed log start may come back lower), with
// every batch from there, and no gap.
func TestCrashWithTheLogStartUnpersisted(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(49, 50))
	c := testConfig()
	// file.delete.delay.ms on a stopped clock: nothing is reclaimed, the disk stays full
	l := openLog(t, filepath.Join(disk, "log"), c)
	var batches []appended
	for len(l.Segments()) < 5 {
		batches = append(batches, fill(t, l, rng, 50, 4)...)
	}
	syncSealed(t, l)
	segments := l.Segments()
	inside := segments[2].BaseOffset + 1
	downgradeCheckpoint(t, l) // see TestRetentionOnAFullDiskFreesItsRoom
	fillDisk(t, disk)
	deleted, err := l.DeleteBefore(inside)
	if err != nil || len(deleted) != 2 || l.Failure() != nil {
		t.Fatalf("DeleteBefore(%d) on a full disk: %d segments deleted, err %v, failure %v; want 2, no error", inside, len(deleted), err, l.Failure())
	}
	if got := l.LogStartOffset(); got != inside {
		t.Fatalf("log start %d, want %d", got, inside)
	}
	crashed := openLog(t, crashCopy(t, l, nil), c)
	if got, want := crashed.LogStartOffset(), segments[2].BaseOffset; got != want {
		t.Fatalf("log start after a crash %d, want %d (the first segment left)", got, want)
	}
	checkReadsBack(t, crashed, batchesFrom(batches, segments[2].BaseOffset))
	if got, want := crashed.LogEndOffset(), batches[len(batches)-1].last+1; got != want {
		t.Fatalf("log end after a crash %d, want %d", got, want)
	}
}

// TestLogStartPersistsOnAFullDisk: a log's log-checkpoint is overwritten
// in place, so DeleteBefore on a full disk persists its new start: a
// crash reopens the log there, not at the first segment left.
func TestLogStartPersistsOnAFullDisk(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(51, 52))
	c := testConfig()
	var logged syncbuf.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l := openLog(t, filepath.Join(disk, "log"), c)
	var batches []appended
	for len(l.Segments()) < 5 {
		batches = append(batches, fill(t, l, rng, 50, 4)...)
	}
	syncSealed(t, l)
	inside := l.Segments()[2].BaseOffset + 1
	fillDisk(t, disk)
	if deleted, err := l.DeleteBefore(inside); err != nil || len(deleted) != 2 || l.Failure() != nil {
		t.Fatalf("DeleteBefore(%d) on a full disk: %d segments deleted, err %v, failure %v; want 2, no error", inside, len(deleted), err, l.Failure())
	}
	if strings.Contains(logged.String(), "log start not persisted") {
		t.Fatalf("log says %q", logged.String())
	}
	crashed := openLog(t, crashCopy(t, l, nil), c)
	if got := crashed.LogStartOffset(); got != inside {
		t.Fatalf("log start after a crash %d, want %d", got, inside)
	}
	checkReadsBack(t, crashed, batchesFrom(batches, inside))
}

// fillDisk writes a file into the file system at disk until no byte fits
// (a page at a time, then less, for a file system of smaller blocks), and
// returns its path.
func fillDisk(t *testing.T, disk string) string {
	t.Helper()
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{4096, 512, 1} {
		b := make([]byte, size)
		for err = nil; err == nil; {
			_, err = f.Write(b)
		}
		if !isNoSpace(err) {
			t.Fatalf("filling the disk: %v", err)
		}
	}
	return filler
}

// freeDisk gives back the room filler took: cut to nothing first, since a
// child process another test forks may hold its descriptor for a moment
// (until its exec closes it), and a file removed while open keeps its
// blocks until then.
func freeDisk(t *testing.T, filler string) {
	t.Helper()
	if err := os.Truncate(filler, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
}
