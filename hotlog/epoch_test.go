package hotlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

func TestAssignEpochFollowsKafka(t *testing.T) {
	t.Parallel()
	base := []EpochEntry{{1, 0}, {3, 100}, {5, 200}}
	for _, tc := range []struct {
		name    string
		entry   EpochEntry
		want    []EpochEntry
		changed bool
	}{
		{"new epoch", EpochEntry{6, 250}, []EpochEntry{{1, 0}, {3, 100}, {5, 200}, {6, 250}}, true},
		{"latest epoch again, later", EpochEntry{5, 230}, base, false},
		{"latest epoch, earlier start", EpochEntry{5, 150}, []EpochEntry{{1, 0}, {3, 100}, {5, 150}}, true},
		{"older epoch overrides", EpochEntry{4, 180}, []EpochEntry{{1, 0}, {3, 100}, {4, 180}}, true},
		{"new epoch at an old offset", EpochEntry{7, 100}, []EpochEntry{{1, 0}, {7, 100}}, true},
	} {
		got, changed := assignEpoch(base, tc.entry)
		if !slices.Equal(got, tc.want) || changed != tc.changed {
			t.Errorf("%s: assign %v = %v %v, want %v %v", tc.name, tc.entry, got, changed, tc.want, tc.changed)
		}
	}
	if got, _ := assignEpoch(nil, EpochEntry{0, 0}); !slices.Equal(got, []EpochEntry{{0, 0}}) {
		t.Errorf("first assignment: %v", got)
	}
}

