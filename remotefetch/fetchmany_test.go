package remotefetch

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// stallBucket holds every ranged read of keys containing stall until
// release is closed or the read's context ends.
type stallBucket struct {
	*countingBucket
	stall   string
	release chan struct{}
}

func (b *stallBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	if strings.Contains(key, b.stall) {
		select {
		case <-b.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return b.countingBucket.ReadAt(ctx, key, p, off, filled)
}

// FetchMany reads partitions in parallel and returns at
// remote.fetch.max.wait.ms with what completed; the partition whose bucket
// stalls gets ErrTimeout, and its block load, detached rather than
// cancelled, lands in the cache for the next fetch.
func TestFetchManyDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _ := openFileStore(t)
		var parts sources
		for i, topic := range []string{"fast-a", "fast-b", "stalled"} {
			p := buildPartition(t, topic, int32(i), []int{10}, segmentSpec{})
			p.put(t, s)
			parts = append(parts, p)
		}
		bucket := &stallBucket{countingBucket: newCountingBucket(StoreBucket(s)), stall: "stalled", release: make(chan struct{})}
		cfg := testConfig()
		cfg.FetchMaxWait = 500 * time.Millisecond
		r := newReader(t, bucket, parts, cfg)
		var reqs []Request
		for _, p := range parts {
			reqs = append(reqs, Request{Partition: p.part, Offset: 2, MaxBytes: 1000})
		}

		start := time.Now()
		results := r.FetchMany(t.Context(), reqs)
		if elapsed := time.Since(start); elapsed != cfg.FetchMaxWait {
			t.Errorf("FetchMany took %v, want remote.fetch.max.wait.ms (%v)", elapsed, cfg.FetchMaxWait)
		}
		for i, res := range results[:2] {
			want, next := parts[i].expect(2, 1000)
			if res.Err != nil || !bytes.Equal(res.Records, want) || res.NextOffset != next {
				t.Errorf("partition %d: %d bytes to %d, err %v; want %d bytes to %d", i, len(res.Records), res.NextOffset, res.Err, len(want), next)
			}
		}
		if err := results[2].Err; !errors.Is(err, ErrTimeout) || results[2].Records != nil {
			t.Fatalf("stalled partition: %d bytes, err %v; want ErrTimeout and nothing", len(results[2].Records), err)
		}
		if n := r.Metrics().FetchTimeouts; n != 1 {
			t.Errorf("%d fetch timeouts counted, want 1", n)
		}

		close(bucket.release)
		synctest.Wait() // the detached load completes
		gets := bucket.reads.Load()
		again := r.FetchMany(t.Context(), reqs[2:])
		want, _ := parts[2].expect(2, 1000)
		if again[0].Err != nil || !bytes.Equal(again[0].Records, want) {
			t.Fatalf("fetch after the stall: %d bytes, err %v", len(again[0].Records), again[0].Err)
		}
		if n := bucket.reads.Load() - gets; n != 0 {
			t.Fatalf("the fetch after the stall made %d GETs, want none: the detached load should have filled the cache", n)
		}
	})
}

// FetchMany bounds its parallelism and answers partitions it never got to
// with ErrTimeout too; a cancelled client context ends it at once.
func TestFetchManyBoundsAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _ := openFileStore(t)
		var parts sources
		var reqs []Request
		for i := range 4 {
			p := buildPartition(t, "stalled", int32(i), []int{3}, segmentSpec{})
			p.put(t, s)
			parts = append(parts, p)
			reqs = append(reqs, Request{Partition: p.part, Offset: 0, MaxBytes: 100})
		}
		bucket := &stallBucket{countingBucket: newCountingBucket(StoreBucket(s)), stall: "stalled", release: make(chan struct{})}
		defer close(bucket.release)
		cfg := testConfig()
		cfg.FetchConcurrency = 2
		r := newReader(t, bucket, parts, cfg)

		for _, res := range r.FetchMany(t.Context(), reqs) {
			if !errors.Is(res.Err, ErrTimeout) {
				t.Fatalf("err %v, want ErrTimeout", res.Err)
			}
		}
		synctest.Wait()
		if n := bucket.reads.Load(); n != 0 {
			t.Fatalf("%d reads passed the stall", n)
		}

		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		time.AfterFunc(10*time.Millisecond, cancel) // the bubble's fake time
		for _, res := range r.FetchMany(ctx, reqs) {
			if !errors.Is(res.Err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", res.Err)
			}
		}
		if elapsed := time.Since(start); elapsed != 10*time.Millisecond {
			t.Fatalf("a cancelled FetchMany took %v, want it to end when cancelled (10ms)", elapsed)
		}
	})
}
