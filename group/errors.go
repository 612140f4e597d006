package group

import "errors"

// Errors of the group coordinator. Each has one Kafka error code in
// ingest/errors.go; the coordinator returns them per group, member or
// partition.
var (
	// ErrUnknownMember means a member id the group does not know.
	ErrUnknownMember = errors.New("group: unknown member id")
	// ErrIllegalGeneration means a request from another generation.
	ErrIllegalGeneration = errors.New("group: illegal generation")
	// ErrRebalanceInProgress means the group is rebalancing: rejoin.
	ErrRebalanceInProgress = errors.New("group: rebalance in progress")
	// ErrMemberIDRequired answers a first join (v4+): rejoin with the member
	// id the response carries.
	ErrMemberIDRequired = errors.New("group: member id required")
	// ErrFencedInstanceID means a static member replaced by a newer member
	// with the same group.instance.id.
	ErrFencedInstanceID = errors.New("group: fenced instance id")
	// ErrInconsistentProtocol means a protocol type or set of protocols the
	// group's members do not share.
	ErrInconsistentProtocol = errors.New("group: inconsistent group protocol")
	// ErrInvalidSessionTimeout means a session timeout outside the
	// coordinator's bounds.
	ErrInvalidSessionTimeout = errors.New("group: invalid session timeout")
	// ErrInvalidGroupID means an empty group id.
	ErrInvalidGroupID = errors.New("group: invalid group id")
	// ErrGroupNotFound means no such group (DeleteGroups, OffsetDelete).
	ErrGroupNotFound = errors.New("group: group id not found")
	// ErrNotEmpty means deleting a group that has members.
	ErrNotEmpty = errors.New("group: group is not empty")
	// ErrSubscribedToTopic means deleting offsets of a topic the group's
	// members consume.
	ErrSubscribedToTopic = errors.New("group: group is subscribed to the topic")
	// ErrUnknownPartition means committing an offset for a partition the
	// metadata does not have.
	ErrUnknownPartition = errors.New("group: unknown topic or partition")
	// ErrMetadataTooLarge means offset metadata above 4096 bytes.
	ErrMetadataTooLarge = errors.New("group: offset metadata too large")
	// ErrInvalidOffset means committing a negative offset, or a leader
	// epoch below -1 (unknown), which the metadata group does not store.
	ErrInvalidOffset = errors.New("group: invalid offset to commit")
	// ErrClosed means the coordinator stopped (the broker is shutting down).
	ErrClosed = errors.New("group: coordinator closed")
	// ErrOffsetsUnavailable means the metadata group could not take a
	// commit (no leader, or this node stopping): the client finds its
	// coordinator again and retries (COORDINATOR_NOT_AVAILABLE).
	ErrOffsetsUnavailable = errors.New("group: offsets cannot be committed now")
	// ErrCommitTimedOut means a commit the metadata group did not confirm
	// in time: it may or may not have been applied (REQUEST_TIMED_OUT).
	ErrCommitTimedOut = errors.New("group: commit timed out")
)
