package segmentobject

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestSegmentKeys(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c")
	topicID := uuid.MustParse("6f1c0000-0000-4000-8000-000000000001")
	prefix := PartitionPrefix("cluster-a", "orders", topicID, 3)
	key := SegmentKey(prefix, 1200, id)
	if want := "cluster-a/orders-6f1c0000-0000-4000-8000-000000000001/3/00000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg"; key != want {
		t.Fatalf("key %q, want %q", key, want)
	}
	if base, got, ok := ParseSegmentKey(prefix, key); !ok || base != 1200 || got != id {
		t.Fatalf("parse: %d %v %v", base, got, ok)
	}
	for _, bad := range []string{
		prefix + ManifestName,
		prefix + "00000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.tmp",
		prefix + "0000000000000000120x-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg",
		prefix + "sub/00000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg",
		PartitionPrefix("cluster-a", "orders", topicID, 30) + "00000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg",
	} {
		if _, _, ok := ParseSegmentKey(prefix, bad); ok {
			t.Errorf("%q parsed as a segment key", bad)
		}
	}
	if got := ManifestKey("", "orders", topicID, 3); got != "orders-6f1c0000-0000-4000-8000-000000000001/3/manifest.json" {
		t.Fatalf("manifest key %q", got)
	}
}

// TestKeysOfEveryLegalTopic checks the key layout's promise for topic
// names of every legal length: no component longer than MaxKeyComponent
// bytes and none starting with the reserved ".strata-", every key within
// S3's 1,024 bytes at the longest key prefix, names that fit kept whole
// (so existing buckets keep their keys), and the topic dirs of two topics
// apart whenever their ids are.
func TestKeysOfEveryLegalTopic(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c")
	topicID := uuid.MustParse("6f1c0000-0000-4000-8000-000000000001")
	longestPrefix := strings.Repeat("p", MaxKeyComponent) + "/" + strings.Repeat("q", MaxKeyComponent) + "/"
	longestPrefix += strings.Repeat("r", MaxKeyPrefix-len(longestPrefix))
	if err := CheckKeyPrefix(longestPrefix); err != nil {
		t.Fatalf("the longest key prefix is refused: %v", err)
	}
	for _, fill := range []string{"t", ".strata-"} {
		for n := 1; n <= 249; n++ {
			topic := strings.Repeat(fill, n/len(fill)+1)[:n]
			for _, keyPrefix := range []string{"", longestPrefix} {
				prefix := PartitionPrefix(keyPrefix, topic, topicID, 2147483647)
				for _, key := range []string{SegmentKey(prefix, 1<<62, id), ManifestKey(keyPrefix, topic, topicID, 2147483647)} {
					if len(key) > 1024 {
						t.Fatalf("topic of %d bytes, prefix of %d: key of %d bytes", n, len(keyPrefix), len(key))
					}
					for c := range strings.SplitSeq(key, "/") {
						if c == "" || len(c) > MaxKeyComponent || strings.HasPrefix(c, reservedPrefix) {
							t.Fatalf("topic %q: key %q has the component %q", topic, key, c)
						}
					}
				}
			}
			dir := TopicDir(topic, topicID)
			if fits := n <= MaxTopicDirName && !strings.HasPrefix(topic, ".strata"); fits && dir != topic+"-"+topicID.String() {
				t.Fatalf("topic %q fits whole, but its dir is %q", topic, dir)
			}
			if !strings.HasPrefix(dir, TopicDirName(topic)+"-") || !strings.HasSuffix(dir, "-"+topicID.String()) {
				t.Fatalf("topic %q: dir %q is not <TopicDirName>-<id>", topic, dir)
			}
		}
	}
	long := strings.Repeat("x", 249)
	if TopicDir(long, topicID) == TopicDir(long[:230], id) {
		t.Fatal("two long names that share their first bytes, under different ids, share a dir")
	}
	if TopicDir(long, topicID) != TopicDir(long[:230], topicID) {
		t.Fatal("the dir of a long name depends on more than its first MaxTopicDirName bytes and its id")
	}
}

func TestCheckKeyPrefix(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"", "cluster-a", "a/b/c"} {
		if err := CheckKeyPrefix(good); err != nil {
			t.Errorf("CheckKeyPrefix(%q): %v", good, err)
		}
	}
	for _, bad := range []string{
		"/a", "a/", "a//b", "a/../b", ".", ".strata-x",
		strings.Repeat("a", MaxKeyComponent+1),
		strings.Repeat("a/", MaxKeyPrefix/2+1) + "a",
	} {
		if err := CheckKeyPrefix(bad); err == nil {
			t.Errorf("CheckKeyPrefix(%q) accepted it", bad)
		}
	}
}

// FuzzParseSegmentKey feeds arbitrary keys to the parser: what it accepts
// must be exactly the key SegmentKey builds from what it returns.
func FuzzParseSegmentKey(f *testing.F) {
	prefix := PartitionPrefix("", "orders", uuid.MustParse("6f1c0000-0000-4000-8000-000000000001"), 3)
	f.Add(SegmentKey(prefix, 1200, uuid.MustParse("0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c")))
	f.Add(prefix + ManifestName)
	f.Add(prefix + "-0000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg")
	f.Add(prefix + "+0000000000000001200-0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c.seg")
	f.Fuzz(func(t *testing.T, key string) {
		base, id, ok := ParseSegmentKey(prefix, key)
		if !ok {
			return
		}
		if base < 0 {
			t.Fatalf("%q parsed to base offset %d", key, base)
		}
		if rebuilt := SegmentKey(prefix, base, id); !strings.EqualFold(rebuilt, key) {
			t.Fatalf("%q parsed to %d, %s, which make %q", key, base, id, rebuilt)
		}
	})
}
