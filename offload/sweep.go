package offload

import (
	"context"
	"fmt"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// sweep deletes the segment objects under p's prefix that no manifest
// entry names (step 7). They come from uploads whose entry was abandoned
// and dropped while the PUT was still running: a crashed process's, or a
// deposed leader's that kept going. It also republishes the bucket
// manifest, which heals one overwritten by a deposed leader's late publish.
//
// Order matters. Every upload records its entry (step 2) before its PUT
// (step 3), so an object in the listing had its entry committed before the
// listing began; reading the manifest after the listing therefore finds
// the entry of every live upload. The read is linearizable, and the sweep
// goes ahead only if this broker still leads the partition at its epoch:
// a deposed leader's local state could lag behind the new leader's uploads
// and take their objects for orphans. Only keys of the segment form are
// ever deleted.
func (m *Manager) sweep(ctx context.Context, p *partition) error {
	var listed []objstore.ObjectInfo
	err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		listed = listed[:0]
		for info, err := range m.store.List(ctx, p.prefix) {
			if err != nil {
				return err
			}
			listed = append(listed, info)
		}
		return nil
	})
	if err != nil {
		m.metrics.failures.WithLabelValues("list").Inc()
		return fmt.Errorf("list %s: %w", p.prefix, err)
	}
	var state *meta.State
	err = m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		state, err = m.meta.LinearizableState(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("sweep: read meta: %w", err)
	}
	if part, ok := state.Partition(p.Topic, p.Partition); !ok || part.LeaderEpoch != p.LeaderEpoch() {
		m.logger.Info("offload: not sweeping a partition this broker no longer leads", "topic", p.Topic, "partition", p.Partition)
		return nil
	}
	man, _ := state.Manifest(p.Topic, p.Partition)
	named := make(map[string]bool, len(man.Segments))
	for _, s := range man.Segments {
		named[s.ObjectKey] = true
	}
	for _, info := range listed {
		if _, _, ok := segmentobject.ParseSegmentKey(p.prefix, info.Key); !ok || named[info.Key] {
			continue
		}
		m.logger.Info("offload: deleting orphaned object", "topic", p.Topic, "partition", p.Partition, "key", info.Key, "size", info.Size)
		if err := m.deleteObject(ctx, p.Topic, p.Partition, info.Key); err != nil {
			return err
		}
		m.metrics.orphansDeleted.Inc()
	}
	return m.publish(ctx, p, true)
}
