package remotefetch

import (
	"context"
	"fmt"
	"sync"
)

// A flightGroup merges concurrent loads of the same key (a block, an
// index): the first caller to miss starts the load in a goroutine the group
// owns, and every caller that asks for the key before the load ends waits
// for that one load. It is singleflight with three differences that matter
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
type flightGroup[K comparable, V any] struct {
	life *lifecycle
	mu   struct {
		sync.Mutex
		flights map[K]*flight[V]
	}
}

// A flight is one load. value and err are written before done is closed
// and read only after.
type flight[V any] struct {
	done  chan struct{}
	value V
	err   error

	// Guarded by the group's mu.
	waiters   int
	pinned    bool
	cancelled bool
	cancel    context.CancelFunc
}

func newFlightGroup[K comparable, V any](life *lifecycle) *flightGroup[K, V] {
	g := &flightGroup[K, V]{life: life}
	g.mu.flights = make(map[K]*flight[V])
	return g
}

// completed returns a flight that has already ended with v, for callers that
// hold blocks and flights alike.
func completed[V any](v V) *flight[V] {
	f := &flight[V]{done: make(chan struct{}), value: v}
	close(f.done)
	return f
}

// errFetchDeadline is the cancellation cause FetchMany gives its reads at
// remote.fetch.max.wait.ms: loads those reads wait for are pinned rather
// than cancelled, so they finish and warm the cache for the next fetch.
var errFetchDeadline = fmt.Errorf("%w at remote.fetch.max.wait.ms", ErrTimeout)

// do returns the key's value, starting its load unless one is running, and
// waits for it as long as ctx allows. joined reports that another caller
// had started the load.
func (g *flightGroup[K, V]) do(ctx context.Context, key K, load func(context.Context) (V, error)) (v V, joined bool, err error) {
	f, joined, err := g.join(key, load)
	if err != nil {
		return v, false, err
	}
	v, err = g.wait(ctx, f)
	return v, joined, err
}

// join makes the caller a waiter of key's load, starting it unless one is
// running (joined). The caller must then wait for it.
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
	return f, joined, nil
}

// pin returns the running load of key, or starts one, and marks it to run
// to the end with or without waiters: a prefetch. started reports a new load.
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
	return f, started, nil
}

// await waits for a flight the caller holds (a prefetch it is about to
// consume), as a waiter: a held flight may be cancelled when no one waits.
func (g *flightGroup[K, V]) await(ctx context.Context, f *flight[V]) (V, error) {
	g.mu.Lock()
	f.waiters++
	g.mu.Unlock()
	return g.wait(ctx, f)
}

// wait waits for f as one of its counted waiters, and stops being one.
func (g *flightGroup[K, V]) wait(ctx context.Context, f *flight[V]) (V, error) {
	select {
	case <-f.done:
		g.mu.Lock()
		f.waiters--
		g.mu.Unlock()
		return f.value, f.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	f.waiters--
	select {
	case <-f.done: // it ended as ctx did: the value is there, take it
		g.mu.Unlock()
		return f.value, f.err
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
	var zero V
	return zero, context.Cause(ctx)
}

// startLocked starts key's load in a goroutine the lifecycle owns. The
// group's mu must be held.
func (g *flightGroup[K, V]) startLocked(key K, load func(context.Context) (V, error)) (*flight[V], error) {
	f := &flight[V]{done: make(chan struct{})}
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
