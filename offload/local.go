package offload

import (
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// The hot log's side of tiering: which local segments may be deleted, and
// how long a tiered topic keeps them.

// LocalDeletionHook returns the hotlog.Config.CanDelete of a tiered
// partition: a sealed segment may leave the hot disk only once committed
// segments in meta hold every offset of it (offsets below the remote log
// start offset count as held: total retention has let them go). state is
// meta's local state (meta.Node.State). The hook reads only that state, so
// it is cheap enough to run under the log's writer lock, and it needs no
// Manager: the log can be opened before the partition is added.
//
// While the topic's remote.log.copy.disable is true the bucket takes no
// more segments, and the hook lets the hot log's retention, then the
// topic-wide one (LocalRetention), delete any sealed segment, as Kafka
// does (KIP-950): else nothing after the last upload could ever leave the
// disk, which would fill and refuse every partition's produce. It does so
// only once retention, the log's retention in force (hotlog.Log.Retention),
// is that one: until the log's config follows the change, its retention is
// the local one, which would delete what only the log holds after
// local.retention.ms (an hour by default) rather than retention.ms.
func LocalDeletionHook(state func() *meta.State, topic string, partition int32, retention func() (ms, bytes int64)) func(hotlog.SegmentInfo) bool {
	return func(info hotlog.SegmentInfo) bool {
		st := state()
		if t, ok := st.Topic(topic); ok && meta.CopyDisabled(t.Configs) {
			ms, bytes := LocalRetention(t)
			if logMs, logBytes := retention(); logMs == ms && logBytes == bytes {
				return true
			}
		}
		man, ok := st.Manifest(topic, partition)
		return ok && covered(man, info.BaseOffset, info.NextOffset)
	}
}

// covered reports whether the committed segments of man hold every offset
// in [base, next), offsets below the remote log start offset included.
func covered(man meta.Manifest, base, next int64) bool {
	at := max(base, man.RemoteLogStartOffset)
	for _, s := range man.Segments { // sorted by base offset
		if at >= next {
			break
		}
		if s.State == meta.SegmentCommitted && s.BaseOffset <= at && s.EndOffset >= at {
			at = s.EndOffset + 1
		}
	}
	return at >= next
}

// LocalRetention returns the hot log retention of a tiered topic, for
// hotlog.Config.RetentionMs and RetentionBytes: local.retention.ms and
// local.retention.bytes, where -2 means retention.ms and retention.bytes,
// capped at them (meta lets a default exceed them, and a partition never
// keeps data locally that it would not keep at all). While
// remote.log.copy.disable is true it is the topic-wide retention (none
// on a compact-only topic): what the hot log holds past the bucket's end
// is then the only copy (meta refuses an explicit local retention other
// than that).
func LocalRetention(t meta.Topic) (ms, bytes int64) {
	if meta.CopyDisabled(t.Configs) {
		if !meta.Deletes(t.Configs) {
			return -1, -1
		}
		return topicLong(t, "retention.ms"), topicLong(t, "retention.bytes")
	}
	return localLimit(topicLong(t, "local.retention.ms"), topicLong(t, "retention.ms")),
		localLimit(topicLong(t, "local.retention.bytes"), topicLong(t, "retention.bytes"))
}

// localLimit resolves a local retention against the total one (-1: no
// limit).
func localLimit(local, total int64) int64 {
	switch {
	case local == -2:
		return total
	case total >= 0 && (local < 0 || local > total):
		return total
	}
	return local
}
