package replica

import (
	"math"
	"strconv"
	"time"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/record"
)

// produceOptions are the checks a produced batch gets from the topic's
// settings (record.ValidateProduced). A compressed batch may decompress to
// record.MaxDecompressedBytes, or to max.message.bytes when the topic allows
// larger batches: what an uncompressed batch may hold, a compressed one may
// hold too. Validation streams, so the cap bounds time, never memory.
//
// On a CreateTime topic every record's timestamp must be within
// message.timestamp.before.max.ms behind and message.timestamp.after.max.ms
// ahead of now, the broker's clock, as Kafka checks it (INVALID_TIMESTAMP);
// both default to unbounded.
func (s *partitionSettings) produceOptions() record.ProduceOptions {
	opts := record.ProduceOptions{
		MaxDecompressedBytes: max(s.maxMessageBytes, record.MaxDecompressedBytes),
		KeysRequired:         s.compacted,
		CheckTimestamps:      !s.logAppendTime && (s.timestampBeforeMaxMs != math.MaxInt64 || s.timestampAfterMaxMs != math.MaxInt64),
		TimestampBeforeMaxMs: s.timestampBeforeMaxMs,
		TimestampAfterMaxMs:  s.timestampAfterMaxMs,
	}
	if opts.CheckTimestamps {
		// The clock is read only for the checks, which are off by default.
		opts.Now = time.Now().UnixMilli()
	}
	return opts
}

// compactedTopic reports whether the topic's cleanup.policy includes
// compact, where Kafka refuses records without a key.
func compactedTopic(t meta.Topic) bool {
	return meta.Compacted(t.Configs)
}

// cleaningPolicy is how the log cleaner treats the topic's partitions.
func cleaningPolicy(t meta.Topic, tiered bool) compact.Policy {
	ratio, _ := t.Config("min.cleanable.dirty.ratio")
	minRatio, _ := strconv.ParseFloat(ratio, 64)
	return compact.Policy{
		Compact:           compactedTopic(t),
		DeleteRetention:   durationMs(topicInt(t, "delete.retention.ms")),
		MinCompactionLag:  durationMs(topicInt(t, "min.compaction.lag.ms")),
		MaxCompactionLag:  durationMs(topicInt(t, "max.compaction.lag.ms")),
		MinCleanableRatio: minRatio,
		KeepTombstones:    tiered,
	}
}

