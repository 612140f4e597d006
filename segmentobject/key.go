package segmentobject

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Where the objects go in the bucket (DESIGN §4). offload writes these keys
// and remotefetch and batch jobs read them, so the layout lives here, beside
// the format, and is built in one place:
//
//	[<key prefix>/]<topic dir>/<partition>/<20-digit base offset>-<segment id>.seg
//	[<key prefix>/]<topic dir>/<partition>/manifest.json
//
// The topic dir is <topic>-<topic id>. The topic id keeps a deleted and
// recreated topic's objects apart; the segment id keeps two uploads of the
// same offsets apart (a retry writes the same key, a new upload after an
// abandoned one writes a new key).
//
// No key component may be longer than MaxKeyComponent bytes, the longest
// file name most file systems take (a file:// store makes each component a
// directory or file name). A topic dir of a name of up to MaxTopicDirName
// bytes fits whole, so every bucket written before this rule keeps its keys.
// Kafka allows names of up to 249 bytes: a longer one keeps its first
// MaxTopicDirName bytes in the topic dir (and a name starting with
// ".strata", whose dir would start with ".strata-", which objstore
// reserves on every backend, starts with "_strata" there). The topic id
// still makes the dir unique; the partition's manifest holds the whole
// name, which is how a reader that finds the dir by listing tells such
// names apart (remotefetch.OpenBucketReader).
//
// A key prefix of up to MaxKeyPrefix bytes keeps every key, of any topic,
// partition and segment, within S3's 1,024 bytes.

// ManifestName is the bucket manifest's name inside a partition's prefix.
const ManifestName = "manifest.json"

// MaxKeyComponent is the longest '/'-separated component of a key, in
// bytes.
const MaxKeyComponent = 255

// MaxTopicDirName is the longest part of a topic name that the topic dir
// holds: MaxKeyComponent less "-<topic id>".
const MaxTopicDirName = MaxKeyComponent - 1 - 36

// MaxKeyPrefix is the longest key prefix that keeps every key of every
// topic and partition within S3's limit of 1,024 bytes.
const MaxKeyPrefix = 1024 - len("/")*3 - MaxKeyComponent - len("2147483647") - segmentNameLength

const (
	segmentSuffix = ".seg"
	// segmentNameLength is the length of "<20 digits>-<segment id>.seg".
	segmentNameLength = 20 + 1 + 36 + len(segmentSuffix)
	// reservedPrefix starts the names a file:// store gives to objects
	// still being written; objstore refuses it at the start of any
	// component (objstore/key.go).
	reservedPrefix = ".strata-"
)

// TopicDirName is the part of the topic name its topic dir starts with:
// the whole name, or its first MaxTopicDirName bytes; a name that starts
// with ".strata" (its dir would start with ".strata-", which objstore
// reserves) starts with "_strata" instead. Topic names are ASCII (letters,
// digits, '.', '_' and '-'), so a cut never splits a character.
func TopicDirName(topic string) string {
	if len(topic) > MaxTopicDirName {
		topic = topic[:MaxTopicDirName]
	}
	if strings.HasPrefix(topic+"-", reservedPrefix) {
		topic = "_" + topic[1:]
	}
	return topic
}

// TopicDir is the key component under which a topic's objects live:
// <topic>-<topic id>, the name cut to MaxTopicDirName bytes.
func TopicDir(topic string, topicID uuid.UUID) string {
	return TopicDirName(topic) + "-" + topicID.String()
}

// PartitionPrefix returns the prefix, ending in '/', under which every
// object of a partition lives. keyPrefix is "" or a key with no leading or
// trailing '/'.
func PartitionPrefix(keyPrefix, topic string, topicID uuid.UUID, partition int32) string {
	p := TopicDir(topic, topicID) + "/" + strconv.Itoa(int(partition)) + "/"
	if keyPrefix != "" {
		p = keyPrefix + "/" + p
	}
	return p
}

// ManifestKey returns the key of a partition's bucket manifest.
func ManifestKey(keyPrefix, topic string, topicID uuid.UUID, partition int32) string {
	return PartitionPrefix(keyPrefix, topic, topicID, partition) + ManifestName
}

// SegmentKey returns the key of a segment object under a partition prefix.
func SegmentKey(prefix string, baseOffset int64, id uuid.UUID) string {
	return fmt.Sprintf("%s%020d-%s%s", prefix, baseOffset, id, segmentSuffix)
}

// ParseSegmentKey reports whether key is a segment object directly under
// prefix, and its base offset and segment id.
func ParseSegmentKey(prefix, key string) (baseOffset int64, id uuid.UUID, ok bool) {
	name, found := strings.CutPrefix(key, prefix)
	if !found {
		return 0, uuid.Nil, false
	}
	name, found = strings.CutSuffix(name, segmentSuffix)
	if !found || len(name)+len(segmentSuffix) != segmentNameLength || name[20] != '-' {
		return 0, uuid.Nil, false
	}
	if strings.ContainsFunc(name[:20], func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, uuid.Nil, false // ParseInt would take a sign
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, uuid.Nil, false
	}
	id, err = uuid.Parse(name[21:])
	if err != nil {
		return 0, uuid.Nil, false
	}
	return base, id, true
}

// CheckKeyPrefix reports why keyPrefix cannot go before the keys, if it
// cannot: it must be a key (no leading, trailing or doubled '/', no "." or
// ".." component, none longer than MaxKeyComponent bytes or starting with
// ".strata-") of at most MaxKeyPrefix bytes.
func CheckKeyPrefix(keyPrefix string) error {
	if keyPrefix == "" {
		return nil
	}
	if len(keyPrefix) > MaxKeyPrefix {
		return fmt.Errorf("%d bytes is longer than %d, which would take the longest keys past S3's 1024", len(keyPrefix), MaxKeyPrefix)
	}
	for component := range strings.SplitSeq(keyPrefix, "/") {
		switch {
		case component == "":
			return fmt.Errorf("%q has a leading, trailing or doubled '/'", keyPrefix)
		case component == "." || component == "..":
			return fmt.Errorf("%q has a %q component", keyPrefix, component)
		case len(component) > MaxKeyComponent:
			return fmt.Errorf("%q has a component longer than %d bytes", keyPrefix, MaxKeyComponent)
		case strings.HasPrefix(component, reservedPrefix):
			return fmt.Errorf("%q has a component starting with %q, which the file:// store reserves", keyPrefix, reservedPrefix)
		}
	}
	return nil
}
