package offload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// The bucket manifest: <partition prefix>/manifest.json, a copy of the
// partition's committed segments in meta (meta.Manifest.Committed) with
// the objects' tail sizes, published after every change so that a batch
// job needs nothing but the bucket to read old offsets. The format is
// segmentobject's (manifest.go there).

// Manifest and ManifestSegment are the bucket manifest's types, kept under
// these names for the callers that read manifests through offload
// (integration's tests); segmentobject's are the ones to use.
type (
	Manifest        = segmentobject.Manifest
	ManifestSegment = segmentobject.ManifestSegment
)

// ParseManifest is segmentobject.ParseManifest, returning a pointer as it
// did when offload owned the format; kept for the same callers.
func ParseManifest(data []byte) (*Manifest, error) {
	man, err := segmentobject.ParseManifest(data)
	if err != nil {
		return nil, err
	}
	return &man, nil
}

// publisher writes one partition's bucket manifest. Its mutex serializes
// publishing, so the manifest last written is built from a meta state at
// least as new as every one before it.
type publisher struct {
	mu sync.Mutex
	p  *partition
	// tails maps segment ids to their objects' tail sizes, which meta does
	// not keep: learned from uploads, from the manifest found in the bucket,
	// or from the object's size.
	tails map[uuid.UUID]int64
	// readBucket says the manifest found in the bucket has been read for
	// tail sizes.
	readBucket bool
	// last is what this publisher last wrote; nil until it writes.
	last []byte
	// missing holds the committed segments whose objects were found
	// missing, logged once each.
	missing map[uuid.UUID]bool
}

func (pub *publisher) init(p *partition) {
	pub.p = p
	pub.tails = make(map[uuid.UUID]int64)
	pub.missing = make(map[uuid.UUID]bool)
}

// noteTail records an uploaded segment's tail size.
func (pub *publisher) noteTail(id uuid.UUID, tail int64) {
	pub.mu.Lock()
	pub.tails[id] = tail
	pub.mu.Unlock()
}

// publish writes p's bucket manifest from meta's current state, unless it
// is what this Manager last wrote and force is false. A plain Put: atomic
// on every backend, so readers see the old manifest or the new one.
func (m *Manager) publish(ctx context.Context, p *partition, force bool) error {
	pub := &p.publisher
	pub.mu.Lock()
	defer pub.mu.Unlock()
	man, _ := m.meta.State().Manifest(p.Topic, p.Partition)
	out, err := m.bucketManifest(ctx, p, man)
	if err != nil {
		m.metrics.failures.WithLabelValues("manifest").Inc()
		return err
	}
	data := out.Encode()
	if !force && bytes.Equal(data, pub.last) {
		return nil
	}
	key := segmentobject.ManifestKey(m.cfg.KeyPrefix, p.Topic, p.TopicID, p.Partition)
	_, err = m.retry(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		return m.store.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
	}, func(attempt int, err error) {
		m.metrics.failures.WithLabelValues("manifest").Inc()
		m.logger.Warn("offload: manifest put failed", "topic", p.Topic, "partition", p.Partition, "key", key, "attempt", attempt, "err", err)
	})
	if err != nil {
		return fmt.Errorf("publish %s: %w", key, err)
	}
	pub.last = data
	return nil
}

// bucketManifest builds the bucket manifest of meta's manifest man: its
// committed segments, with their tail sizes, named as p (meta's manifest
// has no topic id, and none at all once the partition is gone from meta).
// pub.mu must be held.
func (m *Manager) bucketManifest(ctx context.Context, p *partition, man meta.Manifest) (segmentobject.Manifest, error) {
	pub := &p.publisher
	out := man.Committed()
	out.Topic, out.TopicID, out.Partition = p.Topic, p.TopicID, p.Partition
	live := make(map[uuid.UUID]bool, len(out.Segments))
	kept := out.Segments[:0]
	var newest *meta.State // read once, for the first missing object
	for _, s := range out.Segments {
		live[s.ID] = true
		tail, err := m.tailSize(ctx, p, s)
		if errors.Is(err, errObjectMissing) {
			// Its records are lost whatever the manifest says; one bad
			// object must not stop every publish, and with it the expiry
			// pass's deletes, for good.
			m.noteMissing(ctx, p, s, err, &newest)
			continue
		}
		if err != nil {
			return segmentobject.Manifest{}, err
		}
		s.TailBytes = tail
		kept = append(kept, s)
	}
	out.Segments = kept
	for id := range pub.tails {
		if !live[id] {
			delete(pub.tails, id)
		}
	}
	for id := range pub.missing {
		if !live[id] {
			delete(pub.missing, id)
		}
	}
	return out, nil
}

