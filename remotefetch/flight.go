package remotefetch

import (
	"context"
	"fmt"
	"sync"
)

// A flightGroup merges concurrent loads of the same key (a block, an
// index): the first caller to miss starts the load in a goroutine the group
// owns, and every caller that asks for the key before the load ends waits
// for that one load. It is singleflight with four differences that matter
// here:
//
//   - A load outlives its callers. It runs under the Reader's lifetime
//     context, not a caller's, so one impatient caller cannot fail the
//     others. When the last waiter leaves because its own context ended, the
//     load is cancelled, unless it is pinned: a prefetch, or a load a
//     FetchMany deadline cut short, which completes so that the
//     client's next fetch finds the block.
//   - Loads are tracked: close cancels them all and waits for them, so no
//     goroutine outlives the Reader.
//   - Keys are typed (K comparable), never interface{}.
//   - A value may be counted (a block's references): the group keeps one
//     for the flight from its end while anyone may still take the value,
//     and hands each caller its own (refs).
type flightGroup[K comparable, V any] struct {
	life *lifecycle
	refs valueRefs[V]
	mu   struct {
		sync.Mutex
		flights map[K]*flight[V]
	}
}

// valueRefs counts references to a flight's value: hold takes one for a
// caller from one already held, release gives one back. Either is nil for
// values that are not counted (an index, left to the garbage collector).
type valueRefs[V any] struct {
	hold, release func(V)
}

// A flight is one load. value and err are written before done is closed
// and read only after.
type flight[V any] struct {
	done  chan struct{}
	value V
	err   error
	refs  valueRefs[V]

	// Guarded by the group's mu.
	waiters   int
	pinned    bool
	cancelled bool
	cancel    context.CancelFunc

	// holders counts who may still take the value: the callers that joined
	// and have not yet had it, and the read-ahead windows holding the
	// flight. From the load's end until holders drops to zero the flight
	// holds one reference to its value, which it then gives back (dropped).
	held struct {
		sync.Mutex
		holders        int
		ended, dropped bool
	}
}

func newFlightGroup[K comparable, V any](life *lifecycle, refs valueRefs[V]) *flightGroup[K, V] {
	g := &flightGroup[K, V]{life: life, refs: refs}
	g.mu.flights = make(map[K]*flight[V])
	return g
}

// completed returns a flight that has already ended with v, passing it the
// caller's reference to v: for a block found in the cache that a read-ahead
// window is to hold. The caller holds the flight once (see hold).
func completed[V any](v V, refs valueRefs[V]) *flight[V] {
	f := &flight[V]{done: make(chan struct{}), value: v, refs: refs}
	close(f.done)
	f.held.holders, f.held.ended = 1, true
	return f
}

// hold makes the caller one more holder of f. Once f has ended, only a
// holder (or one holding the lock of a holder, a read-ahead window's) may
// add one: the last holder to go gives the value's reference back.
func (f *flight[V]) hold() {
	f.held.Lock()
	defer f.held.Unlock()
	if f.held.dropped {
		panic("remotefetch: a flight was held after its last holder let go")
	}
	f.held.holders++
}

// unhold gives up one hold on f; the last, once the load has ended, gives
// back the flight's reference to its value.
func (f *flight[V]) unhold() {
	f.held.Lock()
	defer f.held.Unlock()
	f.held.holders--
	f.dropIfUnheldLocked()
}

// take gives the caller, a holder, its own reference to the ended
// flight's value and gives up the caller's hold.
func (f *flight[V]) take() V {
	f.held.Lock()
	defer f.held.Unlock()
	if f.err == nil && f.refs.hold != nil {
		f.refs.hold(f.value)
	}
	f.held.holders--
	f.dropIfUnheldLocked()
	return f.value
}

// end marks the load ended, its value and error set: with no holder left,
// the flight's reference goes at once.
func (f *flight[V]) end() {
	f.held.Lock()
	defer f.held.Unlock()
	f.held.ended = true
	f.dropIfUnheldLocked()
}

func (f *flight[V]) dropIfUnheldLocked() {
	if f.held.holders < 0 {
		panic("remotefetch: a flight was let go more times than it was held")
	}
	if f.held.holders > 0 || !f.held.ended || f.held.dropped {
		return
	}
	f.held.dropped = true
	if f.err == nil && f.refs.release != nil {
		f.refs.release(f.value)
	}
}

// errFetchDeadline is the cancellation cause FetchMany gives its reads at
// remote.fetch.max.wait.ms: loads those reads wait for are pinned rather
// than cancelled, so they finish and warm the cache for the next fetch.
var errFetchDeadline = fmt.Errorf("%w at remote.fetch.max.wait.ms", ErrTimeout)

