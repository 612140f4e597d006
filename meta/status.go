package meta

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// Status is a node's view of the metadata group, for `strata cluster
// status` (as a table or JSON) and the admin HTTP endpoint.
type Status struct {
	NodeID            string         `json:"node_id"`
	Address           string         `json:"address"`
	RaftState         string         `json:"raft_state"` // Leader, Follower, Candidate or Shutdown
	ClusterID         string         `json:"cluster_id"`
	LeaderID          string         `json:"leader_id"`
	LeaderAddress     string         `json:"leader_address"`
	Term              uint64         `json:"term"`
	LastLogIndex      uint64         `json:"last_log_index"`
	CommitIndex       uint64         `json:"commit_index"`
	AppliedIndex      uint64         `json:"applied_index"`       // Raft's: entries handed to the state machine
	StateIndex        uint64         `json:"state_index"`         // the last command applied to the state
	LastSnapshotIndex uint64         `json:"last_snapshot_index"` // 0 before the first snapshot
	Servers           []ServerStatus `json:"servers"`
	Brokers           []BrokerStatus `json:"brokers"`
	// RestoredSnapshotIndex is the index of the last snapshot restored
	// into the state: at start the node's own; later one its leader sent
	// because the log was compacted past what this node holds. 0: none.
	RestoredSnapshotIndex uint64 `json:"restored_snapshot_index"`
	// Error is the fatal error that stopped the node, if any.
	Error string `json:"error,omitempty"`
}

// ServerStatus is one member of the Raft configuration.
type ServerStatus struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"` // voter, nonvoter or staging
	Leader   bool   `json:"leader"`
}

// BrokerStatus is one registered broker.
type BrokerStatus struct {
	ID        int32      `json:"id"`
	Epoch     int64      `json:"epoch"`
	State     string     `json:"state"` // active, draining, fenced or unregistered
	Rack      string     `json:"rack,omitempty"`
	Listeners []Listener `json:"listeners"`
	// LastHeartbeatAgoMs is known on the leader only, once it has heard
	// from the broker's current incarnation.
	LastHeartbeatAgoMs *int64 `json:"last_heartbeat_ago_ms,omitempty"`
}

// Status returns the node's view of the group.
func (n *Node) Status() Status {
	st := n.fsm.current()
	leaderAddr, leaderID := n.raft.LeaderWithID()
	stats := n.raft.Stats()
	s := Status{
		NodeID:        n.cfg.NodeID,
		Address:       n.advertise,
		RaftState:     n.raft.State().String(),
		ClusterID:     st.ClusterID(),
		LeaderID:      string(leaderID),
		LeaderAddress: string(leaderAddr),
		Term:          n.raft.CurrentTerm(),
		LastLogIndex:  n.raft.LastIndex(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		StateIndex:    st.index,
		Servers:       []ServerStatus{},
		Brokers:       []BrokerStatus{},
	}
	s.LastSnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	s.RestoredSnapshotIndex = n.fsm.restored.Load()
	if err := n.Err(); err != nil {
		s.Error = err.Error()
	}
	if future := n.raft.GetConfiguration(); future.Error() == nil {
		for _, srv := range future.Configuration().Servers {
			s.Servers = append(s.Servers, ServerStatus{
				ID:       string(srv.ID),
				Address:  string(srv.Address),
				Suffrage: suffrageName(srv.Suffrage),
				Leader:   srv.ID == leaderID,
			})
		}
	}
	isLeader := n.raft.State() == raft.Leader
	now := n.liveness.clock.now()
	for _, b := range st.Brokers() {
		bs := BrokerStatus{ID: b.ID, Epoch: b.Epoch, State: "active", Rack: b.Rack, Listeners: b.Listeners}
		switch {
		case b.Unregistered:
			bs.State = "unregistered"
		case b.Fenced:
			bs.State = "fenced"
		case b.Draining:
			bs.State = "draining"
		}
		if at, ok := n.liveness.lastHeard(b.ID, b.Epoch); ok && isLeader {
			ago := now.Sub(at).Milliseconds()
			bs.LastHeartbeatAgoMs = &ago
		}
		s.Brokers = append(s.Brokers, bs)
	}
	return s
}

func suffrageName(s raft.ServerSuffrage) string {
	switch s {
	case raft.Voter:
		return "voter"
	case raft.Nonvoter:
		return "nonvoter"
	default:
		return "staging"
	}
}
