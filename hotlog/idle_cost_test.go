package hotlog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// What an open, idle partition costs: docs/architecture.md gives its
// active segment's descriptor and about 6 KiB resident, 3 KiB of it live
// heap. TestManyPartitions holds the figures under idleResidentBound and
// idleHeapBound; BenchmarkIdlePartition reports them:
//
//	go test -run '^$' -bench IdlePartition ./hotlog/

// idleResidentBound is the most an idle partition may add to the resident
// set, and idleHeapBound to the live heap: over twice the figures
// docs/architecture.md gives, so that the test catches a partition that
// starts to cost a buffer, not allocator noise. The heap bound holds under
// the race detector too; the resident one is checked only without it.
const (
	idleResidentBound = 16 << 10
	idleHeapBound     = 8 << 10
)

// processCost is what this process holds at one moment.
type processCost struct {
	descriptors int
	heapBytes   int64 // live heap after a GC
	// residentBytes is VmRSS: the heap, the mapped index pages touched
	// and the runtime's own memory.
	residentBytes int64
}

// measureProcess collects garbage, returns the free memory to the system
// (so that memory freed earlier and reused now does not hide a cost) and
// reads the process's cost.
func measureProcess(tb testing.TB) processCost {
	tb.Helper()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return processCost{descriptors: openFDs(tb), heapBytes: int64(ms.HeapAlloc), residentBytes: residentKiB(tb) << 10}
}

func (c processCost) minus(o processCost) processCost {
	return processCost{descriptors: c.descriptors - o.descriptors, heapBytes: c.heapBytes - o.heapBytes, residentBytes: c.residentBytes - o.residentBytes}
}

// clonePartitions makes n partitions of two segments under root: one
// written through a Log, the others copies of its files.
func clonePartitions(tb testing.TB, root string, c Config, n int) []string {
	tb.Helper()
	rng := rand.New(rand.NewPCG(112, 113))
	batch := makeBatch(tb, rng, 4, 100, 1)
	dirs := make([]string, n)
	for p := range dirs {
		dirs[p] = filepath.Join(root, fmt.Sprintf("topic-%d", p))
	}
	if err := createPartition(dirs[0], c, batch); err != nil {
		tb.Fatal(err)
	}
	files, err := os.ReadDir(dirs[0])
	if err != nil {
		tb.Fatal(err)
	}
	contents := map[string][]byte{}
	for _, f := range files {
		if contents[f.Name()], err = os.ReadFile(filepath.Join(dirs[0], f.Name())); err != nil {
			tb.Fatal(err)
		}
	}
	err = inParallel(n-1, func(p int) error {
		dir := dirs[p+1]
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for name, data := range contents {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dirs
}

// openPartitions opens every dir with c; the logs opened are returned
// even on error, for closePartitions.
func openPartitions(dirs []string, c Config) ([]*Log, error) {
	logs := make([]*Log, len(dirs))
	err := inParallel(len(dirs), func(p int) (err error) {
		logs[p], err = Open(dirs[p], c)
		return err
	})
	return logs, err
}

// closePartitions closes every opened log.
func closePartitions(logs []*Log) error {
	return inParallel(len(logs), func(p int) error {
		if logs[p] == nil {
			return nil
		}
		return logs[p].Close()
	})
}

// BenchmarkIdlePartition opens 1,000 idle partitions of two segments per
// operation, with one shared FileCache, and reports what each adds to the
// process: live heap, resident set and descriptors, averaged over the
// operations. It is not a timing: ns/op is the cost of opening and
// closing 1,000 partitions.
func BenchmarkIdlePartition(b *testing.B) {
	const partitions = 1000
	c := testConfig()
	c.FileCache = NewFileCache(256)
	dirs := clonePartitions(b, fastTempDir(b), c, partitions)
	var total processCost
	b.ResetTimer()
	for b.Loop() {
		before := measureProcess(b)
		logs, err := openPartitions(dirs, c)
		if err != nil {
			b.Fatal(err)
		}
		cost := measureProcess(b).minus(before)
		total.descriptors += cost.descriptors
		total.heapBytes += cost.heapBytes
		total.residentBytes += cost.residentBytes
		if err := closePartitions(logs); err != nil {
			b.Fatal(err)
		}
	}
	per := float64(b.N) * partitions
	b.ReportMetric(float64(total.heapBytes)/per, "heap-B/partition")
	b.ReportMetric(float64(total.residentBytes)/per, "resident-B/partition")
	b.ReportMetric(float64(total.descriptors)/per, "fds/partition")
}
