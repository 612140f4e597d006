// Package refcount counts the holders of something the last holder frees:
// the hot log's states and segment files, a remote read's block buffers.
package refcount

import (
	"fmt"
	"sync/atomic"
)

// Count is a reference count. Init sets the first holders; once the count
// has dropped to zero it never rises again, so TryHold from a stale
// pointer fails rather than revive what the last holder freed.
type Count struct{ n atomic.Int32 }

// Init sets the count to n holders, before anyone else can see it.
func (c *Count) Init(n int32) { c.n.Store(n) }

// Hold takes another reference for a caller that holds one.
func (c *Count) Hold() {
	if c.n.Add(1) <= 1 {
		panic("refcount: held after the last holder let go")
	}
}

// TryHold takes a reference unless the count has dropped to zero.
func (c *Count) TryHold() bool {
	for {
		n := c.n.Load()
		if n <= 0 {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back one reference and reports whether it was the last.
// Giving back more than were taken panics: it would free what others use.
func (c *Count) Release() (last bool) {
	n := c.n.Add(-1)
	if n < 0 {
		panic(fmt.Sprintf("refcount: released %d more times than held", -n))
	}
	return n == 0
}

// Load is the number of holders now, for tests and metrics.
func (c *Count) Load() int32 { return c.n.Load() }
