package group

import (
	"context"
	"time"
)

// JoinRequest is a JoinGroup as the coordinator sees it.
type JoinRequest struct {
	Group            string
	MemberID         string
	InstanceID       string
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID is JoinGroup v4+: a member without an id gets one
	// with ErrMemberIDRequired and must join again with it.
	RequireKnownMemberID bool
}

// JoinMember is one member as the leader's join answer lists it.
type JoinMember struct {
	ID         string
	InstanceID string
	Metadata   []byte
}

// JoinResult answers a join. Members is set for the leader only;
// SkipAssignment tells a static leader that rejoined a stable group to
// sync without assigning.
type JoinResult struct {
	Err            error
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	MemberID       string
	Members        []JoinMember
	SkipAssignment bool
}

// Join adds a member to a group or rejoins it, and answers once the
// rebalance completes (or at once when no rebalance is needed).
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) (JoinResult, error) {
	return call(ctx, c, func(future chan<- JoinResult) { c.join(req, future) })
}

func (c *Coordinator) join(req JoinRequest, future chan<- JoinResult) {
	fail := func(err error) { future <- JoinResult{Err: err, MemberID: req.MemberID, Generation: -1} }
	switch {
	case req.Group == "":
		fail(ErrInvalidGroupID)
		return
	case req.SessionTimeout < c.config.MinSessionTimeout || req.SessionTimeout > c.config.MaxSessionTimeout:
		fail(ErrInvalidSessionTimeout)
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		fail(ErrInconsistentProtocol)
		return
	}
	g := c.groupFor(req.Group)
	// A join that added neither a member nor a pending member id (it
	// failed) leaves no group behind.
	defer c.forgetIfIdle(g)
	if !g.supportsCommon(req.ProtocolType, req.Protocols) {
		fail(ErrInconsistentProtocol)
		return
	}
	if req.MemberID == "" {
		g.joinUnknown(req, future)
		return
	}
	if t, ok := g.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.pending, req.MemberID)
		g.add(req, req.MemberID, future)
		return
	}
	m, ok := g.members[req.MemberID]
	if !ok {
		if req.InstanceID != "" {
			if _, known := g.instances[req.InstanceID]; known {
				fail(ErrFencedInstanceID)
				return
			}
		}
		fail(ErrUnknownMember)
		return
	}
	if req.InstanceID != "" && g.instances[req.InstanceID] != m.id {
		fail(ErrFencedInstanceID)
		return
	}
	g.rejoin(m, req, future)
}

// joinUnknown handles a join without a member id: a static member taking
// its place back, a new member that must come back with an id (v4+), or a
// new member joining right away (v0-3).
func (g *group) joinUnknown(req JoinRequest, future chan<- JoinResult) {
	id := g.c.newMemberID(req.ClientID)
	if req.InstanceID != "" {
		if old, ok := g.instances[req.InstanceID]; ok {
			g.replaceStatic(g.members[old], id, req, future)
			return
		}
		g.add(req, id, future)
		return
	}
	if req.RequireKnownMemberID {
		g.pending[id] = g.c.after(req.SessionTimeout, func() {
			delete(g.pending, id)
			g.c.forgetIfIdle(g)
		})
		future <- JoinResult{Err: ErrMemberIDRequired, MemberID: id, Generation: -1}
		return
	}
	g.add(req, id, future)
}

// add makes a new member and starts a rebalance for it.
func (g *group) add(req JoinRequest, id string, future chan<- JoinResult) {
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         req.ClientID,
		clientHost:       req.ClientHost,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocols:        req.Protocols,
		join:             future,
	}
	g.members[id] = m
	if req.InstanceID != "" {
		g.instances[req.InstanceID] = id
	}
	g.touch(m)
	if g.state == PreparingRebalance {
		g.maybeCompleteJoin()
		return
	}
	g.prepareRebalance("member " + id + " joined")
}

// replaceStatic gives a static member's place to a new member id without a
// rebalance when the group is stable and the subscription unchanged; the
// old member id is fenced from now on.
func (g *group) replaceStatic(old *member, id string, req JoinRequest, future chan<- JoinResult) {
	g.c.log.Info("static member rejoined", "group", g.id, "instance", req.InstanceID, "old", old.id, "new", id)
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         req.ClientID,
		clientHost:       req.ClientHost,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocols:        req.Protocols,
		assignment:       old.assignment,
	}
	unchanged := sameProtocols(old.protocols, req.Protocols)
	wasLeader := g.leader == old.id
	g.remove(old, ErrFencedInstanceID)
	g.members[id] = m
	g.instances[req.InstanceID] = id
	if wasLeader {
		g.leader = id
	}
	g.touch(m)
	switch {
	case g.state == Stable && unchanged:
		// A static leader gets the member list but is told to skip the
		// assignment (KIP-814): the group keeps its current one.
		r := g.joinResult(m, wasLeader)
		r.SkipAssignment = wasLeader
		future <- r
	case g.state == PreparingRebalance:
		m.join = future
		g.maybeCompleteJoin()
	default:
		m.join = future
		g.prepareRebalance("static member " + req.InstanceID + " changed")
	}
}

// rejoin handles a join from a current member.
func (g *group) rejoin(m *member, req JoinRequest, future chan<- JoinResult) {
	changed := !sameProtocols(m.protocols, req.Protocols)
	m.protocols = req.Protocols
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	g.touch(m)
	if m.join != nil {
		// A retried join replaces the one waiting.
		m.join <- JoinResult{Err: ErrRebalanceInProgress, MemberID: m.id, Generation: -1}
	}
	switch g.state {
	case PreparingRebalance:
		m.join = future
		g.maybeCompleteJoin()
	case CompletingRebalance:
		// A retry of the join that completed: answer it again.
		if !changed {
			future <- g.joinResult(m, m.id == g.leader)
			return
		}
		m.join = future
		g.prepareRebalance("member " + m.id + " changed its protocols")
	case Stable:
		// The leader rejoins to ask for a rebalance; a member rejoins with
		// new protocols (cooperative rebalancing's second round).
		if !changed && m.id != g.leader {
			future <- g.joinResult(m, false)
			return
		}
		m.join = future
		g.prepareRebalance("member " + m.id + " rejoined")
	default:
		future <- JoinResult{Err: ErrUnknownMember, MemberID: m.id, Generation: -1}
	}
}
