package remotefetch

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stratalog/strata/internal/invariants"
	"github.com/stratalog/strata/internal/refcount"
)

// block is one loaded log block: its bytes, shared without copies by the
// block cache, the read-ahead windows, the reads scanning it and the
// Results that slice it, each of which holds a reference. When the last
// lets go, the buffer goes back to its pool and the next block's GET
// fills it, so a cold read does not pay for a fresh buffer per block (Go
// zeroes every allocation, and memory the runtime gave back to the kernel
// faults in again page by page: at 8 MiB blocks about 30 and 43 of the
// reader's 183 ms of CPU per 256 MiB, docs/bench.md, "Cold reads").
//
// The bytes never change while a reference is held. A reference is taken
// either from one already held (hold) or, from a shared pointer such as
// the cache's, with tryHold, which fails once the count has reached zero:
// a block struct is never used for a second block, only its buffer is, so
// a stale pointer can never lend another block's bytes. A reference never
// given back costs only the reuse: the buffer is left to the garbage
// collector.
type block struct {
	data []byte
	// verified are the starts in data, in order, of the batches checked as
	// the block arrived (see checker).
	verified []int32
	refs     refcount.Count
	pool     *blockPool
	// cached marks the cache's reference, so that the cache gives it back
	// once however many times the cache reports the entry gone.
	cached atomic.Bool
}

// verifiedAt reports whether the batch starting at off was checked as the
// block arrived.
func (b *block) verifiedAt(off int64) bool {
	_, found := slices.BinarySearch(b.verified, int32(off))
	return found
}

// hold takes another reference for a caller that holds one.
func (b *block) hold() { b.refs.Hold() }

// tryHold takes a reference unless the block's buffer has gone back to the
// pool.
func (b *block) tryHold() bool { return b.refs.TryHold() }

// release gives back one reference; the last returns the buffer to the
// pool.
func (b *block) release() {
	if b.refs.Release() {
		b.pool.put(b.data)
	}
}

// blockPool recycles block buffers of one size (the Reader's BlockSize;
// a segment's last block is a shorter slice of one). It is a sync.Pool: an
// idle Reader's buffers go to the garbage collector.
type blockPool struct {
	size   int64
	free   sync.Pool // *[]byte, length size
	reused atomic.Int64
	held   atomic.Int64 // blocks got and not yet put back
}

// poisonReleased makes put overwrite every buffer it takes back, so that a
// read of a block after its last reference was given back sees garbage
// rather than the bytes it expects: on in builds with invariants
// (internal/invariants) and in the package's tests.
var poisonReleased = invariants.Enabled

// get returns a block of n bytes, n at most the pool's size, holding one
// reference for the caller. Its bytes are whatever the buffer held: the
// caller fills them all before anyone else sees the block.
func (p *blockPool) get(n int64) *block {
	var buf []byte
	if v, ok := p.free.Get().(*[]byte); ok {
		buf = (*v)[:n]
		p.reused.Add(1)
	} else {
		buf = make([]byte, n, p.size)
	}
	b := &block{data: buf, pool: p}
	b.refs.Init(1)
	p.held.Add(1)
	return b
}

// put takes a buffer back.
func (p *blockPool) put(data []byte) {
	p.held.Add(-1)
	buf := data[:cap(data)]
	if poisonReleased {
		for i := range buf {
			buf[i] = 0xdb
		}
	}
	p.free.Put(&buf)
}
