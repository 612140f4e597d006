package remotefetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// The bucket manifest: [<key prefix>/]<topic dir>/<partition>/manifest.json
// (segmentobject/key.go has the key layout), which offload publishes after
// every change to a partition's committed segments (offload/manifest.go
// owns the format; doc.go there describes it). bucketManifest mirrors the
// fields a reader needs, so that a batch job does not link the broker's
// upload machinery; a test decodes what offload encodes to keep the two in
// step.

// bucketManifestVersion is the format version this package reads.
const bucketManifestVersion = 1

type bucketManifest struct {
	Version        int                     `json:"version"`
	Topic          string                  `json:"topic"`
	TopicID        uuid.UUID               `json:"topic_id"`
	Partition      int32                   `json:"partition"`
	LogStartOffset int64                   `json:"log_start_offset"`
	Segments       []bucketManifestSegment `json:"segments"`
}

type bucketManifestSegment struct {
	Key          string `json:"key"`
	BaseOffset   int64  `json:"base_offset"`
	EndOffset    int64  `json:"end_offset"` // inclusive, as in meta
	MaxTimestamp int64  `json:"max_timestamp"`
	LogBytes     int64  `json:"log_bytes"`
	TailBytes    int64  `json:"tail_bytes"`
}

// errOtherPartition marks a manifest, found where partition p's would be,
// that describes another partition: under a topic dir that two long names
// share (segmentobject.TopicDir), it is the other topic's.
var errOtherPartition = errors.New("it describes another partition")

// decodeBucketManifest decodes a published manifest.json of partition p
// into a validated Manifest. A manifest of another version, or of another
// partition or topic id, is ErrInvalidManifest.
func decodeBucketManifest(data []byte, p Partition) (Manifest, error) {
	var bm bucketManifest
	if err := json.Unmarshal(data, &bm); err != nil {
		return Manifest{}, fmt.Errorf("%w: %w", ErrInvalidManifest, err)
	}
	if bm.Version != bucketManifestVersion {
		return Manifest{}, fmt.Errorf("%w: version %d (this build reads %d)", ErrInvalidManifest, bm.Version, bucketManifestVersion)
	}
	if bm.Topic != p.Topic || bm.TopicID != p.TopicID || bm.Partition != p.Index {
		return Manifest{}, fmt.Errorf("%w: %w: %s-%d (topic id %s), not %s (%s)", ErrInvalidManifest, errOtherPartition, bm.Topic, bm.Partition, bm.TopicID, p, p.TopicID)
	}
	m := Manifest{LogStartOffset: bm.LogStartOffset, Segments: make([]Segment, 0, len(bm.Segments))}
	for _, s := range bm.Segments {
		if s.EndOffset == math.MaxInt64 {
			return Manifest{}, fmt.Errorf("%w: segment %s ends at the largest offset", ErrInvalidManifest, s.Key)
		}
		m.Segments = append(m.Segments, Segment{
			Key: s.Key, BaseOffset: s.BaseOffset, NextOffset: s.EndOffset + 1,
			MaxTimestamp: s.MaxTimestamp, LogSize: s.LogBytes, TailSize: s.TailBytes,
		})
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// readBucketManifest fetches and decodes partition p's manifest at key,
// retrying as any bucket read.
func (r *Reader) readBucketManifest(ctx context.Context, store objstore.Store, key string, p Partition) (Manifest, error) {
	var data []byte
	err := r.retry.do(ctx, kindIndex, key, func() int { return len(data) }, func(ctx context.Context) error {
		rc, err := store.Get(ctx, key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err = io.ReadAll(rc)
		return err
	})
	if err != nil {
		return Manifest{}, err
	}
	m, err := decodeBucketManifest(data, p)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", key, err)
	}
	return m, nil
}

// findBucketManifest lists the bucket for the topic dirs that may hold
// loc's manifest (loc.TopicID unset) and reads them. It fails unless
// exactly one is of loc's topic: several mean the topic was deleted and
// recreated, and one of another topic is a long name that shares the dir's
// name (segmentobject.TopicDirName), told apart by the name the manifest
// holds.
func (r *Reader) findBucketManifest(ctx context.Context, store objstore.Store, loc BucketLocation) (Partition, Manifest, error) {
	listPrefix := segmentobject.TopicDirName(loc.Topic) + "-"
	if loc.KeyPrefix != "" {
		listPrefix = loc.KeyPrefix + "/" + listPrefix
	}
	suffix := "/" + strconv.Itoa(int(loc.Partition)) + "/" + segmentobject.ManifestName
	var ids []uuid.UUID
	for info, err := range store.List(ctx, listPrefix) {
		if err != nil {
			return Partition{}, Manifest{}, fmt.Errorf("remotefetch: listing %q: %w", listPrefix, err)
		}
		rest, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, listPrefix), suffix)
		if !ok || len(rest) != 36 { // "a-b-<id>" is not topic "a"'s
			continue
		}
		if id, err := uuid.Parse(rest); err == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var (
		found []uuid.UUID
		part  Partition
		man   Manifest
	)
	for _, id := range ids {
		p := Partition{Topic: loc.Topic, TopicID: id, Index: loc.Partition}
		m, err := r.readBucketManifest(ctx, store, segmentobject.ManifestKey(loc.KeyPrefix, loc.Topic, id, loc.Partition), p)
		switch {
		case errors.Is(err, errOtherPartition):
			continue
		case err != nil:
			return Partition{}, Manifest{}, err
		}
		found, part, man = append(found, id), p, m
	}
	switch len(found) {
	case 0:
		return Partition{}, Manifest{}, fmt.Errorf("%w: no manifest for %s-%d under %q", ErrUnknownPartition, loc.Topic, loc.Partition, loc.KeyPrefix)
	case 1:
		return part, man, nil
	}
	return Partition{}, Manifest{}, fmt.Errorf("%w: topic %q has manifests under several ids %v (deleted and recreated?): name one", ErrUnknownPartition, loc.Topic, found)
}
