package group

import "context"

// Leaver is one member leaving: by member id, by static instance id, or
// both (then they must match).
type Leaver struct {
	MemberID   string
	InstanceID string
}

// Leave removes members from a group and rebalances the rest. The result
// holds one error per leaver, in order.
func (c *Coordinator) Leave(ctx context.Context, groupID string, leavers []Leaver) ([]error, error) {
	return call(ctx, c, func(future chan<- []error) {
		errs := make([]error, len(leavers))
		g, ok := c.groups[groupID]
		if !ok {
			for i := range errs {
				errs[i] = ErrUnknownMember
			}
			future <- errs
			return
		}
		removed := false
		for i, l := range leavers {
			id := l.MemberID
			if l.InstanceID != "" {
				holder, known := g.instances[l.InstanceID]
				switch {
				case !known:
					errs[i] = ErrUnknownMember
					continue
				case id != "" && id != holder:
					errs[i] = ErrFencedInstanceID
					continue
				}
				id = holder
			}
			if t, pending := g.pending[id]; pending {
				t.Stop()
				delete(g.pending, id)
				continue
			}
			m, ok := g.members[id]
			if !ok {
				errs[i] = ErrUnknownMember
				continue
			}
			g.c.log.Debug("member left", "group", groupID, "member", id)
			g.remove(m, ErrUnknownMember)
			removed = true
		}
		if removed {
			g.membershipChanged()
		}
		// The last member, or the last pending member id, may have gone.
		c.forgetIfIdle(g)
		future <- errs
	})
}
