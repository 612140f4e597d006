package hotlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/record"
)

// linearPositions walks every batch of a .log and maps each offset to the
// position of the batch holding it.
func linearPositions(t *testing.T, path string) map[int64]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	positions := map[int64]int64{}
	for pos := 0; pos < len(data); {
		h, err := record.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		for o := h.BaseOffset; o <= h.LastOffset(); o++ {
			positions[o] = int64(pos)
		}
		pos += h.Size()
	}
	return positions
}

func TestIndexLookupAgreesWithLinearScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(30, 31))
	dir := t.TempDir()
	c := testConfig()
	c.SegmentBytes = 256 << 10
	l, err := Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	// Batches from a few bytes to several index intervals.
	for range 600 {
		size := 1 + rng.IntN(100)
		if rng.IntN(10) == 0 {
			size = 1000
		}
		if _, err := l.Append(checked(t, makeBatch(t, rng, 1+rng.IntN(8), size, 1))...); err != nil {
			t.Fatal(err)
		}
	}
	check := func(l *Log) {
		for _, seg := range l.Segments() {
			positions := linearPositions(t, filepath.Join(l.Dir(), segmentFileName(seg.BaseOffset, logSuffix)))
			for offset := seg.BaseOffset; offset < seg.NextOffset; offset++ {
				s, err := l.Read(offset, 1)
				if err != nil {
					t.Fatal(err)
				}
				if s.Position != positions[offset] {
					t.Fatalf("offset %d: index lookup at %d, linear scan at %d", offset, s.Position, positions[offset])
				}
				s.Release()
			}
		}
	}
	check(l) // active segment and sealed segments still held open since their roll
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check(openLog(t, dir, c)) // sealed indexes mapped read-only from their files
}

// TestIndexIsSparse checks one 8-byte entry per index.interval.bytes of
// log: about size/4096 × 8 bytes of index.
func TestIndexIsSparse(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(32, 33))
	c := DefaultConfig()
	c.Clock = newFakeClock()
	c.fsync = noFsync
	l := openLog(t, t.TempDir(), c)
	// Batches of about 1 KiB, not a divisor of the interval.
	batchSize := int64(len(makeBatch(t, rng, 1, 1030, 1)))
	for range 4000 {
		appendBatches(t, l, makeBatch(t, rng, 1, 1030, 1))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	syncSealed(t, l)
	seg := l.state.Load().segments[0]
	tail := seg.tail.Load()
	size := tail.size
	indexBytes := fileSize(t, seg.path(indexSuffix))
	// An entry goes to the first batch at least 4096 bytes past the last:
	// every 4 batches here.
	want := (size/batchSize - 1) / 4
	if int64(tail.indexEntries) != want || indexBytes != want*indexEntrySize {
		t.Fatalf("%d-byte log: %d index entries in %d bytes, want %d entries", size, tail.indexEntries, indexBytes, want)
	}
	if dense := size / batchSize * indexEntrySize; indexBytes > dense/3 {
		t.Fatalf("index of %d bytes is not sparse (a dense one is %d)", indexBytes, dense)
	}
	t.Logf("log %d bytes, index %d bytes (size/4096*8 = %d)", size, indexBytes, size/4096*8)
}

func TestOffsetIndexSearches(t *testing.T) {
	t.Parallel()
	x := make(offsetIndex, 5*indexEntrySize)
	entries := [][2]uint32{{3, 100}, {7, 250}, {12, 400}, {20, 900}}
	for i, e := range entries {
		x.put(i, e[0], e[1])
	}
	n := len(entries)
	for _, tc := range []struct {
		rel     uint32
		wantRel uint32
		wantPos int64
	}{{0, 0, 0}, {2, 0, 0}, {3, 3, 100}, {6, 3, 100}, {7, 7, 250}, {19, 12, 400}, {20, 20, 900}, {1 << 31, 20, 900}} {
		if rel, pos := x.lookupOffset(n, tc.rel); rel != tc.wantRel || pos != tc.wantPos {
			t.Errorf("lookupOffset(%d) = %d, %d; want %d, %d", tc.rel, rel, pos, tc.wantRel, tc.wantPos)
		}
	}
	for _, tc := range []struct {
		pos, wantPos int64
		wantRel      uint32
	}{{0, 0, 0}, {99, 0, 0}, {100, 100, 3}, {399, 250, 7}, {10_000, 900, 20}} {
		if rel, pos := x.lookupPosition(n, tc.pos); rel != tc.wantRel || pos != tc.wantPos {
			t.Errorf("lookupPosition(%d) = %d, %d; want %d, %d", tc.pos, rel, pos, tc.wantRel, tc.wantPos)
		}
	}
	if got := x.countBelow(n, 400); got != 2 {
		t.Errorf("countBelow(400) = %d, want 2", got)
	}
	if err := x.check(n, 901, 21); err != nil {
		t.Errorf("check of a good index: %v", err)
	}
	for name, args := range map[string][3]int64{
		"entry past the log":    {4, 900, 21},
		"offset past the end":   {4, 901, 20},
		"more entries than fit": {6, 901, 21},
	} {
		if err := x.check(int(args[0]), args[1], args[2]); !errors.Is(err, ErrCorruptFile) {
			t.Errorf("check with %s: %v", name, err)
		}
	}
	x.put(2, 5, 400) // offsets out of order
	if err := x.check(n, 901, 21); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("check of an unordered index: %v", err)
	}
}

