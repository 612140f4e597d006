package remotefetch

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/google/uuid"
)

// Partition names one partition. TopicID guards against a topic deleted and
// recreated under the same name; uuid.Nil skips that check.
type Partition struct {
	Topic   string
	TopicID uuid.UUID
	Index   int32
}

func (p Partition) String() string { return p.Topic + "-" + strconv.Itoa(int(p.Index)) }

// Segment is one committed segment object, as the manifest describes it.
type Segment struct {
	// Key is the object's key in the bucket.
	Key string
	// BaseOffset is the segment's first offset; NextOffset is one past its
	// last. The object's footer must say the same, or reads fail with
	// ErrCorrupt.
	BaseOffset   int64
	NextOffset   int64
	MaxTimestamp int64
	// LogSize is the length of the object's log section, the batches: what
	// a full read of the segment returns. 0 when unknown.
	LogSize int64
	// TailSize is the length of the object after its log section (indexes,
	// epochs, footer), or 0 when the manifest does not record it
	// (Config.IndexTailGuess is fetched then).
	TailSize int64
}

// Manifest is the committed, readable part of one partition's tiered log:
// segments sorted by base offset, not overlapping, and the remote log start
// offset below which nothing is served. A segment may start below
// LogStartOffset; it is then readable from LogStartOffset on.
type Manifest struct {
	LogStartOffset int64
	Segments       []Segment
}

// ManifestSource yields a partition's committed manifest. The broker's is
// MetaManifests (the Raft metadata); a batch job's is the bucket's
// manifest.json (OpenBucketReader). Implementations must be safe for
// concurrent use and cheap: Read calls Manifest once per read.
type ManifestSource interface {
	Manifest(ctx context.Context, p Partition) (Manifest, error)
}

// Validate checks the invariants readers rely on: offsets that make
// segments, keys present, segments sorted and not overlapping.
func (m Manifest) Validate() error {
	if m.LogStartOffset < 0 {
		return fmt.Errorf("%w: log start offset %d", ErrInvalidManifest, m.LogStartOffset)
	}
	for i, s := range m.Segments {
		switch {
		case s.Key == "":
			return fmt.Errorf("%w: segment %d has no object key", ErrInvalidManifest, i)
		case s.BaseOffset < 0 || s.NextOffset <= s.BaseOffset:
			return fmt.Errorf("%w: segment %d (%s) has offsets [%d, %d)", ErrInvalidManifest, i, s.Key, s.BaseOffset, s.NextOffset)
		case s.LogSize < 0 || s.TailSize < 0:
			return fmt.Errorf("%w: segment %d (%s) has a log of %d bytes, a tail of %d", ErrInvalidManifest, i, s.Key, s.LogSize, s.TailSize)
		case i > 0 && s.BaseOffset < m.Segments[i-1].NextOffset:
			return fmt.Errorf("%w: segment %d (%s) at %d overlaps or precedes the one before, which ends at %d",
				ErrInvalidManifest, i, s.Key, s.BaseOffset, m.Segments[i-1].NextOffset)
		}
	}
	return nil
}

// NextOffset is one past the last tiered offset: the end of what the
// bucket serves. It is LogStartOffset when nothing is readable.
func (m Manifest) NextOffset() int64 {
	if n := len(m.Segments); n > 0 && m.Segments[n-1].NextOffset > m.LogStartOffset {
		return m.Segments[n-1].NextOffset
	}
	return m.LogStartOffset
}

// segmentFor returns the index of the segment a read of offset starts in:
// the first readable segment that ends after offset. ok is false when offset
// is outside [LogStartOffset, NextOffset()).
func (m Manifest) segmentFor(offset int64) (int, bool) {
	if offset < m.LogStartOffset || offset >= m.NextOffset() {
		return 0, false
	}
	i := sort.Search(len(m.Segments), func(i int) bool { return m.Segments[i].NextOffset > offset })
	return i, i < len(m.Segments)
}

// outOfRange is the error for an offset segmentFor refused.
func (m Manifest) outOfRange(p Partition, offset int64) error {
	return fmt.Errorf("%w: %s offset %d, tiered log holds [%d, %d)", ErrOffsetOutOfRange, p, offset, m.LogStartOffset, m.NextOffset())
}
