package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/sasl"
)

// Business errors of the broker itself. Each has one Kafka code in the
// table below; handlers return them per partition, never as a connection
// error.
var (
	// ErrUnknownTopic means no such topic or partition in the metadata.
	ErrUnknownTopic = errors.New("ingest: unknown topic or partition")
	// ErrUnknownTopicID means no topic has the id a request names.
	ErrUnknownTopicID = errors.New("ingest: unknown topic id")
	// ErrTransactionsUnsupported means a transactional batch or request:
	// transactions are not implemented.
	ErrTransactionsUnsupported = errors.New("ingest: transactions are not supported")
	// ErrInvalidRequest means a request that decodes but asks for something
	// Kafka defines as invalid (acks outside -1, 0, 1; empty records; …).
	ErrInvalidRequest = errors.New("ingest: invalid request")
	// ErrInvalidRequiredAcks means a produce with acks other than -1, 0, 1.
	ErrInvalidRequiredAcks = errors.New("ingest: acks must be -1, 0 or 1")
	// ErrInvalidReplicationFactor means a replication factor the cluster
	// cannot place.
	ErrInvalidReplicationFactor = errors.New("ingest: invalid replication factor")
	// ErrMultipleBatches means a produce whose records for one partition
	// hold more than one batch: Kafka allows exactly one from Produce v3
	// on (ProduceRequest.validateRecords, INVALID_RECORD).
	ErrMultipleBatches = errors.New("ingest: produce requests may hold exactly one record batch per partition")
	// ErrZstdBeforeV7 means a zstd batch in a Produce request before v7,
	// which Kafka refuses (KIP-110: older clients could not read it).
	ErrZstdBeforeV7 = errors.New("ingest: zstd compression needs Produce v7 or later")
	// ErrProducerIDsUnavailable means the broker cannot hand out producer
	// ids yet (not registered) or right now (re-registering).
	ErrProducerIDsUnavailable = errors.New("ingest: producer ids unavailable")
	// ErrCoordinatorNotAvailable means no live broker with a Kafka listener
	// to coordinate a group.
	ErrCoordinatorNotAvailable = errors.New("ingest: no coordinator available")
	// ErrNotCoordinator means a group request to a broker that does not
	// coordinate the group.
	ErrNotCoordinator = errors.New("ingest: not the group's coordinator")
	// ErrFetchSessionNotFound means an incremental fetch (a session epoch
	// other than 0 and -1): the broker declines fetch sessions, so it never
	// has the one named.
	ErrFetchSessionNotFound = errors.New("ingest: fetch session not found")
	// ErrUnsupportedResource means a config resource type other than topics.
	ErrUnsupportedResource = errors.New("ingest: unsupported config resource")
	// ErrInternalTopic means writing to or deleting the internal topic
	// __consumer_offsets (internal_topic.go).
	ErrInternalTopic = errors.New("ingest: internal topic")
	// ErrTopicAuthorization, ErrGroupAuthorization,
	// ErrClusterAuthorization and ErrTransactionalIDAuthorization mean the
	// principal's ACLs do not allow the operation on the resource.
	ErrTopicAuthorization           = errors.New("ingest: not authorized to access topic")
	ErrGroupAuthorization           = errors.New("ingest: not authorized to access group")
	ErrClusterAuthorization         = errors.New("ingest: not authorized on the cluster")
	ErrTransactionalIDAuthorization = errors.New("ingest: not authorized to use the transactional id")
	// ErrUnsupportedSASLMechanism means a SCRAM mechanism code strata does
	// not know.
	ErrUnsupportedSASLMechanism = errors.New("ingest: unsupported SCRAM mechanism")
	// ErrDuplicateResource means a request naming one resource twice where
	// Kafka refuses that.
	ErrDuplicateResource = errors.New("ingest: resource named more than once")
)

