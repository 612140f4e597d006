package hotlog

import (
	"sort"
	"sync"

	"github.com/stratalog/strata/internal/refcount"
)

// state is an immutable snapshot of the log's shape: its segments and its
// start offset. The writer publishes a new state for every change of shape
// (roll, truncation, deletion); appends only publish a new segment tail.
// Readers acquire the current state without locking and hold it while they
// use what they found, which lets TruncateTo wait until no reader can still
// be looking at bytes it is about to overwrite.
type state struct {
	// refs counts the Log's hold on the current state plus each reader's.
	// A state whose count reached zero is dead and never revived.
	refs     refcount.Count
	retirees *retirees

	segments       []*segment // ascending base offsets; the last is active
	logStartOffset int64
}

func (s *state) active() *segment { return s.segments[len(s.segments)-1] }

// segmentFor returns the index of the segment holding offset: the last one
// whose base offset is at or below it, or -1.
func (s *state) segmentFor(offset int64) int {
	return sort.Search(len(s.segments), func(i int) bool { return s.segments[i].baseOffset > offset }) - 1
}

// logEndOffset is the offset the next append gets.
func (s *state) logEndOffset() int64 { return s.active().tail.Load().nextOffset }

// release drops a reference; the last one of a retired state tells the
// retirees.
func (s *state) release() {
	if s.refs.Release() {
		s.retirees.dead()
	}
}

// retirees counts states that have been replaced but are still held by
// readers.
type retirees struct {
	mu      sync.Mutex
	drained sync.Cond
	live    int
}

func (r *retirees) retire() {
	r.mu.Lock()
	r.live++
	r.mu.Unlock()
}

func (r *retirees) dead() {
	r.mu.Lock()
	r.live--
	r.drained.Broadcast()
	r.mu.Unlock()
}

// wait returns once every replaced state has been released by its readers.
func (r *retirees) wait() {
	r.waitUnless(func() bool { return false })
}

// waitUnless is wait that gives up, returning false, once stopped reports
// true; whoever makes it true calls wake.
func (r *retirees) waitUnless(stopped func() bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.live > 0 {
		if stopped() {
			return false
		}
		r.drained.Wait()
	}
	return true
}

// wake makes the waiters look at their stop condition again.
func (r *retirees) wake() {
	r.mu.Lock()
	r.drained.Broadcast()
	r.mu.Unlock()
}

// acquireState returns the current state with a reference the caller must
// release. Lock-free: it retries only if the state it loaded died between
// the load and the increment, which means a newer one is already published.
func (l *Log) acquireState() *state {
	for {
		if s := l.state.Load(); s.refs.TryHold() {
			return s
		}
	}
}

// publishStateLocked makes s the current state and retires the previous
// one. Log.mu must be held.
func (l *Log) publishStateLocked(s *state) {
	s.refs.Init(1)
	s.retirees = &l.retirees
	old := l.state.Swap(s)
	if old != nil {
		l.retirees.retire()
		old.release()
	}
}
