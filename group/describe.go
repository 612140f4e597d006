package group

import (
	"context"
	"errors"
	"slices"

	"github.com/stratalog/strata/meta"
)

// Description is a group as DescribeGroups reports it.
type Description struct {
	Group        string
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member of a described group.
type MemberDescription struct {
	ID         string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe describes groups. A group not in memory but with committed
// offsets is Empty, with the consumer protocol type, as List reports it; a
// group with neither is Dead, as Kafka reports unknown groups.
func (c *Coordinator) Describe(ctx context.Context, groupIDs []string) ([]Description, error) {
	out, err := call(ctx, c, func(future chan<- []Description) {
		out := make([]Description, len(groupIDs))
		for i, id := range groupIDs {
			out[i] = Description{Group: id, State: Dead}
			if g, ok := c.groups[id]; ok {
				out[i] = g.describe()
			}
		}
		future <- out
	})
	if err != nil {
		return nil, err
	}
	st := c.offsets.State()
	for i := range out {
		if out[i].State == Dead && len(st.GroupOffsets(out[i].Group)) > 0 {
			out[i].State, out[i].ProtocolType = Empty, consumerProtocolType
		}
	}
	return out, nil
}

func (g *group) describe() Description {
	d := Description{Group: g.id, State: g.state, ProtocolType: g.protocolType}
	// As Kafka: the protocol, metadata and assignments only while they are
	// in force; during a rebalance the members alone.
	settled := g.state == Stable || g.state == CompletingRebalance
	if settled {
		d.Protocol = g.protocol
	}
	for _, m := range g.members {
		md := MemberDescription{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if settled {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	slices.SortFunc(d.Members, func(a, b MemberDescription) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return d
}

// Listing is a group as ListGroups reports it.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
}

// List lists the groups this broker coordinates with members or committed
// offsets, sorted by id, keeping those in states when states is not empty.
// As in Kafka, each broker lists its own: admin clients ask every broker
// and merge the answers by group id, where another broker's listing of a
// group with members as Empty (it has only the offsets) would replace the
// coordinator's.
func (c *Coordinator) List(ctx context.Context, states []State) ([]Listing, error) {
	live, err := call(ctx, c, func(future chan<- map[string]Listing) {
		out := map[string]Listing{}
		for id, g := range c.groups {
			if (len(g.members) > 0 || g.state != Empty) && c.coordinates(id) {
				out[id] = Listing{Group: id, ProtocolType: g.protocolType, State: g.state}
			}
		}
		for _, id := range c.offsets.State().Groups() {
			if _, ok := out[id]; !ok && c.coordinates(id) {
				out[id] = Listing{Group: id, ProtocolType: consumerProtocolType, State: Empty}
			}
		}
		future <- out
	})
	if err != nil {
		return nil, err
	}
	var out []Listing
	for _, l := range live {
		if len(states) == 0 || slices.Contains(states, l.State) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b Listing) int {
		switch {
		case a.Group < b.Group:
			return -1
		case a.Group > b.Group:
			return 1
		}
		return 0
	})
	return out, nil
}

// DeleteGroup deletes a group without members and its committed offsets.
func (c *Coordinator) DeleteGroup(ctx context.Context, groupID string) error {
	known, err := call(ctx, c, func(future chan<- error) {
		g, ok := c.groups[groupID]
		switch {
		case !ok:
			future <- ErrGroupNotFound
		case len(g.members) > 0 || g.state != Empty:
			future <- ErrNotEmpty
		default:
			g.stopTimers()
			delete(c.groups, groupID)
			future <- nil
		}
	})
	if err != nil {
		return err
	}
	if known != nil && !errors.Is(known, ErrGroupNotFound) {
		return known
	}
	_, err = c.offsets.Propose(ctx, &meta.DeleteOffsets{Group: groupID})
	switch {
	case errors.Is(err, meta.ErrUnknownGroup) && known == nil:
		return nil
	case errors.Is(err, meta.ErrUnknownGroup):
		return ErrGroupNotFound
	}
	return err
}
