package remotefetch

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/record"
)

// recyclingConfig is testConfig with a block cache of two blocks and
// read-ahead windows of four in all, so that blocks leave the cache and the
// windows all the time and their buffers go round the pool.
func recyclingConfig() Config {
	cfg := testConfig()
	cfg.BlockCacheBytes = 2 * testBlockSize
	cfg.ReadAheadBlocks = 2
	cfg.ReadAheadBytes = 4 * testBlockSize
	return cfg
}

// A Result keeps the block its Records slice until it is released, however
// many blocks pass through the cache and the pool meanwhile (released
// buffers are poisoned in tests: a buffer reused too early would show);
// then the buffer is reused, and a second Release does nothing.
func TestResultHoldsItsBlock(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "held", 0, []int{60}, segmentSpec{})
	p.put(t, s)
	r := newReader(t, StoreBucket(s), p, recyclingConfig())
	held, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if held.shared == nil {
		t.Fatal("the first batch was copied, want a slice of its block")
	}
	want, _ := p.expect(0, 1)
	if got := readAll(t, r, p, 1, 1); !bytes.Equal(got, p.allBatches()[len(want):]) {
		t.Fatal("a scan of the partition differs from what was stored")
	}
	if n := r.Metrics().Blocks.BuffersReused; n == 0 {
		t.Fatal("no block buffer was reused while reading the partition")
	}
	if !bytes.Equal(held.Records, want) {
		t.Fatal("a held Result's bytes changed while other blocks were read")
	}
	held.Release()
	held.Release()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r.Metrics().Blocks.BufferBytes; n != 0 {
		t.Fatalf("%d bytes of block buffers still held once the Result was released (twice) and the Reader closed, want 0", n)
	}
}

// Readers of many partitions at once, at random offsets and in sequence,
// each holding a few Results for a while, share blocks through the cache,
// the windows and the flights: every byte returned is what was stored,
// still so when the Result is released, and no read meets a block whose
// buffer was reused under it (a failed CRC would count as corrupt).
func TestBlockRefsUnderConcurrentReads(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	var parts sources
	for i := range 3 {
		p := buildPartition(t, "shared", int32(i), []int{30, 25}, segmentSpec{bigEvery: 9})
		p.put(t, s)
		parts = append(parts, p)
	}
	r := newReader(t, StoreBucket(s), parts, recyclingConfig())
	const readers, reads, kept = 6, 150, 3
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			type heldResult struct {
				res  Result
				want []byte
			}
			var ring []heldResult
			check := func(h heldResult) bool {
				defer h.res.Release()
				if !bytes.Equal(h.res.Records, h.want) {
					t.Errorf("reader %d: a held Result's bytes changed", g)
					return false
				}
				return true
			}
			p := parts[g%len(parts)]
			offset := int64(0)
			for range reads {
				if rng.IntN(4) == 0 { // jump: a new stream, or another partition
					p = parts[rng.IntN(len(parts))]
					offset = rng.Int64N(p.end())
				}
				maxBytes := []int{1, 3000, 9000}[rng.IntN(3)]
				res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: maxBytes})
				if err != nil {
					t.Errorf("reader %d: Read(%d): %v", g, offset, err)
					return
				}
				want, next := p.expect(offset, maxBytes)
				if !bytes.Equal(res.Records, want) || res.NextOffset != next {
					t.Errorf("reader %d: Read(%d, %d): %d bytes to %d, want %d bytes to %d", g, offset, maxBytes, len(res.Records), res.NextOffset, len(want), next)
					res.Release()
					return
				}
				ring = append(ring, heldResult{res, want})
				if len(ring) > kept {
					if !check(ring[0]) {
						return
					}
					ring = ring[1:]
				}
				offset = res.NextOffset
				if offset >= p.end() {
					offset = 0
				}
			}
			for _, h := range ring {
				check(h)
			}
		})
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	m := r.Metrics()
	if m.Blocks.BufferBytes != 0 {
		t.Fatalf("%d bytes of block buffers still held once every Result was released and the Reader closed: a reference was never given back", m.Blocks.BufferBytes)
	}
	if m.CorruptRecovered != 0 || m.CorruptFailed != 0 {
		t.Fatalf("%d reads met bad bytes (%d failed): a block's buffer was reused while it was read", m.CorruptRecovered+m.CorruptFailed, m.CorruptFailed)
	}
	if m.Blocks.BuffersReused == 0 {
		t.Fatal("no block buffer was reused")
	}
}

