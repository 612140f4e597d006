package meta

import (
	"fmt"
	"slices"
)

// The cluster's identity and its brokers: InitCluster, RegisterBroker and
// FenceBroker. Fencing and registration also move partition leadership, so
// that a fenced broker leads nothing and a new incarnation never inherits
// leadership at an old leader epoch.

func init() {
	registerCommand(cmdInitCluster, "InitCluster", 1, (*InitCluster).apply)
	registerCommand(cmdRegisterBroker, "RegisterBroker", 1, (*RegisterBroker).apply)
	registerCommand(cmdFenceBroker, "FenceBroker", 1, (*FenceBroker).apply)
	registerCommand(cmdDrainBroker, "DrainBroker", 1, (*DrainBroker).apply)
	registerCommand(cmdUnregisterBroker, "UnregisterBroker", 1, (*UnregisterBroker).apply)
}

// InitCluster sets the cluster id. The first leader proposes it; it fails
// with ErrClusterIDExists once an id is set.
type InitCluster struct {
	ClusterID string `json:"cluster_id"`
}

func (InitCluster) commandType() CommandType { return cmdInitCluster }

func (c *InitCluster) apply(tx *txn) (int64, error) {
	if c.ClusterID == "" || len(c.ClusterID) > 255 {
		return 0, fmt.Errorf("%w: cluster id must be 1 to 255 bytes", ErrInvalidCommand)
	}
	if tx.st.clusterID != "" {
		return 0, fmt.Errorf("%w: %q", ErrClusterIDExists, tx.st.clusterID)
	}
	tx.st.clusterID = c.ClusterID
	tx.changed(Change{Kind: ChangeCluster})
	return 0, nil
}

// RegisterBroker registers a broker, or a new incarnation of one. It hands
// out the broker's incarnation epoch (Result.Epoch), unfences the broker, and
// makes it leader of every leaderless partition whose ISR lists it. A
// previous incarnation that was not fenced is fenced first.
type RegisterBroker struct {
	ID        int32      `json:"id"`
	Rack      string     `json:"rack,omitempty"`
	Listeners []Listener `json:"listeners"`
}

func (RegisterBroker) commandType() CommandType { return cmdRegisterBroker }

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func (c *RegisterBroker) apply(tx *txn) (int64, error) {
	if c.ID < 0 {
		return 0, fmt.Errorf("%w: broker id %d is negative", ErrInvalidCommand, c.ID)
	}
	if len(c.Listeners) == 0 {
		return 0, fmt.Errorf("%w: broker %d has no listeners", ErrInvalidCommand, c.ID)
	}
	for i, l := range c.Listeners {
		switch {
		case l.Name == "" || l.Host == "":
			return 0, fmt.Errorf("%w: broker %d listener %d has no name or host", ErrInvalidCommand, c.ID, i)
		case l.Port < 1 || l.Port > 65535:
			return 0, fmt.Errorf("%w: broker %d listener %q port %d", ErrInvalidCommand, c.ID, l.Name, l.Port)
		case !slices.Contains(securityProtocols, l.SecurityProtocol):
			return 0, fmt.Errorf("%w: broker %d listener %q security protocol %q", ErrInvalidCommand, c.ID, l.Name, l.SecurityProtocol)
		case slices.ContainsFunc(c.Listeners[:i], func(o Listener) bool { return o.Name == l.Name }):
			return 0, fmt.Errorf("%w: broker %d listener %q listed twice", ErrInvalidCommand, c.ID, l.Name)
		}
	}
	if prev, ok := tx.broker(c.ID); ok && !prev.Fenced {
		fenceBroker(tx, c.ID)
	}
	epoch := tx.st.nextBrokerEpoch
	tx.st.nextBrokerEpoch++
	next := &Broker{ID: c.ID, Epoch: epoch, Rack: c.Rack, Listeners: slices.Clone(c.Listeners)}
	if prev, ok := tx.broker(c.ID); ok && !prev.Unregistered {
		next.Draining = prev.Draining
	}
	tx.putBroker(next)
	for _, p := range tx.partitionsWhere(func(p *Partition) bool {
		return p.Leader == NoLeader && slices.Contains(p.ISR, c.ID)
	}) {
		next := p.clone()
		next.Leader = c.ID
		next.LeaderEpoch++
		next.PartitionEpoch++
		tx.putPartition(&next)
	}
	return epoch, nil
}

