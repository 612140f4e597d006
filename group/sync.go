package group

import "context"

// SyncRequest is a SyncGroup as the coordinator sees it. Assignments is the
// leader's, by member id; others send none.
type SyncRequest struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID string
	// ProtocolType and Protocol (v5+) must match the group's when set.
	ProtocolType string
	Protocol     string
	Assignments  map[string][]byte
}

// SyncResult answers a sync with the member's assignment.
type SyncResult struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Sync waits for the leader's assignment and returns the member's part.
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) (SyncResult, error) {
	return call(ctx, c, func(future chan<- SyncResult) { c.sync(req, future) })
}

func (c *Coordinator) sync(req SyncRequest, future chan<- SyncResult) {
	g, m, err := c.member(req.Group, req.MemberID, req.InstanceID)
	if err != nil {
		future <- SyncResult{Err: err}
		return
	}
	switch {
	case req.Generation != g.generation:
		future <- SyncResult{Err: ErrIllegalGeneration}
		return
	case req.ProtocolType != "" && req.ProtocolType != g.protocolType,
		req.Protocol != "" && req.Protocol != g.protocol:
		future <- SyncResult{Err: ErrInconsistentProtocol}
		return
	}
	g.touch(m)
	m.awaitingSync = false
	switch g.state {
	case PreparingRebalance:
		future <- SyncResult{Err: ErrRebalanceInProgress}
	case CompletingRebalance:
		if m.sync != nil {
			m.sync <- SyncResult{Err: ErrRebalanceInProgress}
		}
		m.sync = future
		if m.id == g.leader {
			g.assign(req.Assignments)
		}
	case Stable:
		future <- g.syncResult(m)
	default:
		future <- SyncResult{Err: ErrUnknownMember}
	}
}

// assign stores the leader's assignment, makes the group stable and
// answers every member waiting in a sync. Members the leader left out get
// an empty assignment, as in Kafka.
func (g *group) assign(assignments map[string][]byte) {
	for _, m := range g.members {
		m.assignment = assignments[m.id]
	}
	g.state = Stable
	for _, m := range g.members {
		if m.sync != nil {
			m.sync <- g.syncResult(m)
			m.sync = nil
		}
	}
}

func (g *group) syncResult(m *member) SyncResult {
	return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

// member finds a current member, checking its static instance id: a request
// naming an instance another member id now holds is fenced.
func (c *Coordinator) member(groupID, memberID, instanceID string) (*group, *member, error) {
	g, ok := c.groups[groupID]
	if !ok {
		return nil, nil, ErrUnknownMember
	}
	if instanceID != "" {
		if holder, known := g.instances[instanceID]; known && holder != memberID {
			return nil, nil, ErrFencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, nil, ErrUnknownMember
	}
	return g, m, nil
}
