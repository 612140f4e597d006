package meta

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// Remote segment manifests: BeginSegmentCopy, CommitSegmentCopy,
// BeginSegmentDelete and FinishSegmentDelete, in the order of the upload
// protocol (DESIGN §4), and MoveRemoteLogStart (DeleteRecords). Every
// one names the partition by topic, topic id and index, and carries the
// proposer's leader epoch, which must be the partition's current one
// (else ErrFencedLeaderEpoch): only the current leader changes a manifest.
//
// Invariants: committed segments never overlap; segments are sorted by base
// offset then id; RemoteLogStartOffset never decreases, and no segment
// becomes committed wholly below it (one may start below it: a log start
// moved inside a batch keeps that batch). A committed segment can end up
// below it when a later one is deleted first, or the start moves past it;
// it is then unreadable and awaits deletion.

func init() {
	registerCommand(cmdBeginSegmentCopy, "BeginSegmentCopy", 1, (*BeginSegmentCopy).apply)
	registerCommand(cmdCommitSegmentCopy, "CommitSegmentCopy", 1, (*CommitSegmentCopy).apply)
	registerCommand(cmdBeginSegmentDelete, "BeginSegmentDelete", 1, (*BeginSegmentDelete).apply)
	registerCommand(cmdFinishSegmentDelete, "FinishSegmentDelete", 1, (*FinishSegmentDelete).apply)
	registerCommand(cmdMoveRemoteLogStart, "MoveRemoteLogStart", 1, (*MoveRemoteLogStart).apply)
}

// BeginSegmentCopy records that a segment upload is starting: the segment
// enters the manifest as copying, invisible to readers. Its offsets must not
// overlap a committed segment nor end below the remote log start offset;
// LeaderEpochs must be non-empty, start at BaseOffset, and grow strictly in
// both epoch and offset within the segment.
type BeginSegmentCopy struct {
	Topic        string                     `json:"topic"`
	TopicID      uuid.UUID                  `json:"topic_id"`
	Partition    int32                      `json:"partition"`
	LeaderEpoch  int32                      `json:"leader_epoch"`
	SegmentID    uuid.UUID                  `json:"segment_id"`
	BaseOffset   int64                      `json:"base_offset"`
	EndOffset    int64                      `json:"end_offset"`
	MaxTimestamp int64                      `json:"max_timestamp"`
	SizeBytes    int64                      `json:"size_bytes"`
	LeaderEpochs []segmentobject.EpochEntry `json:"leader_epochs"`
	ObjectKey    string                     `json:"object_key"`
}

func (BeginSegmentCopy) commandType() CommandType { return cmdBeginSegmentCopy }

func (c *BeginSegmentCopy) apply(tx *txn) (int64, error) {
	m, err := manifestFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch)
	if err != nil {
		return 0, err
	}
	seg := RemoteSegment{
		ID: c.SegmentID, State: SegmentCopying,
		BaseOffset: c.BaseOffset, EndOffset: c.EndOffset, MaxTimestamp: c.MaxTimestamp, SizeBytes: c.SizeBytes,
		LeaderEpochs: slices.Clone(c.LeaderEpochs), ObjectKey: c.ObjectKey,
	}
	if err := checkNewSegment(seg); err != nil {
		return 0, err
	}
	if m.segmentIndex(seg.ID) >= 0 {
		return 0, fmt.Errorf("%w: %s", ErrSegmentExists, seg.ID)
	}
	if err := checkCommittable(m, seg); err != nil {
		return 0, err
	}
	insertSegment(tx, m, seg)
	return 0, nil
}

// insertSegment stores m with seg added in its place.
func insertSegment(tx *txn, m *Manifest, seg RemoteSegment) {
	next := m.clone()
	at, _ := slices.BinarySearchFunc(next.Segments, seg, compareSegments)
	next.Segments = slices.Insert(next.Segments, at, seg)
	tx.putManifest(&next)
}