// errorCodes maps errors to Kafka error codes. The first entry an error
// matches (errors.Is) wins, so more specific causes come first: a batch
// hotlog refused carries the record package's reason.
var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{record.ErrCorrupt, kerr.CorruptMessage},
	{record.ErrTruncated, kerr.CorruptMessage},
	{record.ErrTooLarge, kerr.MessageTooLarge},
	{record.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{record.ErrUnsupportedMagic, kerr.InvalidRecord},
	{record.ErrInvalid, kerr.InvalidRecord},
	{hotlog.ErrBatchTooLarge, kerr.RecordListTooLarge},
	{hotlog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{hotlog.ErrClosed, kerr.NotLeaderForPartition},
	{hotlog.ErrFailed, kerr.KafkaStorageError},
	{hotlog.ErrNoSpace, kerr.KafkaStorageError},
	{ErrDiskFull, kerr.KafkaStorageError},
	{ErrDeleteRecordsCompacted, kerr.PolicyViolation},
	{remotefetch.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{remotefetch.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{remotefetch.ErrSegmentMissing, kerr.KafkaStorageError},
	{remotefetch.ErrCorrupt, kerr.KafkaStorageError},
	{remotefetch.ErrUnavailable, kerr.KafkaStorageError},

	{replica.ErrNotLeader, kerr.NotLeaderForPartition},
	{replica.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{replica.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{replica.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{replica.ErrTransactionsUnsupported, kerr.TransactionalIDAuthorizationFailed},
	{replica.ErrRecordsTooLarge, kerr.MessageTooLarge},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{replica.ErrOffsetMovedToTieredStorage, kerr.OffsetMovedToTieredStorage},
	{replica.ErrOffsetNotAvailable, kerr.OffsetNotAvailable},
	{replica.ErrPartitionOffline, kerr.KafkaStorageError},
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrUnknownTopicID, kerr.UnknownTopicID},
	{ErrTransactionsUnsupported, kerr.TransactionalIDAuthorizationFailed},
	{ErrInvalidRequest, kerr.InvalidRequest},
	{ErrInvalidRequiredAcks, kerr.InvalidRequiredAcks},
	{ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{ErrPartitionLimit, kerr.PolicyViolation},
	{ErrMultipleBatches, kerr.InvalidRecord},
	{ErrZstdBeforeV7, kerr.UnsupportedCompressionType},
	{ErrUnsupportedResource, kerr.InvalidRequest},
	{ErrInternalTopic, kerr.InvalidTopicException},
	{ErrFetchSessionNotFound, kerr.FetchSessionIDNotFound},
	{ErrProducerIDsUnavailable, kerr.CoordinatorNotAvailable},
	{ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{ErrNotCoordinator, kerr.NotCoordinator},
	{ErrTopicAuthorization, kerr.TopicAuthorizationFailed},
	{ErrGroupAuthorization, kerr.GroupAuthorizationFailed},
	{ErrClusterAuthorization, kerr.ClusterAuthorizationFailed},
	{ErrTransactionalIDAuthorization, kerr.TransactionalIDAuthorizationFailed},
	{ErrUnsupportedSASLMechanism, kerr.UnsupportedSaslMechanism},
	{ErrDuplicateResource, kerr.DuplicateResource},
	{sasl.ErrInvalidCredential, kerr.UnacceptableCredential},

	{group.ErrUnknownMember, kerr.UnknownMemberID},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID},
	{group.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrGroupNotFound, kerr.GroupIDNotFound},
	{group.ErrNotEmpty, kerr.NonEmptyGroup},
	{group.ErrSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{group.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{group.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrInvalidOffset, kerr.InvalidCommitOffsetSize},
	{group.ErrClosed, kerr.CoordinatorNotAvailable},
	{group.ErrOffsetsUnavailable, kerr.CoordinatorNotAvailable},
	{group.ErrCommitTimedOut, kerr.RequestTimedOut},

	{meta.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{meta.ErrNoReassignment, kerr.NoReassignmentInProgress},
	{meta.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{meta.ErrPreferredLeaderDown, kerr.PreferredLeaderNotAvailable},
	{meta.ErrNoEligibleLeader, kerr.EligibleLeadersNotAvailable},
	{meta.ErrIneligibleReplica, kerr.IneligibleReplica},
	{meta.ErrStalePartitionEpoch, kerr.InvalidUpdateVersion},
	{meta.ErrUnknownBroker, kerr.BrokerIDNotRegistered},
	{meta.ErrBrokerAlive, kerr.InvalidRequest},
	{meta.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{meta.ErrCredentialNotFound, kerr.ResourceNotFound},
	{meta.ErrInvalidACL, kerr.InvalidRequest},
	{acl.ErrInvalidBinding, kerr.InvalidRequest},
	{acl.ErrInvalidFilter, kerr.InvalidRequest},
	{meta.ErrUnknownGroup, kerr.GroupIDNotFound},
	{meta.ErrTopicExists, kerr.TopicAlreadyExists},
	{meta.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{meta.ErrTopicIDMismatch, kerr.InconsistentTopicID},
	{meta.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{meta.ErrInvalidTopicName, kerr.InvalidTopicException},
	{meta.ErrInvalidPartitions, kerr.InvalidPartitions},
	{meta.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{meta.ErrInvalidConfig, kerr.InvalidConfig},
	{meta.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{meta.ErrNoLeader, kerr.NotController},
	{meta.ErrNotLeader, kerr.NotController},
	{meta.ErrClosed, kerr.NotController},
	{meta.ErrOutcomeUnknown, kerr.RequestTimedOut},

	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// errorCode returns the Kafka error code for err: 0 for nil, the table's
// code when err matches an entry, UNKNOWN_SERVER_ERROR otherwise.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is err's text for the responses that carry one, nil for no
// error, without the Go package name that starts our sentinels' text
// ("ingest: ", "meta: "): clients show the message to people, who have no
// use for it.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	if pkg, rest, ok := strings.Cut(s, ": "); ok && slices.Contains(sentinelPackages, pkg) {
		s = rest
	}
	return &s
}

// sentinelPackages are the packages whose sentinels reach the wire.
var sentinelPackages = []string{"ingest", "meta", "record", "hotlog", "offload", "remotefetch", "group", "objstore", "sasl", "acl"}
