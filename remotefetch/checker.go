package remotefetch

import (
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// checker checks a block's batches as its GET fills it, while the bytes
// are still in the CPU's cache, and records their starts in the block
// (verified), so that a read skips record.Validate for a batch it finds at
// a recorded start: the same bytes, already checked. Checked later, from
// memory, the CRC-32C pass costs two to five times as much (docs/bench.md,
// "Cold reads"). The walk starts at the first batch start the index knows in the
// block (the log's start, or an indexed batch) and goes from batch to
// batch; a batch that fails ends it, and the read that meets that batch
// checks it and handles the failure. Batches before the first known start
// and one running past the block's end are left to the read. The whole
// block is checked even when one batch of it is wanted (a random read, a
// timestamp lookup), and the checking counts toward the GET's attempt
// timeout.
type checker struct {
	block   *block
	next    int64 // the next batch's start
	stopped bool
}

// newChecker returns a checker for block b, fresh from the pool, at log
// position start of the segment ix indexes.
func newChecker(b *block, start int64, ix *segmentobject.Index) *checker {
	c := &checker{block: b, stopped: true} // no known start in the block
	if pos, ok := ix.BatchFrom(start); ok && pos < start+int64(len(b.data)) {
		c.next, c.stopped = pos-start, false
	}
	return c
}

// filled checks every batch that the block's first n bytes now hold whole.
func (c *checker) filled(n int) {
	data := c.block.data[:n]
	for !c.stopped && c.next+record.HeaderSize <= int64(len(data)) {
		h, err := record.ParseHeader(data[c.next:])
		if err != nil {
			c.stopped = true
			return
		}
		end := c.next + int64(h.Size())
		if end > int64(len(c.block.data)) {
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
		c.block.verified = append(c.block.verified, int32(c.next))
		c.next = end
	}
}
