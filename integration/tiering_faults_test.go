package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/segmentobject"
)

// TestTieringKill9MidUpload kills the server with SIGKILL while a segment
// PUT hangs in a fault proxy in front of versitygw, plants an orphan (a
// segment object of the valid key form that no manifest entry names, as a
// crashed or deposed leader's late PUT would leave) while it is down, and
// restarts it. It proves that the interrupted upload is finished after the
// restart (under the key its copying entry recorded), that the orphan is
// swept, that the bucket manifest stays well formed (no duplicate segment,
// no overlap, contiguous from the log start, naming every segment object in
// the bucket), and that every acknowledged record reads back from offset 0
// byte for byte.
func TestTieringKill9MidUpload(t *testing.T) {
	t.Parallel()
	tb := startFaultyTieringServer(t)
	s, proxy, store := tb.server, tb.proxy, tb.store
	const topic = "kill9"
	prefix, manifestKey := tb.createTopic(t, topic, 2<<20)

	records := tierRecords(6 << 20)
	half := len(records) / 2
	producer := newClient(t, s, kgo.ProducerLinger(5*time.Millisecond))
	produced := produceAll(t, producer, topic, records[:half])

	// Let some uploads commit first, so the crash leaves committed
	// segments, a copying entry and untiered sealed segments behind.
	cl := newClient(t, s)
	pollUntil(t, s, 2*time.Minute, "a first segment committed to the bucket", func() (bool, string) {
		tiered := listOffset(t, cl, topic, -5)
		return tiered >= 0, fmt.Sprintf("latest tiered offset %d", tiered)
	})

	// Segment PUTs (or multipart calls, should the objects grow past the
	// store's part size) hang in the proxy from now on, retries included,
	// so nothing reaches the bucket before the kill however slow the
	// machine; note the key of the first.
	var stalled struct {
		sync.Mutex
		key string
	}
	stall := proxy.Add(func(r *http.Request) bool {
		if !segmentUpload(r) {
			return false
		}
		stalled.Lock()
		defer stalled.Unlock()
		if stalled.key == "" {
			stalled.key = objectKey(r)
		}
		return true
	}, objstoretest.Stall(nil), 0)
	produced = append(produced, produceAll(t, producer, topic, records[half:])...)
	select {
	case <-stall.Matched():
	case <-s.exited:
		t.Fatalf("strata server exited:\n%s", s.log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no segment upload reached the proxy within 2 minutes:\n%s", s.log)
	}
	s.kill()

	stalled.Lock()
	stalledKey := stalled.key
	stalled.Unlock()
	stalledBase, _, ok := parseSegmentKey(prefix, stalledKey)
	if !ok {
		t.Fatalf("the stalled upload's key %q is not a segment key under %q", stalledKey, prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := store.Head(ctx, stalledKey); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("HEAD %s after the kill: %v, want not found (the proxy never passed the PUT on)", stalledKey, err)
	}
	if man, err := readBucketManifest(ctx, store, manifestKey); err != nil {
		t.Fatal(err)
	} else if man != nil && slices.ContainsFunc(man.Segments, func(s offload.ManifestSegment) bool { return s.BaseOffset >= stalledBase }) {
		t.Fatalf("the bucket manifest names a segment at or after the stalled upload's base offset %d before it could commit: %+v", stalledBase, man.Segments)
	}
	// The orphan: the same base offset as the interrupted upload, a segment
	// id no entry has.
	orphan := fmt.Sprintf("%s%020d-%s.seg", prefix, stalledBase, uuid.New())
	junk := strings.Repeat("not a segment object ", 200)
	if err := store.Put(ctx, orphan, strings.NewReader(junk), int64(len(junk))); err != nil {
		t.Fatalf("planting the orphan %s: %v", orphan, err)
	}
	t.Logf("stalled upload %s; planted orphan %s", stalledKey, orphan)

	proxy.Clear()
	s.restart()
	cl = newClient(t, s)

	// Tiering has caught up when nothing sealed awaits upload, the bucket
	// manifest is published up to the tiered end, and every segment object
	// in the bucket is one it names (the orphan swept).
	var man *offload.Manifest
	var status offload.PartitionStatus
	pollUntil(t, s, 2*time.Minute, "tiering caught up after the restart, the orphan swept", func() (bool, string) {
		var ok bool
		status, ok = tierPartition(s, topic, 0)
		if !ok {
			return false, "no tier status for the partition"
		}
		m, err := readBucketManifest(ctx, store, manifestKey)
		if err != nil || m == nil {
			return false, fmt.Sprintf("status %+v; bucket manifest: %v", status, err)
		}
		man = m
		keys, err := listSegmentObjects(ctx, store, prefix)
		if err != nil {
			return false, err.Error()
		}
		unnamed := unnamedObjects(man, keys)
		last := int64(-1)
		if n := len(man.Segments); n > 0 {
			last = man.Segments[n-1].EndOffset
		}
		done := status.SegmentsAwaitingUpload == 0 && status.HighestTieredOffset >= stalledBase &&
			last == status.HighestTieredOffset && len(unnamed) == 0
		return done, fmt.Sprintf("status %+v; manifest ends at %d; objects no manifest entry names: %v", status, last, unnamed)
	})

	if err := checkManifestShape(man, prefix, false); err != nil {
		t.Errorf("bucket manifest after the restart: %v\n%+v", err, man.Segments)
	}
	if man.LogStartOffset != 0 {
		t.Errorf("bucket manifest log start offset %d, want 0 (no remote retention applies)", man.LogStartOffset)
	}
	resumed := false
	for _, seg := range man.Segments {
		resumed = resumed || seg.BaseOffset == stalledBase
		if seg.Key == orphan {
			t.Errorf("the bucket manifest names the planted orphan %s", orphan)
		}
		if seg.BaseOffset == stalledBase && seg.Key != stalledKey {
			// doc.go: the copying entry of exactly the next segment is
			// resumed under its id and key.
			t.Errorf("the interrupted upload of offset %d committed as %s, want it resumed under its key %s", stalledBase, seg.Key, stalledKey)
		}
	}
	if !resumed {
		t.Errorf("no segment of the bucket manifest starts at %d, where the interrupted upload did", stalledBase)
	}
	if _, err := store.Head(ctx, orphan); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("HEAD of the planted orphan %s: %v, want not found", orphan, err)
	}
	if local := listOffset(t, cl, topic, -4); local > status.HighestTieredOffset+1 {
		t.Errorf("local log start %d is past the tiered end %d: offsets in between are nowhere", local, status.HighestTieredOffset+1)
	}
	if earliest := listOffset(t, cl, topic, -2); earliest != 0 {
		t.Errorf("ListOffsets -2 = %d after the restart, want 0", earliest)
	}
	checkSameRecords(t, produced, consumeAll(t, s, topic, len(produced)))
}

// TestTieringThroughBucketFaults runs tiering through a fault proxy in
// front of versitygw.
//
// Phase A: every segment upload fails (connection resets, then 503s) while
// 12 MiB are produced in rounds, each round after more refused attempts.
// It proves that produce keeps succeeding while uploads fail, that no local
// file is deleted while nothing can commit (ListOffsets -4 stays 0, -5
// stays -1, the bucket holds no segment object), and that uploads catch up
// once the bucket answers again.
//
// Phase B: ranged GETs of the segment objects fail in every way the proxy
// knows (500s, resets, truncated, corrupted and stalled bodies). First a
// consumer starts in the middle of a tiered segment whose block comes back
// with the base offset of the batch holding the start offset corrupted (a
// field the batch CRC does not cover): it must get that offset's record,
// not a later one. Then a consumer reads everything from offset 0, one
// fault on the blocks of each tiered segment and a few on their tails: a
// catch-up read may be slow or retried, but every byte must be what was
// produced, and every fault must have reached one of the broker's reads.
func TestTieringThroughBucketFaults(t *testing.T) {
	t.Parallel()
	tb := startFaultyTieringServer(t)
	s, proxy, store := tb.server, tb.proxy, tb.store
	const topic = "faulty"
	prefix, manifestKey := tb.createTopic(t, topic, 1<<20)
	cl := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Phase A: no upload can commit.
	resets := proxy.Add(segmentUpload, objstoretest.Reset(), 2)
	refusals := proxy.Add(segmentUpload, objstoretest.Status(http.StatusServiceUnavailable), 0)
	refused := func() int64 { return resets.Hits() + refusals.Hits() }
	const mib, rounds = 12, 6
	records := tierRecords(mib << 20)
	// Batches of at most 64 KiB, so that segments hold many batches.
	producer := newClient(t, s, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(64<<10))
	var produced []testRecord
	for i := range rounds {
		if i > 0 { // produce while uploads keep failing, not before they start
			before := refused()
			pollUntil(t, s, time.Minute, "another upload attempt refused", func() (bool, string) {
				return refused() > before, fmt.Sprintf("%d resets, %d 503s", resets.Hits(), refusals.Hits())
			})
		}
		produced = append(produced, produceAll(t, producer, topic, records[i*len(records)/rounds:(i+1)*len(records)/rounds])...)
		if local, tiered := listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -5); local != 0 || tiered != -1 {
			t.Fatalf("after %d of %d MiB with every upload failing: ListOffsets -4 = %d (want 0), -5 = %d (want -1):\n%s",
				(i+1)*mib/rounds, mib, local, tiered, s.log)
		}
	}
	// More than one pass's attempts (offload.DefaultConfig().MaxAttempts):
	// the failure outlives a pass, and the retried pass fails too.
	pollUntil(t, s, time.Minute, "uploads refused over more than one pass", func() (bool, string) {
		return refused() > 2*int64(offload.DefaultConfig().MaxAttempts), fmt.Sprintf("%d resets, %d 503s", resets.Hits(), refusals.Hits())
	})
	if local, tiered := listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -5); local != 0 || tiered != -1 {
		t.Fatalf("with every upload refused: ListOffsets -4 = %d (want 0), -5 = %d (want -1):\n%s", local, tiered, s.log)
	}
	if keys, err := listSegmentObjects(ctx, store, prefix); err != nil || len(keys) != 0 {
		t.Fatalf("with every upload refused the bucket holds segment objects %v (%v)", keys, err)
	}
	if st, ok := tierPartition(s, topic, 0); !ok || st.SegmentsAwaitingUpload < 2 || st.LastError == "" {
		t.Fatalf("with every upload refused the tier status is %+v (found: %v), want segments awaiting upload and an error", st, ok)
	}
	t.Logf("phase A: %d records produced; %d resets and %d 503s served to uploads", len(produced), resets.Hits(), refusals.Hits())

	proxy.Clear()
	pollUntil(t, s, 2*time.Minute, "the local log start moved once uploads succeed", func() (bool, string) {
		local := listOffset(t, cl, topic, -4)
		return local > 0, fmt.Sprintf("local log start %d", local)
	})
	var man *offload.Manifest
	pollUntil(t, s, 2*time.Minute, "every sealed segment uploaded and in the bucket manifest", func() (bool, string) {
		st, ok := tierPartition(s, topic, 0)
		m, err := readBucketManifest(ctx, store, manifestKey)
		if !ok || err != nil || m == nil || len(m.Segments) == 0 {
			return false, fmt.Sprintf("status %+v (%v); manifest %v", st, ok, err)
		}
		man = m
		last := m.Segments[len(m.Segments)-1].EndOffset
		return st.SegmentsAwaitingUpload == 0 && last == st.HighestTieredOffset, fmt.Sprintf("status %+v; manifest ends at %d", st, last)
	})
	if err := checkManifestShape(man, prefix, false); err != nil {
		t.Fatalf("bucket manifest: %v\n%+v", err, man.Segments)
	}
	local := listOffset(t, cl, topic, -4)
	var remote []offload.ManifestSegment // read from the bucket alone
	for _, seg := range man.Segments {
		if seg.EndOffset < local {
			remote = append(remote, seg)
		}
	}
	byOffset := map[int64]testRecord{}
	for _, r := range produced {
		byOffset[r.offset] = r
	}

	// Phase B, first read: from the middle of a segment, as a consumer
	// group resuming at a committed offset would. The second read's faults
	// leave that segment alone, and the next few, whose blocks read-ahead
	// may have fetched by then (the first read's client fetches on in the
	// background); the segment is picked from the last ones, so that most
	// stay for the second read.
	cand, ok := midSegmentCandidate(ctx, t, store, remote)
	if !ok {
		t.Fatalf("no batch in the %d tiered segments fits the mid-segment read; segments: %+v", len(remote), remote)
	}
	mid := remote[cand.segment]
	remote = append(remote[:cand.segment:cand.segment], remote[min(cand.segment+4, len(remote)):]...)
	// A batch's base offset is outside its CRC. A scan that starts
	// mid-segment at a batch whose base offset comes back lowered would
	// skip that batch as ending below the read's offset and return the
	// next one, losing records without an error, unless the scanner checks
	// the first batch against the offset index (remotefetch's scanner).
	t.Run("read from mid-segment, base offset corrupted", func(t *testing.T) {
		rule := proxy.Add(objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.PathContains(mid.Key), blockRange),
			objstoretest.CorruptBodyBits(cand.pos+7, cand.mask), 1) // byte 7: the base offset's low byte
		from := cand.header.LastOffset()
		t.Logf("reading from offset %d, the last of the batch at log position %d of %s (offsets [%d, %d)), its base offset corrupted to %d",
			from, cand.pos, mid.Key, cand.header.BaseOffset, cand.header.NextOffset(), cand.header.BaseOffset-1)
		consumer := newClient(t, s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
		var got []testRecord
		for len(got) == 0 {
			fetches := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("no record read from offset %d: %v\n%s", from, err, s.log)
			}
			fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
			fetches.EachRecord(func(r *kgo.Record) {
				got = append(got, testRecord{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value, headers: r.Headers})
			})
		}
		if rule.Hits() == 0 {
			t.Errorf("the corrupted block of %s was never fetched", mid.Key)
		}
		if got[0].offset != from {
			t.Errorf("a consumer starting at offset %d got offset %d first: records [%d, %d) were skipped without an error", from, got[0].offset, from, got[0].offset)
		}
		want := make([]testRecord, 0, len(got))
		for _, r := range got {
			want = append(want, byOffset[r.offset])
		}
		checkSameBytes(t, want, got)
	})

	// Phase B, second read: everything from offset 0, one kind of fault on
	// the block GETs of each segment (but those left alone above), and a few
	// on the index (suffix) GETs.
	release := make(chan struct{}) // ends the stall that is let go
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	type blockFault struct {
		name  string
		fault func(seg offload.ManifestSegment) objstoretest.Fault
		times int
	}
	blockFaults := []blockFault{
		{"500", func(offload.ManifestSegment) objstoretest.Fault {
			return objstoretest.Status(http.StatusInternalServerError)
		}, 2},
		{"reset", func(offload.ManifestSegment) objstoretest.Fault { return objstoretest.Reset() }, 2},
		{"truncated body", func(seg offload.ManifestSegment) objstoretest.Fault {
			return objstoretest.TruncateBody(seg.LogBytes / 3)
		}, 1},
		// Byte 7 is the low byte of the first batch's base offset, which
		// the batch CRC does not cover.
		{"corrupt base offset", func(offload.ManifestSegment) objstoretest.Fault { return objstoretest.CorruptBody(7) }, 1},
		{"corrupt record", func(seg offload.ManifestSegment) objstoretest.Fault {
			return objstoretest.CorruptBody(seg.LogBytes / 2)
		}, 1},
		{"stalled body, released", func(seg offload.ManifestSegment) objstoretest.Fault {
			return objstoretest.StallBody(seg.LogBytes/4, release)
		}, 1},
		{"stalled body, never released", func(seg offload.ManifestSegment) objstoretest.Fault {
			return objstoretest.StallBody(seg.LogBytes/4, nil)
		}, 1},
	}
	if len(remote) < len(blockFaults) {
		t.Fatalf("only %d segments below the local log start %d are left for the faults, want at least %d: %+v",
			len(remote), local, len(blockFaults), man.Segments)
	}
	type armed struct {
		name string
		rule *objstoretest.Rule
	}
	var rules []armed
	for i, seg := range remote {
		f := blockFaults[i%len(blockFaults)]
		rule := proxy.Add(objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.PathContains(seg.Key), blockRange), f.fault(seg), f.times)
		rules = append(rules, armed{fmt.Sprintf("%s on the block of %s", f.name, seg.Key), rule})
		if f.name == "stalled body, released" {
			go func() {
				select {
				case <-rule.Matched():
				case <-ctx.Done():
					return
				}
				select { // hold the body a while, past remote.fetch.max.wait.ms
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				letGo()
			}()
		}
	}
	// A corrupted tail: byte n of the suffix GET the reader makes without a
	// recorded tail size (remotefetch.DefaultIndexTailGuess bytes, all of
	// the object when it is shorter), in the middle of the tail's sections,
	// which their CRCs cover.
	tail := remote[len(remote)-1]
	guess := int64(remotefetch.DefaultIndexTailGuess)
	body := min(guess, tail.LogBytes+tail.TailBytes)
	tailRule := proxy.Add(objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.PathContains(tail.Key), func(r *http.Request) bool {
		return r.Header.Get("Range") == "bytes=-"+strconv.FormatInt(guess, 10)
	}), objstoretest.CorruptBody(body-tail.TailBytes/2), 1)
	rules = append(rules, armed{"corrupt tail of " + tail.Key, tailRule})
	for _, f := range []struct {
		name  string
		fault objstoretest.Fault
	}{
		{"500", objstoretest.Status(http.StatusInternalServerError)},
		{"reset", objstoretest.Reset()},
		{"truncated body", objstoretest.TruncateBody(100)},
	} {
		rules = append(rules, armed{f.name + " on a tail", proxy.Add(objstoretest.All(objstoretest.Method(http.MethodGet), suffixRange), f.fault, 1)})
	}
	t.Run("read everything from offset 0", func(t *testing.T) {
		checkSameRecords(t, produced, consumeAll(t, s, topic, len(produced)))
		for _, r := range rules {
			if r.rule.Hits() == 0 {
				t.Errorf("fault %q never reached a request: the consumer's reads did not go through it", r.name)
			}
		}
		t.Logf("%d records read back through %d fault rules over %d tiered segments", len(produced), len(rules), len(remote))
	})
}

