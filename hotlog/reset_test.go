package hotlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// segmentFilesIn lists the segment files in dir.
func segmentFilesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, _, ok := parseSegmentFileName(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	return names
}

// checkEmptyAt checks that l is an empty log at offset with the epoch
// history want, and that dir holds its one segment and no reset intent.
func checkEmptyAt(t *testing.T, l *Log, offset int64, want []EpochEntry) {
	t.Helper()
	if l.LogStartOffset() != offset || l.LogEndOffset() != offset || l.FlushedOffset() != offset {
		t.Fatalf("log [%d, %d) flushed to %d, want empty at %d", l.LogStartOffset(), l.LogEndOffset(), l.FlushedOffset(), offset)
	}
	if got := l.Segments(); len(got) != 1 || got[0].BaseOffset != offset || got[0].Size != 0 {
		t.Fatalf("segments %+v, want one empty segment at %d", got, offset)
	}
	wantFiles := []string{segmentFileName(offset, indexSuffix), segmentFileName(offset, logSuffix), segmentFileName(offset, timeIndexSuffix)}
	if got := segmentFilesIn(t, l.Dir()); !slices.Equal(got, wantFiles) {
		t.Fatalf("segment files %v, want %v", got, wantFiles)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), resetIntentName)); !os.IsNotExist(err) {
		t.Fatalf("reset intent left behind: %v", err)
	}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if got, err := l.ReadBytes(offset, 1<<20); err != nil || len(got) != 0 {
		t.Fatalf("read at the log end: %d bytes, %v", len(got), err)
	}
	if offset > 0 {
		if _, err := l.Read(offset-1, 1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below the reset offset: %v", err)
		}
	}
}

func TestResetTo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		where func(segments []SegmentInfo, end int64) int64
	}{
		{"above the log end", func(s []SegmentInfo, end int64) int64 { return end + 1000 }},
		{"at the log end", func(s []SegmentInfo, end int64) int64 { return end }},
		{"inside the active segment", func(s []SegmentInfo, end int64) int64 { return end - 3 }},
		{"at a sealed segment's base", func(s []SegmentInfo, end int64) int64 { return s[1].BaseOffset }},
		{"inside the first segment", func(s []SegmentInfo, end int64) int64 { return 7 }},
		{"to zero", func(s []SegmentInfo, end int64) int64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(130, 131))
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
			fill(t, l, rng, 1500, 10)
			if err := l.AssignEpoch(2, 0); err != nil {
				t.Fatal(err)
			}
			// An append waiting for its acknowledgement across the reset.
			res, err := l.Append(checked(t, makeBatch(t, rng, 2, 10, 1))...)
			if err != nil {
				t.Fatal(err)
			}
			segments := l.Segments()
			offset := tc.where(segments, l.LogEndOffset())

			// The leader's history: the entry covering the offset is kept,
			// moved up to start there.
			epochs := []EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 7, StartOffset: offset / 2}}
			if offset == 0 {
				epochs = epochs[1:]
			}
			want := []EpochEntry{{Epoch: 7, StartOffset: offset}}
			if err := l.ResetTo(offset, epochs); err != nil {
				t.Fatal(err)
			}
			checkEmptyAt(t, l, offset, want)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := res.WaitAck(ctx); !errors.Is(err, ErrTruncated) {
				t.Fatalf("WaitAck of an append from before the reset: %v, want ErrTruncated", err)
			}
			mu.Lock()
			var wantDeleted []int64
			for _, s := range segments {
				wantDeleted = append(wantDeleted, s.BaseOffset)
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, wantDeleted) {
				t.Errorf("Deleted events for %v, want %v", deleted, wantDeleted)
			}
			mu.Unlock()

			// Both appends go on from the offset.
			led := appendBatches(t, l, makeBatch(t, rng, 3, 10, 1_700_000_000_000))
			if led[0].base != offset {
				t.Fatalf("Append after the reset at %d, want %d", led[0].base, offset)
			}
			replicated := appendReplicated(t, l, leaderBatches(t, rng, l.LogEndOffset(), 7, 8)...)
			all := append(led, replicated...)
			want = append(want, EpochEntry{Epoch: 8, StartOffset: replicated[1].base})
			all = append(all, fill(t, l, rng, 500, 10)...)
			checkReadsBack(t, l, all)
			checkTimestampLookups(t, l, all)
			if got := l.Epochs(); !slices.Equal(got, want) {
				t.Fatalf("epochs %v, want %v", got, want)
			}

			// A crash and a clean restart see the same log.
			crashed := openLog(t, crashCopy(t, l, nil), c)
			checkReadsBack(t, crashed, all)
			if crashed.LogStartOffset() != offset || !slices.Equal(crashed.Epochs(), want) {
				t.Fatalf("after a crash: log start %d, epochs %v", crashed.LogStartOffset(), crashed.Epochs())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			var info RecoveryInfo
			reopened := openLog(t, dir, recoveryEvents(c, &info))
			checkReadsBack(t, reopened, all)
			if reopened.LogStartOffset() != offset || !slices.Equal(reopened.Epochs(), want) || !info.CleanShutdown || info.BytesScanned != 0 {
				t.Fatalf("after a restart: log start %d, epochs %v, %+v", reopened.LogStartOffset(), reopened.Epochs(), info)
			}
		})
	}
}

