package meta

import (
	"errors"
	"fmt"
)

// Errors about the node itself. Propose and the other calls wrap them with
// context; test with errors.Is.
var (
	// ErrClosed is returned by every call on a node after Close.
	ErrClosed = errors.New("meta: node closed")
	// ErrStopped is returned by every call on a node whose state machine hit
	// a fatal error (see Node.Err). It is wrapped together with the cause.
	ErrStopped = errors.New("meta: node stopped by a fatal state machine error")
	// ErrNoLeader means no leader is known or reachable; the request was
	// not sent. Propose retries it until its context ends.
	ErrNoLeader = errors.New("meta: no leader")
	// ErrNotLeader means the node asked is not the leader; the proposal was
	// not appended. Propose retries it; it reaches callers only from calls
	// that must run on the leader.
	ErrNotLeader = errors.New("meta: not the leader")
	// ErrOutcomeUnknown means a proposal was sent but its outcome never came
	// back: the leader lost its leadership, the connection to it broke, or
	// the caller's context ended first. The command may or may not be
	// committed; read the state to find out. Propose does not retry it,
	// because that could apply it twice.
	ErrOutcomeUnknown = errors.New("meta: outcome unknown: the command may or may not have been applied")
	// ErrInvalidNodeConfig is wrapped by Config.Validate.
	ErrInvalidNodeConfig = errors.New("meta: invalid node config")
	// ErrUnknownCommand is a command type or version this binary does not
	// know. In the log it stops the node unless the command is optional.
	ErrUnknownCommand = errors.New("meta: unknown command type or version")
	// ErrInvalidCommand is a command that cannot be decoded, or whose fields
	// are malformed (a missing id, a negative offset, ...).
	ErrInvalidCommand = errors.New("meta: invalid command")
	// ErrCorruptSnapshot is a snapshot that fails its checks; a node with
	// one refuses to start.
	ErrCorruptSnapshot = errors.New("meta: corrupt snapshot")
	// ErrWatchOverflow closes a Watch whose reader fell behind its buffer.
	ErrWatchOverflow = errors.New("meta: watcher fell behind")
)

// Precondition errors, checked by the state machine and returned to the
// proposer with nothing applied. Each maps to one Kafka error code in the
// broker's error table.
var (
	ErrClusterIDExists          = errors.New("meta: cluster id already set")
	ErrInvalidConfig            = errors.New("meta: invalid topic config")
	ErrInvalidTopicName         = errors.New("meta: invalid topic name")
	ErrTopicExists              = errors.New("meta: topic already exists")
	ErrUnknownTopic             = errors.New("meta: unknown topic")
	ErrTopicIDMismatch          = errors.New("meta: topic id does not match the topic name")
	ErrUnknownPartition         = errors.New("meta: unknown partition")
	ErrInvalidPartitions        = errors.New("meta: invalid partition count")
	ErrInvalidReplicaAssignment = errors.New("meta: invalid replica assignment")
	ErrStalePartitionEpoch      = errors.New("meta: stale partition epoch")
	ErrIneligibleReplica        = errors.New("meta: ineligible replica")
	ErrFencedLeaderEpoch        = errors.New("meta: leader epoch is not the partition's current one")
	ErrUnknownBroker            = errors.New("meta: broker not registered")
	ErrStaleBrokerEpoch         = errors.New("meta: stale broker epoch")
	ErrBrokerFenced             = errors.New("meta: broker is fenced")
	ErrSegmentExists            = errors.New("meta: remote segment id already in the manifest")
	ErrUnknownSegment           = errors.New("meta: unknown remote segment")
	ErrSegmentState             = errors.New("meta: remote segment state does not allow this transition")
	ErrSegmentOverlap           = errors.New("meta: remote segment overlaps a committed segment")
	ErrInvalidSegment           = errors.New("meta: invalid remote segment")
	ErrOffsetMetadataTooLarge   = errors.New("meta: offset metadata too large")
	ErrUnknownGroup             = errors.New("meta: group has no committed offsets")
	ErrNoReassignment           = errors.New("meta: no reassignment in progress")
	ErrElectionNotNeeded        = errors.New("meta: leader election not needed")
	ErrPreferredLeaderDown      = errors.New("meta: preferred leader not available")
	ErrNoEligibleLeader         = errors.New("meta: no eligible leader available")
	ErrBrokerAlive              = errors.New("meta: broker is alive")
	ErrUnacceptableCredential   = errors.New("meta: unacceptable credential")
	ErrCredentialNotFound       = errors.New("meta: no such SCRAM credential")
	ErrInvalidACL               = errors.New("meta: invalid ACL")
	ErrSubjectNotFound          = errors.New("meta: subject not found")
	ErrSchemaVersionNotFound    = errors.New("meta: schema version not found")
	ErrSubjectSoftDeleted       = errors.New("meta: subject was soft-deleted")
	ErrVersionSoftDeleted       = errors.New("meta: schema version was soft-deleted")
	ErrVersionNotSoftDeleted    = errors.New("meta: schema version was not soft-deleted first")
	ErrSchemaReferenced         = errors.New("meta: schema version is referenced by another schema")
	ErrSchemaConflict           = errors.New("meta: subject changed since its compatibility was checked")
	ErrRegistryReadOnly         = errors.New("meta: schema registry is read-only")
)