// durationMs is ms milliseconds, saturating where a Duration ends.
func durationMs(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// partitionSettings are the topic configs the partition applies on its own.
type partitionSettings struct {
	maxMessageBytes int
	logAppendTime   bool
	compacted       bool // cleanup.policy includes compact: records need keys
	// recompress says compression.type names a codec (not producer):
	// batches are stored in codec, recompressed when sent otherwise.
	recompress bool
	codec      record.Codec
	// cleaning is the topic's compaction settings, for the log cleaner.
	cleaning compact.Policy
	// message.timestamp.before.max.ms and .after.max.ms, for CreateTime.
	timestampBeforeMaxMs, timestampAfterMaxMs int64
	// minInsyncReplicas is min.insync.replicas: the smallest ISR an
	// acks=all produce is written to and acknowledged by.
	minInsyncReplicas int
	// schemaValidated: confluent.key.schema.validation or
	// .value.schema.validation is on, so produce asks the registry.
	schemaValidated bool
	// leaderThrottled and followerThrottled: leader. and
	// follower.replication.throttled.replicas name this broker's replica of
	// the partition (throttle.go).
	leaderThrottled, followerThrottled bool
}

// logSettings are the topic configs the hot log is opened with.
type logSettings struct {
	segmentBytes       int64
	segmentMs          int64
	segmentJitterMs    int64
	preallocate        bool
	fileDeleteDelayMs  int64
	indexIntervalBytes int32
	segmentIndexBytes  int32
	retentionMs        int64
	retentionBytes     int64
	periodicFlush      bool
	flushMessages      int64
	flushMs            int64
	// tiered: the log keeps local retention (local.retention.ms, .bytes)
	// and deletes only what the bucket holds; offload uploads it.
	tiered bool
}

func topicInt(t meta.Topic, name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func topicBool(t meta.Topic, name string) bool {
	v, _ := t.Config(name)
	b, _ := strconv.ParseBool(v)
	return b
}

// settingsOf is the settings of partition's replica on broker; tiered says
// the partition's log tiers (Manager.logSettingsOf decides it).
func settingsOf(t meta.Topic, partition, broker int32, tiered bool) *partitionSettings {
	timestampType, _ := t.Config("message.timestamp.type")
	leaderThrottled, _ := t.Config(meta.LeaderThrottledReplicas)
	followerThrottled, _ := t.Config(meta.FollowerThrottledReplicas)
	compression, _ := t.Config("compression.type")
	codec, err := record.ParseCodec(compression)
	if compression == "uncompressed" {
		codec, err = record.CodecNone, nil
	}
	return &partitionSettings{
		recompress:      err == nil,
		codec:           codec,
		maxMessageBytes: int(topicInt(t, "max.message.bytes")),
		logAppendTime:   timestampType == "LogAppendTime",
		compacted:       compactedTopic(t),
		cleaning:        cleaningPolicy(t, tiered),

		timestampBeforeMaxMs: topicInt(t, "message.timestamp.before.max.ms"),
		timestampAfterMaxMs:  topicInt(t, "message.timestamp.after.max.ms"),
		minInsyncReplicas:    int(topicInt(t, "min.insync.replicas")),
		schemaValidated:      topicBool(t, "confluent.key.schema.validation") || topicBool(t, "confluent.value.schema.validation"),

		leaderThrottled:   meta.ThrottledReplica(leaderThrottled, partition, broker),
		followerThrottled: meta.ThrottledReplica(followerThrottled, partition, broker),
	}
}

// logSettingsOf derives the hot log configuration from a topic. A tiered
// partition's local retention is local.retention.ms and .bytes
// (offload.LocalRetention; the topic-wide retention while
// remote.log.copy.disable is true); total retention is then remote,
// offload's. An
// untiered one keeps the topic's total retention (retention.ms,
// retention.bytes): local data is the only copy. A topic that sets flush.ms or
// flush.messages explicitly opts out of fsync before ack and gets Kafka's
// periodic flushing instead.
func logSettingsOf(t meta.Topic, tiered bool) logSettings {
	_, flushMessagesSet := t.Configs["flush.messages"]
	_, flushMsSet := t.Configs["flush.ms"]
	s := logSettings{
		segmentBytes:       topicInt(t, "segment.bytes"),
		segmentMs:          topicInt(t, "segment.ms"),
		segmentJitterMs:    topicInt(t, "segment.jitter.ms"),
		preallocate:        topicBool(t, "preallocate"),
		fileDeleteDelayMs:  topicInt(t, "file.delete.delay.ms"),
		indexIntervalBytes: int32(topicInt(t, "index.interval.bytes")),
		segmentIndexBytes:  int32(topicInt(t, "segment.index.bytes")),
		retentionMs:        topicInt(t, "retention.ms"),
		retentionBytes:     topicInt(t, "retention.bytes"),
		periodicFlush:      flushMessagesSet || flushMsSet,
		flushMessages:      topicInt(t, "flush.messages"),
		flushMs:            topicInt(t, "flush.ms"),
		tiered:             tiered,
	}
	if tiered {
		s.retentionMs, s.retentionBytes = offload.LocalRetention(t)
	}
	if !meta.Deletes(t.Configs) && !tiered {
		// A compact-only topic keeps every key's latest record however
		// old. Tiered, its hot log still keeps only the local retention:
		// the bucket keeps the rest, and remote retention does not apply
		// (offload).
		s.retentionMs, s.retentionBytes = -1, -1
	}
	if compactedTopic(t) {
		// Kafka rolls a compacted topic's active segment once its first
		// record is max.compaction.lag.ms old, so that the cleaner, which
		// never cleans the active segment, can meet the lag.
		s.segmentMs = min(s.segmentMs, topicInt(t, "max.compaction.lag.ms"))
	}
	return s
}

// hotlogConfig is the hot log configuration of partition index under s,
// with its first segment's cut (firstSegmentCut).
func (s logSettings) hotlogConfig(index int32) hotlog.Config {
	c := hotlog.DefaultConfig()
	c.SegmentBytes = s.segmentBytes
	c.FirstSegmentCut = firstSegmentCut(index)
	c.SegmentMs = s.segmentMs
	c.SegmentJitterMs = s.segmentJitterMs
	c.Preallocate = s.preallocate
	c.FileDeleteDelayMs = s.fileDeleteDelayMs
	c.IndexIntervalBytes = s.indexIntervalBytes
	c.SegmentIndexBytes = s.segmentIndexBytes
	c.RetentionMs = s.retentionMs
	c.RetentionBytes = s.retentionBytes
	if s.periodicFlush {
		c.Durability = hotlog.SyncPeriodically
		c.FlushMessages = s.flushMessages
		c.FlushMs = s.flushMs
	}
	return c
}

// firstSegmentCut is the share of segment.bytes by which partition
// index's first segment rolls sooner (hotlog.Config.FirstSegmentCut): half
// of hotlog.Spread(index), so that a topic's
// partitions, filled at one rate when written round-robin, roll spread
// evenly over half a segment's filling however many there are, rather
// than all in the same second (docs/bench.md, "First segments cut by the
// partition's index"); partition 0 rolls at segment.bytes. A function of
// the index alone: every replica of a partition ends its segments at the
// same offsets, so that a new leader's next segment starts at the
// bucket's end (one that straddles it uploads only its part past it,
// after a scan of its batch headers).
func firstSegmentCut(index int32) float64 {
	return hotlog.Spread(uint64(index)) / 2
}