// TestResetToThenReopen: the empty log a reset leaves reopens as it was,
// with its history, and a replica that fetches from there is held to it.
func TestResetToThenReopen(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(132, 133))
	dir := t.TempDir()
	c := testConfig()
	l := openLog(t, dir, c)
	const offset = 5000
	want := []EpochEntry{{Epoch: 4, StartOffset: offset}}
	if err := l.ResetTo(offset, []EpochEntry{{Epoch: 1, StartOffset: 10}, {Epoch: 4, StartOffset: 4000}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var info RecoveryInfo
	l = openLog(t, dir, recoveryEvents(c, &info))
	checkEmptyAt(t, l, offset, want)
	if !info.CleanShutdown || info.LogStartOffset != offset {
		t.Fatalf("reopening the reset log: %+v", info)
	}
	if _, err := l.AppendReplicated(checked(t, leaderBatches(t, rng, offset, 3)...)...); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("an epoch below the reset history's: %v, want ErrStaleEpoch", err)
	}
	if _, err := l.AppendReplicated(checked(t, leaderBatches(t, rng, 0, 4)...)...); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("a batch at 0 after a reset to %d: %v, want ErrNotContiguous", offset, err)
	}
	batches := appendReplicated(t, l, leaderBatches(t, rng, offset, 4, 4)...)
	checkReadsBack(t, l, batches)
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if e, end := l.EndOffsetForEpoch(4); e != 4 || end != l.LogEndOffset() {
		t.Fatalf("EndOffsetForEpoch(4) = %d, %d", e, end)
	}
}