// wireErrors gives each error a code on the forwarding RPC: its position.
// The codes are a wire format: append only, never reorder or reuse. Code 0 is
// success and code 1 an error with no sentinel.
var wireErrors = []error{
	nil,
	nil,
	ErrClosed,
	ErrStopped,
	ErrNoLeader,
	ErrNotLeader,
	ErrOutcomeUnknown,
	ErrUnknownCommand,
	ErrInvalidCommand,
	ErrCorruptSnapshot,
	ErrClusterIDExists,
	ErrInvalidConfig,
	ErrInvalidTopicName,
	ErrTopicExists,
	ErrUnknownTopic,
	ErrTopicIDMismatch,
	ErrUnknownPartition,
	ErrInvalidPartitions,
	ErrInvalidReplicaAssignment,
	ErrStalePartitionEpoch,
	ErrIneligibleReplica,
	ErrFencedLeaderEpoch,
	ErrUnknownBroker,
	ErrStaleBrokerEpoch,
	ErrBrokerFenced,
	ErrSegmentExists,
	ErrUnknownSegment,
	ErrSegmentState,
	ErrSegmentOverlap,
	ErrInvalidSegment,
	ErrOffsetMetadataTooLarge,
	ErrUnknownGroup,
	ErrNoReassignment,
	ErrElectionNotNeeded,
	ErrPreferredLeaderDown,
	ErrNoEligibleLeader,
	ErrBrokerAlive,
	ErrSubjectNotFound,
	ErrSchemaVersionNotFound,
	ErrSubjectSoftDeleted,
	ErrVersionSoftDeleted,
	ErrVersionNotSoftDeleted,
	ErrSchemaReferenced,
	ErrSchemaConflict,
	ErrRegistryReadOnly,
	ErrUnacceptableCredential,
	ErrCredentialNotFound,
	ErrInvalidACL,
}

const (
	wireOK    = 0
	wireOther = 1
)

// errorCode returns err's wire code: the first sentinel in wireErrors that
// err wraps, or wireOther.
func errorCode(err error) uint64 {
	if err == nil {
		return wireOK
	}
	for code, sentinel := range wireErrors {
		if sentinel != nil && errors.Is(err, sentinel) {
			return uint64(code)
		}
	}
	return wireOther
}

// remoteError is an error that came back over the forwarding RPC: its text
// is the remote error's text, and it unwraps to the sentinel its code names.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// errorFromWire rebuilds an error from its wire code and text.
func errorFromWire(code uint64, msg string) error {
	switch {
	case code == wireOK:
		return nil
	case code < uint64(len(wireErrors)) && wireErrors[code] != nil:
		return &remoteError{sentinel: wireErrors[code], msg: msg}
	default:
		return fmt.Errorf("meta: remote error: %s", msg)
	}
}
