package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// The bucket manifest: [<key prefix>/]<topic dir>/<partition>/manifest.json
// (segmentobject/key.go has the key layout), which offload publishes after
// every change to a partition's committed segments, in segmentobject's
// format (segmentobject.ParseManifest reads it).

// errOtherPartition marks a manifest, found where partition p's would be,
// that describes another partition: under a topic dir that two long names
// share (segmentobject.TopicDir), it is the other topic's.
var errOtherPartition = errors.New("it describes another partition")

// decodeBucketManifest parses a published manifest.json of partition p. A
// manifest that does not parse, or is of another partition or topic id, is
// ErrInvalidManifest.
func decodeBucketManifest(data []byte, p Partition) (segmentobject.Manifest, error) {
	m, err := segmentobject.ParseManifest(data)
	if err != nil {
		return segmentobject.Manifest{}, err
	}
	if m.Topic != p.Topic || m.TopicID != p.TopicID || m.Partition != p.Index {
		return segmentobject.Manifest{}, fmt.Errorf("%w: %w: %s-%d (topic id %s), not %s (%s)", ErrInvalidManifest, errOtherPartition, m.Topic, m.Partition, m.TopicID, p, p.TopicID)
	}
	return m, nil
}

// readBucketManifest fetches and decodes partition p's manifest at key,
// retrying as any bucket read.
func (r *Reader) readBucketManifest(ctx context.Context, store objstore.Store, key string, p Partition) (segmentobject.Manifest, error) {
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
		return segmentobject.Manifest{}, err
	}
	m, err := decodeBucketManifest(data, p)
	if err != nil {
		return segmentobject.Manifest{}, fmt.Errorf("%s: %w", key, err)
	}
	return m, nil
}

// findBucketManifest lists the bucket for the topic dirs that may hold
// loc's manifest (loc.TopicID unset) and reads them. It fails unless
// exactly one is of loc's topic: several mean the topic was deleted and
// recreated, and one of another topic is a long name that shares the dir's
// name (segmentobject.TopicDirName), told apart by the name the manifest
// holds.
func (r *Reader) findBucketManifest(ctx context.Context, store objstore.Store, loc BucketLocation) (Partition, segmentobject.Manifest, error) {
	listPrefix := segmentobject.TopicDirName(loc.Topic) + "-"
	if loc.KeyPrefix != "" {
		listPrefix = loc.KeyPrefix + "/" + listPrefix
	}
	suffix := "/" + strconv.Itoa(int(loc.Partition)) + "/" + segmentobject.ManifestName
	var ids []uuid.UUID
	for info, err := range store.List(ctx, listPrefix) {
		if err != nil {
			return Partition{}, segmentobject.Manifest{}, fmt.Errorf("remotefetch: listing %q: %w", listPrefix, err)
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
		man   segmentobject.Manifest
	)
	for _, id := range ids {
		p := Partition{Topic: loc.Topic, TopicID: id, Index: loc.Partition}
		m, err := r.readBucketManifest(ctx, store, segmentobject.ManifestKey(loc.KeyPrefix, loc.Topic, id, loc.Partition), p)
		switch {
		case errors.Is(err, errOtherPartition):
			continue
		case err != nil:
			return Partition{}, segmentobject.Manifest{}, err
		}
		found, part, man = append(found, id), p, m
	}
	switch len(found) {
	case 0:
		return Partition{}, segmentobject.Manifest{}, fmt.Errorf("%w: no manifest for %s-%d under %q", ErrUnknownPartition, loc.Topic, loc.Partition, loc.KeyPrefix)
	case 1:
		return part, man, nil
	}
	return Partition{}, segmentobject.Manifest{}, fmt.Errorf("%w: topic %q has manifests under several ids %v (deleted and recreated?): name one", ErrUnknownPartition, loc.Topic, found)
}
