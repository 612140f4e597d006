package hotlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// tailFixture is a log with durable history and one last batch that was
// written but not fsynced.
type tailFixture struct {
	log     *Log
	config  Config
	batches []appended // all of them, the last one unflushed
	path    string     // the active segment's .log
	start   int64      // position of the last batch
}

func newTailFixture(t *testing.T, seed uint64) tailFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 100, 5)
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	last := appendBatches(t, l, makeBatch(t, rng, 2, 10, 5))
	path := lastSegmentLog(l)
	return tailFixture{log: l, config: c, batches: append(batches, last...), path: path, start: fileSize(t, path) - int64(len(last[0].bytes))}
}

// reopenCopy opens a crash copy of the fixture's log whose active .log is
// replaced by content.
func (f tailFixture) reopenCopy(t *testing.T, content []byte) (*Log, RecoveryInfo) {
	t.Helper()
	dst := crashCopy(t, f.log, func(name string, data []byte) []byte {
		if name == filepath.Base(f.path) {
			return content
		}
		return data
	})
	var info RecoveryInfo
	l, err := Open(dst, recoveryEvents(f.config, &info))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, info
}

// TestTornTailAtEveryByte cuts the unflushed last batch at every byte:
// recovery keeps exactly the batches before it, and the whole batch when
// it is complete.
func TestTornTailAtEveryByte(t *testing.T) {
	t.Parallel()
	f := newTailFixture(t, 50)
	full, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	last := f.batches[len(f.batches)-1]
	for cut := int64(0); cut <= int64(len(last.bytes)); cut++ {
		l, info := f.reopenCopy(t, full[:f.start+cut])
		keep := f.batches[:len(f.batches)-1]
		wantTruncated := cut
		if cut == int64(len(last.bytes)) {
			keep, wantTruncated = f.batches, 0
		}
		if end := keep[len(keep)-1].last + 1; l.LogEndOffset() != end || info.BytesTruncated != wantTruncated || info.CleanShutdown {
			t.Fatalf("cut at %d: log end %d, %+v; want end %d, %d bytes truncated", cut, l.LogEndOffset(), info, end, wantTruncated)
		}
		if got := fileSize(t, lastSegmentLog(l)); got != f.start+cut-wantTruncated {
			t.Fatalf("cut at %d: recovered .log is %d bytes", cut, got)
		}
		checkReadsBack(t, l, keep[len(keep)-3:])
		// The log goes on from the recovered end.
		more := appendBatches(t, l, makeBatch(t, rand.New(rand.NewPCG(1, uint64(cut))), 1, 5, 1))
		if more[0].base != keep[len(keep)-1].last+1 {
			t.Fatalf("cut at %d: next append at %d", cut, more[0].base)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBitFlipInLastBatch flips one bit at every byte of the unflushed last
// batch: recovery cuts the batch, except for flips in the leader epoch,
// which the CRC does not cover (the field the leader stamps).
func TestBitFlipInLastBatch(t *testing.T) {
	t.Parallel()
	f := newTailFixture(t, 52)
	full, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	last := f.batches[len(f.batches)-1]
	for i := range int64(len(last.bytes)) {
		flipped := bytes.Clone(full)
		flipped[f.start+i] ^= 1 << (i % 8)
		l, info := f.reopenCopy(t, flipped)
		epochField := i >= 12 && i < 16
		wantEnd, wantTruncated := last.base, int64(len(last.bytes))
		if epochField {
			wantEnd, wantTruncated = last.last+1, 0
		}
		if l.LogEndOffset() != wantEnd || info.BytesTruncated != wantTruncated {
			t.Fatalf("flip at byte %d: log end %d, %d bytes truncated; want %d and %d", i, l.LogEndOffset(), info.BytesTruncated, wantEnd, wantTruncated)
		}
		checkReadsBack(t, l, f.batches[len(f.batches)-4:len(f.batches)-1])
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryCostIsFlatInHistory: after a crash, Open checks exactly the
// bytes appended since the persisted recovery point, however long the log.
func TestRecoveryCostIsFlatInHistory(t *testing.T) {
	t.Parallel()
	for _, history := range []int{1000, 4000} {
		rng := rand.New(rand.NewPCG(54, uint64(history)))
		c := testConfig()
		l := openLog(t, t.TempDir(), c)
		fill(t, l, rng, history, 10)
		if err := l.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		l.flusher.round.Lock()
		if err := l.writeCheckpointLocked(); err != nil {
			t.Fatal(err)
		}
		l.flusher.round.Unlock()
		before := l.ActiveSegment().Size
		fill(t, l, rng, 20, 10) // unflushed
		unflushed := l.ActiveSegment().Size - before

		var info RecoveryInfo
		dst := crashCopy(t, l, nil)
		reopened := openLog(t, dst, recoveryEvents(c, &info))
		if info.BytesScanned != unflushed || info.SegmentsScanned != 1 || info.BytesTruncated != 0 {
			t.Fatalf("history of %d batches in %d segments: recovery %+v, want %d bytes scanned in 1 segment",
				history, len(l.Segments()), info, unflushed)
		}
		if reopened.LogEndOffset() != l.LogEndOffset() {
			t.Fatalf("recovered end %d, want %d", reopened.LogEndOffset(), l.LogEndOffset())
		}
	}
}

// TestRecoveryCutsEverythingAfterCorruption corrupts a batch in a segment
// above the recovery point: that segment is cut there and all later
// segments are removed.
func TestRecoveryCutsEverythingAfterCorruption(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(56, 57))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 1500, 10)
	segments := l.Segments()
	if len(segments) < 4 {
		t.Fatalf("%d segments", len(segments))
	}
	victim := segments[1]
	var corrupt appended
	for _, b := range batches {
		if b.base > victim.BaseOffset+10 {
			corrupt = b
			break
		}
	}
	position := int64(0)
	for _, b := range batches {
		if b.base >= victim.BaseOffset && b.base < corrupt.base {
			position += int64(len(b.bytes))
		}
	}
	dst := crashCopy(t, l, func(name string, data []byte) []byte {
		switch name {
		case logCheckpointName:
			return nil // check everything
		case segmentFileName(victim.BaseOffset, logSuffix):
			data[position+int64(len(corrupt.bytes))-1] ^= 0x40
		}
		return data
	})
	var info RecoveryInfo
	r := openLog(t, dst, recoveryEvents(c, &info))
	got := r.Segments()
	if len(got) != 2 || r.LogEndOffset() != corrupt.base || got[1].Size != position {
		t.Fatalf("after corruption at offset %d: segments %+v, end %d", corrupt.base, got, r.LogEndOffset())
	}
	var lost int64
	for _, s := range segments[1:] {
		lost += s.Size
	}
	if info.BytesTruncated != lost-position || info.SegmentsScanned != 2 {
		t.Fatalf("recovery %+v, want %d bytes truncated", info, lost-position)
	}
	for _, s := range segments[2:] {
		if _, err := os.Stat(filepath.Join(dst, segmentFileName(s.BaseOffset, logSuffix))); !os.IsNotExist(err) {
			t.Fatalf("segment %d survived: %v", s.BaseOffset, err)
		}
	}
	var kept []appended
	for _, b := range batches {
		if b.base < corrupt.base {
			kept = append(kept, b)
		}
	}
	checkReadsBack(t, r, kept)
	checkTimestampLookups(t, r, kept)
}

// TestRecoveryStopsAtMissingSegment removes a segment above the recovery
// point: the segments after the gap go too.
func TestRecoveryStopsAtMissingSegment(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(58, 59))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 1500, 10)
	segments := l.Segments()
	gone := segments[2].BaseOffset
	dst := crashCopy(t, l, func(name string, data []byte) []byte {
		if base, _, ok := parseSegmentFileName(name); name == logCheckpointName || (ok && base == gone) {
			return nil
		}
		return data
	})
	r := openLog(t, dst, c)
	if got := r.Segments(); len(got) != 2 || r.LogEndOffset() != gone {
		t.Fatalf("segments %+v after losing segment %d", got, gone)
	}
	var kept []appended
	for _, b := range batches {
		if b.base < gone {
			kept = append(kept, b)
		}
	}
	checkReadsBack(t, r, kept)
	more := appendBatches(t, r, makeBatch(t, rng, 1, 1, 1))
	if more[0].base != gone {
		t.Fatalf("append after recovery at %d, want %d", more[0].base, gone)
	}
}

// TestRecoveryRebuildsSealedIndexes damages the indexes of sealed,
// trusted segments: missing or ragged files are rebuilt by Open, wrong
// entries when the segment is first read.
func TestRecoveryRebuildsSealedIndexes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(60, 61))
	c := testConfig()
	dir := t.TempDir()
	l, err := Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	batches := fill(t, l, rng, 2000, 10)
	segments := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	damage := map[string]func(string) error{
		segmentFileName(segments[0].BaseOffset, indexSuffix): os.Remove,
		segmentFileName(segments[1].BaseOffset, timeIndexSuffix): func(path string) error {
			return os.Truncate(path, fileSize(t, path)-5)
		},
		segmentFileName(segments[2].BaseOffset, indexSuffix): func(path string) error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i := range data {
				data[i] = byte(rng.IntN(256))
			}
			return os.WriteFile(path, data, 0o644)
		},
	}
	for name, fn := range damage {
		if err := fn(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	l = openLog(t, dir, c)
	if got := l.Segments(); !equalSegments(got, segments) {
		t.Fatalf("segments after repair:\n%+v\nwant\n%+v", got, segments)
	}
	checkReadsBack(t, l, batches)
	checkTimestampLookups(t, l, batches)
	for _, s := range segments[:3] {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
			path := filepath.Join(dir, segmentFileName(s.BaseOffset, suffix))
			if size := fileSize(t, path); size == 0 {
				t.Errorf("%s not rebuilt", path)
			}
		}
	}
}

