package group

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// PartitionLag is how far a group is behind in one partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	// CommittedOffset is -1 for a partition assigned to a member that the
	// group never committed; Records and Age then count from the log
	// start.
	CommittedOffset int64
	HighWatermark   int64
	// Records is HighWatermark - CommittedOffset (or - the log start),
	// never below 0.
	Records int64
	// Age is now minus the timestamp of the record at the committed
	// offset (or the log start): how old the oldest record the group has
	// not consumed is. Zero without lag.
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

// Lag reports a group's lag in every partition it committed an offset for
// and every partition assigned to one of its members, by topic and
// partition. An assigned partition without a commit counts from the log
// start, as franz-go's kadm and rpk count it (Kafka's kafka-consumer-groups
// prints "-" for its lag), so that a member that never commits shows; it
// is never reported stalled: a consumer that starts at the log end has
// nothing to commit until records arrive.
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
	out := make([]PartitionLag, 0, max(len(committed), len(ms.owners)))
	seen := make(map[partitionKey]bool, len(committed))
	for _, o := range committed {
		key := partitionKey{o.Topic, o.Partition}
		seen[key] = true
		l := PartitionLag{Topic: o.Topic, Partition: o.Partition, CommittedOffset: o.Offset, Member: ms.owners[key]}
		c.lagFrom(&l, o.Offset, now)
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
	for key, member := range ms.owners {
		if !seen[key] {
			out = append(out, c.uncommittedLag(key, member, now))
		}
	}
	slices.SortFunc(out, func(a, b PartitionLag) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// uncommittedLag is the lag of a partition assigned to member that the
// group never committed: everything from the log start.
func (c *Coordinator) uncommittedLag(key partitionKey, member string, now time.Time) PartitionLag {
	l := PartitionLag{Topic: key.topic, Partition: key.partition, CommittedOffset: -1, Member: member}
	start, err := c.logs.LogStartOffset(key.topic, key.partition)
	if err != nil {
		l.Err = err
		return l
	}
	c.lagFrom(&l, start, now)
	return l
}

// lagFrom fills in l's high watermark, and the records and age of what is
// unconsumed from offset from on; an error goes to l.Err (and leaves
// Records 0 when it is the high watermark's).
func (c *Coordinator) lagFrom(l *PartitionLag, from int64, now time.Time) {
	hwm, err := c.logs.HighWatermark(l.Topic, l.Partition)
	if err != nil {
		l.Err = err
		return
	}
	l.HighWatermark = hwm
	l.Records = max(hwm-from, 0)
	if l.Records == 0 {
		return
	}
	if ts, err := c.logs.TimestampAt(l.Topic, l.Partition, from); err == nil {
		l.Age = max(now.Sub(time.UnixMilli(ts)), 0)
	} else {
		l.Err = err
	}
}

// Groups lists every group this broker coordinates with committed offsets
// or members (List), for the metrics collector: each group's series come
// from its coordinator alone, none while this broker's lease has lapsed.
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
