package ingest

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// connectionSlots bounds the client connections open at once
// (max.connections), so sockets stay within their share of the descriptor
// budget (descriptors.go) however many clients dial. At the bound the
// accept loop stops accepting until a connection ends: new clients wait in
// the listen backlog, as Kafka's acceptor makes them wait, and the
// partitions' descriptors are never the ones to run out.
type connectionSlots struct {
	slots chan struct{} // one token per open connection
	waits atomic.Int64  // times the accept loop found no slot free
}

func newConnectionSlots(limit int, reg prometheus.Registerer) *connectionSlots {
	s := &connectionSlots{slots: make(chan struct{}, limit)}
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_ingest_max_connections",
			Help: "max.connections in force: the most client connections open at once.",
		}, func() float64 { return float64(limit) }))
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_ingest_accept_waits_total",
			Help: "Times the accept loop waited for a connection to end because max.connections were open.",
		}, func() float64 { return float64(s.waits.Load()) }))
	}
	return s
}

// MaxConnections is max.connections in force.
func (b *Broker) MaxConnections() int { return cap(b.connectionSlots.slots) }

// limitsConnections reports whether listener l's connections count
// against max.connections: all but those of an inter-broker listener apart
// from the clients' (inter.broker.listener.name naming one of several), as
// Kafka exempts it (KIP-402): clients holding every slot, idle ones too
// (held for connections.max.idle.ms), would otherwise keep other brokers'
// followers from connecting, shrinking ISRs and failing acks=all. With
// one listener for both, clients and followers share the limit.
func (c Config) limitsConnections(l Listener) bool {
	return len(c.Listeners) < 2 || c.InterBrokerListener == "" || l.Name != c.InterBrokerListener
}

// slotsFor is the pool listener l's connections take their slots from,
// nil for one max.connections does not limit.
func (b *Broker) slotsFor(l Listener) *connectionSlots {
	if !b.config.limitsConnections(l) {
		return nil
	}
	return b.connectionSlots
}

// acquire takes a slot for the next connection, waiting while none is
// free; it returns false if stop closes first. A nil pool has a slot
// for every connection.
func (s *connectionSlots) acquire(stop <-chan struct{}) bool {
	if s == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	s.waits.Add(1)
	select {
	case s.slots <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

// release gives back the slot of a connection that ended, or of an accept
// that failed.
func (s *connectionSlots) release() {
	if s != nil {
		<-s.slots
	}
}

// maxConnections is max.connections in force: MaxConnections when set,
// else the sockets' share of the descriptor budget less the bucket
// client's part.
func (c Config) maxConnections(d descriptorBudget) int {
	if c.MaxConnections > 0 {
		return c.MaxConnections
	}
	return max(1, d.sockets-d.bucketConnections)
}

// validateConnections refuses a max.connections the descriptor budget's
// socket share cannot hold.
func (c Config) validateConnections(d descriptorBudget) error {
	if c.MaxConnections < 0 {
		return fmt.Errorf("max.connections %d: want 0 (derived from the descriptor limit) or more", c.MaxConnections)
	}
	if clients := d.sockets - d.bucketConnections; c.MaxConnections > clients {
		return fmt.Errorf("max.connections %d: the descriptor limit %d gives client sockets %d descriptors (a quarter of the limit, less %d for the bucket client); raise the hard limit (`ulimit -Hn`, LimitNOFILE under systemd) or lower max.connections",
			c.MaxConnections, d.limit, clients, d.bucketConnections)
	}
	return nil
}