// TestRecoveryDeletesSegmentsBelowLogStart simulates a crash after
// DeleteBefore persisted the new log start but before it deleted files.
func TestRecoveryDeletesSegmentsBelowLogStart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(62, 63))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 1500, 10)
	before := crashCopy(t, l, nil)
	start := l.Segments()[2].BaseOffset + 1
	if _, err := l.DeleteBefore(start); err != nil {
		t.Fatal(err)
	}
	dst := crashCopy(t, l, nil)
	for _, s := range []int64{0, l.Segments()[0].BaseOffset} {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			name := segmentFileName(s, suffix)
			data, err := os.ReadFile(filepath.Join(before, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := openLog(t, dst, c)
	if r.LogStartOffset() != start || r.Segments()[0].BaseOffset != l.Segments()[0].BaseOffset {
		t.Fatalf("log start %d, first segment %d; want %d and %d", r.LogStartOffset(), r.Segments()[0].BaseOffset, start, l.Segments()[0].BaseOffset)
	}
	if _, err := os.Stat(filepath.Join(dst, segmentFileName(0, logSuffix))); !os.IsNotExist(err) {
		t.Fatalf("segment 0 below the log start not deleted: %v", err)
	}
	checkReadsBack(t, r, batchesFrom(batches, start))
}

// TestRecoveryAfterSegmentsVanish reopens a crashed log whose segments
// vanished: it starts empty at the old end rather than reuse offsets.
func TestRecoveryAfterSegmentsVanish(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(64, 65))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	fill(t, l, rng, 50, 10)
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.flusher.round.Lock()
	if err := l.writeCheckpointLocked(); err != nil {
		t.Fatal(err)
	}
	l.flusher.round.Unlock()
	dst := crashCopy(t, l, func(name string, data []byte) []byte {
		if _, _, ok := parseSegmentFileName(name); ok {
			return nil
		}
		return data
	})
	r := openLog(t, dst, c)
	if r.LogStartOffset() != l.LogEndOffset() || r.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("empty log at [%d, %d), want at %d", r.LogStartOffset(), r.LogEndOffset(), l.LogEndOffset())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The rewritten checkpoint matches the new segment: a clean reopen.
	var info RecoveryInfo
	openLog(t, dst, recoveryEvents(c, &info))
	if !info.CleanShutdown || info.BytesScanned != 0 {
		t.Fatalf("second reopen: %+v", info)
	}
}
