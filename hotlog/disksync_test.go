package hotlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestKernelVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v1045", 6, 18, true},
		{"5.8.0-63-generic", 5, 8, true},
		{"5.4.0", 5, 4, true},
		{"4.19-rc1", 4, 19, true},
		{"6", 0, 0, false},
		{"x.y", 0, 0, false},
	} {
		major, minor, ok := kernelVersion(c.release)
		if major != c.major || minor != c.minor || ok != c.ok {
			t.Errorf("kernelVersion(%q) = %d, %d, %v; want %d, %d, %v", c.release, major, minor, ok, c.major, c.minor, c.ok)
		}
	}
}

// TestSyncfsErrorsFor: a syncfs is shared only where it reports a failed
// write, metadata included: Linux 5.8 for ext4 without a journal (one call
// at a time), 5.17 for journaled file systems.
func TestSyncfsErrorsFor(t *testing.T) {
	const unknownFS = 0x794c7630 // overlayfs
	for _, c := range []struct {
		major, minor int
		fs           int64
		journal      journalState
		want         SyncfsErrors
	}{
		{5, 7, unix.TMPFS_MAGIC, journalUnknown, SyncfsMayMiss},
		{5, 8, unix.TMPFS_MAGIC, journalUnknown, SyncfsReportsAll},
		{5, 7, unix.EXT4_SUPER_MAGIC, journalOff, SyncfsMayMiss},
		{5, 8, unix.EXT4_SUPER_MAGIC, journalOff, SyncfsReportsOnce},
		{6, 18, unix.EXT4_SUPER_MAGIC, journalOff, SyncfsReportsOnce},
		{5, 16, unix.EXT4_SUPER_MAGIC, journalOn, SyncfsMayMiss},
		{5, 17, unix.EXT4_SUPER_MAGIC, journalOn, SyncfsReportsAll},
		{6, 1, unix.EXT4_SUPER_MAGIC, journalUnknown, SyncfsMayMiss},
		{5, 16, unix.XFS_SUPER_MAGIC, journalUnknown, SyncfsMayMiss},
		{5, 17, unix.XFS_SUPER_MAGIC, journalUnknown, SyncfsReportsAll},
		{6, 1, unix.BTRFS_SUPER_MAGIC, journalUnknown, SyncfsReportsAll},
		{6, 1, unknownFS, journalUnknown, SyncfsMayMiss},
	} {
		if got := syncfsErrorsFor(c.major, c.minor, c.fs, c.journal); got != c.want {
			t.Errorf("Linux %d.%d, file system %#x, journal %d: %v, want %v", c.major, c.minor, c.fs, c.journal, got, c.want)
		}
	}
}

// openTestDiskSync opens a DiskSync on dir that coalesces as on a
// journaled file system whatever dir's is, whose system calls the test
// replaces.
func openTestDiskSync(t *testing.T, dir string) *DiskSync {
	t.Helper()
	d, err := OpenDiskSync(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	d.errors = SyncfsReportsAll
	return d
}

// createFiles creates n empty files in dir.
func createFiles(t *testing.T, dir string, n int) []*os.File {
	t.Helper()
	files := make([]*os.File, n)
	for i := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files[i] = f
	}
	return files
}

// TestDiskSyncCoalescesWaitersIntoOneSyncfs holds the first caller's
// fdatasync while fifteen more callers, each with its own file, arrive:
// one syncfs then covers them all.
func TestDiskSyncCoalescesWaitersIntoOneSyncfs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	release := make(chan struct{})
	var held sync.Once
	d.fdatasync = func(*os.File) error {
		held.Do(func() { <-release })
		return nil
	}
	d.syncfs = func(*os.File) error { return nil }
	files := createFiles(t, dir, 16)
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	sync := func(i int) {
		defer wg.Done()
		errs[i] = d.Sync(files[i])
	}
	wg.Add(1)
	go sync(0)
	waitFor(t, "the first fdatasync", func() bool { _, n, _ := d.Calls(); return n == 1 })
	for i := 1; i < len(files); i++ {
		wg.Add(1)
		go sync(i)
	}
	waitFor(t, "fifteen callers in the next round", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.next != nil && len(d.mu.next.files) == len(files)-1
	})
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Sync(file %d): %v", i, err)
		}
	}
	if syncfs, fdatasync, _ := d.Calls(); syncfs != 1 || fdatasync != 1 {
		t.Fatalf("16 callers took %d syncfs and %d fdatasync calls, want 1 and 1", syncfs, fdatasync)
	}
}

