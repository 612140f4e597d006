package hotlog

import (
	"bufio"
	"fmt"
	"github.com/stratalog/strata/record"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
)

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// residentKiB reads VmRSS from /proc/self/status.
func residentKiB(t testing.TB) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var kib int64
		if _, err := fmt.Sscanf(scanner.Text(), "VmRSS: %d kB", &kib); err == nil {
			return kib
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func TestFileCacheBoundsOpenSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(110, 111))
	c := testConfig()
	cache := NewFileCache(3)
	c.FileCache = cache
	dir := t.TempDir()
	l, err := Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	batches := fill(t, l, rng, 3000, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if cache.Len() != 0 {
		t.Fatalf("Close left %d segments in the cache", cache.Len())
	}
	baseline := openFDs(t)
	l = openLog(t, dir, c)
	if got := openFDs(t) - baseline; got != 1 {
		t.Fatalf("Open holds %d descriptors, want 1 (the active segment)", got)
	}
	checkReadsBack(t, l, batches) // touches every segment
	if n := len(l.Segments()); cache.Len() != 3 || n < 8 {
		t.Fatalf("%d segments, %d cached, want 3 cached", n, cache.Len())
	}
	if got := openFDs(t) - baseline; got != 1+3 {
		t.Fatalf("%d descriptors after reading everything, want 4", got)
	}
	// Sections pin their files past the budget until released.
	var sections []*Section
	for _, s := range l.Segments() {
		section, err := l.Read(s.BaseOffset, 1)
		if err != nil {
			t.Fatal(err)
		}
		sections = append(sections, section)
	}
	if got := openFDs(t) - baseline; got != len(sections) {
		t.Fatalf("%d descriptors with %d sections held", got, len(sections))
	}
	for _, s := range sections {
		s.Release()
	}
	if got := openFDs(t) - baseline; got != 1+3 {
		t.Fatalf("%d descriptors after releasing, want 4", got)
	}
}

// TestManyPartitions opens 4,000 partitions of two segments each with one
// shared FileCache, reads from every sealed segment, and checks the
// descriptor count against the budget (one per active segment plus the
// cache's limit) and what an idle partition adds to the live heap and the
// resident set against idleHeapBound and idleResidentBound.
func TestManyPartitions(t *testing.T) {
	partitions := 4000
	if testing.Short() {
		partitions = 500
	}
	const budget = 256
	c := testConfig()
	cache := NewFileCache(budget)
	c.FileCache = cache
	dirs := clonePartitions(t, fastTempDir(t), c, partitions)

	before := measureProcess(t)
	logs, err := openPartitions(dirs, c)
	defer closePartitions(logs)
	if err != nil {
		t.Fatal(err)
	}
	open := measureProcess(t).minus(before)
	for _, l := range logs {
		if len(l.Segments()) != 2 {
			t.Fatalf("%s: %d segments", l.Dir(), len(l.Segments()))
		}
		if _, err := l.ReadBytes(0, 1); err != nil {
			t.Fatal(err)
		}
	}
	read := measureProcess(t).minus(before)
	t.Logf("%d partitions opened: %d descriptors, %d KiB resident (%.1f KiB per partition), %d KiB live heap (%.1f KiB per partition); "+
		"after reading every sealed segment: %d descriptors (budget %d + %d active), %d KiB resident",
		partitions, open.descriptors, open.residentBytes>>10, float64(open.residentBytes)/1024/float64(partitions),
		open.heapBytes>>10, float64(open.heapBytes)/1024/float64(partitions), read.descriptors, budget, partitions, read.residentBytes>>10)
	if open.descriptors > partitions {
		t.Errorf("%d descriptors for %d idle partitions, want at most one each", open.descriptors, partitions)
	}
	if per := open.heapBytes / int64(partitions); per > idleHeapBound {
		t.Errorf("an idle partition adds %d bytes to the live heap, want at most %d", per, idleHeapBound)
	}
	switch per := open.residentBytes / int64(partitions); {
	case raceDetector:
		t.Log("the resident set is not checked under the race detector, whose shadow memory multiplies it; the heap is")
	case per > idleResidentBound:
		t.Errorf("an idle partition adds %d bytes to the resident set, want at most %d", per, idleResidentBound)
	}
	if read.descriptors > partitions+budget {
		t.Errorf("%d descriptors after reads, over the budget of %d + %d", read.descriptors, partitions, budget)
	}
	if cache.Len() != budget {
		t.Errorf("cache holds %d segments, want %d", cache.Len(), budget)
	}
}

// inParallel runs fn for 0..n-1 on a few goroutines and returns the first
// error.
func inParallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) * 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs <- fn(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// createPartition writes a partition of two segments through a Log.
func createPartition(dir string, c Config, batch []byte) error {
	l, err := Open(dir, c)
	if err != nil {
		return err
	}
	for i := range 2 {
		appendable, err := record.Check(append([]byte(nil), batch...))
		if err != nil {
			return err
		}
		if _, err := l.Append(appendable); err != nil {
			return err
		}
		if i == 0 {
			if err := l.Roll(); err != nil {
				return err
			}
		}
	}
	return l.Close()
}

func TestFileCacheEvictsByClock(t *testing.T) {
	t.Parallel()
	cache := NewFileCache(2)
	newFiles := func() *segmentFiles {
		s := &segment{}
		f := &segmentFiles{segment: s, slot: -1}
		f.refs.Init(1)
		s.files.Store(f)
		return f
	}
	a, b, c := newFiles(), newFiles(), newFiles()
	a.log, b.log, c.log = devNull(t), devNull(t), devNull(t)
	cache.insert(a)
	cache.insert(b)
	b.used.Store(false) // a was used more recently than b
	cache.insert(c)
	if cache.Len() != 2 || b.segment.files.Load() != nil || a.segment.files.Load() != a || c.segment.files.Load() != c {
		t.Fatalf("CLOCK evicted the wrong entry: a %v b %v c %v", a.segment.files.Load() != nil, b.segment.files.Load() != nil, c.segment.files.Load() != nil)
	}
	if b.refs.Load() != 0 {
		t.Fatalf("evicted files hold %d references", b.refs.Load())
	}
	cache.forget(a)
	cache.forget(a)
	if cache.Len() != 1 || cache.mu.ring[0] != c {
		t.Fatal("forget did not remove exactly one entry")
	}
}

func devNull(t testing.TB) *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
