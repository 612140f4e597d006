package quota

import (
	"testing"
	"time"
)

// TestBucketHoldsTheRate: a transfer loop that checks before and records
// after moves, over a simulated minute, the rate's worth plus at most the
// first second's budget and one transfer, whatever the transfer size.
func TestBucketHoldsTheRate(t *testing.T) {
	for _, chunk := range []float64{1 << 10, 1 << 20, 8 << 20} {
		b := NewBucket()
		const rate = 4 << 20
		b.SetRate(rate)
		now := time.Unix(1_700_000_000, 0)
		var moved float64
		end := now.Add(time.Minute)
		for now.Before(end) {
			if wait := b.Debt(now); wait > 0 {
				now = now.Add(wait)
				continue
			}
			b.Record(chunk, now)
			moved += chunk
			now = now.Add(10 * time.Microsecond)
		}
		want := float64(rate * 60)
		if moved < want || moved > want+rate+chunk {
			t.Errorf("chunks of %.0f: %.0f in a minute at %d/s, want %.0f to %.0f", chunk, moved, rate, want, want+rate+chunk)
		}
	}
}

// TestBucketDebtIsTheWaitToRepay: a debt of d units at rate r takes d/r to
// repay; an unlimited bucket never owes, and lifting a rate forgives.
func TestBucketDebtIsTheWaitToRepay(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := NewBucket()
	b.Record(1<<40, now)
	if b.Debt(now) != 0 {
		t.Fatal("an unlimited bucket owes")
	}
	b.SetRate(1000)
	b.Record(3000, now) // 1000 of budget, 2000 of debt
	if d := b.Debt(now); d < 2*time.Second || d > 2*time.Second+10*time.Millisecond {
		t.Fatalf("debt of 2000 at 1000/s: wait %v, want 2s", d)
	}
	if d := b.Debt(now.Add(time.Second)); d < time.Second || d > time.Second+10*time.Millisecond {
		t.Fatalf("a second later: wait %v, want 1s", d)
	}
	b.SetRate(0.01) // a hundredth of a second of handler time per second
	b.Record(0.01, now)
	b.Record(0.005, now)
	if d := b.Debt(now); d < 500*time.Millisecond || d > 510*time.Millisecond {
		t.Fatalf("a debt of 5 ms of handling at 1%%: wait %v, want 0.5s", d)
	}
	b.SetRate(Unlimited)
	if b.Debt(now) != 0 {
		t.Fatal("lifting the rate did not forgive the debt")
	}
}
