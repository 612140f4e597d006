package remotefetch

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
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
	refs     atomic.Int32
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

// checker checks a block's batches as its GET fills it, while the bytes
// are still in the CPU's cache, and records their starts in the block
// (verified), so that a read skips record.Validate for a batch it finds at
// a recorded start: the same bytes, already checked. Checked later, from
// memory, the CRC-32C pass costs about twice as much (docs/bench.md, "Cold
// reads"). The walk starts at the first batch start the index knows in the
// block (the log's start, or an indexed batch) and goes from batch to
// batch; a batch that fails ends it, and the read that meets that batch
// checks it and handles the failure. Batches before the first known start
// and one running past the block's end are left to the read.
type checker struct {
	b       *block
	first   int64 // where the walk starts in the block; -1: nowhere
	next    int64 // the next batch's start
	stopped bool
}

// newChecker returns a checker for block b, at log position start of the
// segment ix indexes.
func newChecker(b *block, start int64, ix *segmentobject.Index) *checker {
	c := &checker{b: b, first: -1}
	if pos, ok := ix.BatchFrom(start); ok && pos < start+int64(len(b.data)) {
		c.first = pos - start
	}
	c.restart()
	return c
}

// restart forgets what was checked: a new attempt fills the block anew.
func (c *checker) restart() {
	c.b.verified = c.b.verified[:0]
	c.next, c.stopped = c.first, c.first < 0
}

// filled checks every batch that the block's first n bytes now hold whole.
func (c *checker) filled(n int) {
	data := c.b.data[:n]
	for !c.stopped && c.next+record.HeaderSize <= int64(len(data)) {
		h, err := record.ParseHeader(data[c.next:])
		if err != nil {
			c.stopped = true
			return
		}
		end := c.next + int64(h.Size())
		if end > int64(len(c.b.data)) {
			c.stopped = true // runs past the block: the read's
			return
		}
		if end > int64(len(data)) {
			return // not all here yet
		}
		if _, err := record.Validate(data[c.next:end]); err != nil {
			c.stopped = true
			return
		}
		c.b.verified = append(c.b.verified, int32(c.next))
		c.next = end
	}
}

// hold takes another reference for a caller that holds one.
func (b *block) hold() {
	if b.refs.Add(1) <= 1 {
		panic("remotefetch: a block was held after its buffer went back to the pool")
	}
}

// tryHold takes a reference unless the block's buffer has gone back to the
// pool.
func (b *block) tryHold() bool {
	for {
		n := b.refs.Load()
		if n <= 0 {
			return false
		}
		if b.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives back one reference; the last returns the buffer to the
// pool.
func (b *block) release() {
	switch n := b.refs.Add(-1); {
	case n == 0:
		b.pool.put(b.data)
	case n < 0:
		panic(fmt.Sprintf("remotefetch: a block was released %d more times than it was held", -n))
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
// test reading a block after its last reference was given back sees
// garbage rather than the bytes it expects.
var poisonReleased bool

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
	b.refs.Store(1)
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
