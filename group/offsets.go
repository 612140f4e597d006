package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/meta"
)

// maxMetadataBytes is Kafka's offset.metadata.max.bytes default, which the
// metadata group also enforces.
const maxMetadataBytes = 4096

// CommitRequest is an OffsetCommit as the coordinator sees it. Generation
// -1 with no member id is a commit from outside any generation (a simple
// consumer or an admin tool), allowed only while the group has no members.
type CommitRequest struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID string
	Offsets    []meta.OffsetCommit
}

// Commit checks the member and generation, then commits the offsets in the
// metadata group, where concurrent commits share Raft entries. The result
// holds one error per offset, in order; the error return is for the whole
// request (member, generation, group).
func (c *Coordinator) Commit(ctx context.Context, req CommitRequest) ([]error, error) {
	groupErr, err := call(ctx, c, func(future chan<- error) { future <- c.checkCommit(req) })
	if err != nil {
		return nil, err
	}
	if groupErr != nil {
		return nil, groupErr
	}
	errs := make([]error, len(req.Offsets))
	st := c.offsets.State()
	var valid []meta.OffsetCommit
	// at finds a partition's place in valid: a map, as a commit may name
	// thousands of partitions.
	at := make(map[meta.TopicPartition]int)
	// Every rule the metadata group applies to a commit is checked here,
	// per partition: it refuses the whole command for one bad partition.
	for i, o := range req.Offsets {
		tp := meta.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		seen, twice := at[tp]
		switch _, ok := st.Partition(o.Topic, o.Partition); {
		case !ok:
			errs[i] = fmt.Errorf("%w: %s-%d", ErrUnknownPartition, o.Topic, o.Partition)
		case o.Offset < 0:
			errs[i] = fmt.Errorf("%w: offset %d for %s-%d", ErrInvalidOffset, o.Offset, o.Topic, o.Partition)
		case o.LeaderEpoch < -1:
			errs[i] = fmt.Errorf("%w: leader epoch %d for %s-%d", ErrInvalidOffset, o.LeaderEpoch, o.Topic, o.Partition)
		case len(o.Metadata) > maxMetadataBytes:
			errs[i] = fmt.Errorf("%w: %d bytes", ErrMetadataTooLarge, len(o.Metadata))
		case twice:
			// The same partition twice: the last one wins, as in Kafka.
			valid[seen] = o
		default:
			at[tp] = len(valid)
			valid = append(valid, o)
		}
	}
	if len(valid) == 0 {
		return errs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.config.CommitTimeout)
	defer cancel()
	now := c.now()
	if _, err := c.offsets.Propose(ctx, &meta.CommitOffsets{Group: req.Group, CommitTimeMs: now.UnixMilli(), Offsets: valid}); err != nil {
		err = commitFailure(err)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs, nil
	}
	c.post(func() { c.noteCommitted(req.Group, valid, now) })
	return errs, nil
}

// commitFailure is what a client is told of a commit the metadata group
// did not take, in the codes Kafka's coordinator answers with: a timeout
// (REQUEST_TIMED_OUT), or the group unavailable (COORDINATOR_NOT_AVAILABLE,
// which has the client find its coordinator again). The metadata group's
// own errors (NOT_CONTROLLER, UNKNOWN_SERVER_ERROR) are not among those a
// client handles on a commit.
func commitFailure(err error) error {
	switch {
	case errors.Is(err, meta.ErrInvalidCommand), errors.Is(err, meta.ErrUnknownCommand), errors.Is(err, meta.ErrUnknownTopic),
		errors.Is(err, meta.ErrUnknownPartition), errors.Is(err, meta.ErrOffsetMetadataTooLarge):
		return err // the commit's own fault, answered as such
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, meta.ErrOutcomeUnknown):
		return fmt.Errorf("%w: %v", ErrCommitTimedOut, err)
	default:
		return fmt.Errorf("%w: %v", ErrOffsetsUnavailable, err)
	}
}

