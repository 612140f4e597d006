package ingest

import (
	"fmt"
	"sync"
)

// producerIDBits is how many low bits of a producer id count producers
// within one broker incarnation; the bits above hold the incarnation epoch.
//
// Producer ids must be unique across brokers and restarts. The metadata
// group hands each broker incarnation an epoch larger than every epoch
// before it (RegisterBroker), so epoch<<producerIDBits | counter is unique
// without a metadata round trip per id: 2^24 (16.7 million) producers per
// incarnation, and 2^39 incarnations before the id would overflow. A broker
// that uses up its counter registers again for a new epoch.
const producerIDBits = 24

// errProducerIDsExhausted means the incarnation's id space is used up.
var errProducerIDsExhausted = fmt.Errorf("%w: this broker incarnation used up its ids; it registers again", ErrProducerIDsUnavailable)

// producerIDs hands out producer ids for one broker incarnation.
type producerIDs struct {
	mu struct {
		sync.Mutex
		epoch int64 // incarnation epoch; 0 before registration
		next  int64
	}
}

// reset starts handing out ids of a new incarnation epoch.
func (p *producerIDs) reset(epoch int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.epoch, p.mu.next = epoch, 0
}

// allocate returns a fresh producer id.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.epoch == 0 {
		return 0, fmt.Errorf("%w: broker not registered yet", ErrProducerIDsUnavailable)
	}
	if p.mu.next == 1<<producerIDBits {
		return 0, errProducerIDsExhausted
	}
	id := p.mu.epoch<<producerIDBits | p.mu.next
	p.mu.next++
	return id, nil
}
