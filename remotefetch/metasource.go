package remotefetch

import (
	"context"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
)

// MetaManifests is the broker's ManifestSource: each call reads the current
// metadata state (for a broker, (*meta.Node).State) and takes the
// partition's committed segments from it. It never blocks or does I/O.
func MetaManifests(state func() *meta.State) ManifestSource { return metaSource(state) }

type metaSource func() *meta.State

func (src metaSource) Manifest(_ context.Context, p Partition) (Manifest, error) {
	st := src()
	topic, ok := st.Topic(p.Topic)
	if !ok {
		return Manifest{}, fmt.Errorf("%w: no topic %q", ErrUnknownPartition, p.Topic)
	}
	if p.TopicID != uuid.Nil && topic.ID != p.TopicID {
		return Manifest{}, fmt.Errorf("%w: topic %q has id %s, not %s", ErrUnknownPartition, p.Topic, topic.ID, p.TopicID)
	}
	m, ok := st.Manifest(p.Topic, p.Index)
	if !ok {
		return Manifest{}, fmt.Errorf("%w: %s", ErrUnknownPartition, p)
	}
	return FromMeta(m)
}

// FromMeta converts a metadata manifest to the committed, readable
// Manifest: copying and deleting segments are left out, inclusive end
// offsets become exclusive ones, and the result is validated. Meta does
// not record tail sizes, so each segment's first read guesses
// (Config.IndexTailGuess).
func FromMeta(m meta.Manifest) (Manifest, error) {
	out := Manifest{LogStartOffset: m.RemoteLogStartOffset}
	for _, s := range m.Segments {
		if s.State != meta.SegmentCommitted || s.EndOffset < m.RemoteLogStartOffset {
			continue
		}
		if s.EndOffset == math.MaxInt64 {
			return Manifest{}, fmt.Errorf("%w: segment %s ends at the largest offset", ErrInvalidManifest, s.ID)
		}
		out.Segments = append(out.Segments, Segment{
			Key:          s.ObjectKey,
			BaseOffset:   s.BaseOffset,
			NextOffset:   s.EndOffset + 1,
			MaxTimestamp: s.MaxTimestamp,
			LogSize:      s.SizeBytes,
		})
	}
	if err := out.Validate(); err != nil {
		return Manifest{}, err
	}
	return out, nil
}