func compareSegments(a, b RemoteSegment) int {
	if a.BaseOffset != b.BaseOffset {
		if a.BaseOffset < b.BaseOffset {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// checkNewSegment checks a segment's own fields.
func checkNewSegment(s RemoteSegment) error {
	switch {
	case s.ID == uuid.Nil:
		return fmt.Errorf("%w: no segment id", ErrInvalidSegment)
	case s.BaseOffset < 0 || s.EndOffset < s.BaseOffset || s.EndOffset == math.MaxInt64:
		return fmt.Errorf("%w: offsets %d..%d", ErrInvalidSegment, s.BaseOffset, s.EndOffset)
	case s.SizeBytes < 0:
		return fmt.Errorf("%w: size %d", ErrInvalidSegment, s.SizeBytes)
	case s.ObjectKey == "":
		return fmt.Errorf("%w: no object key", ErrInvalidSegment)
	case len(s.LeaderEpochs) == 0 || s.LeaderEpochs[0].StartOffset != s.BaseOffset:
		return fmt.Errorf("%w: leader epochs must start at the base offset %d", ErrInvalidSegment, s.BaseOffset)
	}
	for i, e := range s.LeaderEpochs {
		if e.Epoch < 0 || e.StartOffset > s.EndOffset {
			return fmt.Errorf("%w: leader epoch entry %d (%d at %d)", ErrInvalidSegment, i, e.Epoch, e.StartOffset)
		}
		if i > 0 && (e.Epoch <= s.LeaderEpochs[i-1].Epoch || e.StartOffset <= s.LeaderEpochs[i-1].StartOffset) {
			return fmt.Errorf("%w: leader epoch entries must grow in epoch and offset", ErrInvalidSegment)
		}
	}
	return nil
}

// checkCommittable checks that seg could be committed in m: ending at or
// above the remote log start offset, and overlapping no committed segment.
func checkCommittable(m *Manifest, seg RemoteSegment) error {
	if seg.EndOffset < m.RemoteLogStartOffset {
		return fmt.Errorf("%w: end offset %d is below the remote log start offset %d", ErrInvalidSegment, seg.EndOffset, m.RemoteLogStartOffset)
	}
	for _, s := range m.Segments {
		if s.State == SegmentCommitted && s.ID != seg.ID && s.overlaps(seg) {
			return fmt.Errorf("%w: %d..%d overlaps %s (%d..%d)", ErrSegmentOverlap, seg.BaseOffset, seg.EndOffset, s.ID, s.BaseOffset, s.EndOffset)
		}
	}
	return nil
}

// manifestFor finds the partition a manifest command names and checks the
// proposer's leader epoch.
func manifestFor(tx *txn, topic string, topicID uuid.UUID, partition, leaderEpoch int32) (*Manifest, error) {
	if topicID == uuid.Nil {
		return nil, fmt.Errorf("%w: manifest commands need the topic id", ErrInvalidCommand)
	}
	if _, err := lookupTopic(tx, topic, topicID); err != nil {
		return nil, err
	}
	p, ok := tx.partition(topic, partition)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, partition)
	}
	if leaderEpoch != p.LeaderEpoch {
		return nil, fmt.Errorf("%w: %s-%d is at leader epoch %d, not %d", ErrFencedLeaderEpoch, topic, partition, p.LeaderEpoch, leaderEpoch)
	}
	return tx.manifest(topic, partition), nil
}

// segmentFor finds the segment a manifest command names.
func segmentFor(tx *txn, topic string, topicID uuid.UUID, partition, leaderEpoch int32, id uuid.UUID) (*Manifest, int, error) {
	m, err := manifestFor(tx, topic, topicID, partition, leaderEpoch)
	if err != nil {
		return nil, 0, err
	}
	i := m.segmentIndex(id)
	if i < 0 {
		return nil, 0, fmt.Errorf("%w: %s in %s-%d", ErrUnknownSegment, id, topic, partition)
	}
	return m, i, nil
}

// CommitSegmentCopy records that a segment's upload finished: the segment
// becomes committed, visible to readers. It is re-checked against the
// committed segments and the remote log start offset. Committing a committed
// segment does nothing; a deleting one fails with ErrSegmentState.
type CommitSegmentCopy struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	SegmentID   uuid.UUID `json:"segment_id"`
}

