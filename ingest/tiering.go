package ingest

import (
	"context"
	"errors"
	"strconv"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/replica"
)

// Tiering is what the broker asks of tiered storage (DESIGN §4). The
// server passes offload's Manager and remotefetch's Reader; a broker
// without them (Deps.Tiering nil) keeps every partition's data local, under
// its total retention.
type Tiering struct {
	// Offload uploads sealed segments of the tiered partitions this broker
	// leads and says when the hot disk is full.
	Offload Offloader
	// Remote reads offsets below a partition's local log start from the
	// bucket.
	Remote RemoteReader
}

// Offloader is the part of *offload.Manager the broker drives.
type Offloader interface {
	replica.Offloader
	AdmitWrite(n int64) bool
}

// RemoteReader is the part of *remotefetch.Reader the broker reads with.
type RemoteReader interface {
	FetchMany(ctx context.Context, reqs []remotefetch.Request) []remotefetch.FetchResult
	OffsetForTimestamp(ctx context.Context, p remotefetch.Partition, ts, below int64) (remotefetch.TimestampOffset, bool, error)
}

// ErrDiskFull is the error of a produce offload does not admit (the hot
// disk is full or at its high-water mark): KAFKA_STORAGE_ERROR, which
// clients retry.
var ErrDiskFull = errors.New("ingest: the hot disk is full; writes resume once offload frees space")

// ErrDeleteRecordsCompacted refuses DeleteRecords on a topic whose
// cleanup.policy lacks delete: POLICY_VIOLATION, as Kafka answers.
var ErrDeleteRecordsCompacted = errors.New("ingest: DeleteRecords is not allowed on a compacted topic without the delete policy")

// tieringEnabled reports whether a topic's partitions are tiered on this
// broker: remote.storage.enable, and a broker with tiered storage.
func (b *Broker) tieringEnabled(t meta.Topic) bool {
	if b.tiering == nil || b.tiering.Offload == nil {
		return false
	}
	v, _ := t.Config("remote.storage.enable")
	on, _ := strconv.ParseBool(v)
	return on
}

// admitWrite reports whether offload lets n more bytes onto the hot disk:
// Produce is refused while the disk is full or the write would cross its
// high-water mark.
func (b *Broker) admitWrite(n int) bool {
	return b.tiering == nil || b.tiering.Offload == nil || b.tiering.Offload.AdmitWrite(int64(n))
}
