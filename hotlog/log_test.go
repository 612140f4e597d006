package hotlog

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/record"
)

func TestAppendAssignsDenseOffsetsAndReadsBack(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	l := openLog(t, t.TempDir(), testConfig())
	var batches []appended
	for len(l.Segments()) < 4 {
		n := 1 + rng.IntN(4)
		group := make([][]byte, n)
		for i := range group {
			group[i] = makeBatch(t, rng, 1+rng.IntN(20), 1+rng.IntN(200), int64(1000+len(batches)))
		}
		batches = append(batches, appendBatches(t, l, group...)...)
	}
	next := int64(0)
	for _, b := range batches {
		if b.base != next {
			t.Fatalf("batch at %d, want %d", b.base, next)
		}
		next = b.last + 1
	}
	if got := l.LogEndOffset(); got != next {
		t.Fatalf("LogEndOffset = %d, want %d", got, next)
	}
	checkReadsBack(t, l, batches)

	// Reading from the start with a large limit returns whole batches of
	// one segment, then continues at NextOffset.
	var all []byte
	for offset := int64(0); offset < next; {
		s, err := l.Read(offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.ReadAll()
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		splitBatches(t, b, s.FirstOffset)
		all = append(all, b...)
		offset = s.NextOffset
	}
	var want []byte
	for _, b := range batches {
		want = append(want, b.bytes...)
	}
	if !bytes.Equal(all, want) {
		t.Fatal("reading the whole log does not return the appended batches")
	}
}

func TestReadLimits(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	l := openLog(t, t.TempDir(), testConfig())

	// An empty log: reading at the end is an empty section, past it an error.
	s, err := l.Read(0, 100)
	if err != nil || s.Length != 0 || s.NextOffset != 0 {
		t.Fatalf("Read(0) on an empty log = %+v, %v; want an empty section", s, err)
	}
	s.Release()
	var oor *OffsetOutOfRangeError
	if _, err := l.Read(1, 100); !errors.As(err, &oor) || !errors.Is(err, ErrOffsetOutOfRange) || oor.LogEndOffset != 0 {
		t.Fatalf("Read(1) on an empty log: %v, want an OffsetOutOfRangeError", err)
	}

	batches := fill(t, l, rng, 50, 5)
	// A tiny limit still returns the whole batch holding the offset.
	for _, b := range batches {
		s, err := l.Read(b.last, 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Length != int64(len(b.bytes)) || s.FirstOffset != b.base || s.NextOffset != b.last+1 {
			t.Fatalf("Read(%d, 1) = length %d first %d next %d; want the one batch [%d, %d]", b.last, s.Length, s.FirstOffset, s.NextOffset, b.base, b.last)
		}
		s.Release()
	}
	// A limit between batch boundaries stops at the last whole batch that fits.
	for i := range 20 {
		limit := len(batches[i].bytes) + len(batches[i+1].bytes) + len(batches[i+2].bytes)/2
		s, err := l.Read(batches[i].base, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := len(batches[i].bytes) + len(batches[i+1].bytes)
		if s.Length != int64(want) || s.NextOffset != batches[i+2].base {
			t.Fatalf("Read(%d, %d): length %d next %d, want %d and %d", batches[i].base, limit, s.Length, s.NextOffset, want, batches[i+2].base)
		}
		s.Release()
	}
	end := l.LogEndOffset()
	if s, err := l.Read(end, 100); err != nil || s.Length != 0 {
		t.Fatalf("Read(log end): %+v, %v", s, err)
	}
	if _, err := l.Read(end+1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read past the end: %v", err)
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(-1): %v", err)
	}
}

// Append takes only checked batches (record.Batch: a corrupt or cut-off
// batch cannot reach it; record's tests cover Check), and refuses a call
// with any batch larger than segment.bytes whole.
func TestAppendRefusesInvalidBatchesAndWritesNothing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	fill(t, l, rng, 3, 3)
	end, size := l.LogEndOffset(), fileSize(t, lastSegmentLog(l))

	good := makeBatch(t, rng, 2, 10, 1)
	cases := []struct {
		name    string
		batches [][]byte
		want    []error
	}{
		{"larger than segment.bytes", [][]byte{makeBatch(t, rng, 1, int(c.SegmentBytes), 1)}, []error{ErrBatchTooLarge}},
		{"larger than segment.bytes after a good batch", [][]byte{good, makeBatch(t, rng, 1, int(c.SegmentBytes), 1)}, []error{ErrBatchTooLarge}},
		{"nothing", nil, []error{ErrInvalidArgument}},
	}
	for _, tc := range cases {
		_, err := l.Append(checked(t, tc.batches...)...)
		for _, want := range tc.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: Append error %v, want %v", tc.name, err, want)
			}
		}
	}
	if l.LogEndOffset() != end || fileSize(t, lastSegmentLog(l)) != size {
		t.Fatal("a refused append changed the log")
	}
}

