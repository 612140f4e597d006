package offload

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// The expiry task: local retention (step 5), remote retention and the
// deletes it starts (step 6), and the orphan sweep (step 7, sweep.go).

// expiryPass runs the expiry task of p once. sweep forces the orphan sweep
// even if it is not due.
func (m *Manager) expiryPass(ctx context.Context, p *partition, sweep bool) error {
	p.expiryMu.Lock()
	defer p.expiryMu.Unlock()
	err := m.expire(ctx, p, sweep)
	p.recordError("expiry", err, m.clock.Now())
	return err
}

func (m *Manager) expire(ctx context.Context, p *partition, sweep bool) error {
	if err := m.applyLocalRetention(p); err != nil {
		return err
	}
	st := m.meta.State()
	topic, ok := st.Topic(p.Topic)
	if !ok || topic.ID != p.TopicID {
		return nil
	}
	man, _ := st.Manifest(p.Topic, p.Partition)
	m.settle(p, man)
	for _, e := range remoteExpired(man, topic, p.Log.Segments(), m.clock.Now()) {
		m.logger.Info("offload: remote segment expired", "topic", p.Topic, "partition", p.Partition,
			"base_offset", e.segment.BaseOffset, "end_offset", e.segment.EndOffset, "reason", e.reason)
		if err := m.beginDelete(ctx, p, e.segment, e.reason); err != nil {
			return err
		}
		if err := m.reached(stepDeleteBegun); err != nil {
			return err
		}
	}
	// After the deletes begun above, which move the remote log start too.
	if err := m.followRemoteLogStart(p); err != nil {
		return err
	}
	if err := m.finishDeletes(ctx, p); err != nil {
		return err
	}
	now := m.clock.Now()
	if sweep || !now.Before(p.sweepDue) {
		if err := m.sweep(ctx, p); err != nil {
			return err
		}
		p.sweepDue = now.Add(m.cfg.OrphanSweepInterval)
	}
	// A manifest publish that failed after a commit is retried here.
	if err := m.publish(ctx, p, false); err != nil {
		return err
	}
	// Last, so that a recompaction that keeps failing (an unreadable
	// object) holds up none of the above; what it abandons or retires
	// is deleted by the next pass.
	if err := m.recompact(ctx, p, topic); err != nil {
		return fmt.Errorf("recompaction: %w", err)
	}
	return nil
}

// applyLocalRetention runs the hot log's retention, which the log's
// CanDelete (LocalDeletionHook) limits to segments already committed
// (unless copying is off: then any segment the topic-wide retention lets
// go).
func (m *Manager) applyLocalRetention(p *partition) error {
	deleted, err := p.Log.ApplyRetention()
	for _, s := range deleted {
		m.metrics.localDeletes.WithLabelValues("retention").Inc()
		m.logger.Debug("offload: local segment deleted by local retention", "topic", p.Topic, "partition", p.Partition,
			"base_offset", s.BaseOffset, "next_offset", s.NextOffset)
	}
	if err != nil {
		return fmt.Errorf("local retention: %w", err)
	}
	return nil
}

// followRemoteLogStart moves the hot log's start up to the remote log
// start (up to the high watermark), which DeleteRecords moves first, and
// remote retention moves past a segment it deletes while the hot log may
// still hold some of it: a leader that crashed between DeleteRecords'
// two moves, or was elected before it followed its predecessor's log
// start, serves nothing below it, and its followers follow it in turn.
func (m *Manager) followRemoteLogStart(p *partition) error {
	man, _ := m.meta.State().Manifest(p.Topic, p.Partition)
	start := min(man.RemoteLogStartOffset, p.HighWatermark())
	if start <= p.Log.LogStartOffset() {
		return nil
	}
	deleted, err := p.Log.DeleteBefore(start)
	if err != nil {
		return fmt.Errorf("moving the local log start to the remote one, %d: %w", start, err)
	}
	m.logger.Info("offload: local log start moved to the remote log start", "topic", p.Topic, "partition", p.Partition,
		"log_start", start, "segments_deleted", len(deleted))
	return nil
}

// expiredSegment is a committed segment remote retention lets go, and why.
type expiredSegment struct {
	segment meta.RemoteSegment
	reason  string
}

