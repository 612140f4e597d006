package offload

import "errors"

// Sentinel errors, returned wrapped with detail; test with errors.Is.
var (
	// ErrClosed means the Manager was closed.
	ErrClosed = errors.New("offload: manager closed")
	// ErrInvalidConfig means Config.Validate refused a setting.
	ErrInvalidConfig = errors.New("offload: invalid config")
	// ErrInvalidPartition means Add was given an incomplete Partition.
	ErrInvalidPartition = errors.New("offload: invalid partition")
	// ErrPartitionExists means Add named a partition the Manager already
	// has; Remove it first.
	ErrPartitionExists = errors.New("offload: partition already added")
	// ErrAttemptTimeout is the cause of an attempt that ran past its
	// timeout (Config.AttemptTimeout, plus Config.MinUploadRate for PUTs).
	ErrAttemptTimeout = errors.New("offload: attempt timed out")
	// ErrNoLeaderEpoch means the hot log's leader epoch cache does not cover
	// a segment's first offset, so the segment cannot be described to meta.
	ErrNoLeaderEpoch = errors.New("offload: no leader epoch covers the segment")
	// ErrStraddlesRemote means the next local segment holds the end of the
	// tiered data inside a batch other than a run of emptied batches the
	// cleaner joined: no batch starts there, so the segment can
	// be uploaded neither from that end (as one with other boundaries than
	// the uploaded segments' is) nor whole without overlapping a committed
	// segment. The local log diverges from the bucket's. See doc.go,
	// "Limits".
	ErrStraddlesRemote = errors.New("offload: local segment straddles the end of the tiered data")

	// ErrCorruptObject means a segment object read back for recompaction
	// does not hold the batches its manifest entry says it does.
	ErrCorruptObject = errors.New("offload: corrupt segment object")
)
