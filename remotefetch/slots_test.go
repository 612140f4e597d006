package remotefetch

import (
	"context"
	"testing"
	"time"
)

// stalledBucket holds every ReadAt until release is closed.
type stalledBucket struct {
	Bucket
	release chan struct{}
}

func (b *stalledBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return b.Bucket.ReadAt(ctx, key, p, off, filled)
}

// TestQueuedLoadsHoldNoBuffers: while the bucket stalls, fetches of forty
// partitions time out and their block loads go on, queued behind the two
// GET slots. Only the loads in a slot hold a block buffer: before, each
// queued load held one, so a slow bucket's backlog of loads grew the
// buffers past MaxConcurrentGets × BlockSize, the bound doc.go gives.
func TestQueuedLoadsHoldNoBuffers(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	var parts sources
	for i := range 40 {
		p := buildPartition(t, "slots", int32(i), []int{30}, segmentSpec{})
		p.put(t, s)
		parts = append(parts, p)
	}
	stalled := &stalledBucket{Bucket: StoreBucket(s), release: make(chan struct{})}
	cfg := testConfig()
	cfg.MaxConcurrentGets = 2
	cfg.FetchMaxWait = 20 * time.Millisecond
	cfg.ReadAheadBlocks = 0
	r := newReader(t, stalled, parts, cfg)
	// The indexes first, so that only the block loads stall.
	close(stalled.release)
	for _, p := range parts {
		if _, err := r.index(t.Context(), p.segments[0].seg); err != nil {
			t.Fatal(err)
		}
	}
	stalled.release = make(chan struct{})
	defer close(stalled.release)
	for round := range 5 {
		var reqs []Request
		for _, p := range parts[round*8 : round*8+8] {
			reqs = append(reqs, Request{Partition: p.part, Offset: 5, MaxBytes: 100})
		}
		for _, res := range r.FetchMany(context.Background(), reqs) {
			if res.Err == nil {
				t.Fatal("a read completed while the bucket stalls")
			}
		}
	}
	if held := r.blocks.pool.held.Load(); held > int64(cfg.MaxConcurrentGets) {
		t.Fatalf("%d block buffers held by loads queued behind %d GET slots, want at most %d", held, cfg.MaxConcurrentGets, cfg.MaxConcurrentGets)
	}
}
