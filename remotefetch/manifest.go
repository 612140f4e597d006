package remotefetch

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// Partition names one partition. TopicID guards against a topic deleted and
// recreated under the same name; uuid.Nil skips that check.
type Partition struct {
	Topic   string
	TopicID uuid.UUID
	Index   int32
}

func (p Partition) String() string { return p.Topic + "-" + strconv.Itoa(int(p.Index)) }

// ManifestSource yields a partition's committed manifest, valid
// (segmentobject.Manifest.Validate): the segments a read may use and the
// remote log start offset below which nothing is served. A segment's
// TailBytes is 0 where the source does not know it (Config.IndexTailGuess
// is fetched then). The broker's source is MetaManifests (the Raft
// metadata); a batch job's is the bucket's manifest.json
// (OpenBucketReader). Implementations must be safe for concurrent use and
// cheap: Read calls Manifest once per read.
type ManifestSource interface {
	Manifest(ctx context.Context, p Partition) (segmentobject.Manifest, error)
}

// outOfRange is the error for an offset m.SegmentFor refused.
func outOfRange(m segmentobject.Manifest, p Partition, offset int64) error {
	return fmt.Errorf("%w: %s offset %d, tiered log holds [%d, %d)", ErrOffsetOutOfRange, p, offset, m.LogStartOffset, m.NextOffset())
}
