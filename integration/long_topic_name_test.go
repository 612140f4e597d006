package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/segmentobject"
)

// longTopicName is a topic name of Kafka's longest legal length, 249
// characters: <topic>-<topic id> would be 286 bytes, past the 255 a key
// component may have.
func longTopicName(fill string) string {
	return strings.Repeat(fill, 249/len(fill)+1)[:249]
}

// TestLongTopicNameFileBucket tiers a topic of a 249-character name to the
// default file:// bucket and reads it back.
func TestLongTopicNameFileBucket(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	longTopicScenario(t, s, "file://"+s.dataDir+"/bucket", objstore.DefaultConfig(), nil)
}

// TestLongTopicNameVersityGW tiers a topic of a 249-character name to an
// S3 bucket on versitygw, under a key prefix, and reads it back.
func TestLongTopicNameVersityGW(t *testing.T) {
	t.Parallel()
	gw := startVersityGW(t)
	env := bucketEnv(gw)
	url := objstoretest.S3URL(gw.Endpoint, testBucket, "cluster")
	s := startServerEnv(t, freePort(t), env, "--bucket", url)
	longTopicScenario(t, s, url, gw.Config(), env)
}

// longTopicScenario produces 8 MiB to a one-partition topic of a
// 249-character name with 1 MiB segments and 2 MiB kept locally, and
// proves that it tiers: segments uploaded under keys of no component
// longer than 255 bytes, the manifest where segmentobject.ManifestKey says,
// local segments deleted, the partition never stalled. Then a consumer
// reads every record back from offset 0 (the first ones from the bucket),
// and `strata export` reads the tiered ones straight from the bucket,
// finding the partition by listing. The test reads the bucket as storeCfg
// opens it, and export as env (credentials) lets it.
func longTopicScenario(t *testing.T, s *server, bucketURL string, storeCfg objstore.Config, env []string) {
	topic := longTopicName("long.topic_name-")
	createTopic(t, s, topic, 1, map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
		"segment.ms":            kadmString("2000"),
		"local.retention.bytes": kadmString(strconv.Itoa(2 << 20)),
	})
	id := topicUUID(t, s, topic)
	producer := newClient(t, s, kgo.ProducerLinger(5*time.Millisecond))
	produced := produceAll(t, producer, topic, tierRecords(8<<20))

	cl := newClient(t, s)
	pollUntil(t, s, 2*time.Minute, "local segments deleted after their upload", func() (bool, string) {
		st, ok := tierPartition(s, topic, 0)
		if ok && st.Stalled {
			t.Fatalf("the long topic's partition is stalled: %+v\n%s", st, s.log)
		}
		local := listOffset(t, cl, topic, -4)
		return local > 0, fmt.Sprintf("earliest local offset %d; status %+v", local, st)
	})
	tiered := listOffset(t, cl, topic, -5)
	if local := listOffset(t, cl, topic, -4); tiered < local-1 {
		t.Fatalf("latest tiered offset %d, but the local log starts at %d", tiered, local)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := objstore.Open(ctx, bucketURL, storeCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	man, err := readBucketManifest(ctx, store, segmentobject.ManifestKey("", topic, id, 0))
	if err != nil || man == nil {
		t.Fatalf("the bucket manifest at %s: %v, %v", segmentobject.ManifestKey("", topic, id, 0), man, err)
	}
	if man.Topic != topic || len(man.Segments) == 0 {
		t.Fatalf("the bucket manifest names topic %q with %d segments, want %q with some", man.Topic, len(man.Segments), topic)
	}
	prefix := segmentobject.PartitionPrefix("", topic, id, 0)
	if err := checkManifestShape(man, prefix, false); err != nil {
		t.Fatalf("bucket manifest: %v", err)
	}
	keys, err := listSegmentObjects(ctx, store, prefix)
	if err != nil || len(keys) < len(man.Segments) {
		t.Fatalf("segment objects under %s: %d, %v; want at least %d", prefix, len(keys), err, len(man.Segments))
	}
	for _, key := range keys {
		for c := range strings.SplitSeq(key, "/") {
			if len(c) > segmentobject.MaxKeyComponent {
				t.Fatalf("key %s has a component of %d bytes", key, len(c))
			}
		}
	}

	checkSameRecords(t, produced, consumeAll(t, s, topic, len(produced)))
	// Export what the manifest read above names: the one export reads may
	// name more (published since), never less.
	checkExport(t, bucketURL, env, topic, produced, man.Segments[len(man.Segments)-1].EndOffset+1)
}
