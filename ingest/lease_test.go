package ingest

import (
	"errors"
	"testing"
	"time"
)

// The lease runs SessionTimeout from the send of the last acknowledged
// heartbeat, never from an older one, and there is none before the first
// registration.
func TestLease(t *testing.T) {
	t.Parallel()
	const session = time.Hour
	b := &Broker{config: Config{SessionTimeout: session}}
	if err := b.lease(); !errors.Is(err, errLeaseExpired) {
		t.Fatalf("before any heartbeat: %v, want errLeaseExpired", err)
	}
	b.renewLease(time.Now())
	if err := b.lease(); err != nil {
		t.Fatalf("after a heartbeat just acknowledged: %v", err)
	}
	// Its age is taken on the monotonic clock, so the send time keeps
	// time.Now's monotonic reading (Round(0) strips it). How lease takes
	// the age is not tested here: that would need the machine's wall
	// clock stepped.
	if start := *b.leaseStart.Load(); start == start.Round(0) {
		t.Fatal("the lease's start lost its monotonic clock reading")
	}
	b.renewLease(time.Now().Add(-2 * session)) // an old heartbeat's late acknowledgement
	if err := b.lease(); err != nil {
		t.Fatalf("an older heartbeat's acknowledgement shortened the lease: %v", err)
	}

	lapsed := &Broker{config: Config{SessionTimeout: session}}
	lapsed.renewLease(time.Now().Add(-session))
	if err := lapsed.lease(); !errors.Is(err, errLeaseExpired) {
		t.Fatalf("a session after the last heartbeat was sent: %v, want errLeaseExpired", err)
	}
}
