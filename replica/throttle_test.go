package replica

import (
	"math"
	"testing"
	"time"
)

// TestThrottleHoldsTheRate: a transfer loop that checks before and records
// after moves, over a simulated minute, the rate's worth of bytes plus at
// most the first second's budget and one transfer, whatever the transfer
// size.
func TestThrottleHoldsTheRate(t *testing.T) {
	for _, chunk := range []int64{1 << 10, 1 << 20, 8 << 20} {
		th := newThrottle()
		const rate = 4 << 20
		th.setRate(rate)
		now := time.Unix(1_700_000_000, 0)
		var moved int64
		end := now.Add(time.Minute)
		for now.Before(end) {
			if th.exceeded(now) {
				now = now.Add(max(th.untilAvailable(now), time.Millisecond))
				continue
			}
			th.record(chunk, now)
			moved += chunk
			now = now.Add(10 * time.Microsecond)
		}
		want := int64(rate * 60)
		if moved < want || moved > want+rate+chunk {
			t.Errorf("chunks of %d: %d bytes in a minute at %d/s, want %d to %d", chunk, moved, rate, want, want+rate+chunk)
		}
	}
}

// TestThrottleUnsetNeverWaits: without a rate nothing is throttled, and
// lifting a rate lifts the throttle at once.
func TestThrottleUnsetNeverWaits(t *testing.T) {
	th := newThrottle()
	now := time.Now()
	th.record(1<<40, now)
	if th.exceeded(now) || th.untilAvailable(now) != 0 {
		t.Fatal("an unset throttle throttles")
	}
	th.setRate(1)
	th.record(1<<20, now)
	if !th.exceeded(now) {
		t.Fatal("a throttle in debt lets transfers through")
	}
	th.setRate(math.MaxInt64)
	if th.exceeded(now) {
		t.Fatal("lifting the rate did not lift the throttle")
	}
}
