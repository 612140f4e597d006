package ingest

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stratalog/strata/meta"
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
func (s *partitionSettings) produceOptions(now time.Time) record.ProduceOptions {
	return record.ProduceOptions{
		MaxDecompressedBytes: max(s.maxMessageBytes, record.MaxDecompressedBytes),
		KeysRequired:         s.compacted,
		CheckTimestamps:      !s.logAppendTime && (s.timestampBeforeMaxMs != math.MaxInt64 || s.timestampAfterMaxMs != math.MaxInt64),
		Now:                  now.UnixMilli(),
		TimestampBeforeMaxMs: s.timestampBeforeMaxMs,
		TimestampAfterMaxMs:  s.timestampAfterMaxMs,
	}
}

// compactedTopic reports whether the topic's cleanup.policy includes
// compact, where Kafka refuses records without a key.
func compactedTopic(t meta.Topic) bool {
	policy, _ := t.Config("cleanup.policy")
	return slices.Contains(strings.Split(policy, ","), "compact")
}
