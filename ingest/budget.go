package ingest

import (
	"container/list"
	"fmt"
	"sync"
)

// budget is a weighted semaphore: a bound on how much of one thing the
// connection readers may hold at once (bytes of requests read and not yet
// answered, or requests read and not yet taken by a processor). A
// budget with a negative limit never blocks; it only counts.
//
// Room goes to the oldest waiter that fits, not strictly to the oldest: a
// frame too large for what is left must not keep a small one behind it
// from being read, since the small one (a produce that ends the long polls
// holding the budget, a group heartbeat) may be what lets the budget drain.
// A large frame waits until enough is released; under a budget kept full
// by small requests it waits longest, which is the cost of that choice.
//
// The standard library has no weighted semaphore and golang.org/x/sync is
// not a dependency; this is the part of it the readers need.
type budget struct {
	limit int64
	mu    struct {
		sync.Mutex
		used int64
		// waiters holds *budgetWaiter, oldest first: acquires waiting
		// for room.
		waiters list.List
	}
}

// budgetWaiter is one acquire waiting for room; ready is closed once its n
// has been taken on its behalf.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// newBudget returns a budget of limit (negative: unbounded).
func newBudget(limit int64) *budget {
	return &budget{limit: limit}
}

// tryAcquire takes n if it fits now.
func (b *budget) tryAcquire(n int64) bool {
	b.checkFits(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fitsLocked(n) {
		b.mu.used += n
		return true
	}
	return false
}

// acquire takes n, waiting until it fits. It gives up, holding nothing,
// when stop is closed first, and reports whether it took n.
func (b *budget) acquire(n int64, stop <-chan struct{}) bool {
	b.checkFits(n)
	b.mu.Lock()
	if b.fitsLocked(n) {
		b.mu.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	element := b.mu.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return true
	case <-stop:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while stopping: give it back.
		b.mu.used -= n
		b.grantLocked()
	default:
		b.mu.waiters.Remove(element)
	}
	return false
}

// release gives back n taken by tryAcquire or acquire, and wakes the
// waiters that then fit.
func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.used -= n
	if b.mu.used < 0 {
		panic(fmt.Sprintf("ingest: budget released %d more than was acquired", -b.mu.used))
	}
	b.grantLocked()
}

// grantLocked hands room to every waiter that fits, oldest first. b.mu
// should be held.
func (b *budget) grantLocked() {
	for e := b.mu.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*budgetWaiter); b.fitsLocked(w.n) {
			b.mu.used += w.n
			b.mu.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
}

// fitsLocked reports whether n more fits. b.mu should be held.
func (b *budget) fitsLocked(n int64) bool {
	return b.limit < 0 || b.mu.used+n <= b.limit
}

// checkFits panics on an acquire that could never be granted: the config
// checks keep every frame within every budget (Config.Validate).
func (b *budget) checkFits(n int64) {
	if n < 0 || (b.limit >= 0 && n > b.limit) {
		panic(fmt.Sprintf("ingest: acquiring %d from a budget of %d", n, b.limit))
	}
}

// used is how much is held now.
func (b *budget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// waiting is how many acquires are waiting for room.
func (b *budget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.waiters.Len()
}