// midSegment is a batch in a tiered segment that a read from its last
// offset starts at (the offset index points there), that is not the
// segment's last, and whose base offset B, with some bits of its low byte
// flipped (mask), becomes B-1, at or above the segment's base: a
// corruption that the scanner's order check, which starts from the
// segment's base offset, lets through.
type midSegment struct {
	segment int   // index in the segments searched
	pos     int64 // log position of the batch
	header  record.Header
	mask    byte
}

// midSegmentCandidate finds a midSegment batch, searching the segments from
// the last, reading them from the bucket directly.
func midSegmentCandidate(ctx context.Context, t *testing.T, store objstore.Store, segments []offload.ManifestSegment) (midSegment, bool) {
	t.Helper()
	for i := len(segments) - 1; i >= 0; i-- {
		seg := segments[i]
		tail, size, err := objstore.ReadSuffix(ctx, store, seg.Key, seg.TailBytes)
		if err != nil {
			t.Fatalf("tail of %s: %v", seg.Key, err)
		}
		ix, err := segmentobject.ParseTail(tail, size)
		if err != nil {
			t.Fatalf("tail of %s: %v", seg.Key, err)
		}
		log := make([]byte, seg.LogBytes)
		if err := objstore.ReadAt(ctx, store, seg.Key, log, 0); err != nil {
			t.Fatalf("log of %s: %v", seg.Key, err)
		}
		for pos := int64(0); pos < int64(len(log)); {
			h, err := record.ParseHeader(log[pos:])
			if err != nil {
				t.Fatalf("%s at %d: %v", seg.Key, pos, err)
			}
			next := pos + int64(h.Size())
			// B-1 differs from B in the low byte alone when that byte is
			// not 0.
			low := byte(h.BaseOffset)
			if start, _, err := ix.StartPosition(h.LastOffset()); err == nil && start == pos && next < int64(len(log)) &&
				low != 0 && h.BaseOffset-1 >= seg.BaseOffset {
				return midSegment{segment: i, pos: pos, header: h, mask: low ^ (low - 1)}, true
			}
			pos = next
		}
	}
	return midSegment{}, false
}

