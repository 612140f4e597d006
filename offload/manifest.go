package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// The bucket manifest: <partition prefix>/manifest.json, a copy of the
// partition's committed segments in meta, published after every change so
// that a batch job needs nothing but the bucket to read old offsets.
// doc.go describes the format; these types are it.

// ManifestVersion is the version of the manifest format this package
// writes and reads.
const ManifestVersion = 1

// Manifest is one partition's bucket manifest.
type Manifest struct {
	// Version is ManifestVersion. Readers refuse other versions; fields
	// added within a version are ones a reader may ignore.
	Version   int       `json:"version"`
	Topic     string    `json:"topic"`
	TopicID   uuid.UUID `json:"topic_id"`
	Partition int32     `json:"partition"`
	// LogStartOffset is the remote log start offset: offsets below it are
	// not served from the bucket, even where a segment still holds them.
	LogStartOffset int64 `json:"log_start_offset"`
	// Segments are the committed segments at or above LogStartOffset,
	// sorted by offset, never overlapping.
	Segments []ManifestSegment `json:"segments"`
}

// ManifestSegment is one segment object.
type ManifestSegment struct {
	ID uuid.UUID `json:"id"`
	// Key is the object's key in the store (relative to the store URL's
	// prefix, as objstore keys are).
	Key string `json:"key"`
	// BaseOffset and EndOffset are the first and last offsets held
	// (inclusive, as in meta).
	BaseOffset   int64 `json:"base_offset"`
	EndOffset    int64 `json:"end_offset"`
	MaxTimestamp int64 `json:"max_timestamp"`
	// LogBytes is the length of the log section (object bytes
	// [0, LogBytes)); TailBytes the rest: indexes, epochs and footer, which
	// a reader fetches with one suffix read. The object is LogBytes +
	// TailBytes long.
	LogBytes     int64           `json:"log_bytes"`
	TailBytes    int64           `json:"tail_bytes"`
	LeaderEpochs []ManifestEpoch `json:"leader_epochs"`
}

// ManifestEpoch says that leader epoch Epoch wrote the offsets from
// StartOffset on, up to the next entry.
type ManifestEpoch struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// ParseManifest decodes a bucket manifest and checks its invariants.
func ParseManifest(data []byte) (*Manifest, error) {
	var man Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if man.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadManifest, man.Version, ManifestVersion)
	}
	for i, s := range man.Segments {
		switch {
		case s.Key == "" || s.BaseOffset < 0 || s.EndOffset < s.BaseOffset || s.LogBytes <= 0 || s.TailBytes < segmentobject.FooterSize:
			return nil, fmt.Errorf("%w: segment %d (%+v) malformed", ErrBadManifest, i, s)
		case i > 0 && s.BaseOffset <= man.Segments[i-1].EndOffset:
			return nil, fmt.Errorf("%w: segment %d at %d overlaps or precedes the one before", ErrBadManifest, i, s.BaseOffset)
		case len(s.LeaderEpochs) == 0 || s.LeaderEpochs[0].StartOffset != s.BaseOffset:
			return nil, fmt.Errorf("%w: segment %d: leader epochs must start at its base offset", ErrBadManifest, i)
		}
	}
	return &man, nil
}

// encodeManifest renders a manifest: deterministic JSON, one line.
func encodeManifest(man *Manifest) []byte {
	data, err := json.Marshal(man)
	if err != nil {
		panic("offload: encoding a manifest: " + err.Error()) // plain structs: cannot fail
	}
	return append(data, '\n')
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
}

func (pub *publisher) init(p *partition) {
	pub.p = p
	pub.tails = make(map[uuid.UUID]int64)
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
	data := encodeManifest(out)
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

// bucketManifest builds the bucket manifest of meta's manifest man.
// pub.mu must be held.
func (m *Manager) bucketManifest(ctx context.Context, p *partition, man meta.Manifest) (*Manifest, error) {
	pub := &p.publisher
	out := &Manifest{
		Version: ManifestVersion, Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
		LogStartOffset: man.RemoteLogStartOffset, Segments: []ManifestSegment{},
	}
	live := make(map[uuid.UUID]bool, len(man.Segments))
	for _, s := range man.Segments {
		if s.State != meta.SegmentCommitted || s.EndOffset < man.RemoteLogStartOffset {
			continue
		}
		live[s.ID] = true
		tail, err := m.tailSize(ctx, p, s)
		if err != nil {
			return nil, err
		}
		epochs := make([]ManifestEpoch, len(s.LeaderEpochs))
		for i, e := range s.LeaderEpochs {
			epochs[i] = ManifestEpoch{Epoch: e.Epoch, StartOffset: e.StartOffset}
		}
		out.Segments = append(out.Segments, ManifestSegment{
			ID: s.ID, Key: s.ObjectKey, BaseOffset: s.BaseOffset, EndOffset: s.EndOffset,
			MaxTimestamp: s.MaxTimestamp, LogBytes: s.SizeBytes, TailBytes: tail, LeaderEpochs: epochs,
		})
	}
	for id := range pub.tails {
		if !live[id] {
			delete(pub.tails, id)
		}
	}
	return out, nil
}

// tailSize finds a committed segment's tail size: remembered from its
// upload; else from the manifest in the bucket (read once, after a
// restart); else from the object's size (one HEAD), since the tail is all
// of the object after the log. pub.mu must be held.
func (m *Manager) tailSize(ctx context.Context, p *partition, s meta.RemoteSegment) (int64, error) {
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
		info, err := m.store.Head(ctx, s.ObjectKey)
		size = info.Size
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", s.ObjectKey, err)
	}
	if size < s.SizeBytes+segmentobject.FooterSize {
		return 0, fmt.Errorf("%s is %d bytes, too small for a %d-byte log", s.ObjectKey, size, s.SizeBytes)
	}
	pub.tails[s.ID] = size - s.SizeBytes
	return size - s.SizeBytes, nil
}

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
	old, err := ParseManifest(data)
	if err != nil {
		m.logger.Warn("offload: ignoring the bucket manifest found", "key", key, "err", err)
		return nil
	}
	for _, s := range old.Segments {
		p.publisher.tails[s.ID] = s.TailBytes
	}
	return nil
}
