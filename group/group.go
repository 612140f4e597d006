package group

import (
	"slices"
	"time"
)

// State is a group's state, named as Kafka names it in DescribeGroups and
// ListGroups.
type State string

// The states of a group (see doc.go for the transitions).
const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
	Dead                State = "Dead"
)

// Protocol is one assignment protocol a member supports, with its metadata
// (for "consumer", the subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is one member of a group. Owned by the loop.
type member struct {
	id               string
	instanceID       string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []Protocol
	assignment       []byte

	// join is the future of a join waiting for the rebalance to complete;
	// sync the future of a sync waiting for the leader's assignment.
	join chan<- JoinResult
	sync chan<- SyncResult
	// awaitingSync is set from the join phase's end until the member's
	// SyncGroup for that generation comes.
	awaitingSync bool
	// session expires the member unless a heartbeat, join or sync comes;
	// sessionSeq tells a timer that fired late from the current one.
	session    *time.Timer
	sessionSeq uint64
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

// group is one consumer group's membership. Owned by the loop.
type group struct {
	c            *Coordinator
	id           string
	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// instances maps group.instance.id to the member id holding it.
	instances map[string]string
	// pending are member ids handed out by MEMBER_ID_REQUIRED that have not
	// joined yet, each expiring after the session timeout.
	pending map[string]*time.Timer
	// rebalance completes the join phase when it fires; initialDelay says
	// it is the initial delay of a group that was empty, which completes
	// the join phase only when it fires.
	rebalance    *time.Timer
	initialDelay bool
	// syncDeadline removes, a rebalance timeout after the join phase
	// ended, the members that have not sent their SyncGroup since.
	syncDeadline *time.Timer
	// progress tracks when each partition's committed offset last moved.
	progress map[partitionKey]progress
}

type partitionKey struct {
	topic     string
	partition int32
}

type progress struct {
	offset int64
	since  time.Time
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		c:         c,
		id:        id,
		state:     Empty,
		members:   map[string]*member{},
		instances: map[string]string{},
		pending:   map[string]*time.Timer{},
		progress:  map[partitionKey]progress{},
	}
}

func (g *group) stopTimers() {
	if g.rebalance != nil {
		g.rebalance.Stop()
	}
	if g.syncDeadline != nil {
		g.syncDeadline.Stop()
	}
	for _, t := range g.pending {
		t.Stop()
	}
	for _, m := range g.members {
		m.session.Stop()
	}
}

// touch restarts m's session timer.
func (g *group) touch(m *member) {
	if m.session != nil {
		m.session.Stop()
	}
	m.sessionSeq++
	seq := m.sessionSeq
	m.session = g.c.after(m.sessionTimeout, func() {
		if m.sessionSeq == seq {
			g.expire(m)
		}
	})
}

// expire removes m if its session ended while it was not waiting in a join
// or a sync (a member waiting for the rebalance, or for its leader's
// assignment, is alive by definition and cannot heartbeat meanwhile: its
// connection answers one request at a time). A leader that never syncs
// is not waiting, so its session ends that wait.
func (g *group) expire(m *member) {
	if g.c.groups[g.id] != g || g.members[m.id] != m {
		return
	}
	if m.join != nil || m.sync != nil {
		g.touch(m)
		return
	}
	g.c.log.Info("member session expired", "group", g.id, "member", m.id, "instance", m.instanceID)
	g.remove(m, ErrUnknownMember)
	g.membershipChanged()
}