// checkSameBytes compares records one by one: offsets, keys, values and
// headers.
func checkSameBytes(t testing.TB, want, got []testRecord) {
	t.Helper()
	for i := range got {
		w, g := want[i], got[i]
		if g.offset != w.offset || !bytes.Equal(g.key, w.key) || !bytes.Equal(g.value, w.value) || len(g.headers) != len(w.headers) {
			t.Fatalf("record %d: got offset %d (key %q), want offset %d (key %q), or their bytes differ", i, g.offset, g.key, w.offset, w.key)
		}
	}
}

// faultyTiering is a server whose bucket is versitygw behind a fault
// proxy, and a store on the same bucket that goes around the proxy.
type faultyTiering struct {
	server *server
	proxy  *objstoretest.FaultProxy
	store  objstore.Store
}

// startFaultyTieringServer starts versitygw with a bucket, a fault proxy in
// front of it and a server tiering to the bucket through the proxy, its
// offload tasks every 200 ms.
func startFaultyTieringServer(t *testing.T) faultyTiering {
	t.Helper()
	gw := startVersityGW(t)
	proxy := startFaultProxy(t, gw)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := objstore.Open(ctx, objstoretest.S3URL(gw.Endpoint, testBucket, "cluster"), gw.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := startServerEnv(t, freePort(t), bucketEnv(gw),
		"--bucket", objstoretest.S3URL(proxy.URL(), testBucket, "cluster"),
		"--remote.log.manager.task.interval.ms", "200")
	return faultyTiering{server: s, proxy: proxy, store: store}
}

// createTopic creates a one-partition topic with 1 MiB segments sealed
// after 2 s and localRetention bytes kept locally, and returns its
// partition's prefix in the bucket and its manifest key.
func (tb faultyTiering) createTopic(t *testing.T, topic string, localRetention int) (prefix, manifestKey string) {
	t.Helper()
	createTopic(t, tb.server, topic, 1, map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
		"segment.ms":            kadmString("2000"),
		"local.retention.bytes": kadmString(strconv.Itoa(localRetention)),
	})
	id := topicUUID(t, tb.server, topic)
	return segmentobject.PartitionPrefix("", topic, id, 0), segmentobject.ManifestKey("", topic, id, 0)
}

