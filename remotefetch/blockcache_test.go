package remotefetch

import (
	"bytes"
	"testing"
	"testing/synctest"
)

// Concurrent reads that miss on the same block make one GET: the first
// starts it, the others join it.
func TestConcurrentMissesShareOneGet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _ := openFileStore(t)
		p := buildPartition(t, "merge", 0, []int{20}, segmentSpec{})
		p.put(t, s)
		counting := newCountingBucket(StoreBucket(s))
		counting.gate = make(chan struct{})
		cfg := testConfig()
		cfg.ReadAheadBlocks = 0
		r := newReader(t, counting, p, cfg)

		const readers = 8
		want, _ := p.expect(0, 100)
		errs := make(chan error, readers)
		for range readers {
			go func() {
				res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 100})
				if err == nil && !bytes.Equal(res.Records, want) {
					t.Errorf("a reader got %d bytes, want %d", len(res.Records), len(want))
				}
				errs <- err
			}()
		}
		synctest.Wait() // every reader waits: one at the gate, the rest on its GET
		if n := counting.reads.Load(); n != 1 {
			t.Fatalf("%d GETs reached the bucket for one block, want 1", n)
		}
		close(counting.gate)
		for range readers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		m := r.Metrics()
		if m.BlockGets != 1 || m.Blocks.Misses != 1 || m.Blocks.Merged != readers-1 {
			t.Fatalf("%d block GETs, cache %+v: want 1 GET, 1 miss, %d merged", m.BlockGets, m.Blocks, readers-1)
		}
	})
}

// A block that was read is served from the cache the next time, by another
// consumer too.
func TestBlockCacheHit(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "hit", 0, []int{20}, segmentSpec{})
	p.put(t, s)
	counting := newCountingBucket(StoreBucket(s))
	r := newReader(t, counting, p, testConfig())
	for range 2 {
		if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 3, MaxBytes: 100}); err != nil {
			t.Fatal(err)
		}
	}
	m := r.Metrics().Blocks
	if counting.reads.Load() != 1 || m.Hits+m.ReadAheadHits != 1 {
		t.Fatalf("%d GETs, cache %+v: want 1 GET and one hit", counting.reads.Load(), m)
	}
	if m.HitRatio() != 0.5 {
		t.Fatalf("hit ratio %v, want 0.5", m.HitRatio())
	}
	if m.Size == 0 || m.Capacity != testConfig().BlockCacheBytes {
		t.Fatalf("cache size %d of %d, want a block of %d", m.Size, m.Capacity, testConfig().BlockCacheBytes)
	}
}
