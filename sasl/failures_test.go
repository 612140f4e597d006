package sasl

import (
	"testing"
	"time"
)

// Failed logins from one host wait longer each time.
func TestFailureDelayGrows(t *testing.T) {
	var f Failures
	base := 100 * time.Millisecond
	var delays []time.Duration
	for range 8 {
		delays = append(delays, f.Delay("10.0.0.1", base))
	}
	if delays[0] != base || delays[1] != 2*base || delays[7] != MaxFailureDelay {
		t.Fatalf("delays %v: want %v, doubling, up to %v", delays, base, MaxFailureDelay)
	}
	if d := f.Delay("10.0.0.2", base); d != base {
		t.Fatalf("another host's first failure waits %v, want %v", d, base)
	}
}
