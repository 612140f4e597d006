package ingest

import (
	"errors"
	"fmt"
	"time"
)

// The leadership lease (DESIGN §6). The controller fences a broker whose
// heartbeats it has not heard for broker.session.timeout.ms and elects new
// leaders for its partitions. A leader cut off from the metadata group
// must stop taking writes before that can happen, or two brokers would
// take writes for one partition at once. The controller's clock starts at
// the last heartbeat it heard, which was sent no earlier than the last one
// this broker saw acknowledged; so a broker that stops writing
// SessionTimeout after sending its last acknowledged heartbeat stops first.
// Writes resume with the next acknowledged heartbeat, or, if the broker
// was fenced, once it registers again and is given leadership back.

// errLeaseExpired is why a broker without its lease takes no writes.
var errLeaseExpired = errors.New("the leadership lease lapsed: no heartbeat to the metadata leader was acknowledged within broker.session.timeout.ms")

// renewLease records that a heartbeat (or registration) sent at sent, a
// reading of time.Now, was acknowledged.
func (b *Broker) renewLease(sent time.Time) {
	for {
		old := b.leaseStart.Load()
		if (old != nil && !sent.After(*old)) || b.leaseStart.CompareAndSwap(old, &sent) {
			return
		}
	}
}

// lease returns nil while this broker may lead. The lease is measured on
// the monotonic clock (time.Since of a time.Now reading), as the
// controller measures the session: a step of the wall clock (NTP, an
// operator) neither lengthens nor ends it.
func (b *Broker) lease() error {
	start := b.leaseStart.Load()
	if start == nil {
		return fmt.Errorf("%w (not registered yet)", errLeaseExpired)
	}
	if age := time.Since(*start); age >= b.config.SessionTimeout {
		return fmt.Errorf("%w (the last was sent %v ago)", errLeaseExpired, age.Round(time.Millisecond))
	}
	return nil
}