// noteMissing reports committed segment s, whose object a HEAD did not find
// whole (why), unless the newest metadata no longer has it committed: a
// state read before retention or a successor's pass deleted it, as a
// deposed leader's can be. newest is that metadata, read linearizably
// once per publish, for the first missing object; when it cannot be read
// (no metadata quorum), the segment is reported all the same. It is
// counted at every publish, so the alert holds while it lasts, and logged
// once. pub.mu must be held.
func (m *Manager) noteMissing(ctx context.Context, p *partition, s segmentobject.ManifestSegment, why error, newest **meta.State) {
	if *newest == nil {
		err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
			st, err := m.meta.LinearizableState(ctx)
			*newest = st
			return err
		})
		if err != nil {
			*newest = m.meta.State()
		}
	}
	man, _ := (*newest).Manifest(p.Topic, p.Partition)
	if !slices.ContainsFunc(man.Segments, func(c meta.RemoteSegment) bool { return c.ID == s.ID && c.State == meta.SegmentCommitted }) {
		return
	}
	m.metrics.failures.WithLabelValues("missing_object").Inc()
	if !p.publisher.missing[s.ID] {
		p.publisher.missing[s.ID] = true
		m.logger.Error("offload: a committed segment's object is missing or damaged; the bucket manifest leaves it out",
			"topic", p.Topic, "partition", p.Partition, "base_offset", s.BaseOffset, "end_offset", s.EndOffset, "err", why)
	}
}

// tailSize finds a committed segment's tail size: remembered from its
// upload; else from the manifest in the bucket (read once, after a
// restart); else from the object's size (one HEAD), since the tail is all
// of the object after the log: errObjectMissing when there is none, or
// too little. pub.mu must be held.
func (m *Manager) tailSize(ctx context.Context, p *partition, s segmentobject.ManifestSegment) (int64, error) {
	pub := &p.publisher
	if tail, ok := pub.tails[s.ID]; ok {
		return tail, nil
	}
	if !pub.readBucket {
		if err := m.readBucketManifest(ctx, p); err != nil {
			return 0, err
		}
		pub.readBucket = true
		if tail, ok := pub.tails[s.ID]; ok {
			return tail, nil
		}
	}
	var size int64
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		info, err := m.store.Head(ctx, s.Key)
		size = info.Size
		return err
	})
	if errors.Is(err, objstore.ErrNotFound) {
		return 0, fmt.Errorf("%w: size of %s: %w", errObjectMissing, s.Key, err)
	}
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", s.Key, err)
	}
	if size < s.LogBytes+segmentobject.FooterSize {
		return 0, fmt.Errorf("%w: %s is %d bytes, too small for a %d-byte log", errObjectMissing, s.Key, size, s.LogBytes)
	}
	pub.tails[s.ID] = size - s.LogBytes
	return size - s.LogBytes, nil
}

// errObjectMissing is tailSize's answer for a committed segment whose
// object the bucket does not have whole (deleted outside strata, or cut
// short): bucketManifest leaves the segment out.
var errObjectMissing = errors.New("offload: a committed segment's object is missing or damaged")

// readBucketManifest takes the tail sizes from the manifest already in the
// bucket, if there is one that parses. pub.mu must be held.
func (m *Manager) readBucketManifest(ctx context.Context, p *partition) error {
	key := segmentobject.ManifestKey(m.cfg.KeyPrefix, p.Topic, p.TopicID, p.Partition)
	var data []byte
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		rc, err := m.store.Get(ctx, key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err = io.ReadAll(rc)
		return err
	})
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	old, err := segmentobject.ParseManifest(data)
	if err != nil {
		m.logger.Warn("offload: ignoring the bucket manifest found", "key", key, "err", err)
		return nil
	}
	for _, s := range old.Segments {
		p.publisher.tails[s.ID] = s.TailBytes
	}
	return nil
}
