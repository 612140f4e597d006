package hotlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/record"
)

// rewritableLog is a log of three sealed segments of four batches each and
// an active one, its recovery point past them all.
func rewritableLog(t *testing.T) (*Log, []appended) {
	t.Helper()
	return rewritableLogIn(t, t.TempDir(), testConfig())
}

// rewritableLogIn is rewritableLog in dir, opened with c.
func rewritableLogIn(t *testing.T, dir string, c Config) (*Log, []appended) {
	t.Helper()
	c.IndexIntervalBytes = 64
	l := openLog(t, dir, c)
	rng := rand.New(rand.NewPCG(1, 2))
	var all []appended
	for range 3 {
		for range 4 {
			all = append(all, appendBatches(t, l, makeBatch(t, rng, 3, 40, 1000))...)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	all = append(all, appendBatches(t, l, makeBatch(t, rng, 2, 40, 1000))...)
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The recovery point is persisted by the flusher after the sync; only
	// segments below its segment can be rewritten.
	for deadline := time.Now().Add(10 * time.Second); l.RewritableEnd() < l.ActiveSegment().BaseOffset; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the recovery point stays in segment %d, before the active segment %d", l.RewritableEnd(), l.ActiveSegment().BaseOffset)
		}
	}
	return l, all
}

// emptied is the rewrite of a segment's batches in which the second batch
// lost every record: an empty batch over its offsets.
func emptied(t *testing.T, batches []appended) [][]byte {
	t.Helper()
	out := make([][]byte, len(batches))
	for i, b := range batches {
		out[i] = b.bytes
		if i == 1 {
			h, err := record.ParseHeader(b.bytes)
			if err != nil {
				t.Fatal(err)
			}
			if out[i], err = record.Rebuild(h, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func rewrite(t *testing.T, l *Log, base int64, batches [][]byte) error {
	t.Helper()
	w, err := l.RewriteSegment(base)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err := w.Append(b); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit(time.Unix(1_700_000_000, 0))
}

// readSegment returns the bytes of the segment at base, read through the log.
func readSegment(t *testing.T, l *Log, base, next int64) []byte {
	t.Helper()
	var out []byte
	for offset := base; offset < next; {
		b, err := l.ReadBytes(offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		headers := splitBatches(t, b, offset)
		out = append(out, b...)
		offset = headers[len(headers)-1].NextOffset()
	}
	return out
}

// TestRewriteSwapsSegment: the rewritten segment is read in place of the
// old one, reads from an offset inside the emptied batch land on it, its
// modification time is the one given, a Section taken before the swap
// still reads the old bytes, and a reopen finds the new segment with
// indexes that agree.
func TestRewriteSwapsSegment(t *testing.T) {
	l, all := rewritableLog(t)
	old := l.Segments()[1]
	held, err := l.Read(old.BaseOffset, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	heldBytes, err := held.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := emptied(t, all[4:8])
	if err := rewrite(t, l, old.BaseOffset, want); err != nil {
		t.Fatal(err)
	}
	if got := readSegment(t, l, old.BaseOffset, old.NextOffset); !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatal("the rewritten segment does not read back as written")
	}
	again, err := held.ReadAll()
	held.Release()
	if err != nil || !bytes.Equal(again, heldBytes) {
		t.Fatalf("a section held across the swap changed: %v", err)
	}
	inside := all[5].base + 1
	b, err := l.ReadBytes(inside, 1)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := record.ParseHeader(b); h.BaseOffset != all[5].base || h.NumRecords != 0 {
		t.Fatalf("read at %d gave batch %d with %d records, want the empty batch at %d", inside, h.BaseOffset, h.NumRecords, all[5].base)
	}
	modified, err := l.SegmentModified(old.BaseOffset)
	if err != nil || !modified.Equal(time.Unix(1_700_000_000, 0)) {
		t.Fatalf("modification time %v, %v", modified, err)
	}
	dir, config := l.Dir(), l.conf()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openLog(t, dir, *config)
	if got := readSegment(t, reopened, old.BaseOffset, old.NextOffset); !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatal("after a reopen the rewritten segment does not read back as written")
	}
	checkReadsBack(t, reopened, all[8:])
	if _, ok, err := reopened.OffsetForTimestamp(0, 0); !ok || err != nil {
		t.Fatalf("OffsetForTimestamp on the rewritten log: %v, %v", ok, err)
	}
}

// TestRewriteCommitsNothingOnAFailedDisk: a rewrite's syncs go through
// the log's DiskSync, so once a sync of the file system has failed (and a
// shared syncfs may have taken an error of the rewrite's files with it)
// Commit fails before its commit point: no swap is begun for Open to
// finish with files whose durability nothing vouched for.
func TestRewriteCommitsNothingOnAFailedDisk(t *testing.T) {
	dir := t.TempDir()
	c := testConfig()
	c.DiskSync = openTestDiskSync(t, dir)
	l, all := rewritableLogIn(t, filepath.Join(dir, "p"), c)
	old := l.Segments()[1]
	w, err := l.RewriteSegment(old.BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range emptied(t, all[4:8]) {
		if err := w.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	failed := error(unix.EIO)
	c.DiskSync.failed.Store(&failed)
	if err := w.Commit(time.Unix(1_700_000_000, 0)); !errors.Is(err, unix.EIO) {
		t.Fatalf("Commit after the disk's sync failed: %v, want its EIO", err)
	}
	swap := filepath.Join(l.Dir(), segmentFileName(old.BaseOffset, logSuffix)) + swapSuffix
	if _, err := os.Stat(swap); !os.IsNotExist(err) {
		t.Fatalf("%s: %v; want no swap begun", swap, err)
	}
}

// TestRewriteRefuses: the active segment, a segment at or past the
// recovery point's, batches that do not continue the segment, and a
// rewrite that stops short are refused, and the old segment stays.
func TestRewriteRefuses(t *testing.T) {
	l, all := rewritableLog(t)
	if _, err := l.RewriteSegment(l.ActiveSegment().BaseOffset); !errors.Is(err, ErrNotRewritable) {
		t.Fatalf("rewriting the active segment: %v", err)
	}
	if _, err := l.RewriteSegment(all[1].base); !errors.Is(err, ErrNotRewritable) {
		t.Fatalf("rewriting at an offset that is no segment's base: %v", err)
	}
	if err := rewrite(t, l, 0, [][]byte{all[1].bytes}); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("a batch that does not start the segment: %v", err)
	}
	if err := rewrite(t, l, 0, [][]byte{all[0].bytes}); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("a rewrite that stops short: %v", err)
	}
	checkReadsBack(t, l, all)
	entries, _ := os.ReadDir(l.Dir())
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
			t.Fatalf("%s left behind", e.Name())
		}
	}
}

// TestRewriteRefusesAfterATruncation: a truncation into the segment
// being rewritten keeps the segment, and the log refilled past it ends
// the segment at the same offset again; the rewrite, of the batches from
// before the truncation, must not commit over the new ones.
func TestRewriteRefusesAfterATruncation(t *testing.T) {
	l, all := rewritableLog(t)
	base := all[4].base
	w, err := l.RewriteSegment(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range all[4:8] {
		if err := w.Append(b.bytes); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(all[5].base); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	refill := appendBatches(t, l, makeBatch(t, rng, 3, 40, 1000), makeBatch(t, rng, 3, 40, 1000), makeBatch(t, rng, 3, 40, 1000))
	if next := refill[2].last + 1; next != all[8].base {
		t.Fatalf("refilled to %d, want the segment's old end %d", next, all[8].base)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, makeBatch(t, rng, 1, 40, 1000))
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); l.RewritableEnd() <= base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the recovery point stays at %d", l.RewritableEnd())
		}
	}
	if err := w.Commit(time.Unix(1_700_000_000, 0)); !errors.Is(err, ErrNotRewritable) {
		t.Fatalf("Commit after a truncation into the segment: %v, want ErrNotRewritable", err)
	}
	checkReadsBack(t, l, append(all[:5:5], refill...))
}

// TestRewriteCrashAtEveryStep: a crash at each point of the swap leaves,
// after Open, either the old segment (before the commit) or the new one
// (from .log.swap on), never a mix, and no stray files.
func TestRewriteCrashAtEveryStep(t *testing.T) {
	l, all := rewritableLog(t)
	seg := l.Segments()[1]
	want := emptied(t, all[4:8])
	before := crashCopy(t, l, nil)
	if err := rewrite(t, l, seg.BaseOffset, want); err != nil {
		t.Fatal(err)
	}
	after := crashCopy(t, l, nil)
	name := func(suffix string) string { return segmentFileName(seg.BaseOffset, suffix) }
	read := func(dir, file string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Each crash point: the files of the new segment present, by name.
	steps := []struct {
		name  string
		files map[string]string // new file → name it has at the crash
		isNew bool
	}{
		{"cleaned files written", map[string]string{name(logSuffix): name(logSuffix) + cleanedSuffix, name(indexSuffix): name(indexSuffix) + cleanedSuffix, name(timeIndexSuffix): name(timeIndexSuffix) + cleanedSuffix}, false},
		{"log cleaned, indexes not yet", map[string]string{name(logSuffix): name(logSuffix) + cleanedSuffix}, false},
		{"committed", map[string]string{name(logSuffix): name(logSuffix) + swapSuffix, name(indexSuffix): name(indexSuffix) + cleanedSuffix, name(timeIndexSuffix): name(timeIndexSuffix) + cleanedSuffix}, true},
		{"index swapped", map[string]string{name(logSuffix): name(logSuffix) + swapSuffix, name(indexSuffix): name(indexSuffix), name(timeIndexSuffix): name(timeIndexSuffix) + cleanedSuffix}, true},
		{"both indexes swapped", map[string]string{name(logSuffix): name(logSuffix) + swapSuffix, name(indexSuffix): name(indexSuffix), name(timeIndexSuffix): name(timeIndexSuffix)}, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			dir := copyDir(t, before, nil)
			for file, as := range step.files {
				if err := os.WriteFile(filepath.Join(dir, as), read(after, file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			reopened := openLog(t, dir, *l.conf())
			got := readSegment(t, reopened, seg.BaseOffset, seg.NextOffset)
			expect := bytes.Join(want, nil)
			if !step.isNew {
				expect = read(before, name(logSuffix))
			}
			if !bytes.Equal(got, expect) {
				t.Fatalf("after the crash the segment is neither wholly old nor wholly new as expected (new: %v)", step.isNew)
			}
			checkReadsBack(t, reopened, all[8:])
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
					t.Fatalf("%s left behind", e.Name())
				}
			}
		})
	}
}

// TestSegmentFilesMatch: a .log opened before a rewrite's swap no longer
// matches the index files at their paths once the swap has begun (the
// swap file exists) or finished (the path names the new .log); a .log
// opened after it does.
func TestSegmentFilesMatch(t *testing.T) {
	l, all := rewritableLog(t)
	old := l.Segments()[1]
	path := filepath.Join(l.Dir(), segmentFileName(old.BaseOffset, logSuffix))
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	match := func(f *os.File) bool {
		ok, err := SegmentFilesMatch(l.Dir(), old.BaseOffset, f)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	before := open()
	if !match(before) {
		t.Fatal("the sealed segment's files do not match with no rewrite")
	}
	if err := os.WriteFile(path+swapSuffix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if match(before) {
		t.Fatal("the files match while a swap file exists")
	}
	if err := os.Remove(path + swapSuffix); err != nil {
		t.Fatal(err)
	}
	if err := rewrite(t, l, old.BaseOffset, emptied(t, all[4:8])); err != nil {
		t.Fatal(err)
	}
	if match(before) {
		t.Fatal("a .log opened before the swap matches the indexes after it")
	}
	if !match(open()) {
		t.Fatal("a .log opened after the swap does not match")
	}
}