// FenceBroker fences a broker's incarnation: the broker is marked fenced,
// leaves every ISR it is in (unless it is the last member, which keeps the
// ISR pointing at the replica that has all committed data), and each
// partition it led gets a new leader from the rest of the ISR, or none. The
// leader proposes it for a broker that missed its session timeout. Fencing
// an already fenced incarnation does nothing; an Epoch that is not the
// broker's current one fails with ErrStaleBrokerEpoch.
type FenceBroker struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

func (FenceBroker) commandType() CommandType { return cmdFenceBroker }

func (c *FenceBroker) apply(tx *txn) (int64, error) {
	b, ok := tx.broker(c.ID)
	if !ok {
		return 0, fmt.Errorf("%w: %d", ErrUnknownBroker, c.ID)
	}
	if b.Epoch != c.Epoch {
		return 0, fmt.Errorf("%w: broker %d is at epoch %d, not %d", ErrStaleBrokerEpoch, c.ID, b.Epoch, c.Epoch)
	}
	if b.Fenced {
		return 0, nil
	}
	fenceBroker(tx, c.ID)
	return 0, nil
}

// fenceBroker marks the broker fenced and moves it out of every ISR and
// leadership (see FenceBroker).
func fenceBroker(tx *txn, id int32) {
	b, _ := tx.broker(id)
	fenced := b.clone()
	fenced.Fenced = true
	tx.putBroker(&fenced)
	for _, p := range tx.partitionsWhere(func(p *Partition) bool {
		return p.Leader == id || slices.Contains(p.ISR, id)
	}) {
		next := p.clone()
		if len(next.ISR) > 1 {
			next.ISR = slices.DeleteFunc(next.ISR, func(r int32) bool { return r == id })
		}
		if next.Leader == id {
			next.Leader = electFrom(tx, next.Replicas, next.ISR)
			next.LeaderEpoch++
		}
		next.PartitionEpoch++
		tx.putPartition(&next)
	}
}

// DrainBroker starts (Draining) or ends draining a broker: while draining
// it leads a partition only when no other in-sync replica can, gets no
// preferred leadership back, and (for the proposers that place replicas)
// takes no new replicas. Starting moves the leadership of every partition
// it leads to the first other live ISR member, where there is one. Moving
// its replicas away is the reassignments' work (`strata broker drain`).
// An unregistered broker is ErrUnknownBroker.
type DrainBroker struct {
	ID       int32 `json:"id"`
	Draining bool  `json:"draining"`
}

func (DrainBroker) commandType() CommandType { return cmdDrainBroker }

func (c *DrainBroker) apply(tx *txn) (int64, error) {
	b, ok := tx.broker(c.ID)
	if !ok {
		return 0, fmt.Errorf("%w: %d", ErrUnknownBroker, c.ID)
	}
	if b.Draining == c.Draining {
		return 0, nil
	}
	next := b.clone()
	next.Draining = c.Draining
	tx.putBroker(&next)
	if !c.Draining {
		return 0, nil
	}
	for _, p := range tx.partitionsWhere(func(p *Partition) bool { return p.Leader == c.ID }) {
		if leader := electFrom(tx, p.Replicas, p.ISR); leader != c.ID {
			moved := p.clone()
			moved.Leader = leader
			moved.LeaderEpoch++
			moved.PartitionEpoch++
			tx.putPartition(&moved)
		}
	}
	return 0, nil
}

// UnregisterBroker removes a broker that will not come back, as Kafka's
// UnregisterBroker does: it must be fenced (else ErrBrokerAlive: stop it
// first) and registered (else ErrUnknownBroker). Partitions that list it
// keep it as an offline replica until they are reassigned; the metadata
// leader removes it from the Raft group if it is a non-voter. A broker
// that registers again is a broker again.
type UnregisterBroker struct {
	ID int32 `json:"id"`
}

func (UnregisterBroker) commandType() CommandType { return cmdUnregisterBroker }

func (c *UnregisterBroker) apply(tx *txn) (int64, error) {
	b, ok := tx.broker(c.ID)
	switch {
	case !ok || b.Unregistered:
		return 0, fmt.Errorf("%w: %d", ErrUnknownBroker, c.ID)
	case !b.Fenced:
		return 0, fmt.Errorf("%w: broker %d is registered and heartbeating; stop it first (after `strata broker drain %d`)", ErrBrokerAlive, c.ID, c.ID)
	}
	gone := b.clone()
	gone.Unregistered, gone.Draining = true, false
	tx.putBroker(&gone)
	return 0, nil
}
