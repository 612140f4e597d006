// Package quota is the byte and time budget shared by the replication
// throttles (replica) and the client quotas (ingest): a bucket refilled at
// a rate, holding at most one second's worth, that a transfer may take
// into debt. How long the debt takes to repay is how long the transfer's
// sender must wait, Kafka's throttle time.
package quota

import (
	"math"
	"sync"
	"time"
)

// Unlimited is the rate of a bucket that never throttles.
const Unlimited = math.MaxFloat64

// Bucket is one budget. The zero value is not usable; use NewBucket.
type Bucket struct {
	mu     sync.Mutex
	rate   float64 // units per second; Unlimited: no budget
	tokens float64
	last   time.Time
}

// NewBucket returns an unlimited bucket.
func NewBucket() *Bucket { return &Bucket{rate: Unlimited} }

// SetRate sets the rate in units per second (Unlimited lifts it); a
// changed rate starts with a full second's budget.
func (b *Bucket) SetRate(rate float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rate == b.rate {
		return
	}
	b.rate, b.tokens, b.last = rate, rate, time.Time{}
}

// refillLocked adds what the rate earned since the last call, up to a
// second's worth.
func (b *Bucket) refillLocked(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.tokens+now.Sub(b.last).Seconds()*b.rate, b.rate)
	}
	if now.After(b.last) {
		b.last = now
	}
}

// Record takes n units from the budget, into debt if need be.
func (b *Bucket) Record(n float64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == Unlimited {
		return
	}
	b.refillLocked(now)
	b.tokens -= n
}

// Debt is how long until the budget is positive again: zero when it is.
// A transfer checked against Debt before it starts waits while it is not
// zero (the replication throttles); a client told it is throttled waits
// that long (the client quotas).
func (b *Bucket) Debt(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == Unlimited {
		return 0
	}
	b.refillLocked(now)
	if b.tokens > 0 {
		return 0
	}
	// At least a nanosecond: an empty budget, not yet in debt, is spent.
	return max(time.Duration(-b.tokens/b.rate*float64(time.Second)), time.Nanosecond)
}