func TestAppendStampsLeaderEpoch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	l := openLog(t, t.TempDir(), testConfig())
	before := appendBatches(t, l, makeBatch(t, rng, 1, 10, 1))
	if err := l.AssignEpoch(3, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	after := appendBatches(t, l, makeBatch(t, rng, 1, 10, 1))
	for _, tc := range []struct {
		batch appended
		epoch int32
	}{{before[0], UndefinedEpoch}, {after[0], 3}} {
		got, err := l.ReadBytes(tc.batch.base, 1)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseHeader(got)
		if h.PartitionLeaderEpoch != tc.epoch {
			t.Errorf("batch %d stamped with epoch %d, want %d", tc.batch.base, h.PartitionLeaderEpoch, tc.epoch)
		}
	}
}

func TestReopenAfterCleanClose(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	dir := t.TempDir()
	c := testConfig()
	c.fsync = nil // real fsyncs: this is the path a real restart takes
	var recovered RecoveryInfo
	c.Events.Recovered = func(info RecoveryInfo) { recovered = info }
	l, err := Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	batches := fill(t, l, rng, 1000, 10)
	if err := l.AssignEpoch(2, 5); err != nil {
		t.Fatal(err)
	}
	segments := l.Segments()
	if len(segments) < 3 {
		t.Fatalf("want several segments, got %d", len(segments))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(checked(t, makeBatch(t, rng, 1, 1, 1))...); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := l.Read(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := l.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}

	l = openLog(t, dir, c)
	if !recovered.CleanShutdown || recovered.BytesScanned != 0 || recovered.BytesTruncated != 0 {
		t.Fatalf("clean reopen did recovery work: %+v", recovered)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !os.IsNotExist(err) {
		t.Fatalf("Open left the clean-shutdown marker: %v", err)
	}
	if got := l.Segments(); !equalSegments(got, segments) {
		t.Fatalf("segments after reopen:\n%+v\nwant\n%+v", got, segments)
	}
	checkReadsBack(t, l, batches)
	if got := l.Epochs(); len(got) != 1 || got[0] != (EpochEntry{Epoch: 2, StartOffset: 5}) {
		t.Fatalf("epochs after reopen: %v", got)
	}
	more := appendBatches(t, l, makeBatch(t, rng, 3, 10, 5))
	if more[0].base != batches[len(batches)-1].last+1 {
		t.Fatalf("append after reopen at %d", more[0].base)
	}
}

func equalSegments(a, b []SegmentInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConcurrentReadersSeeOnlyWholeBatches races readers against a writer
// that appends, rolls, truncates and deletes: every section a reader gets
// must hold whole, valid batches with dense offsets, unchanged while held.
func TestConcurrentReadersSeeOnlyWholeBatches(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.SegmentBytes = 16 << 10
	l := openLog(t, t.TempDir(), c)
	var done atomic.Bool
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 99))
			reads := 0
			for !done.Load() || reads < 100 {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end <= start {
					continue
				}
				offset := start + rng.Int64N(end-start)
				s, err := l.Read(offset, rng.IntN(8<<10))
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // truncated or deleted meanwhile
				}
				if err != nil {
					t.Errorf("Read(%d): %v", offset, err)
					return
				}
				b, err := s.ReadAll()
				if err != nil {
					t.Errorf("ReadAll: %v", err)
					s.Release()
					return
				}
				headers := splitBatches(t, b, s.FirstOffset)
				if last := headers[len(headers)-1]; last.NextOffset() != s.NextOffset || headers[0].LastOffset() < offset {
					t.Errorf("section [%d, %d) does not hold offset %d", s.FirstOffset, s.NextOffset, offset)
				}
				if again, err := s.ReadAll(); err != nil || !bytes.Equal(again, b) {
					t.Errorf("section bytes changed while held: %v", err)
				}
				s.Release()
				reads++
			}
		}()
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 2000 {
		n := 1 + rng.IntN(3)
		group := make([][]byte, n)
		for i := range group {
			group[i] = makeBatch(t, rng, 1+rng.IntN(5), 1+rng.IntN(300), 1)
		}
		if _, err := l.Append(checked(t, group...)...); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%200 == 199:
			if err := l.TruncateTo(l.LogEndOffset() - 1 - rng.Int64N(20)); err != nil {
				t.Fatal(err)
			}
		case i%300 == 299:
			if _, err := l.DeleteBefore(l.LogStartOffset() + (l.LogEndOffset()-l.LogStartOffset())/3); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
	if len(l.Segments()) < 5 {
		t.Fatalf("only %d segments: the test did not roll while reading", len(l.Segments()))
	}
}