// TestFailedSyncfsFailsEveryFileFromThenOn: when syncfs reports a write
// error, every file of the round fails, though fdatasync of the others
// would answer nil, and every later call through the DiskSync fails
// without a system call.
func TestFailedSyncfsFailsEveryFileFromThenOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	files := createFiles(t, dir, 4)
	d.syncfs = func(*os.File) error { return unix.EIO }
	d.fdatasync = func(*os.File) error { return nil }
	d.fsync = func(*os.File) error { return nil }
	offline := func() bool {
		select {
		case <-d.Offline():
			return true
		default:
			return false
		}
	}
	if d.SyncfsFailed() || offline() {
		t.Fatal("a new disk sync says a syncfs failed")
	}
	for i, err := range d.run(d.dir, files, nil, false) {
		if !errors.Is(err, unix.EIO) {
			t.Errorf("file %d: %v, want the syncfs's EIO", i, err)
		}
	}
	if !d.SyncfsFailed() || !offline() {
		t.Error("after a failed syncfs the disk sync does not say so")
	}
	syncfs, fdatasync, fsync := d.Calls()
	for name, err := range map[string]error{
		"Sync":     d.Sync(files[0]),
		"SyncFile": d.SyncFile(files[1]),
		"SyncAll":  errors.Join(d.SyncAll(files[2:])...),
		"a round":  errors.Join(d.run(d.roundsDir, files, nil, false)...),
	} {
		if !errors.Is(err, unix.EIO) {
			t.Errorf("%s after the failed syncfs: %v, want the syncfs's EIO", name, err)
		}
	}
	if s, fd, f := d.Calls(); s != syncfs || fd != fdatasync || f != fsync {
		t.Errorf("calls after the failure: syncfs %d, fdatasync %d, fsync %d; want none", s-syncfs, fd-fdatasync, f-fsync)
	}
}