func (CommitSegmentCopy) commandType() CommandType { return cmdCommitSegmentCopy }

func (c *CommitSegmentCopy) apply(tx *txn) (int64, error) {
	m, i, err := segmentFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch, c.SegmentID)
	if err != nil {
		return 0, err
	}
	switch m.Segments[i].State {
	case SegmentCommitted:
		return 0, nil
	case SegmentDeleting:
		return 0, fmt.Errorf("%w: %s is deleting", ErrSegmentState, c.SegmentID)
	}
	if err := checkCommittable(m, m.Segments[i]); err != nil {
		return 0, err
	}
	next := m.clone()
	next.Segments[i].State = SegmentCommitted
	tx.putManifest(&next)
	return 0, nil
}

// BeginSegmentDelete marks a segment deleting, before its object is
// deleted. Readers stop seeing it at once: for a committed segment the remote
// log start offset moves past its end offset (if not already). An abandoned
// copying segment may be marked too. Marking a deleting segment does nothing.
type BeginSegmentDelete struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	SegmentID   uuid.UUID `json:"segment_id"`
}

func (BeginSegmentDelete) commandType() CommandType { return cmdBeginSegmentDelete }

func (c *BeginSegmentDelete) apply(tx *txn) (int64, error) {
	m, i, err := segmentFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch, c.SegmentID)
	if err != nil {
		return 0, err
	}
	if m.Segments[i].State == SegmentDeleting {
		return 0, nil
	}
	next := m.clone()
	if next.Segments[i].State == SegmentCommitted {
		next.RemoteLogStartOffset = max(next.RemoteLogStartOffset, next.Segments[i].EndOffset+1)
	}
	next.Segments[i].State = SegmentDeleting
	tx.putManifest(&next)
	return 0, nil
}

// FinishSegmentDelete drops a deleting segment from the manifest once its
// object is gone. Other states fail with ErrSegmentState.
type FinishSegmentDelete struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	SegmentID   uuid.UUID `json:"segment_id"`
}

func (FinishSegmentDelete) commandType() CommandType { return cmdFinishSegmentDelete }

func (c *FinishSegmentDelete) apply(tx *txn) (int64, error) {
	m, i, err := segmentFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch, c.SegmentID)
	if err != nil {
		return 0, err
	}
	if m.Segments[i].State != SegmentDeleting {
		return 0, fmt.Errorf("%w: %s is %s, not deleting", ErrSegmentState, c.SegmentID, m.Segments[i].State)
	}
	next := m.clone()
	next.Segments = slices.Delete(next.Segments, i, i+1)
	tx.putManifest(&next)
	return 0, nil
}

// MoveRemoteLogStart moves the remote log start offset up to Offset, as
// DeleteRecords does to the log start: readers stop seeing the offsets
// below it at once, and remote retention deletes the committed segments
// wholly below it. An offset at or below the current start changes
// nothing. The leader checks Offset against its high watermark; meta
// cannot, and keeps only the start's order.
type MoveRemoteLogStart struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	Offset      int64     `json:"offset"`
}

func (MoveRemoteLogStart) commandType() CommandType { return cmdMoveRemoteLogStart }

func (c *MoveRemoteLogStart) apply(tx *txn) (int64, error) {
	m, err := manifestFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch)
	if err != nil {
		return 0, err
	}
	if c.Offset < 0 || c.Offset == math.MaxInt64 {
		return 0, fmt.Errorf("%w: remote log start offset %d", ErrInvalidCommand, c.Offset)
	}
	if c.Offset <= m.RemoteLogStartOffset {
		return 0, nil
	}
	next := m.clone()
	next.RemoteLogStartOffset = c.Offset
	tx.putManifest(&next)
	return 0, nil
}