// segmentUpload matches the requests that upload a segment object: a PUT,
// or any multipart call (POST to create or complete, PUT of a part).
func segmentUpload(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ".seg") && (r.Method == http.MethodPut || r.Method == http.MethodPost)
}

// blockRange matches ranged GETs from an offset ("bytes=a-b"): the blocks
// of a segment's log.
func blockRange(r *http.Request) bool {
	v := r.Header.Get("Range")
	return strings.HasPrefix(v, "bytes=") && !strings.HasPrefix(v, "bytes=-")
}

// suffixRange matches suffix GETs ("bytes=-n"): a segment's tail.
func suffixRange(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Range"), "bytes=-")
}

// objectKey is the store key of a path-style request to the store at
// objstoretest.S3URL(…, testBucket, "cluster").
func objectKey(r *http.Request) string {
	return strings.TrimPrefix(r.URL.Path, "/strata/cluster/")
}

// parseSegmentKey splits a segment object's key, of the form
// <prefix><20-digit base offset>-<segment id>.seg (segmentobject/key.go).
func parseSegmentKey(prefix, key string) (base int64, id uuid.UUID, ok bool) {
	name, found := strings.CutPrefix(key, prefix)
	if !found {
		return 0, uuid.Nil, false
	}
	name, found = strings.CutSuffix(name, ".seg")
	if !found || len(name) != 20+1+36 || name[20] != '-' {
		return 0, uuid.Nil, false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, uuid.Nil, false
	}
	id, err = uuid.Parse(name[21:])
	return base, id, err == nil
}

