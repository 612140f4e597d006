package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/segmentobject"
)

// The offload crash gaps (offload/doc.go, "Crashes"), each crossed by
// SIGKILL of a real `strata server` process. No hook in the server stops
// it at a step: the fault proxy in front of versitygw holds one request of
// the upload protocol, so the kill lands after the meta step before that
// request and before the one after it. Between the copy begun and the
// object stored is TestTieringKill9MidUpload's gap (a segment PUT held
// before it reaches the bucket); these are the others: after the object is
// stored and before the commit, after the commit and before the manifest
// is published and any local file deleted, and during remote retention
// between marking a segment deleting and deleting its object. The offload
// crashAt unit test (offload/crash_test.go) covers every gap in-process,
// fast.

// TestOffloadKill9AfterPutBeforeCommit holds the answer of a segment PUT
// that versitygw has stored, and kills the server while it waits: the
// object is in the bucket, its copying entry in meta, no commit. After the
// restart the upload is resumed under the same key without another PUT
// (the store already holds an object of the right size there), and the
// bucket heals.
func TestOffloadKill9AfterPutBeforeCommit(t *testing.T) {
	t.Parallel()
	c := startCrashScenario(t, "kill9-put", nil)
	var held heldKey
	rule := c.proxy.Add(held.match(segmentUpload), objstoretest.StallResponse(nil), 1)
	c.produceRest(t)
	key := c.waitHeld(t, rule, &held)
	c.waitStored(t, key)
	c.server.kill()

	base, _, ok := parseSegmentKey(c.prefix, key)
	if !ok {
		t.Fatalf("the held upload's key %q is not a segment key under %q", key, c.prefix)
	}
	if man := c.bucketManifest(t); man != nil && slices.ContainsFunc(man.Segments, func(s offload.ManifestSegment) bool { return s.BaseOffset >= base }) {
		t.Fatalf("the bucket manifest names a segment at or after %d, whose upload never heard back: %+v", base, man.Segments)
	}
	c.proxy.Clear()
	var putsAgain atomic.Int64 // a rule that counts and never applies
	c.proxy.Add(func(r *http.Request) bool {
		if segmentUpload(r) && objectKey(r) == key {
			putsAgain.Add(1)
		}
		return false
	}, objstoretest.Status(http.StatusInternalServerError), 0)
	c.server.restart()

	man := c.waitHealed(t, base)
	i := slices.IndexFunc(man.Segments, func(s offload.ManifestSegment) bool { return s.BaseOffset == base })
	if i < 0 || man.Segments[i].Key != key {
		t.Errorf("the upload of offset %d was not committed under its key %s: %+v", base, key, man.Segments)
	}
	if n := putsAgain.Load(); n != 0 {
		t.Errorf("%s was PUT %d more times after the restart, want none: the stored object was there", key, n)
	}
	c.checkAllRecords(t, 0)
}

// TestOffloadKill9AfterCommitBeforePublish holds the bucket manifest's PUT
// that follows a commit, and kills the server while it waits: meta has
// committed a segment the bucket manifest does not name yet, and local
// retention (local.retention.bytes far above what is produced) has deleted
// nothing. After the restart local retention is lowered, so the committed
// segments' local files go only now: the manifest is republished to the
// tiered end, the local log start moves, and every record reads back, the
// oldest from the bucket.
func TestOffloadKill9AfterCommitBeforePublish(t *testing.T) {
	t.Parallel()
	c := startCrashScenario(t, "kill9-publish", map[string]*string{"local.retention.bytes": kadmString(strconv.Itoa(64 << 20))})
	var held heldKey
	rule := c.proxy.Add(held.match(manifestUpload), objstoretest.Stall(nil), 0)
	c.produceRest(t)
	c.waitHeld(t, rule, &held)
	// The held publish follows a commit: meta is ahead of the bucket, and
	// no local file has gone.
	cl := newClient(t, c.server)
	tiered, local := listOffset(t, cl, c.topic, -5), listOffset(t, cl, c.topic, -4)
	if end := manifestEnd(c.bucketManifest(t)); tiered <= end || local != 0 {
		t.Fatalf("latest tiered offset %d, bucket manifest ends at %d, local log start %d: want meta ahead of the manifest, nothing deleted locally", tiered, end, local)
	}
	c.server.kill()
	c.proxy.Clear()
	c.server.restart()

	alterTopicConfig(t, c.server, c.topic, "local.retention.bytes", strconv.Itoa(2<<20))
	cl = newClient(t, c.server)
	pollUntil(t, c.server, 2*time.Minute, "local retention deleting tiered segments after the restart", func() (bool, string) {
		local := listOffset(t, cl, c.topic, -4)
		return local > 0, fmt.Sprintf("local log start %d", local)
	})
	c.waitHealed(t, tiered)
	c.checkAllRecords(t, 0)
}

