package group

import (
	"context"
	"time"
)

// PartitionLag is how far a group is behind in one partition.
type PartitionLag struct {
	Topic           string
	Partition       int32
	CommittedOffset int64
	HighWatermark   int64
	// Records is HighWatermark - CommittedOffset, never below 0.
	Records int64
	// Age is now minus the timestamp of the record at the committed
	// offset: how old the oldest record the group has not consumed is.
	// Zero without lag.
	Age time.Duration
	// Member owns the partition (consumer groups only; "" when unknown).
	Member string
	// Stalled means the group has members, the partition has lag, and its
	// committed offset has not moved for longer than the stall threshold:
	// a member heartbeating but not consuming (a "ghost consumer").
	Stalled bool
	// StalledFor is how long the committed offset has not moved.
	StalledFor time.Duration
	// Err says why the lag is unknown (the partition is not served here).
	Err error
}

// Lag reports a group's lag in every partition it committed an offset for,
// by topic and partition.
func (c *Coordinator) Lag(ctx context.Context, groupID string) ([]PartitionLag, error) {
	type membership struct {
		live     bool
		owners   map[partitionKey]string
		progress map[partitionKey]progress
	}
	ms, err := call(ctx, c, func(future chan<- membership) {
		g, ok := c.groups[groupID]
		if !ok {
			future <- membership{}
			return
		}
		progress := make(map[partitionKey]progress, len(g.progress))
		for k, v := range g.progress {
			progress[k] = v
		}
		future <- membership{live: g.state == Stable && len(g.members) > 0, owners: g.owners(), progress: progress}
	})
	if err != nil {
		return nil, err
	}
	now := c.now()
	committed := c.offsets.State().GroupOffsets(groupID)
	out := make([]PartitionLag, 0, len(committed))
	for _, o := range committed {
		key := partitionKey{o.Topic, o.Partition}
		l := PartitionLag{Topic: o.Topic, Partition: o.Partition, CommittedOffset: o.Offset, Member: ms.owners[key]}
		hwm, err := c.logs.HighWatermark(o.Topic, o.Partition)
		if err != nil {
			l.Err = err
			out = append(out, l)
			continue
		}
		l.HighWatermark = hwm
		l.Records = max(hwm-o.Offset, 0)
		if l.Records > 0 {
			if ts, err := c.logs.TimestampAt(o.Topic, o.Partition, o.Offset); err == nil {
				l.Age = max(now.Sub(time.UnixMilli(ts)), 0)
			} else {
				l.Err = err
			}
		}
		since := time.UnixMilli(o.CommitTimeMs)
		if p, ok := ms.progress[key]; ok && p.offset == o.Offset {
			since = p.since
		}
		if l.Records > 0 {
			l.StalledFor = max(now.Sub(since), 0)
			l.Stalled = ms.live && l.StalledFor > c.config.StallThreshold
		}
		out = append(out, l)
	}
	return out, nil
}

// Groups lists every group with committed offsets or members, for the
// metrics collector.
func (c *Coordinator) Groups(ctx context.Context) ([]string, error) {
	listing, err := c.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(listing))
	for i, l := range listing {
		out[i] = l.Group
	}
	return out, nil
}