func TestEpochLookupsFollowKafka(t *testing.T) {
	t.Parallel()
	entries := []EpochEntry{{1, 0}, {3, 100}, {5, 200}}
	const logEnd = 300
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{5, 5, logEnd}, // the latest epoch ends at the log end
		{3, 3, 200},    // a known epoch ends where the next starts
		{4, 3, 200},    // an unknown epoch between: the floor epoch, the next start
		{0, 0, 0},      // below every entry: itself and the first start
		{6, -1, -1},    // above every entry: undefined
		{-1, -1, -1},   // undefined in, undefined out
		{2, 1, 100},    // between 1 and 3
		{1, 1, 100},    // the first epoch
	} {
		e, end := endOffsetForEpoch(entries, tc.epoch, logEnd)
		if e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("endOffsetForEpoch(%d) = %d, %d; want %d, %d", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
	for offset, want := range map[int64]int32{0: 1, 99: 1, 100: 3, 250: 5} {
		if got, ok := epochForOffset(entries, offset); !ok || got != want {
			t.Errorf("epochForOffset(%d) = %d %v, want %d", offset, got, ok, want)
		}
	}
	if _, ok := epochForOffset(entries[1:], 50); ok {
		t.Error("epochForOffset below the first entry found one")
	}
	if got, _ := truncateEpochsFromEnd(entries, 200, true); !slices.Equal(got, entries[:2]) {
		t.Errorf("truncate from end at 200 (inclusive): %v", got)
	}
	if got, _ := truncateEpochsFromEnd(entries, 200, false); !slices.Equal(got, entries) {
		t.Errorf("truncate from end at 200 (exclusive): %v", got)
	}
	if got, _ := truncateEpochsFromStart(entries, 150); !slices.Equal(got, []EpochEntry{{3, 150}, {5, 200}}) {
		t.Errorf("truncate from start at 150: %v", got)
	}
	if got, _ := truncateEpochsFromStart(entries, 100); !slices.Equal(got, []EpochEntry{{3, 100}, {5, 200}}) {
		t.Errorf("truncate from start at 100, where an epoch starts: %v", got)
	}
	if got, changed := truncateEpochsFromStart(entries, 0); changed || !slices.Equal(got, entries) {
		t.Errorf("truncate from start at 0: %v %v", got, changed)
	}
}

func TestEpochCheckpointFormat(t *testing.T) {
	t.Parallel()
	entries := []EpochEntry{{0, 0}, {3, 1742}}
	data := formatEpochCheckpoint(entries)
	if string(data) != "0\n2\n0 0\n3 1742\n" {
		t.Fatalf("format: %q", data)
	}
	if got, err := parseEpochCheckpoint(data); err != nil || !slices.Equal(got, entries) {
		t.Fatalf("parse: %v %v", got, err)
	}
	for _, bad := range []string{
		"", "1\n0\n", "0\n", "0\n1\n", "0\n2\n0 0\n", "0\n1\n0 0 0\n", "0\n1\n-1 0\n",
		"0\n2\n3 10\n2 20\n", "0\n2\n3 10\n4 10\n", "0\n1\nx 0\n", "0\n1\n0  0\n", "0\n1\n4294967296 0\n",
	} {
		if _, err := parseEpochCheckpoint([]byte(bad)); !errors.Is(err, ErrCorruptFile) {
			t.Errorf("parse %q: %v, want ErrCorruptFile", bad, err)
		}
	}
}

// TestEpochCheckpointRewriteIsAtomic: a failed rewrite leaves the old file
// and cache; a leftover temporary from a crash mid-rewrite is ignored and
// removed; the file survives restarts and is trimmed to the recovered log.
func TestEpochCheckpointRewriteIsAtomic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(100, 101))
	c := testConfig()
	var failing atomic.Bool
	c.fsync = func(f *os.File, _ bool) error {
		if failing.Load() && filepath.Base(f.Name()) == epochCheckpointName+temporarySuffix {
			return errors.New("injected fsync failure")
		}
		return nil
	}
	dir := t.TempDir()
	l := openLog(t, dir, c)
	fill(t, l, rng, 10, 3)
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(2, 5); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, epochCheckpointName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if err := l.AssignEpoch(3, 8); err == nil {
		t.Fatal("AssignEpoch succeeded with a failing fsync")
	}
	failing.Store(false)
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("failed rewrite changed the file: %q", after)
	}
	if _, err := os.Stat(path + temporarySuffix); !os.IsNotExist(err) {
		t.Fatalf("failed rewrite left its temporary: %v", err)
	}
	if got := l.Epochs(); !slices.Equal(got, []EpochEntry{{1, 0}, {2, 5}}) {
		t.Fatalf("cache after a failed rewrite: %v", got)
	}
	if err := l.AssignEpoch(-1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative epoch: %v", err)
	}
	if err := l.AssignEpoch(4, l.LogEndOffset()+1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("epoch starting past the log end: %v", err)
	}

	// A crash mid-rewrite leaves a temporary beside the intact file; an
	// entry past the recovered end (its batches lost) is dropped.
	if err := l.AssignEpoch(3, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	appendBatches(t, l, makeBatch(t, rng, 2, 10, 1))
	if err := l.AssignEpoch(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	dst := crashCopy(t, l, func(name string, data []byte) []byte {
		if name == filepath.Base(lastSegmentLog(l)) {
			return data[:fileSize(t, lastSegmentLog(l))-10] // tear the last batch
		}
		return data
	})
	if err := os.WriteFile(filepath.Join(dst, epochCheckpointName+temporarySuffix), []byte("0\n1\n9"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := openLog(t, dst, c)
	if r.LogEndOffset() != end {
		t.Fatalf("recovered end %d, want %d", r.LogEndOffset(), end)
	}
	if got := r.Epochs(); !slices.Equal(got, []EpochEntry{{1, 0}, {2, 5}, {3, end}}) {
		t.Fatalf("epochs after recovery %v", got)
	}
	if _, err := os.Stat(filepath.Join(dst, epochCheckpointName+temporarySuffix)); !os.IsNotExist(err) {
		t.Fatalf("Open left the temporary: %v", err)
	}
	if e, offset := r.EndOffsetForEpoch(2); e != 2 || offset != end {
		t.Fatalf("EndOffsetForEpoch(2) = %d, %d; want 2, %d", e, offset, end)
	}
}
