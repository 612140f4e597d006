package remotefetch

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// MetaManifests is the broker's ManifestSource: each call reads the current
// metadata state (for a broker, (*meta.Node).State) and takes the
// partition's committed segments from it. It never blocks or does I/O.
func MetaManifests(state func() *meta.State) ManifestSource { return metaSource(state) }

type metaSource func() *meta.State

func (src metaSource) Manifest(_ context.Context, p Partition) (segmentobject.Manifest, error) {
	st := src()
	topic, ok := st.Topic(p.Topic)
	if !ok {
		return segmentobject.Manifest{}, fmt.Errorf("%w: no topic %q", ErrUnknownPartition, p.Topic)
	}
	if p.TopicID != uuid.Nil && topic.ID != p.TopicID {
		return segmentobject.Manifest{}, fmt.Errorf("%w: topic %q has id %s, not %s", ErrUnknownPartition, p.Topic, topic.ID, p.TopicID)
	}
	m, ok := st.Manifest(p.Topic, p.Index)
	if !ok {
		return segmentobject.Manifest{}, fmt.Errorf("%w: %s", ErrUnknownPartition, p)
	}
	return FromMeta(m)
}

// FromMeta is meta's committed manifest (m.Committed: committed segments
// at or above the remote log start), checked as every manifest a Reader
// reads is. Meta does not record tail sizes, so each segment's first read
// guesses (Config.IndexTailGuess).
func FromMeta(m meta.Manifest) (segmentobject.Manifest, error) {
	out := m.Committed()
	if err := out.Validate(); err != nil {
		return segmentobject.Manifest{}, err
	}
	return out, nil
}
