package hotlog

import "time"

// Clock is the Log's source of time: log-append times, segment.ms,
// retention.ms, flush.ms and the recovery-point interval all read it, so
// tests can drive them without sleeping.
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
