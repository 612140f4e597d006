package remotefetch

import (
	"errors"

	"github.com/stratalog/strata/segmentobject"
)

// Sentinel errors, returned wrapped with detail: test with errors.Is. The
// broker maps them to Kafka error codes at its edge (ingest/errors.go).
var (
	// ErrClosed: the Reader was closed.
	ErrClosed = errors.New("remotefetch: reader closed")

	// ErrInvalidConfig: Config.Validate refused a setting.
	ErrInvalidConfig = errors.New("remotefetch: invalid config")

	// ErrUnknownPartition: the manifest source knows no such partition, or
	// the topic now has another id (deleted and recreated).
	ErrUnknownPartition = errors.New("remotefetch: unknown partition")

	// ErrInvalidManifest: a manifest that contradicts itself (unsorted or
	// overlapping segments, impossible offsets), or a bucket manifest that
	// does not decode or is another partition's. It is segmentobject's,
	// which checks manifests for every reader.
	ErrInvalidManifest = segmentobject.ErrInvalidManifest

	// ErrOffsetOutOfRange: the offset is below the remote log start offset
	// or at or above the end of the tiered log. Kafka's OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("remotefetch: offset outside the tiered log")

	// ErrSegmentMissing: the manifest names an object the bucket does not
	// hold, typically because remote retention deleted it after the
	// manifest was read.
	ErrSegmentMissing = errors.New("remotefetch: segment object missing from the bucket")

	// ErrCorrupt: bytes that failed verification twice, the second time
	// fetched afresh from the bucket: a batch CRC, a section CRC, a batch
	// header that contradicts the segment, or an object that is not the
	// segment the manifest describes. No byte of a corrupt read is returned.
	ErrCorrupt = errors.New("remotefetch: corrupt segment data")

	// ErrUnavailable: the bucket kept failing (errors, timeouts, short
	// bodies) until the retries ran out. It wraps the last failure.
	ErrUnavailable = errors.New("remotefetch: bucket unavailable")

	// ErrTimeout: FetchMany's remote.fetch.max.wait.ms passed before this
	// partition's read completed. Its block reads go on in the background
	// and warm the cache for the client's next fetch.
	ErrTimeout = errors.New("remotefetch: remote fetch timed out")
)
