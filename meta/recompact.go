package meta

import (
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// Remote recompaction of compacted topics (offload/recompact.go): a run of
// committed segments is replaced by one new object holding what survives
// of them over the same offsets. BeginSegmentReplace records the new
// object as copying before its PUT, like an upload; CommitSegmentReplace
// swaps it in, in one step: the new segment committed, the replaced ones
// deleting, so readers see either the old run or the new segment, never
// both nor a gap. The remote log start offset does not move. The replaced
// objects are deleted after RetireAtMs, which gives readers that found
// them before the swap (a fetch under way, a batch job holding the old
// bucket manifest) time to finish. SetRemoteCleaned moves the remote
// cleaner's checkpoint.

func init() {
	registerCommand(cmdBeginSegmentReplace, "BeginSegmentReplace", 1, (*BeginSegmentReplace).apply)
	registerCommand(cmdCommitSegmentReplace, "CommitSegmentReplace", 1, (*CommitSegmentReplace).apply)
	registerCommand(cmdSetRemoteCleaned, "SetRemoteCleaned", 1, (*SetRemoteCleaned).apply)
}

// BeginSegmentReplace records that a replacement of the committed segments
// Replaces (consecutive, in offset order, with no offset between them) is
// being uploaded: a copying entry over their offsets, invisible to
// readers. LeaderEpochs must start at the first one's base offset and grow
// as for an upload.
type BeginSegmentReplace struct {
	Topic        string                     `json:"topic"`
	TopicID      uuid.UUID                  `json:"topic_id"`
	Partition    int32                      `json:"partition"`
	LeaderEpoch  int32                      `json:"leader_epoch"`
	SegmentID    uuid.UUID                  `json:"segment_id"`
	Replaces     []uuid.UUID                `json:"replaces"`
	MaxTimestamp int64                      `json:"max_timestamp"`
	SizeBytes    int64                      `json:"size_bytes"`
	LeaderEpochs []segmentobject.EpochEntry `json:"leader_epochs"`
	ObjectKey    string                     `json:"object_key"`
}

func (BeginSegmentReplace) commandType() CommandType { return cmdBeginSegmentReplace }

func (c *BeginSegmentReplace) apply(tx *txn) (int64, error) {
	m, err := manifestFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch)
	if err != nil {
		return 0, err
	}
	base, end, err := replacedRange(m, c.Replaces)
	if err != nil {
		return 0, err
	}
	seg := RemoteSegment{
		ID: c.SegmentID, State: SegmentCopying,
		BaseOffset: base, EndOffset: end, MaxTimestamp: c.MaxTimestamp, SizeBytes: c.SizeBytes,
		LeaderEpochs: slices.Clone(c.LeaderEpochs), ObjectKey: c.ObjectKey, Replaces: slices.Clone(c.Replaces),
	}
	if err := checkNewSegment(seg); err != nil {
		return 0, err
	}
	if m.segmentIndex(seg.ID) >= 0 {
		return 0, fmt.Errorf("%w: %s", ErrSegmentExists, seg.ID)
	}
	if end < m.RemoteLogStartOffset {
		// A run may start below it, as a committed segment may: the
		// start can fall inside a segment (DeleteRecords).
		return 0, fmt.Errorf("%w: end offset %d is below the remote log start offset %d", ErrInvalidSegment, end, m.RemoteLogStartOffset)
	}
	insertSegment(tx, m, seg)
	return 0, nil
}

