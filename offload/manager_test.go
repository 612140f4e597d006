package offload

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// TestBackground runs the Manager's own tasks: partitions are served in
// turn (one upload slot, two busy partitions: uploads alternate), Notify
// starts an upload at once, and Remove and Close wait for the tasks.
func TestBackground(t *testing.T) {
	h1 := newHarness(t, harnessOptions{tweak: func(c *Config) { c.UploadConcurrency = 1 }})
	h2 := newHarness(t, harnessOptions{})
	h1.segments(3)
	h2.segments(3)
	var mu sync.Mutex
	var order []string
	h1.store.setFailPut(func(_ context.Context, key string) error {
		if strings.HasSuffix(key, ".seg") {
			mu.Lock()
			order = append(order, key[:strings.IndexByte(key, '-')])
			mu.Unlock()
		}
		return nil
	})
	if err := h1.mgr.Add(h2.partition()); err != nil {
		t.Fatal(err)
	}
	if err := h1.mgr.Add(h2.partition()); !errors.Is(err, ErrPartitionExists) {
		t.Fatalf("adding a partition twice: %v", err)
	}
	if err := h1.mgr.Start(); err != nil {
		t.Fatal(err)
	}
	uploaded := func(h *harness, n int) func() bool {
		return func() bool { return len(h.committed()) == n }
	}
	waitFor(t, "both partitions uploaded", func() bool { return uploaded(h1, 3)() && uploaded(h2, 3)() }, h1.logged)
	mu.Lock()
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] {
			t.Fatalf("uploads in order %v: a partition went twice in a row while the other waited", order)
		}
	}
	mu.Unlock()

	// Nothing is due for CopyInterval, which the fake clock never reaches:
	// only Notify can start the next upload.
	h1.segments(1)
	h1.mgr.Notify(h1.topic.Name, 0)
	waitFor(t, "the notified upload", uploaded(h1, 4))

	h1.mgr.Remove(h2.topic.Name, 0)
	h2.segments(1)
	h1.mgr.Notify(h2.topic.Name, 0) // removed: ignored
	if err := h1.mgr.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(h2.committed()); n != 3 {
		t.Fatalf("a removed partition uploaded: %d committed", n)
	}
	if err := h1.mgr.Add(h2.partition()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
}

// TestDiskWatch: the background disk watch reports the disk full, and
// clears it when space returns, on the injected clock.
func TestDiskWatch(t *testing.T) {
	var mu sync.Mutex
	used := uint64(95)
	calls := make(chan bool, 2)
	h := newHarness(t, harnessOptions{tweak: func(c *Config) {
		c.DataDir = "hot"
		c.DiskUsage = func(string) (DiskUsage, error) {
			mu.Lock()
			defer mu.Unlock()
			return DiskUsage{Total: 100, Available: 100 - used}, nil
		}
		c.OnDiskPressure = func(full bool) { calls <- full }
	}})
	if err := h.mgr.Start(); err != nil {
		t.Fatal(err)
	}
	if full := <-calls; !full || !h.mgr.DiskPressure() {
		t.Fatal("disk not reported full")
	}
	mu.Lock()
	used = 50
	mu.Unlock()
	// Move the clock on until the watch, waiting DiskCheckInterval on it,
	// checks again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case full := <-calls:
			if full || h.mgr.DiskPressure() {
				t.Fatal("disk pressure did not clear")
			}
			return
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the disk watch did not check again")
		}
		h.clock.Advance(h.cfg.DiskCheckInterval)
	}
}

// TestRemoveStopsAnUploadInFlight: Remove cancels a partition's running
// pass, here a PUT that would never finish, and returns once it has ended;
// the entry it began stays copying, for the next leader to resume.
func TestRemoveStopsAnUploadInFlight(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(1)
	inFlight := make(chan struct{})
	h.store.setFailPut(func(ctx context.Context, key string) error {
		if !strings.HasSuffix(key, ".seg") {
			return nil
		}
		close(inFlight)
		<-ctx.Done() // a PUT that hangs until its pass is stopped
		return ctx.Err()
	})
	if err := h.mgr.Start(); err != nil {
		t.Fatal(err)
	}
	<-inFlight
	h.mgr.Remove(h.topic.Name, 0)
	man := h.manifest()
	if len(man.Segments) != 1 || man.Segments[0].State != meta.SegmentCopying {
		t.Fatalf("manifest after Remove: %+v", man)
	}
	if st := h.mgr.Status(); len(st.Partitions) != 0 {
		t.Fatalf("status lists a removed partition: %+v", st)
	}
}