// TestOffloadKill9DuringRemoteDelete holds the DELETE of a segment object
// that remote retention (retention.bytes) expires, and kills the server
// while it waits: meta has marked the segment deleting, and the bucket
// manifest, republished before any delete, no longer names it, but its
// object is still there. After the restart the object is deleted, the
// bucket heals, and every acknowledged record from the log start reads
// back.
func TestOffloadKill9DuringRemoteDelete(t *testing.T) {
	t.Parallel()
	c := startCrashScenario(t, "kill9-delete", map[string]*string{"retention.bytes": kadmString(strconv.Itoa(3 << 20))})
	var held heldKey
	rule := c.proxy.Add(held.match(func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, ".seg")
	}), objstoretest.Stall(nil), 0)
	c.produceRest(t)
	key := c.waitHeld(t, rule, &held)
	c.server.kill()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.store.Head(ctx, key); err != nil {
		t.Fatalf("HEAD %s after the kill: %v, want it there (the proxy never passed the DELETE on)", key, err)
	}
	if man := c.bucketManifest(t); man == nil || slices.ContainsFunc(man.Segments, func(s offload.ManifestSegment) bool { return s.Key == key }) {
		t.Fatalf("the bucket manifest still names %s, whose delete had begun: %+v", key, man)
	}
	c.proxy.Clear()
	c.server.restart()

	pollUntil(t, c.server, 2*time.Minute, "the expired object deleted after the restart", func() (bool, string) {
		_, err := c.store.Head(ctx, key)
		return errors.Is(err, objstore.ErrNotFound), fmt.Sprintf("HEAD %s: %v", key, err)
	})
	// Stop remote retention, so that the log start stays where it is
	// while the records are read back.
	alterTopicConfig(t, c.server, c.topic, "retention.bytes", "-1")
	man := c.waitHealed(t, 0)
	if man.LogStartOffset == 0 {
		t.Fatalf("the bucket manifest's log start is 0: remote retention deleted nothing")
	}
	if earliest := listOffset(t, newClient(t, c.server), c.topic, -2); earliest != man.LogStartOffset {
		t.Errorf("ListOffsets -2 = %d, the bucket manifest starts at %d", earliest, man.LogStartOffset)
	}
	c.checkAllRecords(t, man.LogStartOffset)
}

// crashScenario is a server tiering a one-partition topic through a fault
// proxy, with 1 MiB segments and 2 MiB kept locally, and some segments
// already committed.
type crashScenario struct {
	faultyTiering
	topic               string
	prefix, manifestKey string
	producer            *kgo.Client
	records             []*kgo.Record
	produced            []testRecord
}

// startCrashScenario creates the topic (with extra configs), produces the
// first half of 6 MiB and waits for a first commit.
func startCrashScenario(t *testing.T, topic string, extra map[string]*string) *crashScenario {
	t.Helper()
	c := &crashScenario{faultyTiering: startFaultyTieringServer(t), topic: topic}
	configs := map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
		"segment.ms":            kadmString("2000"),
		"local.retention.bytes": kadmString(strconv.Itoa(2 << 20)),
	}
	for k, v := range extra {
		configs[k] = v
	}
	createTopic(t, c.server, topic, 1, configs)
	c.prefix, c.manifestKey = partitionKeys(t, c.server, topic)
	c.records = tierRecords(6 << 20)
	c.producer = newClient(t, c.server, kgo.ProducerLinger(5*time.Millisecond))
	c.produced = produceAll(t, c.producer, topic, c.records[:len(c.records)/2])
	cl := newClient(t, c.server)
	pollUntil(t, c.server, 2*time.Minute, "a first segment committed and published", func() (bool, string) {
		tiered := listOffset(t, cl, topic, -5)
		end := manifestEnd(c.bucketManifest(t))
		return tiered >= 0 && end == tiered, fmt.Sprintf("latest tiered offset %d, bucket manifest ends at %d", tiered, end)
	})
	return c
}

// partitionKeys is partition 0's prefix and manifest key in the bucket.
func partitionKeys(t *testing.T, s *server, topic string) (prefix, manifestKey string) {
	t.Helper()
	id := topicUUID(t, s, topic)
	return segmentobject.PartitionPrefix("", topic, id, 0), segmentobject.ManifestKey("", topic, id, 0)
}

// produceRest produces the second half of the records.
func (c *crashScenario) produceRest(t *testing.T) {
	t.Helper()
	c.produced = append(c.produced, produceAll(t, c.producer, c.topic, c.records[len(c.records)/2:])...)
}

// heldKey notes the key of the first request a rule holds.
type heldKey struct {
	sync.Mutex
	key string
}