// TestDiskSyncAcknowledgesOnlyWhatACallCovered runs 32 logs sharing a
// DiskSync with durable appenders, and models the disk: a system call
// makes durable what was written before it began (syncfs: every log file;
// fdatasync: its own). Every acknowledged append must lie within what some
// call made durable.
func TestDiskSyncAcknowledgesOnlyWhatACallCovered(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	var durable struct {
		sync.Mutex
		size map[string]int64
	}
	durable.size = map[string]int64{}
	cover := func(path string) {
		info, err := os.Stat(path)
		if err != nil {
			return // a segment removed meanwhile
		}
		durable.Lock()
		durable.size[path] = max(durable.size[path], info.Size())
		durable.Unlock()
	}
	d.fdatasync = func(f *os.File) error { cover(f.Name()); return nil }
	d.syncfs = func(*os.File) error {
		logs, err := filepath.Glob(filepath.Join(root, "*", "*"+logSuffix))
		for _, path := range logs {
			cover(path)
		}
		return err
	}
	c := testConfig()
	c.fsync = nil
	c.SegmentBytes = 256 << 10
	c.DiskSync = d
	const logs, each = 32, 60
	var wg sync.WaitGroup
	for i := range logs {
		l := openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		if l.syncer.disk != d {
			t.Fatal("a log beside the disk sync does not use it")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			for range each {
				res, err := l.Append(checked(t, makeBatch(t, rng, 1, 1+rng.IntN(2000), 1))...)
				if err != nil {
					t.Error(err)
					return
				}
				// The only appender: the active segment's size now ends
				// with this batch.
				active := l.state.Load().active()
				path := active.files.Load().log.Name()
				size := active.tail.Load().size
				if err := res.WaitAck(context.Background()); err != nil {
					t.Error(err)
					return
				}
				durable.Lock()
				covered := durable.size[path]
				durable.Unlock()
				if covered < size {
					t.Errorf("%s: acknowledged at %d bytes, but only %d were written before a sync call", path, size, covered)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncfs, fdatasync, _ := d.Calls()
	t.Logf("%d durable appends to %d logs: %d syncfs and %d fdatasync calls", logs*each, logs, syncfs, fdatasync)
	if syncfs == 0 {
		t.Fatal("no round was shared")
	}
}

// TestLogOnAnotherFileSystemSyncsItsOwnFiles: a DiskSync's syncfs reaches
// one file system; a log elsewhere fdatasyncs its own files.
func TestLogOnAnotherFileSystemSyncsItsOwnFiles(t *testing.T) {
	t.Parallel()
	const shm = "/dev/shm"
	var here, there unix.Stat_t
	dir := t.TempDir()
	if unix.Stat(shm, &there) != nil || unix.Stat(dir, &here) != nil || here.Dev == there.Dev {
		t.Skip("needs /dev/shm on a file system other than the test's temporary directory")
	}
	d := openTestDiskSync(t, dir)
	other, err := os.MkdirTemp(shm, "hotlog-disksync-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	c := testConfig()
	c.DiskSync = d
	if l := openLog(t, other, c); l.syncer.disk != nil {
		t.Fatal("a log on another file system uses the disk sync")
	}
	if l := openLog(t, filepath.Join(dir, "log"), c); l.syncer.disk != d {
		t.Fatal("a log on the disk sync's file system does not use it")
	}
}

// openSyncedLog opens a log at dir and makes one append durable: a new
// log's first round also fsyncs its directory, which the log's own
// flusher does, so the rounds after it are disk rounds.
func openSyncedLog(t *testing.T, dir string, c Config, rng *rand.Rand) *Log {
	t.Helper()
	l := openLog(t, dir, c)
	appendBatches(t, l, makeBatch(t, rng, 1, 100, 1))
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDiskRoundCoversEveryQueuedLog holds one log's disk round in its
// fdatasync while fifteen more logs' appenders wait: the next disk round
// makes all fifteen durable with one syncfs.
func TestDiskRoundCoversEveryQueuedLog(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	var hold atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	var held sync.Once
	d.fdatasync = func(*os.File) error {
		if hold.Load() {
			held.Do(func() { close(entered); <-release })
		}
		return nil
	}
	var roundsSyncfs atomic.Int32 // the disk rounds' calls, not a flusher's
	d.syncfs = func(dir *os.File) error {
		if dir == d.roundsDir {
			roundsSyncfs.Add(1)
		}
		return nil
	}
	c := testConfig()
	c.DiskSync = d
	rng := rand.New(rand.NewPCG(90, 91))
	const logs = 16
	appended := make([]AppendResult, logs)
	for i := range logs {
		l := openSyncedLog(t, filepath.Join(root, fmt.Sprint(i)), c, rng)
		res, err := l.Append(checked(t, makeBatch(t, rng, 1, 100, 1))...)
		if err != nil {
			t.Fatal(err)
		}
		appended[i] = res
	}
	roundsSyncfs.Store(0)
	hold.Store(true)
	acked := make(chan error, logs)
	wait := func(res AppendResult) { acked <- res.WaitAck(context.Background()) }
	go wait(appended[0])
	<-entered
	for _, res := range appended[1:] {
		go wait(res)
	}
	waitFor(t, "fifteen logs queued for the next disk round", func() bool {
		d.rounds.mu.Lock()
		defer d.rounds.mu.Unlock()
		return len(d.rounds.mu.queue) == logs-1
	})
	close(release)
	for range logs {
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
	// The held fdatasync, then one syncfs for the fifteen. (A log's
	// flusher may also run a round of its own, woken by the hand-off of
	// its first one: its calls are not a disk round's.)
	if n := roundsSyncfs.Load(); n != 1 {
		t.Fatalf("%d logs queued for a disk round were made durable with %d syncfs calls, want 1", logs-1, n)
	}
}

// TestFailedDiskRoundFailsEveryLogOfTheRound: when a disk round's syncfs
// fails, every log of the round is failed, in both shared modes, though
// fdatasync would have blamed one file; a log whose round had already
// ended keeps what it acknowledged. One log's round is held in its
// fdatasync meanwhile, so one round covers the three.
func TestFailedDiskRoundFailsEveryLogOfTheRound(t *testing.T) {
	t.Parallel()
	for _, mode := range []SyncfsErrors{SyncfsReportsAll, SyncfsReportsOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			d := openTestDiskSync(t, root)
			d.errors = mode
			bad := filepath.Join(root, "bad")
			var failing atomic.Bool
			entered, release := make(chan struct{}), make(chan struct{})
			var held sync.Once
			d.syncfs = func(*os.File) error {
				if failing.Load() {
					return unix.EIO
				}
				return nil
			}
			d.fdatasync = func(f *os.File) error {
				if !failing.Load() {
					return nil
				}
				if strings.HasPrefix(f.Name(), filepath.Join(root, "holder")+string(filepath.Separator)) {
					held.Do(func() { close(entered); <-release })
					return nil
				}
				if strings.HasPrefix(f.Name(), bad+string(filepath.Separator)) {
					return unix.EIO
				}
				return nil
			}
			c := testConfig()
			c.DiskSync = d
			rng := rand.New(rand.NewPCG(92, 93))
			names := []string{"holder", "good-1", "bad", "good-2"}
			appended := make([]AppendResult, len(names))
			logs := make([]*Log, len(names))
			for i, name := range names {
				l := openSyncedLog(t, filepath.Join(root, name), c, rng)
				logs[i] = l
				res, err := l.Append(checked(t, makeBatch(t, rng, 1, 100, 1))...)
				if err != nil {
					t.Fatal(err)
				}
				appended[i] = res
			}
			failing.Store(true)
			errs := make([]error, len(names))
			var wg sync.WaitGroup
			wg.Go(func() { errs[0] = appended[0].WaitAck(context.Background()) })
			<-entered
			for i, res := range appended[1:] {
				wg.Go(func() { errs[i+1] = res.WaitAck(context.Background()) })
			}
			waitFor(t, "three logs queued for the next disk round", func() bool {
				d.rounds.mu.Lock()
				defer d.rounds.mu.Unlock()
				return len(d.rounds.mu.queue) == len(names)-1
			})
			close(release)
			wg.Wait()
			for i, name := range names {
				want := name != "holder"
				if failed := errs[i] != nil; failed != want {
					t.Errorf("%s: WaitAck = %v", name, errs[i])
				}
				if want && !errors.Is(errs[i], ErrFailed) {
					t.Errorf("%s: WaitAck = %v, want ErrFailed", name, errs[i])
				}
				if failure := logs[i].Failure(); (failure != nil) != want || want && !errors.Is(failure, ErrFailed) {
					t.Errorf("%s: Failure() = %v", name, failure)
				}
			}
		})
	}
}

// minuteCheckpoints returns the test config for logs on d, with a fake
// clock and a recovery-point interval of a minute.
func minuteCheckpoints(d *DiskSync) (Config, *fakeClock) {
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.RecoveryPointCheckpointMs = 60_000
	c.DiskSync = d
	return c, clock
}

// TestDiskRoundsPersistTheRecoveryPoint: a log whose appends are made
// durable by disk rounds, not by its flusher, still persists its recovery
// point once the interval has passed: the round that moves the flushed
// point away from the persisted one wakes the flusher to arm the interval.
func TestDiskRoundsPersistTheRecoveryPoint(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	c, clock := minuteCheckpoints(d)
	rng := rand.New(rand.NewPCG(94, 95))
	l := openSyncedLog(t, filepath.Join(root, "log"), c, rng)
	clock.waitForTimer(t)
	clock.Advance(time.Minute)
	waitFor(t, "the first recovery point", func() bool { return l.RecoveryPoint() == 1 })

	res, err := l.Append(checked(t, makeBatch(t, rng, 3, 100, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.waitForTimer(t) // the flusher armed the checkpoint interval
	if l.RecoveryPoint() != 1 {
		t.Fatalf("recovery point %d before the interval", l.RecoveryPoint())
	}
	clock.Advance(time.Minute)
	waitFor(t, "the recovery point", func() bool { return l.RecoveryPoint() == 4 })
}

// TestDiskSpreadsItsLogsCheckpoints: logs opened together on one file
// system persist their recovery points spread over the interval, not all
// at once: 4,000 partitions' checkpoints in phase stalled produce for
// seconds every interval (docs/bench.md). Each log opened counts part of
// its first interval as passed; the first opened, none.
func TestDiskSpreadsItsLogsCheckpoints(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	c, clock := minuteCheckpoints(d)
	const interval, logs = time.Minute, 20
	rng := rand.New(rand.NewPCG(102, 103))
	var tenths [10]int
	var passed [logs]time.Duration
	opened := make([]*Log, logs)
	for i := range opened {
		opened[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		f := &opened[i].flusher
		f.mu.Lock()
		passed[i] = clock.Now().Sub(f.mu.lastCheckpoint)
		f.mu.Unlock()
		if passed[i] < 0 || passed[i] >= interval {
			t.Fatalf("log %d counts %v of its first %v checkpoint interval as passed", i, passed[i], interval)
		}
		tenths[passed[i]*10/interval]++
	}
	if passed[0] != 0 {
		t.Fatalf("the first log opened counts %v of its first interval as passed, want none", passed[0])
	}
	for i, n := range tenths {
		if n > logs/4 {
			t.Fatalf("%d of %d logs' first checkpoints fall in the same tenth (%d) of the interval: %v", n, logs, i, tenths)
		}
	}
	// The second log's recovery point is persisted once the rest of its
	// first interval has passed, not a whole interval after it opened;
	// and a checkpoint made later than its phase (here 7 s: a seal, the
	// first after an idle spell) does not move the next one off it.
	l := opened[1]
	due := clock.Now().Add(interval - passed[1])
	appendBatches(t, l, makeBatch(t, rng, 3, 100, 1))
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock.waitForTimer(t)
	clock.Advance(interval - passed[1] + 7*time.Second)
	waitFor(t, "the second log's recovery point", func() bool { return l.RecoveryPoint() == 3 })
	l.flusher.mu.Lock()
	next := l.flusher.mu.lastCheckpoint.Add(interval)
	l.flusher.mu.Unlock()
	if want := due.Add(interval); !next.Equal(want) {
		t.Fatalf("after a checkpoint 7 s past its phase, the next is due %v after the first was, want %v", next.Sub(due), interval)
	}
}

// TestDiskSyncMakesOneCallAtATimePerDescriptor runs flushers' Sync rounds
// and disk rounds together: syncfs reports an error once per descriptor,
// so no two syncfs calls may be in flight at once through one descriptor,
// or one could miss the other's error; the two kinds of rounds use two.
// On ext4 without a journal a failed metadata write is reported once for
// the whole device: no two calls at once through any descriptor.
func TestDiskSyncMakesOneCallAtATimePerDescriptor(t *testing.T) {
	t.Parallel()
	for _, mode := range []SyncfsErrors{SyncfsReportsAll, SyncfsReportsOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			oneCallAtATime(t, mode)
		})
	}
}

func oneCallAtATime(t *testing.T, mode SyncfsErrors) {
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	d.errors = mode
	var mu sync.Mutex
	inFlight, most := map[*os.File]int{}, 0
	all, mostAll := 0, 0
	used := map[*os.File]bool{}
	d.syncfs = func(dir *os.File) error {
		mu.Lock()
		inFlight[dir]++
		all++
		most, mostAll = max(most, inFlight[dir]), max(mostAll, all)
		used[dir] = true
		mu.Unlock()
		time.Sleep(100 * time.Microsecond)
		mu.Lock()
		inFlight[dir]--
		all--
		mu.Unlock()
		return nil
	}
	// A slow fdatasync lets Sync callers pile up into rounds of several
	// files, which syncfs covers.
	d.fdatasync = func(*os.File) error { time.Sleep(time.Millisecond); return nil }
	c := testConfig()
	c.DiskSync = d
	rng := rand.New(rand.NewPCG(96, 97))
	const logs, each = 8, 40
	opened := make([]*Log, logs)
	for i := range opened {
		opened[i] = openSyncedLog(t, filepath.Join(root, fmt.Sprint(i)), c, rng)
	}
	others := filepath.Join(root, "others")
	if err := os.Mkdir(others, 0o755); err != nil {
		t.Fatal(err)
	}
	files := createFiles(t, others, logs)
	var wg sync.WaitGroup
	for i, l := range opened {
		batches := make([][]byte, each)
		for j := range batches {
			batches[j] = makeBatch(t, rng, 1, 100, 1)
		}
		wg.Go(func() { // disk rounds
			for _, b := range batches {
				res, err := l.Append(checked(t, b)...)
				if err == nil {
					err = res.WaitAck(context.Background())
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() { // rounds of the kind a flusher runs
			for range each {
				if err := d.Sync(files[i]); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() { // many files at once, in turn with Sync rounds
			for range each / 4 {
				if err := errors.Join(d.SyncAll(files)...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d syncfs calls were in flight at once through one descriptor", most)
	}
	if mode == SyncfsReportsOnce && mostAll != 1 {
		t.Fatalf("%d syncfs calls were in flight at once where the device reports an error once", mostAll)
	}
	if !used[d.dir] || !used[d.roundsDir] || d.dir == d.roundsDir {
		t.Fatal("the Sync rounds and the disk rounds did not each make syncfs calls through a descriptor of their own")
	}
}

// TestSyncedFollowsTheFlushedPoint: the Synced event of a round comes
// after the round moved the flushed point, which its listener (the
// replica's high watermark) reads, in disk rounds and the flusher's alike.
func TestSyncedFollowsTheFlushedPoint(t *testing.T) {
	t.Parallel()
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk-rounds=%v", disk), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			c := testConfig()
			if disk {
				c.DiskSync = openTestDiskSync(t, root)
			}
			var l atomic.Pointer[Log]
			seen := make(chan int64, 100)
			c.Events.Synced = func(SyncInfo) {
				if l := l.Load(); l != nil {
					seen <- l.FlushedOffset()
				}
			}
			rng := rand.New(rand.NewPCG(98, 99))
			log := openSyncedLog(t, filepath.Join(root, "log"), c, rng)
			l.Store(log)
			res, err := log.Append(checked(t, makeBatch(t, rng, 3, 100, 1))...)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.WaitAck(context.Background()); err != nil {
				t.Fatal(err)
			}
			var last int64 = -1
			for len(seen) > 0 {
				last = <-seen
			}
			if last != 4 {
				t.Fatalf("the listener of the round's Synced event read the flushed point %d, want 4", last)
			}
		})
	}
}

// TestRollRoundReleasesWaitersBeforeSealingIndexes: a round that rolled
// makes the sealed log, the directory and the active log durable, releases
// its waiters, and only then fsyncs the sealed segment's indexes, which no
// acknowledgement needs; meanwhile later appends are acknowledged by disk
// rounds.
func TestRollRoundReleasesWaitersBeforeSealingIndexes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	d.syncfs = func(*os.File) error { return nil }
	d.fdatasync = func(*os.File) error { return nil }
	c := testConfig()
	c.DiskSync = d
	var holdIndexes atomic.Bool
	indexFsync, release := make(chan struct{}), make(chan struct{})
	var reached sync.Once
	d.fsync = func(f *os.File) error { // the seal's index files, their round's only caller's
		if holdIndexes.Load() && (strings.HasSuffix(f.Name(), indexSuffix) || strings.HasSuffix(f.Name(), timeIndexSuffix)) {
			reached.Do(func() { close(indexFsync) })
			<-release
		}
		return nil
	}
	sealed := make(chan SegmentInfo, 4)
	c.Events.Sealed = func(info SegmentInfo) { sealed <- info }
	rng := rand.New(rand.NewPCG(100, 101))
	l := openSyncedLog(t, filepath.Join(root, "log"), c, rng)
	releaseIndexes := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseIndexes) // before the log's Close, which needs the round
	holdIndexes.Store(true)
	// Two batches of 40 KiB: the second rolls the 64 KiB segment.
	appendBatches(t, l, makeBatch(t, rng, 1, 40<<10, 1))
	ack := appendRolling(t, l, rng)
	acked := make(chan error, 1)
	// awaitAck fails the test unless the wait in flight on acked succeeds
	// while the index fsync is held (a liveness bound, not a latency one).
	awaitAck := func(what string) {
		t.Helper()
		select {
		case err := <-acked:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was not acknowledged while the sealed segment's indexes were being fsynced", what)
		}
	}
	go func() { acked <- ack.Wait(context.Background()) }()
	waitFor(t, "the seal's index fsync", func() bool {
		select {
		case <-indexFsync:
			return true
		default:
			return false
		}
	})
	awaitAck("the append after a roll")
	// The flusher still holds the log's round lock, sealing; the next
	// append's round is a disk round, which needs only the syncing lock.
	next, err := l.Append(checked(t, makeBatch(t, rng, 1, 100, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	go func() { acked <- next.WaitAck(context.Background()) }()
	awaitAck("a later append")
	select {
	case info := <-sealed:
		t.Fatalf("segment %d sealed before its indexes were fsynced", info.BaseOffset)
	default:
	}
	releaseIndexes()
	if info := <-sealed; info.BaseOffset != 0 {
		t.Fatalf("sealed segment %d, want 0", info.BaseOffset)
	}
}

// appendRolling appends a 40 KiB batch that rolls l's 64 KiB segment and
// registers its wait. The round lock, held meanwhile, keeps the flusher
// from starting the roll's round before the batch is in the new segment
// and the wait registered, so that round is the one that covers it.
func appendRolling(t *testing.T, l *Log, rng *rand.Rand) Ack {
	t.Helper()
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	res, err := l.Append(checked(t, makeBatch(t, rng, 1, 40<<10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Expect()
}

// TestRollRoundSyncsItsFilesInOneCall: the round after a roll makes the
// rolled segment's log, the directory and the active segment durable in
// one Sync round, and the sealed segment's two index files in another,
// not one after another while the appenders wait: with another caller's
// fsync held, the three are found together in the round forming behind
// it. Once it is released, each round, of one caller, calls for each of
// its files (a syncfs would write every file on the file system for
// one partition).
func TestRollRoundSyncsItsFilesInOneCall(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openTestDiskSync(t, root)
	var mu sync.Mutex
	own := map[string]int{} // files synced by a call of their own
	var syncfs int
	blocker := createFiles(t, root, 1)[0]
	held, release := make(chan struct{}), make(chan struct{})
	d.fsync = func(f *os.File) error {
		if f == blocker {
			close(held)
			<-release
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		own[f.Name()]++
		return nil
	}
	d.fdatasync = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		own[f.Name()]++
		return nil
	}
	d.syncfs = func(*os.File) error {
		mu.Lock()
		defer mu.Unlock()
		syncfs++
		return nil
	}
	c := testConfig()
	c.DiskSync = d
	sealed := make(chan SegmentInfo, 4)
	c.Events.Sealed = func(info SegmentInfo) { sealed <- info }
	rng := rand.New(rand.NewPCG(102, 103))
	dir := filepath.Join(root, "log")
	l := openSyncedLog(t, dir, c, rng)
	appendBatches(t, l, makeBatch(t, rng, 1, 40<<10, 1))
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clear(own)
	syncfs = 0
	mu.Unlock()

	blocked := make(chan error, 1)
	go func() { blocked <- d.SyncFile(blocker) }()
	<-held
	releaseBlocker := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseBlocker) // before the log's Close, which needs a round
	// Two batches so far (offsets 0 and 1); the next rolls the 64 KiB
	// segment, so the active one starts at offset 2.
	ack := appendRolling(t, l, rng)
	acked := make(chan error, 1)
	go func() { acked <- ack.Wait(context.Background()) }()
	want := []string{filepath.Join(dir, segmentFileName(0, logSuffix)), dir, filepath.Join(dir, segmentFileName(2, logSuffix))}
	var formed []string
	waitFor(t, "the roll's round behind the held call", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.mu.next == nil || len(d.mu.next.files) < len(want) {
			return false
		}
		formed = formed[:0]
		for _, f := range d.mu.next.files {
			formed = append(formed, f.Name())
		}
		return true
	})
	if !slices.Equal(formed, want) {
		t.Fatalf("the round forming after a roll holds %q, want %q", formed, want)
	}
	releaseBlocker()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if info := <-sealed; info.BaseOffset != 0 {
		t.Fatalf("sealed segment %d, want 0", info.BaseOffset)
	}
	mu.Lock()
	defer mu.Unlock()
	// The directory is left out: the checkpoint after a seal fsyncs it
	// too.
	for _, name := range []string{want[0], filepath.Join(dir, segmentFileName(0, indexSuffix)), filepath.Join(dir, segmentFileName(0, timeIndexSuffix))} {
		if own[name] != 1 {
			t.Errorf("%s was synced by %d calls of its own, want 1", name, own[name])
		}
	}
	if syncfs != 0 {
		t.Errorf("%d syncfs calls for rounds of one caller each, want none", syncfs)
	}
}

// TestSyncAllCoversItsFilesWithOneSyncfs: many files, one call, through
// the Sync rounds' descriptor; a file elsewhere is fsynced on its own.
func TestSyncAllCoversItsFilesWithOneSyncfs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	var through []*os.File
	d.syncfs = func(dir *os.File) error { through = append(through, dir); return nil }
	var fsynced []*os.File
	d.fsync = func(f *os.File) error { fsynced = append(fsynced, f); return nil }
	d.fdatasync = func(*os.File) error { t.Error("SyncAll called fdatasync"); return nil }
	files := createFiles(t, dir, 8)
	const shm = "/dev/shm"
	var here, there unix.Stat_t
	if unix.Stat(shm, &there) == nil && unix.Stat(dir, &here) == nil && here.Dev != there.Dev {
		elsewhere, err := os.CreateTemp(shm, "hotlog-syncall-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { elsewhere.Close(); os.Remove(elsewhere.Name()) })
		files = append(files, elsewhere)
		defer func() {
			if len(fsynced) != 1 || fsynced[0] != elsewhere {
				t.Errorf("fsynced %d files, want only the one on another file system", len(fsynced))
			}
		}()
	} else {
		t.Log("/dev/shm is not another file system here: only files on the DiskSync's are synced")
		defer func() {
			if len(fsynced) != 0 {
				t.Errorf("fsynced %d files, want none", len(fsynced))
			}
		}()
	}
	for i, err := range d.SyncAll(files) {
		if err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
	if len(through) != 1 || through[0] != d.dir {
		t.Fatalf("%d syncfs calls for %d files (want 1, through the Sync rounds' descriptor)", len(through), len(files))
	}
}

// TestSyncAllFailsEveryFileOfAFailedSyncfs: in both shared modes a
// failed syncfs fails every file SyncAll gave it, though their own fsyncs
// would have blamed one, and SyncAll fails every file from then on
// without a system call.
func TestSyncAllFailsEveryFileOfAFailedSyncfs(t *testing.T) {
	t.Parallel()
	for _, mode := range []SyncfsErrors{SyncfsReportsAll, SyncfsReportsOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := openTestDiskSync(t, dir)
			d.errors = mode
			files := createFiles(t, dir, 4)
			d.syncfs = func(*os.File) error { return unix.EIO }
			d.fsync = func(f *os.File) error {
				if f == files[1] {
					return unix.EIO
				}
				return nil
			}
			for round := range 2 {
				for i, err := range d.SyncAll(files) {
					if !errors.Is(err, unix.EIO) {
						t.Errorf("SyncAll %d, file %d: %v, want EIO", round, i, err)
					}
				}
			}
			if syncfs, _, fsync := d.Calls(); syncfs != 1 || fsync != 0 {
				t.Fatalf("two SyncAll calls over a failing syncfs made %d syncfs and %d fsync calls, want 1 and 0", syncfs, fsync)
			}
		})
	}
}

// TestSyncAllWithoutSharedCallsFsyncsEachFile: where a syncfs may miss a
// failed write, SyncAll never calls it.
func TestSyncAllWithoutSharedCallsFsyncsEachFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	d.errors = SyncfsMayMiss
	d.syncfs = func(*os.File) error { t.Error("syncfs on a DiskSync that does not share its calls"); return nil }
	files := createFiles(t, dir, 3)
	for i, err := range d.SyncAll(files) {
		if err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
	if _, _, fsync := d.Calls(); fsync != int64(len(files)) {
		t.Fatalf("%d fsync calls for %d files", fsync, len(files))
	}
}

// TestSyncAllDecidesOnceNoCallIsInFlight: a Sync round's syncfs that fails
// while SyncAll waits for its turn took the error with it, so SyncAll must
// not then trust a syncfs through the same descriptor: it fails every
// file, with no call of its own.
func TestSyncAllDecidesOnceNoCallIsInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	d.syncfs = func(*os.File) error { t.Error("SyncAll called syncfs after a round's had failed"); return nil }
	d.fsync = func(*os.File) error { t.Error("SyncAll called fsync after a round's syncfs had failed"); return nil }
	files := createFiles(t, dir, 4)
	round := make(chan struct{})
	d.acquireCall(round) // a Sync round's call in flight
	synced := make(chan []error)
	go func() { synced <- d.SyncAll(files) }()
	// Time for SyncAll to reach its turn; it must decide the same way if
	// it has not.
	time.Sleep(20 * time.Millisecond)
	failed := error(unix.EIO)
	d.failed.Store(&failed) // the round's syncfs failed
	d.releaseCall(round)
	for i, err := range <-synced {
		if !errors.Is(err, unix.EIO) {
			t.Errorf("file %d: %v, want the round's EIO", i, err)
		}
	}
}

// TestSyncFileSharesTheSyncRounds: SyncFile callers (a flusher's
// directories, seals and checkpoints) join the Sync rounds: alone, a
// caller's own fsync; with others, one syncfs; a failed syncfs fails
// them all, with no call of their own.
func TestSyncFileSharesTheSyncRounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	var mu sync.Mutex
	calls := map[string]int{}
	count := func(call string) { mu.Lock(); calls[call]++; mu.Unlock() }
	release := make(chan struct{})
	var held sync.Once
	d.fsync = func(*os.File) error {
		held.Do(func() { <-release })
		count("fsync")
		return nil
	}
	d.fdatasync = func(*os.File) error { count("fdatasync"); return nil }
	syncfsErr := error(nil)
	d.syncfs = func(*os.File) error { count("syncfs"); return syncfsErr }
	files := createFiles(t, dir, 8)
	var wg sync.WaitGroup
	errs := make([]error, len(files))
	wg.Go(func() { errs[0] = d.SyncFile(files[0]) })
	waitFor(t, "the first caller's fsync", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.inFlight != nil
	})
	for i := 1; i < len(files); i++ {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = d.Sync(files[i])
			} else {
				errs[i] = d.SyncFile(files[i])
			}
		})
	}
	waitFor(t, "seven callers in the next round", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.mu.next != nil && len(d.mu.next.files) == len(files)-1
	})
	close(release)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if calls["fsync"] != 1 || calls["syncfs"] != 1 || calls["fdatasync"] != 0 {
		t.Fatalf("a SyncFile alone, then seven callers: %v, want one fsync and one syncfs", calls)
	}
	// A failed syncfs: every caller fails, by no call of its own.
	syncfsErr = unix.EIO
	clear(calls)
	for i, err := range d.run(d.dir, files[:4], []bool{true, false, true, false}, false) {
		if !errors.Is(err, unix.EIO) {
			t.Errorf("caller %d of a failed syncfs: %v, want EIO", i, err)
		}
	}
	if calls["syncfs"] != 1 || calls["fsync"] != 0 || calls["fdatasync"] != 0 {
		t.Fatalf("a failed syncfs over two SyncFile and two Sync callers: %v, want no call after it", calls)
	}
}

// TestUnsharedCallsGoAtOnce: where a syncfs may miss a failed write (xfs
// before Linux 5.17, say), Sync and SyncFile callers do not form rounds,
// which would only make their calls one after another: while the first
// caller's call is held, the others make theirs at once, and no syncfs
// runs.
func TestUnsharedCallsGoAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openTestDiskSync(t, dir)
	d.errors = SyncfsMayMiss
	d.syncfs = func(*os.File) error { t.Error("syncfs on a DiskSync that does not share"); return nil }
	release := make(chan struct{})
	var held atomic.Bool // not a sync.Once, whose other callers wait
	var done atomic.Int32
	hold := func(*os.File) error {
		if held.CompareAndSwap(false, true) {
			<-release
		}
		done.Add(1)
		return nil
	}
	d.fsync, d.fdatasync = hold, hold
	files := createFiles(t, dir, 5)
	var first sync.WaitGroup
	first.Go(func() { d.SyncFile(files[0]) })
	waitFor(t, "the first call to start", func() bool { return d.fsyncCalls.Load() == 1 })
	var others sync.WaitGroup
	for i, f := range files[1:] {
		others.Go(func() {
			if i%2 == 0 {
				d.Sync(f)
			} else {
				d.SyncFile(f)
			}
		})
	}
	waitFor(t, "four calls while the first is held", func() bool { return done.Load() == 4 })
	others.Wait()
	close(release)
	first.Wait()
	if d.mu.next != nil {
		t.Fatal("a round formed")
	}
}