// remove takes m out of the group, failing its waiting futures with err.
func (g *group) remove(m *member, err error) {
	m.session.Stop()
	if m.join != nil {
		m.join <- JoinResult{Err: err, MemberID: m.id}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- SyncResult{Err: err}
		m.sync = nil
	}
	delete(g.members, m.id)
	if m.instanceID != "" && g.instances[m.instanceID] == m.id {
		delete(g.instances, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// membershipChanged moves the group on after members were removed.
func (g *group) membershipChanged() {
	switch g.state {
	case PreparingRebalance:
		g.maybeCompleteJoin()
	case CompletingRebalance, Stable:
		g.prepareRebalance("membership changed")
	}
}

// prepareRebalance starts a join phase: every member must rejoin within
// the longest rebalance timeout. Members waiting in a sync are told to
// rejoin.
func (g *group) prepareRebalance(reason string) {
	for _, m := range g.members {
		if m.sync != nil {
			m.sync <- SyncResult{Err: ErrRebalanceInProgress}
			m.sync = nil
		}
	}
	wasEmpty := g.state == Empty
	if wasEmpty {
		delete(g.c.emptySince, g.id) // members again: no retention clock
	}
	g.state = PreparingRebalance
	g.c.log.Debug("preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	if g.rebalance != nil {
		g.rebalance.Stop()
	}
	delay := g.rebalanceTimeout()
	g.initialDelay = wasEmpty && g.c.config.InitialRebalanceDelay > 0
	if g.initialDelay {
		delay = g.c.config.InitialRebalanceDelay
	}
	generation := g.generation
	g.rebalance = g.c.after(delay, func() {
		if g.generation == generation {
			g.completeJoin()
		}
	})
	g.maybeCompleteJoin()
}

func (g *group) rebalanceTimeout() time.Duration {
	var longest time.Duration
	for _, m := range g.members {
		longest = max(longest, m.rebalanceTimeout)
	}
	return longest
}

// maybeCompleteJoin completes the join phase once every member is waiting
// in a join, unless an initial delay is still running.
func (g *group) maybeCompleteJoin() {
	if g.state != PreparingRebalance {
		return
	}
	if g.initialDelay {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, a protocol and leader are chosen and
// every joined member gets its answer, the leader with the member list.
func (g *group) completeJoin() {
	if g.state != PreparingRebalance {
		return
	}
	g.rebalance.Stop()
	g.rebalance, g.initialDelay = nil, false
	for _, m := range g.members {
		if m.join == nil {
			g.remove(m, ErrUnknownMember)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state = Empty
		g.protocol, g.leader = "", ""
		g.c.noteEmpty(g)
		g.c.forgetIfIdle(g)
		return
	}
	g.protocol = g.chooseProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.firstMember()
	}
	g.state = CompletingRebalance
	for _, m := range g.members {
		m.join <- g.joinResult(m, m.id == g.leader)
		m.join = nil
		m.awaitingSync = true
		g.touch(m)
	}
	if g.syncDeadline != nil {
		g.syncDeadline.Stop()
	}
	generation := g.generation
	g.syncDeadline = g.c.after(g.rebalanceTimeout(), func() {
		if g.generation == generation {
			g.expireUnsynced()
		}
	})
}

// expireUnsynced removes the members that have not sent their SyncGroup
// within the rebalance timeout after the join phase, as Kafka does since
// 3.2, and the group rebalances without them. A leader that heartbeats
// and never syncs would otherwise keep the group in CompletingRebalance,
// its followers waiting in their syncs (alive, see expire) for ever.
func (g *group) expireUnsynced() {
	if g.c.groups[g.id] != g || (g.state != CompletingRebalance && g.state != Stable) {
		return
	}
	var removed []string
	for _, m := range g.members {
		if m.awaitingSync {
			removed = append(removed, m.id)
			g.remove(m, ErrUnknownMember)
		}
	}
	if len(removed) == 0 {
		return
	}
	slices.Sort(removed)
	g.c.log.Info("members sent no SyncGroup within the rebalance timeout; removed", "group", g.id, "generation", g.generation, "members", removed)
	g.membershipChanged()
}

// firstMember is the member with the smallest id, so the choice does not
// depend on map order.
func (g *group) firstMember() string {
	var first string
	for id := range g.members {
		if first == "" || id < first {
			first = id
		}
	}
	return first
}

// chooseProtocol picks the protocol every member supports that members
// prefer most, each member voting for its first supported choice.
func (g *group) chooseProtocol() string {
	candidates := g.commonProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, name := range candidates {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// commonProtocols are the protocol names every member supports, in the
// order of the first member's preference.
func (g *group) commonProtocols() []string {
	var out []string
	first := true
	for _, m := range g.members {
		names := make([]string, len(m.protocols))
		for i, p := range m.protocols {
			names[i] = p.Name
		}
		if first {
			out, first = names, false
			continue
		}
		out = slices.DeleteFunc(out, func(n string) bool { return !slices.Contains(names, n) })
	}
	slices.Sort(out)
	return out
}

// supportsCommon reports whether protocols share a name with what every
// current member supports, as a joining member must.
func (g *group) supportsCommon(protocolType string, protocols []Protocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	common := g.commonProtocols()
	for _, p := range protocols {
		if slices.Contains(common, p.Name) {
			return true
		}
	}
	return false
}

func (g *group) joinResult(m *member, leader bool) JoinResult {
	r := JoinResult{
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       g.leader,
		MemberID:     m.id,
	}
	if leader {
		for _, other := range g.members {
			r.Members = append(r.Members, JoinMember{ID: other.id, InstanceID: other.instanceID, Metadata: other.metadataFor(g.protocol)})
		}
		slices.SortFunc(r.Members, func(a, b JoinMember) int {
			if a.ID < b.ID {
				return -1
			}
			if a.ID > b.ID {
				return 1
			}
			return 0
		})
	}
	return r
}
