package sasl

import (
	"sync"
	"time"
)

// Failures paces the answers to failed logins, more for a host that keeps
// failing: Kafka's connection.failed.authentication.delay.ms, doubled for
// each failure from the host within FailureWindow, up to MaxFailureDelay.
// The Kafka listeners' SASL exchanges and the schema registry's HTTP
// Basic logins each keep one. The zero value is ready.
type Failures struct {
	mu    sync.Mutex
	hosts map[string]*hostFailures
}

type hostFailures struct {
	count int
	last  time.Time
}

const (
	// FailureWindow is how long a host's failures count.
	FailureWindow = time.Minute
	// MaxFailureDelay bounds a failed login's delay.
	MaxFailureDelay = 5 * time.Second
)

// Delay counts a failure from host and returns how long its answer waits:
// base for the first within FailureWindow, then twice as long each time.
func (f *Failures) Delay(host string, base time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if f.hosts == nil {
		f.hosts = map[string]*hostFailures{}
	}
	for h, r := range f.hosts {
		if now.Sub(r.last) > FailureWindow {
			delete(f.hosts, h)
		}
	}
	r := f.hosts[host]
	if r == nil {
		r = &hostFailures{}
		f.hosts[host] = r
	}
	r.last = now
	d := base << min(r.count, 6)
	r.count++
	return min(d, max(base, MaxFailureDelay))
}