// TestResetToRefusesBadArguments: a negative offset, or a history that
// does not increase or starts past the offset, is refused, and the log is
// as it was.
func TestResetToRefusesBadArguments(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(134, 135))
	l := openLog(t, t.TempDir(), testConfig())
	batches := fill(t, l, rng, 50, 3)
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		offset int64
		epochs []EpochEntry
	}{
		{"a negative offset", -1, nil},
		{"an epoch starting past the offset", 100, []EpochEntry{{1, 0}, {2, 101}}},
		{"a negative epoch", 100, []EpochEntry{{-1, 0}}},
		{"a negative start offset", 100, []EpochEntry{{1, -5}}},
		{"epochs going back", 100, []EpochEntry{{3, 0}, {2, 50}}},
		{"the same epoch twice", 100, []EpochEntry{{3, 0}, {3, 50}}},
		{"start offsets going back", 100, []EpochEntry{{1, 50}, {2, 40}}},
	} {
		if err := l.ResetTo(tc.offset, tc.epochs); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	if l.LogStartOffset() != 0 || l.LogEndOffset() != batches[len(batches)-1].last+1 || !slices.Equal(l.Epochs(), []EpochEntry{{1, 0}}) {
		t.Fatalf("a refused reset changed the log: [%d, %d), epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.Epochs())
	}
	checkReadsBack(t, l, batches)
}

// TestResetToWaitsForReaders holds Sections of the old log, one in the
// segment whose name the new segment takes: their bytes stay readable,
// the files unlinked under them, and ResetTo returns once they are
// released.
func TestResetToWaitsForReaders(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(136, 137))
	dir := t.TempDir()
	l := openLog(t, dir, testConfig())
	batches := fill(t, l, rng, 1500, 10)
	segments := l.Segments()
	first, err := l.Read(batches[1].base, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.Read(batches[len(batches)-1].base, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- l.ResetTo(0, nil) }()
	waitFor(t, "the reset state", func() bool { return len(l.Segments()) == 1 && l.LogEndOffset() == 0 })
	for _, tc := range []struct {
		section *Section
		batch   appended
	}{{first, batches[1]}, {last, batches[len(batches)-1]}} {
		got, err := tc.section.ReadAll()
		if err != nil || !bytes.HasPrefix(got, tc.batch.bytes) {
			t.Fatalf("section of batch %d changed under its reader: %v", tc.batch.base, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, segmentFileName(segments[len(segments)-1].BaseOffset, logSuffix))); !os.IsNotExist(err) {
		t.Fatalf("the old active segment's file is still there: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("ResetTo returned (%v) while a reader held a section", err)
	case <-time.After(100 * time.Millisecond):
	}
	first.Release()
	last.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkEmptyAt(t, l, 0, nil)
}

// TestResetToIsCrashSafe snapshots the directory at every fsync ResetTo
// issues, as a crash at that moment would leave it, and at the points
// between them where a crash matters (the intent durable, some of the old
// files removed, the new segment created): each must open as the old log,
// whole, or as the new empty one, never a mix. It also checks that the
// intent's removal is fsynced before ResetTo returns, so the intent cannot
// come back and undo later appends.
func TestResetToIsCrashSafe(t *testing.T) {
	t.Parallel()
	for _, reset := range []struct {
		name   string
		offset func(segments []SegmentInfo, end int64) int64
	}{
		{"below the end, at a segment's base", func(s []SegmentInfo, end int64) int64 { return s[1].BaseOffset }},
		{"above the end", func(s []SegmentInfo, end int64) int64 { return end + 10 }},
	} {
		t.Run(reset.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(138, 139))
			c := testConfig()
			var mu sync.Mutex
			var armed, removalSynced bool
			var snapshots []string
			var l *Log
			c.fsync = func(f *os.File, _ bool) error {
				mu.Lock()
				defer mu.Unlock()
				if !armed {
					return nil
				}
				snapshots = append(snapshots, copyDir(t, l.Dir(), nil))
				if f.Name() == l.Dir() {
					_, err := os.Stat(filepath.Join(l.Dir(), resetIntentName))
					removalSynced = os.IsNotExist(err)
				}
				return nil
			}
			l = openLog(t, t.TempDir(), c)
			batches := fill(t, l, rng, 1500, 10)
			if err := l.AssignEpoch(1, 0); err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			oldEnd, oldEpochs := l.LogEndOffset(), l.Epochs()
			offset := reset.offset(l.Segments(), oldEnd)
			epochs := []EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 5, StartOffset: offset}}
			before := copyDir(t, l.Dir(), nil)

			mu.Lock()
			armed = true
			mu.Unlock()
			if err := l.ResetTo(offset, epochs); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			armed = false
			mu.Unlock()
			if !removalSynced {
				t.Fatal("ResetTo returned before an fsync of the directory without its intent")
			}

			// The crash points between fsyncs: the intent durable beside the
			// whole old log; the clashing segment gone and the new one made;
			// some of the old files gone too.
			intent := formatResetIntent(resetIntent{offset: offset, epochs: []EpochEntry{{Epoch: 5, StartOffset: offset}}})
			withIntent := func(drop func(base int64) bool, create bool) string {
				dst := copyDir(t, before, func(name string, data []byte) []byte {
					if base, _, ok := parseSegmentFileName(name); ok && drop(base) {
						return nil
					}
					return data
				})
				if err := os.WriteFile(filepath.Join(dst, resetIntentName), intent, 0o644); err != nil {
					t.Fatal(err)
				}
				if create {
					for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
						if err := os.WriteFile(filepath.Join(dst, segmentFileName(offset, suffix)), nil, 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				return dst
			}
			var n int
			snapshots = append(snapshots,
				withIntent(func(int64) bool { return false }, false),
				withIntent(func(base int64) bool { return base == offset }, true),
				withIntent(func(base int64) bool { n++; return n%2 == 0 || base == offset }, true),
			)

			var sawOld, sawNew bool
			for i, dir := range snapshots {
				r, err := Open(dir, testConfig())
				if err != nil {
					t.Fatalf("crash point %d: Open: %v", i, err)
				}
				switch start, end := r.LogStartOffset(), r.LogEndOffset(); {
				case start == 0 && end == oldEnd:
					sawOld = true
					checkReadsBack(t, r, batches)
					if got := r.Epochs(); !slices.Equal(got, oldEpochs) {
						t.Fatalf("crash point %d: old log with epochs %v, want %v", i, got, oldEpochs)
					}
				case start == offset && end == offset:
					sawNew = true
					checkEmptyAt(t, r, offset, []EpochEntry{{Epoch: 5, StartOffset: offset}})
				default:
					t.Fatalf("crash point %d: log [%d, %d), want the old [0, %d) or empty at %d", i, start, end, oldEnd, offset)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if !sawOld || !sawNew {
				t.Fatalf("crash points saw the old log: %v, the new one: %v", sawOld, sawNew)
			}
		})
	}
}

func TestResetIntentFormat(t *testing.T) {
	t.Parallel()
	intent := resetIntent{offset: 5000, epochs: []EpochEntry{{3, 5000}}}
	data := formatResetIntent(intent)
	if string(data) != "0\n5000\n1\n3 5000\n" {
		t.Fatalf("format: %q", data)
	}
	if got, err := parseResetIntent(data); err != nil || got.offset != intent.offset || !slices.Equal(got.epochs, intent.epochs) {
		t.Fatalf("parse: %+v %v", got, err)
	}
	if got, err := parseResetIntent([]byte("0\n7\n0\n")); err != nil || got.offset != 7 || len(got.epochs) != 0 {
		t.Fatalf("parse without epochs: %+v %v", got, err)
	}
	for _, bad := range []string{
		"", "1\n5\n0\n", "0\n", "0\n5\n", "0\n-5\n0\n", "0\nx\n0\n", "0\n5\n1\n", "0\n5\n1\n3 6\n", "0\n5\n2\n3 1\n2 2\n",
	} {
		if _, err := parseResetIntent([]byte(bad)); !errors.Is(err, ErrCorruptFile) {
			t.Errorf("parse %q: %v, want ErrCorruptFile", bad, err)
		}
	}
}
