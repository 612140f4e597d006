package offload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// The objects of deleted topics. DeleteTopics drops a topic's manifests
// from meta and its partitions leave every Manager, so nothing else would
// ever delete its segment objects and bucket manifests: the bucket kept a
// deleted topic's data for good. As Kafka deletes a deleted topic's remote
// segments, one broker of the cluster (the live one with the lowest id)
// lists the bucket every OrphanSweepInterval and deletes them.

// sweepDeletedTopicsEvery runs sweepDeletedTopics every
// OrphanSweepInterval until the Manager closes.
func (m *Manager) sweepDeletedTopicsEvery() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.clock.After(m.cfg.OrphanSweepInterval):
		}
		if _, err := m.sweepDeletedTopics(m.ctx); err != nil && m.ctx.Err() == nil {
			m.logger.Warn("offload: sweeping the objects of deleted topics", "err", err)
		}
	}
}

// sweepDeletedTopics deletes the objects under KeyPrefix of topics that
// no longer exist, if this broker is the one that sweeps, and returns how
// many it deleted.
//
// Order matters, as in sweep. A segment object is put only once its
// topic is in meta (BeginSegmentCopy names it), and a bucket manifest
// only after a commit, so every object the listing finds belongs to a
// topic created before the listing began; a linearizable read after the
// listing that finds no topic of its id proves the topic deleted (ids are
// never reused). Only keys of strata's layout are deleted:
// <topic dir>/<partition>/ then a segment object or manifest.json.
func (m *Manager) sweepDeletedTopics(ctx context.Context) (int, error) {
	if !m.sweepsDeletedTopics(m.meta.State()) {
		return 0, nil
	}
	prefix := ""
	if m.cfg.KeyPrefix != "" {
		prefix = m.cfg.KeyPrefix + "/"
	}
	if err := m.claimBucket(ctx, prefix); err != nil {
		return 0, err
	}
	var listed []string
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		listed = listed[:0]
		for info, err := range m.store.List(ctx, prefix) {
			if err != nil {
				return err
			}
			listed = append(listed, info.Key)
		}
		return nil
	})
	if err != nil {
		m.metrics.failures.WithLabelValues("list").Inc()
		return 0, fmt.Errorf("list %q: %w", prefix, err)
	}
	var state *meta.State
	err = m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		state, err = m.meta.LinearizableState(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read meta: %w", err)
	}
	deleted := 0
	for _, key := range listed {
		id, ok := deletedTopicKey(prefix, key)
		if !ok {
			continue
		}
		if _, exists := state.TopicByID(id); exists {
			continue
		}
		_, err := m.retry(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
			return m.store.Delete(ctx, key)
		}, func(attempt int, err error) {
			m.metrics.failures.WithLabelValues("delete").Inc()
			m.logger.Warn("offload: deleting an object of a deleted topic failed", "key", key, "attempt", attempt, "err", err)
		})
		if err != nil {
			return deleted, fmt.Errorf("delete %s: %w", key, err)
		}
		m.metrics.orphansDeleted.Inc()
		deleted++
	}
	if deleted > 0 {
		m.logger.Info("offload: deleted the objects of deleted topics", "objects", deleted)
	}
	return deleted, nil
}

// clusterIDName is the object, under the key prefix, that names the
// cluster whose objects the prefix holds.
const clusterIDName = "cluster-id"

// claimBucket checks that the bucket's prefix is this cluster's before
// its objects are taken for a deleted topic's: another cluster's topics
// under the same prefix are unknown here, and would be deleted as such.
// The first sweep writes this cluster's id there; a prefix that names
// another cluster is refused, with the fix.
func (m *Manager) claimBucket(ctx context.Context, prefix string) error {
	own := m.meta.State().ClusterID()
	if own == "" {
		return errors.New("the cluster has no id yet")
	}
	key := prefix + clusterIDName
	var found []byte
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		rc, err := m.store.Get(ctx, key, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		found, err = io.ReadAll(rc)
		return err
	})
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
			return m.store.Put(ctx, key, strings.NewReader(own), int64(len(own)))
		})
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	case string(found) != own:
		return fmt.Errorf("%s names cluster %q, not this one (%q): the prefix holds another cluster's objects, which would be taken for deleted topics'; give each cluster its own bucket prefix", key, found, own)
	}
	return nil
}

// sweepsDeletedTopics reports whether this broker sweeps the bucket for
// deleted topics' objects: it is the live broker with the lowest id, or
// meta knows no live broker (a Manager without brokers, as in tests).
func (m *Manager) sweepsDeletedTopics(st *meta.State) bool {
	for _, b := range st.Brokers() {
		if !b.Fenced && b.ID < m.cfg.BrokerID {
			return false
		}
	}
	return true
}

// deletedTopicKey parses key, under prefix, as an object of strata's
// layout and returns its topic's id: <name>-<topic id>/<partition>/ then
// a segment object or the bucket manifest.
func deletedTopicKey(prefix, key string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return uuid.Nil, false
	}
	dir, rest, ok := strings.Cut(rest, "/")
	if !ok || len(dir) < len(uuid.Nil.String())+2 || dir[len(dir)-37] != '-' {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(dir[len(dir)-36:])
	if err != nil {
		return uuid.Nil, false
	}
	partition, name, ok := strings.Cut(rest, "/")
	if n, err := strconv.ParseInt(partition, 10, 32); !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != partition {
		return uuid.Nil, false
	}
	partitionPrefix := prefix + dir + "/" + partition + "/"
	if _, _, isSegment := segmentobject.ParseSegmentKey(partitionPrefix, key); !isSegment && name != segmentobject.ManifestName {
		return uuid.Nil, false
	}
	return id, true
}