// A reference count below zero is a double release: it panics rather than
// hand one buffer to two blocks.
func TestBlockReleasedTwicePanics(t *testing.T) {
	t.Parallel()
	pool := &blockPool{size: 16}
	b := pool.get(16)
	b.release()
	defer func() {
		if recover() == nil {
			t.Fatal("a second release did not panic")
		}
	}()
	b.release()
}

// Once a block's buffer is back in the pool, the block cannot be held
// again through a shared pointer (the cache's).
func TestTryHoldAfterRelease(t *testing.T) {
	t.Parallel()
	pool := &blockPool{size: 16}
	b := pool.get(16)
	if !b.tryHold() {
		t.Fatal("tryHold failed on a held block")
	}
	b.release()
	b.release()
	if b.tryHold() {
		t.Fatal("tryHold held a block whose buffer went back to the pool")
	}
}

// The checker records, as a block fills piece by piece, the start of every
// batch wholly inside it from the first start the index knows, and no
// other: a read skips the CRC only of batches so checked.
func TestCheckerRecordsWholeBatches(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "checked", 0, []int{60}, segmentSpec{bigEvery: 7})
	seg := p.segments[0]
	ix := mustIndex(t, seg)
	log := bytes.Join(seg.batches, nil)
	var starts []int64
	for i, pos := 0, int64(0); i < len(seg.batches); i++ {
		starts = append(starts, pos)
		pos += int64(len(seg.batches[i]))
	}
	pool := &blockPool{size: testBlockSize}
	checkedSome := false
	for start := int64(0); start < int64(len(log)); start += testBlockSize {
		end := min(start+testBlockSize, int64(len(log)))
		b := pool.get(end - start)
		c := newChecker(b, start, ix)
		for n := int64(0); n < end-start; {
			m := min(n+777, end-start) // pieces that cut batches and headers
			copy(b.data[n:m], log[start+n:start+m])
			n = m
			c.filled(int(n))
		}
		first, ok := ix.BatchFrom(start)
		var want []int32
		for i, at := range starts {
			if ok && at >= first && at >= start && at+int64(len(seg.batches[i])) <= end {
				want = append(want, int32(at-start))
			}
		}
		if !slices.Equal(b.verified, want) {
			t.Fatalf("block at %d: checked batches at %v, want %v", start, b.verified, want)
		}
		checkedSome = checkedSome || len(want) > 0
		b.release()
	}
	if !checkedSome {
		t.Fatal("no block had a batch to check")
	}
}

// A block whose first attempt reported checked bytes and then failed is
// checked afresh on the retry: a retry that brings damaged bytes (which
// its attempt reports whole only once they are) is not trusted on the
// first attempt's word. The read fetches the block once more and returns
// what was stored.
func TestCheckerForgetsAFailedAttempt(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "retried", 0, []int{30}, segmentSpec{})
	p.put(t, s)
	bucket := &halfThenDamagedBucket{countingBucket: newCountingBucket(StoreBucket(s))}
	r := newReader(t, bucket, p, testConfig())
	want, next := p.expect(0, 1)
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Records, want) || res.NextOffset != next {
		t.Fatalf("Read(0): %d bytes to %d, want %d bytes to %d", len(res.Records), res.NextOffset, len(want), next)
	}
	res.Release()
	if m := r.Metrics(); m.CorruptRecovered != 1 {
		t.Fatalf("%d reads recovered from damaged bytes, want 1: the retry's damaged batch was not checked", m.CorruptRecovered)
	}
}

// halfThenDamagedBucket's first ranged read reports the first half of the
// block filled, then fails (a reset mid-body); its second brings the block
// with a bit flipped in its first batch, reported whole; later reads are
// clean.
type halfThenDamagedBucket struct {
	*countingBucket
	attempts atomic.Int32
}

func (b *halfThenDamagedBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	switch b.attempts.Add(1) {
	case 1:
		if err := b.countingBucket.ReadAt(ctx, key, p[:len(p)/2], off, nil); err != nil {
			return err
		}
		filled(len(p) / 2)
		return errors.New("injected: connection reset mid-body")
	case 2:
		b.flipAt.Store(off + record.HeaderSize + 10) // inside the first batch's CRC span
	}
	return b.countingBucket.ReadAt(ctx, key, p, off, filled)
}
