package meta

import (
	"sync"
	"time"
)

// liveness is the leader's in-memory record of broker heartbeats. A
// heartbeat is not a log entry: it only moves a time here. The leadership
// loop asks for the brokers whose time is older than the session timeout and
// proposes FenceBroker for each. A new leader knows no heartbeat times, so
// every broker starts a fresh grace period — the same holds for a broker the
// leader first sees, or sees at a new incarnation epoch.
//
// Every method takes the time from its caller, so the tracker is a plain
// function of its inputs and is tested without a clock. The callers, the
// leadership loop and the heartbeat handler, take it from clock: time.Now
// in production, whose readings carry the monotonic clock that their
// differences are taken on (a step of the wall clock moves no session), a
// manual one in this package's tests, which then decide by their own steps
// when a session has passed.
type liveness struct {
	timeout time.Duration
	clock   clock
	mu      struct {
		sync.Mutex
		heard map[int32]heartbeat
	}
}

// heartbeat is the last time the leader heard from one broker incarnation.
type heartbeat struct {
	epoch int64
	at    time.Time
}

// newLiveness returns a tracker for the session timeout whose callers
// read clock; nil is the wall clock.
func newLiveness(timeout time.Duration, clock clock) *liveness {
	if clock == nil {
		clock = wallClock{}
	}
	l := &liveness{timeout: timeout, clock: clock}
	l.mu.heard = make(map[int32]heartbeat)
	return l
}

// clock is where liveness times come from.
type clock interface {
	// now is the current time.
	now() time.Time
	// newTicker delivers the time on tick every period, dropping ticks a
	// slow receiver misses, until stop.
	newTicker(period time.Duration) (tick <-chan time.Time, stop func())
}

// wallClock is the time package's clock.
type wallClock struct{}

func (wallClock) now() time.Time { return time.Now() }

func (wallClock) newTicker(period time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(period)
	return t.C, t.Stop
}

// reset forgets every heartbeat: called when this node becomes leader.
func (l *liveness) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.mu.heard)
}

// heard records a heartbeat from a broker incarnation.
func (l *liveness) heard(id int32, epoch int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.heard[id] = heartbeat{epoch: epoch, at: now}
}

// lastHeard returns when the broker's current incarnation was last heard.
func (l *liveness) lastHeard(id int32, epoch int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.mu.heard[id]
	if !ok || h.epoch != epoch {
		return time.Time{}, false
	}
	return h.at, true
}

// expired returns the unfenced brokers not heard from within the timeout.
// A broker with no record for its current epoch gets one dated now; records
// of brokers no longer registered are dropped.
func (l *liveness) expired(brokers []Broker, now time.Time) []Broker {
	l.mu.Lock()
	defer l.mu.Unlock()
	registered := make(map[int32]bool, len(brokers))
	var out []Broker
	for _, b := range brokers {
		registered[b.ID] = true
		if b.Fenced {
			continue
		}
		h, ok := l.mu.heard[b.ID]
		if !ok || h.epoch != b.Epoch {
			l.mu.heard[b.ID] = heartbeat{epoch: b.Epoch, at: now}
			continue
		}
		if now.Sub(h.at) > l.timeout {
			out = append(out, b)
		}
	}
	for id := range l.mu.heard {
		if !registered[id] {
			delete(l.mu.heard, id)
		}
	}
	return out
}
