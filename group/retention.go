package group

import (
	"context"
	"time"

	"github.com/stratalog/strata/meta"
)

// Offset retention (offsets.retention.minutes), as Kafka applies it since
// 2.1 (KIP-211): a group's committed offsets stay while the group has
// members, and expire once the group has been Empty for the retention
// period. Expiry runs every OffsetsRetentionCheckInterval on the
// coordinator of each group, and deletes through meta.ExpireOffsets, which
// keeps any offset committed after the coordinator looked.
//
// When the clock starts, per group:
//   - When its last member leaves (the group becomes Empty) on this
//     coordinator.
//   - For a group this coordinator never saw Empty (its members left before
//     a restart, it moved here from another coordinator, or nobody ever
//     joined it and only admin tools commit to it), at the first check that
//     finds it without members. Kafka stores the time a group became Empty
//     in its log; strata keeps membership in memory only, so the clock
//     restarts then. That keeps offsets longer than Kafka would, never
//     shorter.
//
// Each offset's own clock is the later of that and its commit time: a
// commit to an Empty group (an admin tool resetting offsets) keeps that
// offset for a full period. A Stable consumer group keeps its offsets while
// its members subscribe to their topics; those of topics no member
// subscribes to expire a period after their commit, as in Kafka.

// offsetExpiryBatch is the most offsets one ExpireOffsets proposal carries.
const offsetExpiryBatch = 1000

// noteEmpty records that g just became Empty on this coordinator, which
// starts its offsets' retention clock. Loop only.
func (c *Coordinator) noteEmpty(g *group) {
	if len(c.offsets.State().GroupOffsets(g.id)) > 0 {
		c.emptySince[g.id] = c.now()
	}
}

// retentionView is what an expiry pass needs from the loop about one group
// this coordinator holds with members.
type retentionView struct {
	// stableConsumer is set for a Stable consumer group; subscribed are its
	// members' topics.
	stableConsumer bool
	subscribed     map[string]bool
}

// expireOffsets runs one retention pass at c.now() over the groups this
// broker coordinates, and returns how many offsets it asked the metadata
// group to expire.
func (c *Coordinator) expireOffsets(ctx context.Context) (int, error) {
	st := c.offsets.State()
	now := c.now()
	retention := c.config.OffsetsRetention
	type groupClock struct {
		live  bool
		view  retentionView
		empty time.Time
	}
	groups := st.Groups()
	clocks, err := call(ctx, c, func(future chan<- map[string]groupClock) {
		out := make(map[string]groupClock, len(groups))
		seen := make(map[string]bool, len(groups))
		for _, id := range groups {
			seen[id] = true
			if !c.coordinates(id) {
				// Another broker's: if it comes back here, its clock
				// starts again.
				delete(c.emptySince, id)
				continue
			}
			if g, ok := c.groups[id]; ok && len(g.members) > 0 {
				view := retentionView{stableConsumer: g.state == Stable && g.protocolType == consumerProtocolType}
				if view.stableConsumer {
					view.subscribed = g.subscribedTopics()
				}
				out[id] = groupClock{live: true, view: view}
				continue
			}
			since, ok := c.emptySince[id]
			if !ok {
				since = now
				c.emptySince[id] = since
			}
			out[id] = groupClock{empty: since}
		}
		for id := range c.emptySince {
			if !seen[id] {
				delete(c.emptySince, id) // no offsets left
			}
		}
		future <- out
	})
	if err != nil {
		return 0, err
	}
	var expired []meta.ExpiredOffset
	for _, id := range groups {
		clock, ok := clocks[id]
		if !ok {
			continue
		}
		for _, o := range st.GroupOffsets(id) {
			committed := time.UnixMilli(o.CommitTimeMs)
			var since time.Time
			switch {
			case clock.live && (!clock.view.stableConsumer || clock.view.subscribed[o.Topic]):
				continue
			case clock.live:
				since = committed
			default:
				since = clock.empty
				if committed.After(since) {
					since = committed
				}
			}
			if now.Sub(since) >= retention {
				expired = append(expired, meta.ExpiredOffset{Group: id, Topic: o.Topic, Partition: o.Partition, CommitTimeMs: o.CommitTimeMs})
			}
		}
	}
	for start := 0; start < len(expired); start += offsetExpiryBatch {
		batch := expired[start:min(start+offsetExpiryBatch, len(expired))]
		if _, err := c.offsets.Propose(ctx, &meta.ExpireOffsets{Offsets: batch}); err != nil {
			return start, err
		}
	}
	if len(expired) > 0 {
		c.log.Info("expired committed offsets", "offsets", len(expired), "retention", retention)
	}
	return len(expired), nil
}

// expireOffsetsLoop runs a retention pass every
// OffsetsRetentionCheckInterval until the coordinator closes. Started by
// New, stopped by Close (which cancels a pass in flight).
func (c *Coordinator) expireOffsetsLoop(ctx context.Context) {
	defer close(c.expiryDone)
	tick := time.NewTicker(c.config.OffsetsRetentionCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := c.expireOffsets(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("expiring committed offsets", "error", err)
		}
	}
}