// topicUUID is a topic's id.
func topicUUID(t testing.TB, s *server, topic string) uuid.UUID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(newClient(t, s)).ListTopics(ctx, topic)
	if err == nil {
		err = topics[topic].Err
	}
	if err != nil {
		t.Fatalf("topic id of %s: %v", topic, err)
	}
	return uuid.UUID(topics[topic].ID)
}

// pollUntil calls cond every 100 ms until it reports done, failing the
// test with what cond last said and the server's log after timeout:
// offload has no event a client can wait on.
func pollUntil(t testing.TB, s *server, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %v: %s; last seen: %s\nserver log:\n%s", timeout, what, state, s.log)
		}
		select {
		case <-s.exited:
			t.Fatalf("strata server exited while waiting for %s:\n%s", what, s.log)
		case <-tick.C:
		}
	}
}

// tierPartition reads one partition's entry of /v1/tier/status.
func tierPartition(s *server, topic string, partition int32) (offload.PartitionStatus, bool) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + s.admin + "/v1/tier/status")
	if err != nil {
		return offload.PartitionStatus{}, false
	}
	defer resp.Body.Close()
	var status offload.Status
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&status) != nil {
		return offload.PartitionStatus{}, false
	}
	for _, p := range status.Partitions {
		if p.Topic == topic && p.Partition == partition {
			return p, true
		}
	}
	return offload.PartitionStatus{}, false
}

