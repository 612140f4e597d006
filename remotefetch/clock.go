package remotefetch

import (
	"sync"
	"time"
)

// Clock is the Reader's source of time: request timeouts, retry backoff,
// FetchMany's deadline, latency metrics and read-ahead stream ageing all
// read it, so tests can drive them without sleeping. It has hotlog.Clock's
// method set, so a broker passes one clock to both.
type Clock interface {
	Now() time.Time
	// After behaves like time.After.
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns the wall clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// afterFunc calls f once d has passed on clock, unless stop is called
// first. The watchdog goroutine it starts belongs to the caller, who must
// call stop; it ends at once then, or right after calling f.
func afterFunc(clock Clock, d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	fired := clock.After(d)
	go func() {
		select {
		case <-fired:
			f()
		case <-done:
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