// checkCommit applies Kafka's rules for who may commit.
func (c *Coordinator) checkCommit(req CommitRequest) error {
	if req.Group == "" {
		return ErrInvalidGroupID
	}
	g, ok := c.groups[req.Group]
	if req.Generation < 0 && req.MemberID == "" {
		if ok && len(g.members) > 0 {
			return ErrUnknownMember
		}
		return nil
	}
	if !ok && req.Generation < 0 {
		return nil // as Kafka: no group here, no generation, a simple commit
	}
	if !ok {
		// A member's commit to a group this coordinator does not hold (it
		// moved here, and membership lives in memory): as in Kafka, the
		// generation is wrong, and the member rejoins keeping its id.
		return fmt.Errorf("%w: group %q has no generation %d here", ErrIllegalGeneration, req.Group, req.Generation)
	}
	g, m, err := c.member(req.Group, req.MemberID, req.InstanceID)
	if err != nil {
		return err
	}
	if req.Generation != g.generation {
		return ErrIllegalGeneration
	}
	if g.state == CompletingRebalance {
		return ErrRebalanceInProgress
	}
	// A commit proves the member alive, as in Kafka.
	g.touch(m)
	return nil
}

// noteCommitted records when each partition's committed offset moved, for
// stall detection. Only a group in memory tracks it: a group without
// members has nothing to stall, and a commit must not bring a forgotten
// group back (simple consumers and admin tools commit to groups that are
// never joined).
func (c *Coordinator) noteCommitted(groupID string, offsets []meta.OffsetCommit, now time.Time) {
	g, ok := c.groups[groupID]
	if !ok {
		return
	}
	for _, o := range offsets {
		key := partitionKey{o.Topic, o.Partition}
		if p, ok := g.progress[key]; !ok || p.offset != o.Offset {
			g.progress[key] = progress{offset: o.Offset, since: now}
		}
	}
}

// FetchedOffset is one partition's committed offset; Offset -1 when none.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// FetchOffsets returns a group's committed offsets: of the given
// partitions, or all of them when partitions is nil.
func (c *Coordinator) FetchOffsets(groupID string, partitions []meta.TopicPartition) []FetchedOffset {
	st := c.offsets.State()
	if partitions == nil {
		committed := st.GroupOffsets(groupID)
		out := make([]FetchedOffset, len(committed))
		for i, o := range committed {
			out[i] = FetchedOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata}
		}
		return out
	}
	out := make([]FetchedOffset, len(partitions))
	for i, p := range partitions {
		out[i] = FetchedOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1, LeaderEpoch: -1}
		if o, ok := st.CommittedOffset(groupID, p.Topic, p.Partition); ok {
			out[i].Offset, out[i].LeaderEpoch, out[i].Metadata = o.Offset, o.LeaderEpoch, o.Metadata
		}
	}
	return out
}

// DeleteOffsets deletes committed offsets of a group (OffsetDelete). A
// partition of a topic the group's members subscribe to fails with
// ErrSubscribedToTopic; the others are deleted. The error return is for the
// whole group.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, partitions []meta.TopicPartition) ([]error, error) {
	subscribed, err := call(ctx, c, func(future chan<- map[string]bool) {
		g, ok := c.groups[groupID]
		if !ok || len(g.members) == 0 {
			future <- nil
			return
		}
		future <- g.subscribedTopics()
	})
	if err != nil {
		return nil, err
	}
	st := c.offsets.State()
	if subscribed == nil && len(st.GroupOffsets(groupID)) == 0 {
		if _, known := c.knownGroup(ctx, groupID); !known {
			return nil, ErrGroupNotFound
		}
	}
	errs := make([]error, len(partitions))
	var deletable []meta.TopicPartition
	for i, p := range partitions {
		if subscribed[p.Topic] {
			errs[i] = ErrSubscribedToTopic
			continue
		}
		if _, ok := st.CommittedOffset(groupID, p.Topic, p.Partition); ok {
			deletable = append(deletable, p)
		}
	}
	if len(deletable) == 0 {
		return errs, nil
	}
	if _, err := c.offsets.Propose(ctx, &meta.DeleteOffsets{Group: groupID, Partitions: deletable}); err != nil && !errors.Is(err, meta.ErrUnknownGroup) {
		return nil, err
	}
	return errs, nil
}

// knownGroup reports whether the coordinator holds groupID in memory.
func (c *Coordinator) knownGroup(ctx context.Context, groupID string) (State, bool) {
	type answer struct {
		state State
		ok    bool
	}
	a, err := call(ctx, c, func(future chan<- answer) {
		g, ok := c.groups[groupID]
		if !ok {
			future <- answer{}
			return
		}
		future <- answer{g.state, true}
	})
	return a.state, err == nil && a.ok
}
