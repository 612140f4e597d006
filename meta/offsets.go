package meta

import (
	"fmt"
)

// Consumer group committed offsets: CommitOffsets, DeleteOffsets and
// ExpireOffsets. The group coordinator (in the broker) checks generations
// and members and decides what expires; the state machine checks that the
// partitions exist.

func init() {
	registerCommand(cmdCommitOffsets, "CommitOffsets", 1, (*CommitOffsets).apply)
	registerCommand(cmdDeleteOffsets, "DeleteOffsets", 1, (*DeleteOffsets).apply)
	registerCommand(cmdExpireOffsets, "ExpireOffsets", 1, (*ExpireOffsets).apply)
}

// Limits on offset commits: Kafka's offset.metadata.max.bytes default, and
// the longest string Kafka's protocol carries.
const (
	maxOffsetMetadataBytes = 4096
	maxGroupIDBytes        = 32767
)

// OffsetCommit is one partition's position in a CommitOffsets.
type OffsetCommit struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// CommitOffsets commits a group's offsets, all or none: every partition must
// exist, appear once, have an offset >= 0, a leader epoch >= -1 (unknown),
// and metadata of at most 4096 bytes. CommitTimeMs is the coordinator's
// clock (Unix ms) when it accepted the commit; the state machine has none.
type CommitOffsets struct {
	Group        string         `json:"group"`
	CommitTimeMs int64          `json:"commit_time_ms"`
	Offsets      []OffsetCommit `json:"offsets"`
}

func (CommitOffsets) commandType() CommandType { return cmdCommitOffsets }

func (c *CommitOffsets) apply(tx *txn) (int64, error) {
	if err := checkGroupID(c.Group); err != nil {
		return 0, err
	}
	if len(c.Offsets) == 0 {
		return 0, fmt.Errorf("%w: no offsets to commit for group %q", ErrInvalidCommand, c.Group)
	}
	// A map finds a partition named twice: a commit may name thousands,
	// and every voter applies it.
	named := make(map[TopicPartition]bool, len(c.Offsets))
	for _, o := range c.Offsets {
		if _, ok := tx.topic(o.Topic); !ok {
			return 0, fmt.Errorf("%w: %q", ErrUnknownTopic, o.Topic)
		}
		if _, ok := tx.partition(o.Topic, o.Partition); !ok {
			return 0, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, o.Topic, o.Partition)
		}
		switch {
		case o.Offset < 0 || o.LeaderEpoch < -1:
			return 0, fmt.Errorf("%w: %s-%d offset %d leader epoch %d", ErrInvalidCommand, o.Topic, o.Partition, o.Offset, o.LeaderEpoch)
		case len(o.Metadata) > maxOffsetMetadataBytes:
			return 0, fmt.Errorf("%w: %d bytes for %s-%d", ErrOffsetMetadataTooLarge, len(o.Metadata), o.Topic, o.Partition)
		case named[TopicPartition{Topic: o.Topic, Partition: o.Partition}]:
			return 0, fmt.Errorf("%w: %s-%d committed twice", ErrInvalidCommand, o.Topic, o.Partition)
		}
		named[TopicPartition{Topic: o.Topic, Partition: o.Partition}] = true
	}
	for _, o := range c.Offsets {
		tx.putOffset(&CommittedOffset{
			Group: c.Group, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset,
			LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: c.CommitTimeMs,
		})
	}
	tx.changed(Change{Kind: ChangeOffsets, Group: c.Group})
	return 0, nil
}

func checkGroupID(group string) error {
	if group == "" || len(group) > maxGroupIDBytes {
		return fmt.Errorf("%w: group id must be 1 to %d bytes", ErrInvalidCommand, maxGroupIDBytes)
	}
	return nil
}

// DeleteOffsets deletes a group's committed offsets: those of the listed
// partitions, or all of them when Partitions is empty (Kafka's OffsetDelete
// and DeleteGroups). A group with no committed offsets fails with
// ErrUnknownGroup.
type DeleteOffsets struct {
	Group      string           `json:"group"`
	Partitions []TopicPartition `json:"partitions,omitempty"`
}

func (DeleteOffsets) commandType() CommandType { return cmdDeleteOffsets }

func (c *DeleteOffsets) apply(tx *txn) (int64, error) {
	if err := checkGroupID(c.Group); err != nil {
		return 0, err
	}
	prefix := groupPrefix(c.Group)
	it := tx.st.offsets.Root().Iterator()
	it.SeekPrefix(prefix)
	if _, _, ok := it.Next(); !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownGroup, c.Group)
	}
	if len(c.Partitions) == 0 {
		tx.st.offsets, _ = tx.st.offsets.DeletePrefix(prefix)
	}
	for _, p := range c.Partitions {
		tx.st.offsets, _, _ = tx.st.offsets.Delete(offsetKey(c.Group, p.Topic, p.Partition))
	}
	tx.changed(Change{Kind: ChangeOffsets, Group: c.Group})
	return 0, nil
}

// ExpiredOffset names a committed offset to expire by the commit it
// expires: the group, the partition, and the CommitTimeMs the coordinator
// read.
type ExpiredOffset struct {
	Group        string `json:"group"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	CommitTimeMs int64  `json:"commit_time_ms"`
}

// ExpireOffsets deletes committed offsets whose retention ended
// (offsets.retention.minutes; the coordinator decides, the state machine
// has no clock). An offset is deleted only if it is still the commit the
// coordinator read, with the same CommitTimeMs: one committed after the
// coordinator looked stays. Offsets already gone are skipped, so the
// command never fails for what changed meanwhile.
type ExpireOffsets struct {
	Offsets []ExpiredOffset `json:"offsets"`
}

func (ExpireOffsets) commandType() CommandType { return cmdExpireOffsets }

func (c *ExpireOffsets) apply(tx *txn) (int64, error) {
	if len(c.Offsets) == 0 {
		return 0, fmt.Errorf("%w: no offsets to expire", ErrInvalidCommand)
	}
	for _, o := range c.Offsets {
		if err := checkGroupID(o.Group); err != nil {
			return 0, err
		}
	}
	changed := map[string]bool{}
	for _, o := range c.Offsets {
		key := offsetKey(o.Group, o.Topic, o.Partition)
		current, ok := tx.st.offsets.Get(key)
		if !ok || current.CommitTimeMs != o.CommitTimeMs {
			continue
		}
		tx.st.offsets, _, _ = tx.st.offsets.Delete(key)
		if !changed[o.Group] {
			changed[o.Group] = true
			tx.changed(Change{Kind: ChangeOffsets, Group: o.Group})
		}
	}
	return 0, nil
}
