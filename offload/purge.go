package offload

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// Purge deletes, in the background, the objects of one partition of a
// topic that was deleted: its segment objects and bucket manifest. Meta
// dropped the topic's manifests with it, and nothing else would ever
// delete them (Kafka deletes a deleted topic's remote segments too). The
// replica manager calls it on every broker that held a replica, when the
// deletion reaches it, after Remove: this broker's own uploads of the
// partition have stopped, so none lands after the purge; the deletes are
// idempotent, so the replicas' purges may overlap. Only keys of strata's
// layout under the partition's prefix are deleted, and a topic's prefix
// holds its id, which no other topic ever has. A purge the store fails is
// tried again after a backoff until it succeeds (done is called then), or
// until an error another try cannot cure (permanent). A
// Manager closed meanwhile leaves the rest, and done uncalled (the
// caller keeps a note to purge again at its next start). At most
// ExpiryConcurrency purges run at once, so a topic of thousands of
// partitions does not send the store thousands of listings together.
func (m *Manager) Purge(topic string, topicID uuid.UUID, partition int32, done func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return
	}
	m.wg.Go(func() {
		prefix := segmentobject.PartitionPrefix(m.cfg.KeyPrefix, topic, topicID, partition)
		for n := 1; ; n++ {
			deleted, err := m.purgeOnce(topic, partition, prefix)
			if m.ctx.Err() != nil {
				return
			}
			if err == nil {
				if deleted > 0 {
					m.logger.Info("offload: deleted the objects of a deleted topic's partition", "topic", topic, "partition", partition,
						"prefix", prefix, "objects", deleted)
				}
				done()
				return
			}
			if permanent(err) {
				// Another try cannot cure it (a bucket gone, a key the
				// store refuses): the caller's marker stays, for the
				// next start.
				m.logger.Error("offload: deleting the objects of a deleted topic's partition failed for good; they stay in the bucket", "topic", topic, "partition", partition,
					"prefix", prefix, "deleted", deleted, "err", err)
				return
			}
			m.logger.Warn("offload: deleting the objects of a deleted topic's partition; trying again", "topic", topic, "partition", partition,
				"prefix", prefix, "deleted", deleted, "attempt", n, "err", err)
			if m.sleep(m.ctx, m.backoff(n)) != nil {
				return
			}
		}
	})
}

// purgeOnce runs one purge of prefix in one of the purge slots.
func (m *Manager) purgeOnce(topic string, partition int32, prefix string) (int, error) {
	select {
	case m.purgeSlots <- struct{}{}:
		defer func() { <-m.purgeSlots }()
	case <-m.ctx.Done():
		return 0, m.ctx.Err()
	}
	return m.purge(m.ctx, topic, partition, prefix)
}

// purge deletes the segment objects and the bucket manifest under prefix
// and returns how many it deleted.
func (m *Manager) purge(ctx context.Context, topic string, partition int32, prefix string) (int, error) {
	var keys []string
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		keys = keys[:0]
		for info, err := range m.store.List(ctx, prefix) {
			if err != nil {
				return err
			}
			_, _, segment := segmentobject.ParseSegmentKey(prefix, info.Key)
			if segment || info.Key == prefix+segmentobject.ManifestName {
				keys = append(keys, info.Key)
			}
		}
		return nil
	})
	if err != nil {
		m.metrics.failures.WithLabelValues("list").Inc()
		return 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	for i, key := range keys {
		if err := m.deleteObject(ctx, topic, partition, key); err != nil {
			return i, err
		}
		m.metrics.orphansDeleted.Inc()
	}
	return len(keys), nil
}
