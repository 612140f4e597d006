package ingest

import (
	"slices"
	"strings"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// produceOptions are the checks a produced batch gets from the topic's
// settings (record.ValidateProduced). A compressed batch may decompress to
// record.MaxDecompressedBytes, or to max.message.bytes when the topic allows
// larger batches: what an uncompressed batch may hold, a compressed one may
// hold too. Validation streams, so the cap bounds time, never memory.
func (s *partitionSettings) produceOptions() record.ProduceOptions {
	return record.ProduceOptions{
		MaxDecompressedBytes: max(s.maxMessageBytes, record.MaxDecompressedBytes),
		KeysRequired:         s.compacted,
	}
}

// compactedTopic reports whether the topic's cleanup.policy includes
// compact, where Kafka refuses records without a key.
func compactedTopic(t meta.Topic) bool {
	policy, _ := t.Config("cleanup.policy")
	return slices.Contains(strings.Split(policy, ","), "compact")
}