// replacedRange checks that ids name committed segments of m that follow
// each other without a gap, and returns the offsets they cover.
func replacedRange(m *Manifest, ids []uuid.UUID) (base, end int64, err error) {
	if len(ids) == 0 {
		return 0, 0, fmt.Errorf("%w: a replacement must replace a segment", ErrInvalidSegment)
	}
	for i, id := range ids {
		j := m.segmentIndex(id)
		if j < 0 {
			return 0, 0, fmt.Errorf("%w: %s", ErrUnknownSegment, id)
		}
		s := m.Segments[j]
		if s.State != SegmentCommitted {
			return 0, 0, fmt.Errorf("%w: %s is %s, not committed", ErrSegmentState, id, s.State)
		}
		if i == 0 {
			base = s.BaseOffset
		} else if s.BaseOffset != end+1 {
			return 0, 0, fmt.Errorf("%w: %s starts at %d, not right after %d", ErrInvalidSegment, id, s.BaseOffset, end)
		}
		end = s.EndOffset
	}
	return base, end, nil
}

// CommitSegmentReplace swaps a copying replacement in: it becomes
// committed and the segments it replaces become deleting, their objects to
// be deleted from RetireAtMs on. The replaced segments must all still be
// committed (remote retention may have deleted one meanwhile: then
// ErrSegmentState, and the replacement is to be abandoned). Committing a
// committed segment does nothing.
type CommitSegmentReplace struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	SegmentID   uuid.UUID `json:"segment_id"`
	RetireAtMs  int64     `json:"retire_at_ms"`
}

func (CommitSegmentReplace) commandType() CommandType { return cmdCommitSegmentReplace }

func (c *CommitSegmentReplace) apply(tx *txn) (int64, error) {
	m, i, err := segmentFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch, c.SegmentID)
	if err != nil {
		return 0, err
	}
	seg := m.Segments[i]
	switch {
	case seg.State == SegmentCommitted:
		return 0, nil
	case seg.State != SegmentCopying || len(seg.Replaces) == 0:
		return 0, fmt.Errorf("%w: %s is %s, not a copying replacement", ErrSegmentState, c.SegmentID, seg.State)
	}
	base, end, err := replacedRange(m, seg.Replaces)
	if err != nil {
		return 0, err
	}
	if base != seg.BaseOffset || end != seg.EndOffset {
		return 0, fmt.Errorf("%w: replacement %d..%d, replaced segments %d..%d", ErrInvalidSegment, seg.BaseOffset, seg.EndOffset, base, end)
	}
	next := m.clone()
	for _, id := range seg.Replaces {
		old := &next.Segments[next.segmentIndex(id)]
		old.State, old.RetireAtMs = SegmentDeleting, c.RetireAtMs
	}
	at := &next.Segments[i]
	at.State, at.Replaces = SegmentCommitted, nil
	if err := checkCommittable(&next, *at); err != nil {
		return 0, err
	}
	tx.putManifest(&next)
	return 0, nil
}

// SetRemoteCleaned moves a partition's remote cleaner checkpoint
// (Manifest.CleanedOffset) from Previous, the checkpoint the pass started
// from, to Offset. A checkpoint another pass moved meanwhile is not
// overwritten (ErrSegmentState).
type SetRemoteCleaned struct {
	Topic       string    `json:"topic"`
	TopicID     uuid.UUID `json:"topic_id"`
	Partition   int32     `json:"partition"`
	LeaderEpoch int32     `json:"leader_epoch"`
	Previous    int64     `json:"previous"`
	Offset      int64     `json:"offset"`
}

func (SetRemoteCleaned) commandType() CommandType { return cmdSetRemoteCleaned }

func (c *SetRemoteCleaned) apply(tx *txn) (int64, error) {
	m, err := manifestFor(tx, c.Topic, c.TopicID, c.Partition, c.LeaderEpoch)
	if err != nil {
		return 0, err
	}
	if c.Offset < 0 {
		return 0, fmt.Errorf("%w: cleaned offset %d", ErrInvalidCommand, c.Offset)
	}
	if m.CleanedOffset != c.Previous {
		return 0, fmt.Errorf("%w: the remote checkpoint is at %d, not %d", ErrSegmentState, m.CleanedOffset, c.Previous)
	}
	next := m.clone()
	next.CleanedOffset = c.Offset
	tx.putManifest(&next)
	return 0, nil
}
