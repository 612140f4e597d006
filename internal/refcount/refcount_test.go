package refcount

import (
	"sync"
	"testing"
)

// The last Release reports it, and after it TryHold fails for good.
func TestLastReleaseEndsTheCount(t *testing.T) {
	t.Parallel()
	var c Count
	c.Init(1)
	c.Hold()
	if !c.TryHold() {
		t.Fatal("TryHold failed on a held count")
	}
	for i, wantLast := range []bool{false, false, true} {
		if last := c.Release(); last != wantLast {
			t.Fatalf("release %d: last %v, want %v", i, last, wantLast)
		}
	}
	if c.TryHold() || c.Load() != 0 {
		t.Fatalf("TryHold after the last release succeeded (count %d)", c.Load())
	}
}

// Concurrent holders and releasers leave exactly one last release.
func TestConcurrentHolders(t *testing.T) {
	t.Parallel()
	var c Count
	c.Init(1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if c.TryHold() {
					if c.Release() {
						t.Error("a borrowed reference's release was the last")
					}
				}
			}
		})
	}
	wg.Wait()
	if !c.Release() {
		t.Fatalf("the first holder's release was not the last (count %d)", c.Load())
	}
}

// Releasing more than was held, or holding after the end, panics.
func TestMisusePanics(t *testing.T) {
	t.Parallel()
	for name, misuse := range map[string]func(*Count){
		"release twice":  func(c *Count) { c.Release(); c.Release() },
		"hold after end": func(c *Count) { c.Release(); c.Hold() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var c Count
			c.Init(1)
			defer func() {
				if recover() == nil {
					t.Fatalf("%s did not panic", name)
				}
			}()
			misuse(&c)
		})
	}
}