// TestSectionOutlivesDeletionAndClose holds a section while its segment is
// deleted and the log closed: its bytes stay readable until Release.
func TestSectionOutlivesDeletionAndClose(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	l := openLog(t, t.TempDir(), testConfig())
	batches := fill(t, l, rng, 200, 10)
	s, err := l.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteBefore(batches[len(batches)-1].base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), segmentFileName(0, logSuffix))); !os.IsNotExist(err) {
		t.Fatalf("segment 0 not deleted: %v", err)
	}
	if _, err := l.Read(0, 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read below the new log start: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAll()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("section changed after deletion and Close: %v", err)
	}
	s.Release()
	s.Release() // harmless
}

// batchWithOffsetDelta builds a one-record batch whose header claims
// lastOffsetDelta delta (and delta+1 records), with a correct CRC: enough
// for Append, which validates headers and CRCs but not record contents.
func batchWithOffsetDelta(t testing.TB, delta int32) []byte {
	t.Helper()
	b, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	be := func(pos int, v uint32) {
		b[pos], b[pos+1], b[pos+2], b[pos+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	be(23, uint32(delta))   // lastOffsetDelta
	be(57, uint32(delta+1)) // recordsCount
	be(17, crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := record.Validate(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFsyncFailureFailsTheLog: after a failed fsync the kernel may have
// dropped dirty pages, so the log refuses to acknowledge or take more, and
// tells its Failed listener once.
func TestFsyncFailureFailsTheLog(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	c := testConfig()
	var failedEvents []error
	var mu sync.Mutex
	c.Events.Failed = func(err error) {
		mu.Lock()
		failedEvents = append(failedEvents, err)
		mu.Unlock()
	}
	var failing atomic.Bool
	c.fsync = func(*os.File, bool) error {
		if failing.Load() {
			return errors.New("injected EIO")
		}
		return nil
	}
	l := openLog(t, t.TempDir(), c)
	res, err := l.Append(checked(t, makeBatch(t, rng, 1, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	res, err = l.Append(checked(t, makeBatch(t, rng, 1, 10, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); !errors.Is(err, ErrFailed) {
		t.Fatalf("WaitAck after a failed fsync: %v, want ErrFailed", err)
	}
	if _, err := l.Append(checked(t, makeBatch(t, rng, 1, 10, 1))...); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after a failed fsync: %v, want ErrFailed", err)
	}
	if err := l.Sync(context.Background()); !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync after a failed fsync: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failedEvents) != 1 || !errors.Is(failedEvents[0], ErrFailed) || failedEvents[0] != l.Failure() {
		t.Fatalf("Failed events %v, want one: the log's failure %v", failedEvents, l.Failure())
	}
}

// TestReadSegmentBytesBelowTheLogStart: ReadSegmentBytes reads a sealed
// segment whole, below a log start inside it too (what the log cleaner
// rewrites), where Read refuses; it refuses the active segment and a
// base offset no segment has.
func TestReadSegmentBytesBelowTheLogStart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	l := openLog(t, t.TempDir(), testConfig())
	var batches []appended
	for range 2 {
		batches = append(batches, fill(t, l, rng, 50, 10)...)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	segments := l.Segments()
	second := segments[len(segments)-2]
	var inside appended
	for _, b := range batches {
		if b.base > second.BaseOffset && b.base < second.NextOffset {
			inside = b
			break
		}
	}
	if inside.base == 0 {
		t.Fatal("no batch past the second segment's first")
	}
	whole, err := l.ReadBytes(second.BaseOffset, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteBefore(inside.base); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadBytes(second.BaseOffset, 1<<30); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read below the log start %d: %v, want out of range", inside.base, err)
	}
	got, err := l.ReadSegmentBytes(second.BaseOffset, second.BaseOffset, 1<<30)
	if err != nil || !bytes.HasPrefix(whole, got) || len(got) == 0 {
		t.Fatalf("ReadSegmentBytes below the log start: %d bytes, %v; want the segment's first bytes as read before", len(got), err)
	}
	active := l.ActiveSegment().BaseOffset
	for _, base := range []int64{active, second.BaseOffset + 1} {
		if _, err := l.ReadSegmentBytes(base, base, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("ReadSegmentBytes of %d, not a sealed segment's base: %v, want out of range", base, err)
		}
	}
}