// do returns the key's value, starting its load unless one is running, and
// waits for it as long as ctx allows, with a reference of the caller's own
// if values are counted. joined reports that another caller had started
// the load.
func (g *flightGroup[K, V]) do(ctx context.Context, key K, load func(context.Context) (V, error)) (v V, joined bool, err error) {
	f, joined, err := g.join(key, load)
	if err != nil {
		return v, false, err
	}
	v, err = g.wait(ctx, f)
	return v, joined, err
}

// join makes the caller a waiter and a holder of key's load, starting it
// unless one is running (joined). The caller must then wait for it.
func (g *flightGroup[K, V]) join(key K, load func(context.Context) (V, error)) (f *flight[V], joined bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, joined = g.mu.flights[key]
	if !joined || f.cancelled {
		if f, err = g.startLocked(key, load); err != nil {
			return nil, false, err
		}
		joined = false
	}
	f.waiters++
	f.hold()
	return f, joined, nil
}

// pin returns the running load of key, or starts one, and marks it to run
// to the end with or without waiters: a prefetch. The caller holds the
// flight once, for the read-ahead window it goes into. started reports a
// new load.
func (g *flightGroup[K, V]) pin(key K, load func(context.Context) (V, error)) (f *flight[V], started bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.mu.flights[key]
	if !ok || f.cancelled {
		if f, err = g.startLocked(key, load); err != nil {
			return nil, false, err
		}
		started = true
	}
	f.pinned = true
	f.hold()
	return f, started, nil
}

// await waits for a flight the caller holds (a prefetch it is about to
// consume, held for it by readAhead.held), as a waiter: a held flight may be
// cancelled when no one waits.
func (g *flightGroup[K, V]) await(ctx context.Context, f *flight[V]) (V, error) {
	g.mu.Lock()
	f.waiters++
	g.mu.Unlock()
	return g.wait(ctx, f)
}

// wait waits for f as one of its counted waiters and holders, and stops
// being either; the value comes with a reference of the caller's own.
func (g *flightGroup[K, V]) wait(ctx context.Context, f *flight[V]) (V, error) {
	select {
	case <-f.done:
		g.mu.Lock()
		f.waiters--
		g.mu.Unlock()
		return f.take(), f.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	f.waiters--
	select {
	case <-f.done: // it ended as ctx did: the value is there, take it
		g.mu.Unlock()
		return f.take(), f.err
	default:
	}
	switch {
	case context.Cause(ctx) == errFetchDeadline:
		f.pinned = true
	case f.waiters == 0 && !f.pinned && f.cancel != nil:
		f.cancelled = true
		f.cancel()
	}
	g.mu.Unlock()
	f.unhold()
	var zero V
	return zero, context.Cause(ctx)
}

// startLocked starts key's load in a goroutine the lifecycle owns. The
// group's mu must be held.
func (g *flightGroup[K, V]) startLocked(key K, load func(context.Context) (V, error)) (*flight[V], error) {
	f := &flight[V]{done: make(chan struct{}), refs: g.refs}
	err := g.life.run(func(ctx context.Context) {
		v, err := load(ctx)
		g.mu.Lock()
		if g.mu.flights[key] == f {
			delete(g.mu.flights, key)
		}
		f.value, f.err = v, err
		f.cancel = nil
		g.mu.Unlock()
		close(f.done)
		f.end()
	}, func(cancel context.CancelFunc) { f.cancel = cancel })
	if err != nil {
		return nil, err
	}
	g.mu.flights[key] = f
	return f, nil
}

// lifecycle owns the Reader's background goroutines: it starts them under
// one context and, on close, cancels it and waits for them all.
type lifecycle struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		closed bool
	}
}

func newLifecycle() *lifecycle {
	ctx, cancel := context.WithCancel(context.Background())
	return &lifecycle{ctx: ctx, cancel: cancel}
}

// run starts f in a goroutine with a context of its own, derived from the
// lifecycle's, whose cancel function is handed to setCancel before f runs.
// After close it starts nothing and returns ErrClosed.
func (l *lifecycle) run(f func(ctx context.Context), setCancel func(context.CancelFunc)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(l.ctx)
	setCancel(cancel)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cancel()
		f(ctx)
	}()
	return nil
}

// close cancels every goroutine run started and waits for them to return.
func (l *lifecycle) close() {
	l.mu.Lock()
	l.mu.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
}

// closed reports whether close has been called.
func (l *lifecycle) closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.closed
}
