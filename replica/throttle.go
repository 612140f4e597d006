package replica

import (
	"math"
	"sync"
	"time"
)

// Replication throttles, Kafka's (KIP-73): a broker's leaders send at most
// leader.replication.throttled.rate bytes per second, and its followers
// fetch at most follower.replication.throttled.rate, for the replicas the
// topics' leader. and follower.replication.throttled.replicas name, and
// only while the follower is out of the ISR: catch-up and reassignment
// copies slow down, replication of in-sync followers never does. As in
// Kafka, the check comes before the transfer and the bytes are counted
// after it, so a transfer may overshoot by one fetch; the rate over time
// holds.

// throttle is one direction's byte budget: a bucket of at most one
// second's worth, refilled at the rate, that a transfer may take into
// debt. A throttled partition is left out of a transfer while the bucket
// is empty or in debt.
type throttle struct {
	mu     sync.Mutex
	rate   int64 // bytes per second; math.MaxInt64: none
	tokens float64
	last   time.Time
}

func newThrottle() *throttle { return &throttle{rate: math.MaxInt64} }

// followerThrottled reports whether this follower's fetches of p count
// against its follower throttle: follower.replication.throttled.replicas
// names its replica and it is out of the ISR.
func (p *Partition) followerThrottled() bool {
	return p.settings.Load().followerThrottled && !p.role.Load().isrMember(p.manager.config.BrokerID)
}

// setRate sets the rate; a changed rate starts with a full second's
// budget.
func (t *throttle) setRate(rate int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rate == t.rate {
		return
	}
	t.rate, t.tokens, t.last = rate, float64(rate), time.Time{}
}

// refill adds what the rate earned since the last call, up to a second's
// worth.
func (t *throttle) refillLocked(now time.Time) {
	if !t.last.IsZero() {
		t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*float64(t.rate), float64(t.rate))
	}
	t.last = now
}

// exceeded reports whether throttled transfers must wait.
func (t *throttle) exceeded(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == math.MaxInt64 {
		return false
	}
	t.refillLocked(now)
	return t.tokens <= 0
}

// record counts n bytes of throttled transfer.
func (t *throttle) record(n int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == math.MaxInt64 {
		return
	}
	t.refillLocked(now)
	t.tokens -= float64(n)
}

// untilAvailable is how long until the bucket is out of debt.
func (t *throttle) untilAvailable(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == math.MaxInt64 {
		return 0
	}
	t.refillLocked(now)
	if t.tokens > 0 {
		return 0
	}
	return time.Duration((1 - t.tokens) / float64(t.rate) * float64(time.Second))
}