// readBucketManifest reads and parses a partition's manifest.json; nil if
// there is none yet.
func readBucketManifest(ctx context.Context, store objstore.Store, key string) (*offload.Manifest, error) {
	rc, err := store.Get(ctx, key, 0, -1)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	man, err := offload.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", key, err, data)
	}
	return man, nil
}

// listSegmentObjects lists the keys ending in ".seg" under prefix.
func listSegmentObjects(ctx context.Context, store objstore.Store, prefix string) ([]string, error) {
	var keys []string
	for info, err := range store.List(ctx, prefix) {
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		if strings.HasSuffix(info.Key, ".seg") {
			keys = append(keys, info.Key)
		}
	}
	return keys, nil
}

// unnamedObjects returns the keys no segment of man names.
func unnamedObjects(man *offload.Manifest, keys []string) []string {
	named := map[string]bool{}
	for _, s := range man.Segments {
		named[s.Key] = true
	}
	var out []string
	for _, k := range keys {
		if !named[k] {
			out = append(out, k)
		}
	}
	return out
}

// checkManifestShape checks what a bucket manifest must be beyond what
// ParseManifest checks: every segment once (id, key and base offset
// unique), keys of the segment form under prefix and agreeing with their
// base offsets and ids, and segments contiguous from the log start; from
// inside the first one when startInside (DeleteRecords may put it there).
func checkManifestShape(man *offload.Manifest, prefix string, startInside bool) error {
	ids, keys, bases := map[uuid.UUID]bool{}, map[string]bool{}, map[int64]bool{}
	for i, s := range man.Segments {
		if ids[s.ID] || keys[s.Key] || bases[s.BaseOffset] {
			return fmt.Errorf("segment %d (%s, base offset %d) repeats an id, key or base offset", i, s.Key, s.BaseOffset)
		}
		ids[s.ID], keys[s.Key], bases[s.BaseOffset] = true, true, true
		base, id, ok := parseSegmentKey(prefix, s.Key)
		if !ok || base != s.BaseOffset || id != s.ID {
			return fmt.Errorf("segment %d: key %s does not name base offset %d and id %s under %s", i, s.Key, s.BaseOffset, s.ID, prefix)
		}
		if i == 0 && !startInside && s.BaseOffset != man.LogStartOffset {
			return fmt.Errorf("the first segment starts at %d, not at the log start %d", s.BaseOffset, man.LogStartOffset)
		}
		if i == 0 && (s.BaseOffset > man.LogStartOffset || s.EndOffset < man.LogStartOffset) {
			return fmt.Errorf("the first segment [%d, %d] does not hold the log start %d", s.BaseOffset, s.EndOffset, man.LogStartOffset)
		}
		if i > 0 && s.BaseOffset != man.Segments[i-1].EndOffset+1 {
			return fmt.Errorf("segment %d starts at %d, want %d: the segments are not contiguous", i, s.BaseOffset, man.Segments[i-1].EndOffset+1)
		}
	}
	return nil
}
