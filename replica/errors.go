package replica

import "errors"

// Errors a partition answers with. Each has one Kafka code in the broker's
// error table (ingest/errors.go); they are returned per partition.
var (
	// ErrNotLeader means this broker does not lead the partition: another
	// broker does, this one follows it, the partition is still opening,
	// or this broker's leadership lease lapsed (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("replica: not the leader of the partition")
	// ErrUnknownPartition means the metadata has no such topic or
	// partition (UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownPartition = errors.New("replica: unknown topic or partition")
	// ErrFencedLeaderEpoch means a request carrying an older leader epoch
	// than the partition's.
	ErrFencedLeaderEpoch = errors.New("replica: fenced leader epoch")
	// ErrUnknownLeaderEpoch means a request carrying a newer leader epoch
	// than this broker knows.
	ErrUnknownLeaderEpoch = errors.New("replica: unknown leader epoch")
	// ErrOutOfOrderSequence means an idempotent batch whose sequence does
	// not follow the producer's last one.
	ErrOutOfOrderSequence = errors.New("replica: out of order sequence number")
	// ErrInvalidProducerEpoch means a batch from an older producer epoch
	// than the one the partition has seen.
	ErrInvalidProducerEpoch = errors.New("replica: invalid producer epoch")
	// ErrTransactionsUnsupported means a transactional batch: transactions
	// are not implemented.
	ErrTransactionsUnsupported = errors.New("replica: transactions are not supported")
	// ErrRecordsTooLarge means a batch above the topic's max.message.bytes.
	ErrRecordsTooLarge = errors.New("replica: record batch larger than max.message.bytes")
	// ErrOffsetNotAvailable means a leader whose high watermark has not
	// reached the start of its leader epoch yet (KIP-207): until then it
	// may be below offsets committed under an earlier leader, and an
	// answer for the latest offset or a timestamp would go back
	// (OFFSET_NOT_AVAILABLE, which clients retry).
	ErrOffsetNotAvailable = errors.New("replica: offsets not available yet")
	// ErrNotEnoughReplicas means an acks=all produce while the ISR is
	// smaller than min.insync.replicas: nothing was written.
	ErrNotEnoughReplicas = errors.New("replica: fewer in-sync replicas than min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend means an acks=all produce that was
	// written and replicated to the whole ISR, which had by then shrunk
	// below min.insync.replicas.
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: written, but the in-sync replicas fell below min.insync.replicas")
	// ErrOffsetMovedToTieredStorage answers a follower fetching below the
	// leader's local log start when the bucket holds those offsets: the
	// follower starts at the local log start instead (KIP-405).
	ErrOffsetMovedToTieredStorage = errors.New("replica: offset moved to tiered storage")
	// ErrPartitionOffline means this broker holds a replica of the
	// partition but could not open it; it is being retried
	// (KAFKA_STORAGE_ERROR).
	ErrPartitionOffline = errors.New("replica: partition offline (failed to open; retrying)")
)