func TestTimeIndexSearches(t *testing.T) {
	t.Parallel()
	x := make(timeIndex, 4*timeIndexEntrySize)
	x.put(0, 100, 2)
	x.put(1, 200, 5)
	x.put(2, 300, 5)
	for _, tc := range []struct {
		ts      int64
		wantTS  int64
		wantRel uint32
		wantOK  bool
	}{{50, 0, 0, false}, {100, 0, 0, false}, {101, 100, 2, true}, {250, 200, 5, true}, {1000, 300, 5, true}} {
		ts, rel, ok := x.lastBelow(3, tc.ts)
		if ts != tc.wantTS || rel != tc.wantRel || ok != tc.wantOK {
			t.Errorf("lastBelow(%d) = %d, %d, %v; want %d, %d, %v", tc.ts, ts, rel, ok, tc.wantTS, tc.wantRel, tc.wantOK)
		}
	}
	if err := x.check(3, 6); err != nil {
		t.Errorf("check: %v", err)
	}
	if err := x.check(3, 5); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("check with an offset past the end: %v", err)
	}
	x.put(2, 200, 6) // timestamp not increasing
	if err := x.check(3, 7); !errors.Is(err, ErrCorruptFile) {
		t.Errorf("check with a repeated timestamp: %v", err)
	}
}

// TestIndexStoresLeaveTheFileClean: appends write index entries into
// private mappings, so the index files' pages stay clean (cachestat) and a
// syncfs round has none of them to write; the entries reach the files when
// a checkpoint or a seal vouches for them.
func TestIndexStoresLeaveTheFileClean(t *testing.T) {
	for suffix, st := range indexCachestat(t, testConfig()) {
		if st.Dirty+st.Writeback > 0 {
			t.Errorf("%s: %d pages dirty and %d under writeback after appends", suffix, st.Dirty, st.Writeback)
		}
	}
}

// TestIndexStoresReadInOnlyThePagesTheyTouch: the first store to a page
// of a private index mapping reads that page of the sparse file in, and
// nothing around it: the kernel's read-around (up to the device's
// read_ahead_kb, 8 MiB here) zero-filled the whole 1 MiB index file into
// the page cache (256 pages), a second of CPU when 512 partitions rolled
// at once.
func TestIndexStoresReadInOnlyThePagesTheyTouch(t *testing.T) {
	c := testConfig()
	c.SegmentIndexBytes = DefaultSegmentIndexBytes
	for suffix, st := range indexCachestat(t, c) {
		// The entries fill less than a page; a few pages of slack for
		// the kernel's folio sizes.
		if st.Cache > 8 {
			t.Errorf("%s: %d pages in the page cache after stores to one", suffix, st.Cache)
		}
	}
}

// indexCachestat appends 40 batches to a new log of configuration c and
// returns the page cache state of its active segment's index files, by
// suffix.
func indexCachestat(t *testing.T, c Config) map[string]unix.Cachestat_t {
	t.Helper()
	l := openLog(t, t.TempDir(), c)
	rng := rand.New(rand.NewPCG(3, 9))
	for range 40 {
		appendBatches(t, l, makeBatch(t, rng, 2, 300, 1_700_000_000_000))
	}
	active := l.state.Load().active()
	if entries := active.tail.Load().indexEntries; entries < 10 {
		t.Fatalf("only %d index entries: the test needs some", entries)
	}
	stats := map[string]unix.Cachestat_t{}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		f, err := os.Open(active.path(suffix))
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Cachestat_t
		err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: 0}, &st, 0)
		f.Close()
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("SKIPPED: cachestat(2) needs Linux 6.5; nothing else tells a file's cached and dirty pages")
		}
		if err != nil {
			t.Fatal(err)
		}
		stats[suffix] = st
	}
	return stats
}