// remoteExpired returns the committed segments that retention deletes,
// oldest first, always a prefix of the committed segments so the remote
// log stays contiguous:
//
//   - those wholly below the remote log start offset, which no reader can
//     see ("log_start");
//   - on a topic whose cleanup.policy includes delete, then, while
//     retention.ms is set, those whose newest record is older
//     than it ("retention_ms"); a segment without timestamps has no known
//     age and stops this rule;
//   - on a topic whose cleanup.policy includes delete, then, while
//     retention.bytes is set and the partition (remote
//     segments plus the local data not yet tiered, as Kafka counts it,
//     untieredBytes) is larger than it by at least the segment's size
//     ("retention_bytes").
func remoteExpired(man meta.Manifest, topic meta.Topic, local []hotlog.SegmentInfo, now time.Time) []expiredSegment {
	var committed []meta.RemoteSegment
	for _, s := range man.Segments {
		if s.State == meta.SegmentCommitted {
			committed = append(committed, s)
		}
	}
	var out []expiredSegment
	i := 0
	for ; i < len(committed) && committed[i].EndOffset < man.RemoteLogStartOffset; i++ {
		out = append(out, expiredSegment{committed[i], "log_start"})
	}
	if !meta.Deletes(topic.Configs) {
		// A compact-only topic keeps every key's latest record however
		// old: only remote recompaction takes anything from it.
		return out
	}
	if ms := topicLong(topic, "retention.ms"); ms >= 0 {
		for ; i < len(committed); i++ {
			ts := committed[i].MaxTimestamp
			if ts < 0 || now.UnixMilli()-ts <= ms {
				break
			}
			out = append(out, expiredSegment{committed[i], "retention_ms"})
		}
	}
	if limit := topicLong(topic, "retention.bytes"); limit >= 0 {
		end := tieredEnd(man)
		var total int64
		for _, s := range local {
			total += untieredBytes(s, end)
		}
		for _, s := range committed[i:] {
			total += s.SizeBytes
		}
		for breach := total - limit; i < len(committed) && committed[i].SizeBytes <= breach; i++ {
			breach -= committed[i].SizeBytes
			out = append(out, expiredSegment{committed[i], "retention_bytes"})
		}
	}
	return out
}

// topicLong returns a numeric topic config (meta validated it).
func topicLong(t meta.Topic, name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// beginDelete marks a segment deleting in meta (step 6): readers stop
// seeing it, and for a committed one the remote log start offset moves
// past it.
func (m *Manager) beginDelete(ctx context.Context, p *partition, s meta.RemoteSegment, reason string) error {
	err := m.propose(ctx, meta.BeginSegmentDelete{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(), SegmentID: s.ID,
	})
	if err != nil {
		return fmt.Errorf("begin delete of segment %d (%s): %w", s.BaseOffset, s.ID, err)
	}
	m.metrics.remoteDeletes.WithLabelValues(reason).Inc()
	return nil
}

// finishDeletes completes every deleting entry of p: the bucket manifest
// drops them first (so no batch reader is sent to a missing object), then
// each object is deleted and, last, the entry leaves the manifest in meta.
// After a crash anywhere in between, the entry is still deleting and the
// next pass does it all again; every step is idempotent.
func (m *Manager) finishDeletes(ctx context.Context, p *partition) error {
	man, _ := m.meta.State().Manifest(p.Topic, p.Partition)
	var deleting []meta.RemoteSegment
	now := m.clock.Now().UnixMilli()
	for _, s := range man.Segments {
		// A recompacted segment's object stays until its retire time.
		if s.State == meta.SegmentDeleting && s.RetireAtMs <= now {
			deleting = append(deleting, s)
		}
	}
	if len(deleting) == 0 {
		return nil
	}
	if err := m.publish(ctx, p, false); err != nil {
		return err
	}
	if err := m.reached(stepDeletePublished); err != nil {
		return err
	}
	for _, s := range deleting {
		if err := m.deleteObject(ctx, p.Topic, p.Partition, s.ObjectKey); err != nil {
			return err
		}
		if err := m.reached(stepObjectDeleted); err != nil {
			return err
		}
		err := m.propose(ctx, meta.FinishSegmentDelete{
			Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(), SegmentID: s.ID,
		})
		if err != nil {
			return fmt.Errorf("finish delete of segment %d (%s): %w", s.BaseOffset, s.ID, err)
		}
	}
	return nil
}

// deleteObject deletes one object, retrying failed attempts.
func (m *Manager) deleteObject(ctx context.Context, topic string, partition int32, key string) error {
	_, err := m.retry(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		return m.store.Delete(ctx, key)
	}, func(attempt int, err error) {
		m.metrics.failures.WithLabelValues("delete").Inc()
		m.logger.Warn("offload: object delete failed", "topic", topic, "partition", partition, "key", key, "attempt", attempt, "err", err)
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}
