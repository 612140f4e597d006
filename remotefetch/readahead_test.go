package remotefetch

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stratalog/strata/segmentobject"
)

// A consumer that reads on where it stopped gets the next blocks
// prefetched, following into the next segment; every block is fetched
// once. One whose reads jump about gets no prefetches.
func TestReadAheadPrefetchesForSequentialReads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _ := openFileStore(t)
		p := buildPartition(t, "seq", 0, []int{60, 30}, segmentSpec{})
		p.put(t, s)
		counting := newCountingBucket(StoreBucket(s))
		r := newReader(t, counting, p, testConfig())
		read := func(offset int64) Result {
			res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: testBlockSize / 2})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}

		first := read(0)
		synctest.Wait()
		if n := r.Metrics().Prefetches; n != 0 {
			t.Fatalf("%d prefetches after one read, want none until the reads prove sequential", n)
		}
		second := read(first.NextOffset)
		synctest.Wait() // the prefetches have landed
		if n := r.Metrics().Prefetches; n != int64(testConfig().ReadAheadBlocks) {
			t.Fatalf("%d prefetches after a sequential read, want %d", n, testConfig().ReadAheadBlocks)
		}
		got := append(append(first.Records, second.Records...), readAll(t, r, p, second.NextOffset, testBlockSize/2)...)
		if !bytes.Equal(got, p.allBatches()) {
			t.Fatal("sequential reads differ from what was stored")
		}
		synctest.Wait()
		for _, seg := range p.segments {
			for off := int64(0); off < int64(len(seg.object))-seg.seg.TailBytes; off += testBlockSize {
				if n := counting.rangeReads(seg.seg.Key, off); n != 1 {
					t.Errorf("block at %d of %s fetched %d times, want once", off, seg.seg.Key, n)
				}
			}
		}
		if m := r.Metrics(); m.Blocks.ReadAheadHits == 0 || m.Blocks.Misses > 2 {
			t.Errorf("cache %+v: want the reads served from read-ahead, only the first blocks missed", m.Blocks)
		}

		random := newReader(t, counting, p, testConfig())
		for _, offset := range []int64{100, 3, 50, 150} {
			if _, err := random.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 100}); err != nil {
				t.Fatal(err)
			}
		}
		if n := random.Metrics().Prefetches; n != 0 {
			t.Fatalf("%d prefetches for reads that jump about, want none", n)
		}
	})
}

// With a block cache too small to keep anything, a sequential consumer
// still fetches each block once: its read-ahead window holds the blocks it
// is about to use, whatever the cache admits.
func TestReadAheadWindowOutlivesCacheRejection(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _ := openFileStore(t)
		p := buildPartition(t, "tiny", 0, []int{80}, segmentSpec{bigEvery: 9})
		p.put(t, s)
		counting := newCountingBucket(StoreBucket(s))
		cfg := testConfig()
		cfg.BlockCacheBytes = cfg.BlockSize
		r := newReader(t, counting, p, cfg)
		if got := readAll(t, r, p, 0, 1000); !bytes.Equal(got, p.allBatches()) {
			t.Fatal("sequential reads differ from what was stored")
		}
		synctest.Wait()
		logLength := int64(len(p.segments[0].object)) - p.segments[0].seg.TailBytes
		blocks := (logLength + testBlockSize - 1) / testBlockSize
		if n := counting.reads.Load(); n != blocks {
			t.Fatalf("%d GETs for %d blocks, want one each", n, blocks)
		}
	})
}

// Streams are bounded: past MaxStreams the least recently used consumer is
// forgotten and its window released.
func TestReadAheadStreamsBounded(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxStreams = 2
	ra := newReadAhead(cfg)
	parts := []Partition{{Topic: "a"}, {Topic: "b"}, {Topic: "c"}}
	for _, p := range parts {
		st, _, _ := ra.begin(p, 0, "", false)
		ra.hold(st, blockID{key: p.Topic}, completed(&block{data: []byte{1}}, valueRefs[*block]{}))
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.mu.count != 2 || ra.mu.streams[parts[0]] != nil {
		t.Fatalf("%d streams, first kept: %v; want 2, the first forgotten", ra.mu.count, ra.mu.streams[parts[0]] != nil)
	}
	if ra.mu.used != 2*cfg.BlockSize {
		t.Fatalf("%d bytes held, want the two remaining blocks' %d", ra.mu.used, 2*cfg.BlockSize)
	}
}

// A stream forgotten while a read still has it takes nothing more into its
// window: the budget and the blocks it would hold stay free.
func TestDroppedStreamHoldsNothing(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxStreams = 1
	ra := newReadAhead(cfg)
	first, _, _ := ra.begin(Partition{Topic: "a"}, 0, "", true)
	ra.begin(Partition{Topic: "b"}, 0, "", false) // drops the first
	pool := &blockPool{size: 16}
	b := pool.get(16)
	b.hold() // the flight's, beside the test's own
	ra.hold(first, blockID{key: "a"}, completed(b, blockRefs))
	ra.mu.Lock()
	used, held := ra.mu.used, len(first.window)
	ra.mu.Unlock()
	if used != 0 || held != 0 {
		t.Fatalf("a dropped stream holds %d bytes in %d blocks, want none", used, held)
	}
	if n := b.refs.Load(); n != 1 {
		t.Fatalf("the block has %d references, want the test's one: the window let go of its flight", n)
	}
	prefetched := 0
	ra.finish(first, 1, "a", 0, []target{{id: blockID{key: "a", index: 1}}}, func(target) *flight[*block] {
		prefetched++
		return nil
	})
	if prefetched != 0 {
		t.Fatalf("a dropped stream prefetched %d blocks, want none", prefetched)
	}
}

// plan follows a sequential consumer into the next segments, block by
// block, and stops after the first block of a segment of unknown size.
func TestPlan(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "plan", 0, []int{30, 1, 30}, segmentSpec{})
	ix := mustIndex(t, p.segments[0])
	keys := func(targets []target) []string {
		var out []string
		for _, t := range targets {
			out = append(out, fmt.Sprintf("%d/%d", slices.IndexFunc(p.segments, func(s testSegment) bool { return s.seg.Key == t.id.key }), t.id.index))
		}
		return out
	}
	last := (ix.LogLength() - 1) / testBlockSize
	got := keys(plan(p.manifest, 0, ix, last*testBlockSize, testBlockSize, 4))
	if want := []string{fmt.Sprintf("0/%d", last), "1/0", "2/0", "2/1", "2/2"}; !slices.Equal(got, want) {
		t.Errorf("plan at the last block = %v, want %v", got, want)
	}
	p.manifest.Segments[1].LogBytes = 0
	got = keys(plan(p.manifest, 0, ix, last*testBlockSize, testBlockSize, 4))
	if want := []string{fmt.Sprintf("0/%d", last), "1/0"}; !slices.Equal(got, want) {
		t.Errorf("plan before a segment of unknown size = %v, want %v", got, want)
	}
	if got := keys(plan(p.manifest, 0, ix, 0, testBlockSize, 2)); !slices.Equal(got, []string{"0/0", "0/1", "0/2"}) {
		t.Errorf("plan at the start = %v, want the first three blocks", got)
	}
}

func mustIndex(tb testing.TB, s testSegment) *segmentobject.Index {
	tb.Helper()
	ix, err := segmentobject.ParseTail(s.object, int64(len(s.object)))
	if err != nil {
		tb.Fatal(err)
	}
	return ix
}
