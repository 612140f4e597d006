package meta

import (
	"testing"
	"time"
)

func TestLivenessTracker(t *testing.T) {
	t.Parallel()
	l := newLiveness(time.Second)
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	brokers := []Broker{{ID: 1, Epoch: 1}, {ID: 2, Epoch: 2}, {ID: 3, Epoch: 3, Fenced: true}}
	ids := func(bs []Broker) []int32 {
		var out []int32
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}

	// First sight starts a grace period; nothing expires yet.
	if got := l.expired(brokers, at(0)); len(got) != 0 {
		t.Fatalf("expired at first sight: %v", got)
	}
	l.heard(1, 1, at(900*time.Millisecond))
	if got := ids(l.expired(brokers, at(1500*time.Millisecond))); len(got) != 1 || got[0] != 2 {
		t.Fatalf("at 1.5s: %v, want [2]", got)
	}
	// A heartbeat from an old incarnation does not count for the new one.
	brokers[1].Epoch = 5
	l.heard(2, 2, at(1600*time.Millisecond))
	if got := l.expired(brokers, at(1700*time.Millisecond)); len(got) != 0 {
		t.Fatalf("a new epoch gets a new grace period: %v", got)
	}
	if got := ids(l.expired(brokers, at(2800*time.Millisecond))); len(got) != 2 {
		t.Fatalf("at 2.8s: %v, want [1 2]", got)
	}
	if _, ok := l.lastHeard(1, 1); !ok {
		t.Fatal("lastHeard lost broker 1")
	}
	if _, ok := l.lastHeard(1, 7); ok {
		t.Fatal("lastHeard answered for another epoch")
	}
	// A new leader forgets everything: a fresh grace period for all.
	l.reset()
	if got := l.expired(brokers, at(10*time.Second)); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
	// Unregistered brokers are dropped.
	l.expired(brokers[:1], at(11*time.Second))
	if _, ok := l.lastHeard(2, 5); ok {
		t.Fatal("an unregistered broker is still tracked")
	}
}

func TestLivenessPeriod(t *testing.T) {
	t.Parallel()
	for session, want := range map[time.Duration]time.Duration{
		9 * time.Second: 900 * time.Millisecond, time.Minute: time.Second, 50 * time.Millisecond: 10 * time.Millisecond,
	} {
		if got := livenessPeriod(session); got != want {
			t.Errorf("livenessPeriod(%v) = %v, want %v", session, got, want)
		}
	}
}
