package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
)

// TestPurgeDeletesADeletedTopicsObjects: a deleted topic's partition is
// purged: its segment objects and bucket manifest leave the bucket (before,
// nothing ever deleted them). Keys under its prefix that strata does not
// write stay, as does every other partition's prefix.
func TestPurgeDeletesADeletedTopicsObjects(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(2)
	h.mustSync()
	ctx := t.Context()
	kept := []string{h.prefix() + "operator-notes.txt", h.prefix()[:len(h.prefix())-2] + "1/manifest.json"}
	for _, key := range kept {
		if err := h.store.Put(ctx, key, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.meta.Propose(ctx, meta.DeleteTopic{Name: h.topic.Name, ID: h.topic.ID}); err != nil {
		t.Fatal(err)
	}
	h.mgr.Remove(h.topic.Name, 0)
	h.mgr.Purge(h.topic.Name, h.topic.ID, 0, func() {})
	slices.Sort(kept)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := keys(t, h.store.Store)
		if slices.Equal(got, kept) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket holds %q 30 s after the purge, want %q", got, kept)
		}
	}
}

// listGate is a store whose listings wait for a release, counting how many
// are in flight at once.
type listGate struct {
	objstore.Store
	release  chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
	done     int
}

func (g *listGate) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.inFlight--
	g.done++
	g.mu.Unlock()
	return g.Store.List(ctx, prefix)
}

func (g *listGate) counts() (inFlight, most, done int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.most, g.done
}

// TestPurgesRunExpiryConcurrencyAtOnce: deleting a topic of many
// partitions purges them ExpiryConcurrency at a time, not all at once
// (thousands of listings together, which a store throttles).
func TestPurgesRunExpiryConcurrencyAtOnce(t *testing.T) {
	base, err := objstore.Open(t.Context(), "file://"+tempDir(t, "offload-store-"), objstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	gate := &listGate{Store: base, release: make(chan struct{})}
	h := newHarness(t, harnessOptions{store: gate})
	id := uuid.New()
	const partitions = 6
	for p := range int32(partitions) {
		h.mgr.Purge("gone", id, p, func() {})
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s", what)
			}
		}
	}
	limit := h.cfg.ExpiryConcurrency
	wait("purges listing", func() bool { n, _, _ := gate.counts(); return n >= limit })
	time.Sleep(100 * time.Millisecond) // what more purges not waiting would need to start
	for range partitions {
		gate.release <- struct{}{}
	}
	wait("every purge done", func() bool { _, _, done := gate.counts(); return done == partitions })
	if _, most, _ := gate.counts(); most != limit {
		t.Fatalf("%d purges listed at once, want at most ExpiryConcurrency (%d)", most, limit)
	}
}

// listFailing is a store whose next fails listings fail with err (an
// unreachable store when nil), counting listings.
type listFailing struct {
	objstore.Store
	fails atomic.Int32
	err   error
	lists atomic.Int32
}

func (l *listFailing) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	l.lists.Add(1)
	if l.fails.Add(-1) >= 0 {
		err := l.err
		if err == nil {
			err = errors.New("injected: the store is unreachable")
		}
		return func(yield func(objstore.ObjectInfo, error) bool) {
			yield(objstore.ObjectInfo{}, err)
		}
	}
	return l.Store.List(ctx, prefix)
}

// TestAFailedPurgeIsTriedAgain: a purge whose listing the store fails is
// tried again after a backoff, and reports done only once the objects are
// gone (before, it was given up at the first failure, and the objects
// stayed for good).
func TestAFailedPurgeIsTriedAgain(t *testing.T) {
	base, err := objstore.Open(t.Context(), "file://"+tempDir(t, "offload-store-"), objstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	store := &listFailing{Store: base}
	h := newHarness(t, harnessOptions{store: store})
	h.segments(2)
	h.mustSync()
	if _, err := h.meta.Propose(t.Context(), meta.DeleteTopic{Name: h.topic.Name, ID: h.topic.ID}); err != nil {
		t.Fatal(err)
	}
	h.mgr.Remove(h.topic.Name, 0)
	store.fails.Store(3)
	done := make(chan struct{})
	h.mgr.Purge(h.topic.Name, h.topic.ID, 0, func() { close(done) })
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-done:
			if got := keys(t, base); len(got) != 0 {
				t.Fatalf("purge reported done with %q in the bucket", got)
			}
			if left := store.fails.Load(); left >= 0 {
				t.Fatalf("purge done with %d injected failures not met", left+1)
			}
			return
		case <-time.After(5 * time.Millisecond):
			h.clock.Advance(h.cfg.RetryMaxDelay) // the backoff, once it waits
		}
		if time.Now().After(deadline) {
			t.Fatal("purge not done 30 s after three failed listings")
		}
	}
}

// TestAPurgeStopsAtAnErrorNoTryCures: a purge whose store answers what
// another try cannot cure (the bucket is gone) stops, without done (the
// replica manager's marker stays for the next start), rather than list
// again at every backoff for ever.
func TestAPurgeStopsAtAnErrorNoTryCures(t *testing.T) {
	t.Parallel()
	base, err := objstore.Open(t.Context(), "file://"+tempDir(t, "offload-store-"), objstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	store := &listFailing{Store: base, err: fmt.Errorf("injected: %w", objstore.ErrBucketNotFound)}
	h := newHarness(t, harnessOptions{store: store})
	store.fails.Store(1 << 30)
	done := make(chan struct{})
	h.mgr.Purge("gone", uuid.New(), 0, func() { close(done) })
	for deadline := time.Now().Add(30 * time.Second); store.lists.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the purge never listed")
		}
	}
	for range 20 {
		h.clock.Advance(h.cfg.RetryMaxDelay) // backoffs, were it waiting
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("a purge that failed for good reported done")
	default:
	}
	if n := store.lists.Load(); n != 1 {
		t.Fatalf("%d listings after an error no try cures, want 1", n)
	}
}