// match wraps a matcher so that the first request it matches is noted.
func (h *heldKey) match(m objstoretest.Matcher) objstoretest.Matcher {
	return func(r *http.Request) bool {
		if !m(r) {
			return false
		}
		h.Lock()
		defer h.Unlock()
		if h.key == "" {
			h.key = objectKey(r)
		}
		return true
	}
}

// waitHeld waits for the rule to hold a request and returns its key.
func (c *crashScenario) waitHeld(t *testing.T, rule *objstoretest.Rule, held *heldKey) string {
	t.Helper()
	select {
	case <-rule.Matched():
	case <-c.server.exited:
		t.Fatalf("strata server exited:\n%s", c.server.log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no request reached the proxy's hold within 2 minutes:\n%s", c.server.log)
	}
	held.Lock()
	defer held.Unlock()
	return held.key
}

// waitStored waits until versitygw holds key: the held PUT has taken
// effect.
func (c *crashScenario) waitStored(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pollUntil(t, c.server, time.Minute, "the held PUT's object stored", func() (bool, string) {
		info, err := c.store.Head(ctx, key)
		return err == nil && info.Size > 0, fmt.Sprintf("HEAD %s: %+v, %v", key, info, err)
	})
}

// bucketManifest reads the partition's manifest around the proxy; nil if
// none is published yet.
func (c *crashScenario) bucketManifest(t *testing.T) *offload.Manifest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	man, err := readBucketManifest(ctx, c.store, c.manifestKey)
	if err != nil {
		t.Fatal(err)
	}
	return man
}

// waitHealed waits until, after a restart, nothing sealed awaits upload,
// the tiered end is at least tieredAtLeast, the bucket manifest is
// published up to it and starts where the broker's remote log does, and
// every segment object under the prefix is one the manifest names (orphans
// swept, deletes finished); then it checks the manifest's shape (no
// duplicate, no overlap, no gap) and returns it.
func (c *crashScenario) waitHealed(t *testing.T, tieredAtLeast int64) *offload.Manifest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var man *offload.Manifest
	pollUntil(t, c.server, 2*time.Minute, "tiering healed after the restart", func() (bool, string) {
		status, ok := tierPartition(c.server, c.topic, 0)
		if !ok {
			return false, "no tier status for the partition"
		}
		m, err := readBucketManifest(ctx, c.store, c.manifestKey)
		if err != nil || m == nil {
			return false, fmt.Sprintf("status %+v; bucket manifest: %v", status, err)
		}
		man = m
		keys, err := listSegmentObjects(ctx, c.store, c.prefix)
		if err != nil {
			return false, err.Error()
		}
		unnamed := unnamedObjects(man, keys)
		done := status.SegmentsAwaitingUpload == 0 && status.HighestTieredOffset >= tieredAtLeast &&
			manifestEnd(man) == status.HighestTieredOffset && man.LogStartOffset == status.RemoteLogStartOffset && len(unnamed) == 0
		return done, fmt.Sprintf("status %+v; manifest [%d, %d]; objects no manifest entry names: %v", status, man.LogStartOffset, manifestEnd(man), unnamed)
	})
	if err := checkManifestShape(man, c.prefix, false); err != nil {
		t.Fatalf("bucket manifest after the restart: %v\n%+v", err, man.Segments)
	}
	cl := newClient(t, c.server)
	if local := listOffset(t, cl, c.topic, -4); local > manifestEnd(man)+1 {
		t.Errorf("local log start %d is past the tiered end %d: offsets in between are nowhere", local, manifestEnd(man)+1)
	}
	return man
}

// checkAllRecords reads the partition from its start, which is from, and
// checks that it holds every acknowledged record from offset from on, byte
// for byte, and no other.
func (c *crashScenario) checkAllRecords(t *testing.T, from int64) {
	t.Helper()
	var want []testRecord
	for _, r := range c.produced {
		if r.offset >= from {
			want = append(want, r)
		}
	}
	got := consumeAll(t, c.server, c.topic, len(want))
	// checkSameRecords wants offsets dense from 0: count them from from.
	for _, rs := range [][]testRecord{want, got} {
		for i := range rs {
			rs[i].offset -= from
		}
	}
	checkSameRecords(t, want, got)
}

// manifestEnd is the last offset a bucket manifest names, -1 for none.
func manifestEnd(man *offload.Manifest) int64 {
	if man == nil || len(man.Segments) == 0 {
		return -1
	}
	return man.Segments[len(man.Segments)-1].EndOffset
}

// manifestUpload matches the PUT of a bucket manifest.
func manifestUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifest.json")
}

// alterTopicConfig sets one config of a topic.
func alterTopicConfig(t *testing.T, s *server, topic, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(newClient(t, s)).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadmString(value)}}, topic)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("setting %s=%s on %s: %v", name, value, topic, err)
	}
}
