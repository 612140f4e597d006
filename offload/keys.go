package offload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Key layout in the store (DESIGN §4):
//
//	[<KeyPrefix>/]<topic>-<topic id>/<partition>/<20-digit base offset>-<segment id>.seg
//	[<KeyPrefix>/]<topic>-<topic id>/<partition>/manifest.json
//
// The topic id keeps a deleted and recreated topic's objects apart; the
// segment id keeps two uploads of the same offsets apart (a retry writes the
// same key, a new upload after an abandoned one writes a new key).

// ManifestName is the bucket manifest's name inside a partition's prefix.
const ManifestName = "manifest.json"

const segmentSuffix = ".seg"

// PartitionPrefix returns the prefix, ending in '/', under which every
// object of a partition lives.
func PartitionPrefix(keyPrefix, topic string, topicID uuid.UUID, partition int32) string {
	p := fmt.Sprintf("%s-%s/%d/", topic, topicID, partition)
	if keyPrefix != "" {
		p = keyPrefix + "/" + p
	}
	return p
}

// ManifestKey returns the key of a partition's bucket manifest.
func ManifestKey(keyPrefix, topic string, topicID uuid.UUID, partition int32) string {
	return PartitionPrefix(keyPrefix, topic, topicID, partition) + ManifestName
}

// segmentKey returns the key of a segment object under a partition prefix.
func segmentKey(prefix string, baseOffset int64, id uuid.UUID) string {
	return fmt.Sprintf("%s%020d-%s%s", prefix, baseOffset, id, segmentSuffix)
}

// parseSegmentKey reports whether key is a segment object directly under
// prefix, and its base offset and segment id.
func parseSegmentKey(prefix, key string) (baseOffset int64, id uuid.UUID, ok bool) {
	name, found := strings.CutPrefix(key, prefix)
	if !found {
		return 0, uuid.Nil, false
	}
	name, found = strings.CutSuffix(name, segmentSuffix)
	if !found || len(name) != 20+1+36 || name[20] != '-' {
		return 0, uuid.Nil, false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || base < 0 {
		return 0, uuid.Nil, false
	}
	id, err = uuid.Parse(name[21:])
	if err != nil {
		return 0, uuid.Nil, false
	}
	return base, id, true
}
