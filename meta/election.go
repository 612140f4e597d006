package meta

import (
	"context"
	"errors"
	"slices"
	"strconv"
)

// Unclean leader election. A partition whose every ISR member is fenced has
// no leader (FenceBroker keeps its last ISR member, so a clean election
// happens as soon as that broker registers again) and takes no writes:
// the default, which loses nothing acknowledged. A topic with
// unclean.leader.election.enable (or, when the topic does not set it, a
// controller whose Config.UncleanLeaderElection is on) trades that for
// availability: the controller elects the first live replica in replica
// order, with an ISR of itself alone, and whatever only the old ISR held
// is lost. Each such election is logged and counted
// (strata_meta_unclean_leader_elections_total). Departure: Kafka, too,
// takes the first live replica; the controller does not know which live
// replica holds the most, so it cannot prefer it.

// electionsAway counts the partitions broker led in before that another
// broker leads in after: the clean elections fencing it caused.
func electionsAway(before, after *State, broker int32) int {
	n := 0
	for _, t := range before.Topics() {
		for _, p := range before.Partitions(t.Name) {
			if p.Leader != broker {
				continue
			}
			if q, ok := after.Partition(t.Name, p.Partition); ok && q.Leader != NoLeader && q.Leader != broker {
				n++
			}
		}
	}
	return n
}

// uncleanElectionConfig is the topic config that allows unclean elections.
const uncleanElectionConfig = "unclean.leader.election.enable"

// allowsUncleanElection reports whether partitions of t may elect a replica
// outside the ISR: the topic's setting when it has one, else the
// controller's default.
func (n *Node) allowsUncleanElection(t Topic) bool {
	if v, set := t.Configs[uncleanElectionConfig]; set {
		on, _ := strconv.ParseBool(v)
		return on
	}
	return n.cfg.UncleanLeaderElection
}

// electUnclean proposes, for every leaderless partition whose topic allows
// it and that has a live replica, an unclean election (ElectLeader, which
// picks the first live replica, with an ISR of itself). Leader only; an
// election the state moved past is left alone.
func (n *Node) electUnclean() {
	st := n.fsm.current()
	for _, t := range st.Topics() {
		if !n.allowsUncleanElection(t) {
			continue
		}
		for _, p := range st.Partitions(t.Name) {
			cmd := &ElectLeader{Topic: t.Name, TopicID: t.ID, Partition: p.Partition, Type: ElectUnclean}
			if p.Leader != NoLeader || st.Check(cmd) != nil {
				continue // led, or no live replica to elect
			}
			unclean := st.Unclean(*cmd)
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.BrokerSessionTimeout)
			res, err := n.propose(ctx, cmd, true)
			cancel()
			switch {
			case err == nil && unclean:
				n.metrics.uncleanElections.Inc()
				elected, _ := n.fsm.current().Partition(t.Name, p.Partition)
				n.logger.Error("unclean leader election: a replica outside the ISR leads; records only the old ISR held are lost",
					"topic", t.Name, "partition", p.Partition, "leader", elected.Leader, "old_isr", slices.Clone(p.ISR),
					"leader_epoch", res.Epoch)
			case err == nil, errors.Is(err, ErrElectionNotNeeded), errors.Is(err, ErrNoEligibleLeader), errors.Is(err, ErrNotLeader):
			default:
				n.logger.Warn("could not elect a leader outside the ISR", "topic", t.Name, "partition", p.Partition, "error", err)
			}
		}
	}
}
