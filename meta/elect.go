package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Elections asked for by an operator (ElectLeaders) or by the controller's
// leader balancing: the state machine picks the leader from the state it
// applies to, so concurrent elections and ISR changes cannot race.

func init() {
	registerCommand(cmdElectLeader, "ElectLeader", 1, (*ElectLeader).apply)
}

// ElectionType is Kafka's ElectLeaders election type.
type ElectionType int8

// Election types.
const (
	// ElectPreferred makes the preferred replica (the first in the replica
	// list) leader if it is alive and in the ISR.
	ElectPreferred ElectionType = 0
	// ElectUnclean gives a leaderless partition a leader: an ISR member if
	// one is alive, else the first live replica, with an ISR of itself.
	ElectUnclean ElectionType = 1
)

func (t ElectionType) String() string {
	switch t {
	case ElectPreferred:
		return "preferred"
	case ElectUnclean:
		return "unclean"
	}
	return fmt.Sprintf("ElectionType(%d)", int8(t))
}

// ElectLeader runs one election on one partition. A preferred election of
// a partition its preferred replica already leads, or an unclean election
// of a partition that has a leader, is ErrElectionNotNeeded; a preferred
// replica that is fenced or out of the ISR is ErrPreferredLeaderDown; an
// unclean election without a live replica is ErrNoEligibleLeader.
// Result.Epoch is the new leader epoch.
type ElectLeader struct {
	Topic     string       `json:"topic"`
	TopicID   uuid.UUID    `json:"topic_id"`
	Partition int32        `json:"partition"`
	Type      ElectionType `json:"type"`
}

func (ElectLeader) commandType() CommandType { return cmdElectLeader }

func (c *ElectLeader) apply(tx *txn) (int64, error) {
	p, err := lookupPartition(tx, c.Topic, c.TopicID, c.Partition)
	if err != nil {
		return 0, err
	}
	next := p.clone()
	switch c.Type {
	case ElectPreferred:
		preferred := p.Replicas[0]
		if p.Leader == preferred {
			return 0, fmt.Errorf("%w: broker %d, the preferred replica, leads %s-%d", ErrElectionNotNeeded, preferred, c.Topic, c.Partition)
		}
		if electFrom(tx, p.Replicas[:1], p.ISR) == NoLeader {
			return 0, fmt.Errorf("%w: broker %d, the preferred replica of %s-%d, is not alive and in the ISR %v",
				ErrPreferredLeaderDown, preferred, c.Topic, c.Partition, p.ISR)
		}
		if b, _ := tx.broker(preferred); b.Draining {
			return 0, fmt.Errorf("%w: broker %d, the preferred replica of %s-%d, is draining", ErrPreferredLeaderDown, preferred, c.Topic, c.Partition)
		}
		next.Leader = preferred
	case ElectUnclean:
		if p.Leader != NoLeader {
			return 0, fmt.Errorf("%w: %s-%d has leader %d", ErrElectionNotNeeded, c.Topic, c.Partition, p.Leader)
		}
		if next.Leader = electFrom(tx, p.Replicas, p.ISR); next.Leader == NoLeader {
			next.Leader = electFrom(tx, p.Replicas, p.Replicas)
			next.ISR = []int32{next.Leader}
			next.UncleanLeaderEpoch = p.LeaderEpoch + 1
		}
		if next.Leader == NoLeader {
			return 0, fmt.Errorf("%w: no replica of %s-%d is alive", ErrNoEligibleLeader, c.Topic, c.Partition)
		}
	default:
		return 0, fmt.Errorf("%w: election type %d", ErrInvalidCommand, c.Type)
	}
	next.LeaderEpoch++
	next.PartitionEpoch++
	tx.putPartition(&next)
	return int64(next.LeaderEpoch), nil
}

// Unclean reports whether an election of p by this command would be
// unclean: a leader outside the ISR.
func (s *State) Unclean(c ElectLeader) bool {
	p, ok := s.Partition(c.Topic, c.Partition)
	if !ok || c.Type != ElectUnclean || p.Leader != NoLeader {
		return false
	}
	for _, r := range p.ISR {
		if b, ok := s.Broker(r); ok && !b.Fenced {
			return false
		}
	}
	return true
}

// imbalancedLeaders returns the partitions a preferred leader election
// would move back, on every live broker not draining whose imbalance
// exceeds percent:
// the share of the partitions it is the preferred replica of that another
// broker leads (Kafka's leader.imbalance.per.broker.percentage). Of those,
// only partitions whose preferred replica is in the ISR are returned.
func imbalancedLeaders(st *State, percent int) []Partition {
	preferred := map[int32]int{}
	notLed := map[int32][]Partition{}
	for _, t := range st.Topics() {
		for _, p := range st.Partitions(t.Name) {
			r := p.Replicas[0]
			preferred[r]++
			if p.Leader != r {
				notLed[r] = append(notLed[r], p)
			}
		}
	}
	var out []Partition
	for _, r := range sortedBrokers(notLed) {
		if b, ok := st.Broker(r); !ok || b.Fenced || b.Draining || len(notLed[r])*100 <= percent*preferred[r] {
			continue
		}
		for _, p := range notLed[r] {
			if slices.Contains(p.ISR, r) {
				out = append(out, p)
			}
		}
	}
	return out
}

// sortedBrokers returns m's keys in order.
func sortedBrokers[V any](m map[int32]V) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// balanceLeaders moves leadership back to preferred replicas where a
// broker's imbalance exceeds Config.LeaderImbalancePerBroker (Kafka's
// auto.leader.rebalance.enable). Leader only; an election the state moved
// past is left for the next check.
func (n *Node) balanceLeaders() {
	for _, p := range imbalancedLeaders(n.fsm.current(), n.cfg.LeaderImbalancePerBroker) {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.BrokerSessionTimeout)
		_, err := n.propose(ctx, &ElectLeader{Topic: p.Topic, Partition: p.Partition, Type: ElectPreferred}, true)
		cancel()
		switch {
		case err == nil:
			n.logger.Info("moved leadership back to the preferred replica", "topic", p.Topic, "partition", p.Partition,
				"leader", p.Replicas[0], "was", p.Leader)
		case errors.Is(err, ErrElectionNotNeeded), errors.Is(err, ErrPreferredLeaderDown), errors.Is(err, ErrNotLeader),
			errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
		default:
			n.logger.Warn("could not move leadership to the preferred replica", "topic", p.Topic, "partition", p.Partition, "error", err)
		}
	}
}
