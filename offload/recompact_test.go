package offload

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/segmentobject"
)

// compactedTopic is the topic configs of the recompaction tests: compacted,
// tombstones kept a minute, every dirty byte worth a pass.
func compactedTopic(extra map[string]string) map[string]string {
	c := map[string]string{
		"cleanup.policy": "compact", "delete.retention.ms": "60000", "min.cleanable.dirty.ratio": "0.01",
	}
	maps.Copy(c, extra)
	return c
}

// keyedRecord is one record appended to a compacted topic: a nil value is a
// tombstone.
type keyedRecord struct {
	key, value string
	tombstone  bool
}

// appendKeyed appends one batch per record, timestamped now, and returns
// the records by offset.
func (h *harness) appendKeyed(records ...keyedRecord) map[int64]keyedRecord {
	h.t.Helper()
	out := map[int64]keyedRecord{}
	for _, kr := range records {
		r := record.Record{Key: []byte(kr.key), Value: []byte(kr.value)}
		if kr.tombstone {
			r.Value = nil
		}
		b, err := record.Build(record.BuildOptions{FirstTimestamp: h.clock.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, []record.Record{r})
		if err != nil {
			h.t.Fatal(err)
		}
		out[h.appendBatch(b)] = kr
	}
	return out
}

// keyedSegments appends n segments of versions of keys k0..k<keys-1>, a
// version of each key per segment, and seals each; it returns what it
// appended by offset.
func (h *harness) keyedSegments(n, keys int) map[int64]keyedRecord {
	h.t.Helper()
	out := map[int64]keyedRecord{}
	for seg := range n {
		var batch []keyedRecord
		for k := range keys {
			batch = append(batch, keyedRecord{key: fmt.Sprintf("k%d", k), value: fmt.Sprintf("k%d-v%d-%s", k, seg, bytes.Repeat([]byte("x"), 200))})
		}
		maps.Copy(out, h.appendKeyed(batch...))
		h.roll()
	}
	return out
}

// latest is what compaction must leave of appended: the latest record of
// each key, by offset, tombstones included.
func latest(appended map[int64]keyedRecord) map[int64]keyedRecord {
	last := map[string]int64{}
	for _, o := range slices.Sorted(maps.Keys(appended)) {
		last[appended[o].key] = o
	}
	out := map[int64]keyedRecord{}
	for _, o := range last {
		out[o] = appended[o]
	}
	return out
}

// remoteRecords reads every committed segment object back as a reader
// would (tail, then log) and returns its records by offset, checking that
// the batches cover the segment's offsets without a gap and that the index
// finds every batch.
func (h *harness) remoteRecords() map[int64]keyedRecord {
	h.tb.Helper()
	out := map[int64]keyedRecord{}
	next := h.manifest().RemoteLogStartOffset
	for _, s := range h.committed() {
		if s.BaseOffset != next {
			h.tb.Fatalf("segment %d..%d does not follow %d", s.BaseOffset, s.EndOffset, next)
		}
		ix, batches, headers := h.readObject(s)
		var position int64
		for i, hd := range headers {
			if hd.BaseOffset != next {
				h.tb.Fatalf("%s: batch at offset %d, want %d", s.ObjectKey, hd.BaseOffset, next)
			}
			if at, base, err := ix.StartPosition(hd.BaseOffset); err != nil || at > position || base > hd.BaseOffset {
				h.tb.Fatalf("%s: the index starts a read of %d at %d (offset %d), the batch is at %d: %v", s.ObjectKey, hd.BaseOffset, at, base, position, err)
			}
			records, err := record.Records(batches[i], record.MaxDecompressedBytes)
			if err != nil {
				h.tb.Fatalf("%v", err)
			}
			for _, r := range records {
				out[hd.BaseOffset+int64(r.OffsetDelta)] = keyedRecord{key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil}
			}
			position += int64(len(batches[i]))
			next = hd.NextOffset()
		}
		if next != s.EndOffset+1 {
			h.tb.Fatalf("%s: batches end at %d, the entry at %d", s.ObjectKey, next-1, s.EndOffset)
		}
	}
	return out
}

// checkBucket checks that the bucket holds exactly manifest.json and the
// objects of meta's entries, and that the bucket manifest lists the
// committed ones.
func (h *harness) checkBucket() {
	h.tb.Helper()
	man := h.manifest()
	want := []string{h.prefix() + segmentobject.ManifestName}
	for _, s := range man.Segments {
		want = append(want, s.ObjectKey)
	}
	slices.Sort(want)
	if got := keys(h.t, h.store.Store); !slices.Equal(got, want) {
		h.tb.Fatalf("bucket holds %q, want %q", got, want)
	}
	var listed []string
	for _, s := range h.bucketManifest().Segments {
		listed = append(listed, s.Key)
	}
	var committed []string
	for _, s := range h.committed() {
		committed = append(committed, s.ObjectKey)
	}
	if !slices.Equal(listed, committed) {
		h.tb.Fatalf("bucket manifest lists %q, meta commits %q", listed, committed)
	}
}

func checkRecords(t *testing.T, got, want map[int64]keyedRecord) {
	t.Helper()
	if !maps.Equal(got, want) {
		for _, o := range slices.Sorted(maps.Keys(want)) {
			if got[o] != want[o] {
				t.Errorf("offset %d: got %+v, want %+v", o, got[o], want[o])
			}
		}
		for _, o := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[o]; !ok {
				t.Errorf("offset %d: got %+v, want nothing", o, got[o])
			}
		}
		t.FailNow()
	}
}

// TestRecompactionKeepsTheLatestOfEachKey: the segments of a compacted topic
// are uploaded, then rewritten in the bucket into one object holding each
// key's latest record at its offset; the old objects stay until the retire
// delay has passed; a tombstone stays until a later pass finds it older
// than delete.retention.ms.
func TestRecompactionKeepsTheLatestOfEachKey(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	appended := h.keyedSegments(4, 10)
	maps.Copy(appended, h.appendKeyed(keyedRecord{key: "k3", tombstone: true}))
	h.roll()
	h.mustSync()

	committed := h.committed()
	if len(committed) != 1 || committed[0].BaseOffset != 0 || committed[0].EndOffset != 40 {
		t.Fatalf("committed after a pass: %+v, want one segment over 0..40", committed)
	}
	want := latest(appended)
	checkRecords(t, h.remoteRecords(), want)
	if n := testutil.ToFloat64(h.mgr.metrics.recompactRecords); n != 31 { // 41 appended, 10 latest (k3's a tombstone)
		t.Errorf("records removed: %v, want 31", n)
	}
	// The five uploaded objects wait out the retire delay.
	man := h.manifest()
	var retiring int
	for _, s := range man.Segments {
		if s.State == meta.SegmentDeleting {
			retiring++
			if want := h.clock.Now().Add(h.cfg.RetireDelay).UnixMilli(); s.RetireAtMs != want {
				t.Errorf("%s retires at %d, want %d", s.ObjectKey, s.RetireAtMs, want)
			}
			if _, err := h.store.Head(t.Context(), s.ObjectKey); err != nil {
				t.Errorf("%s deleted before its retire time: %v", s.ObjectKey, err)
			}
		}
	}
	if retiring != 5 || man.CleanedOffset != 41 {
		t.Fatalf("after the pass: %d segments retiring (want 5), cleaned offset %d (want 41)", retiring, man.CleanedOffset)
	}
	h.clock.Advance(h.cfg.RetireDelay)
	h.mustSync()
	h.checkBucket()
	if len(h.manifest().Segments) != 1 {
		t.Fatalf("manifest after the retire delay: %+v", h.manifest())
	}

	// Past delete.retention.ms, the next pass (prompted by a new dirty
	// segment) drops the tombstone, which the previous pass mapped.
	h.clock.Advance(2 * time.Minute)
	newer := h.appendKeyed(keyedRecord{key: "k0", value: "k0-last"})
	h.roll()
	h.mustSync()
	maps.Copy(appended, newer)
	want = latest(appended)
	for o, r := range want {
		if r.tombstone {
			delete(want, o)
		}
	}
	checkRecords(t, h.remoteRecords(), want)
	h.clock.Advance(h.cfg.RetireDelay)
	h.mustSync()
	h.checkBucket()
}

// TestRecompactionKeepsTombstonesUntilMapped: a tombstone older than
// delete.retention.ms stays while its segment has not been through a pass:
// the older versions of its key could be in segments that pass has yet to
// rewrite.
func TestRecompactionKeepsTombstonesUntilMapped(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	appended := h.appendKeyed(keyedRecord{key: "a", value: "1"}, keyedRecord{key: "a", tombstone: true})
	h.roll()
	h.clock.Advance(time.Hour)
	h.mustSync()
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestRecompactionRunsBySegmentBytes: runs of segments are rewritten into
// objects of at most segment.bytes of what survives, so a pass merges the
// segments it shrinks, and segments that lose nothing merge only as far as
// segment.bytes allows.
func TestRecompactionRunsBySegmentBytes(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{"segment.bytes": "20000"})})
	appended := h.keyedSegments(6, 20) // every key in every segment: five shrink to almost nothing
	for seg := range 6 {               // keys of their own: nothing goes
		var batch []keyedRecord
		for k := range 20 {
			batch = append(batch, keyedRecord{key: fmt.Sprintf("s%d-k%d", seg, k), value: strings.Repeat("y", 200)})
		}
		maps.Copy(appended, h.appendKeyed(batch...))
		h.roll()
	}
	h.mustSync()
	if got := testutil.ToFloat64(h.mgr.metrics.uploadedSegments); got != 12 {
		t.Fatalf("%v segments uploaded, want 12", got)
	}
	committed := h.committed()
	var sizes []int64
	for _, s := range committed {
		sizes = append(sizes, s.SizeBytes)
		if s.SizeBytes > 20000 {
			t.Errorf("segment %d..%d is %d bytes, more than segment.bytes", s.BaseOffset, s.EndOffset, s.SizeBytes)
		}
	}
	// About 5.8 KB a segment of new keys: three fit in 20000 bytes,
	// after the first, which takes what is left of the first six.
	if len(committed) < 3 || len(committed) > 5 {
		t.Fatalf("%d objects of %v bytes after recompaction, want 3 to 5 from 12 segments", len(committed), sizes)
	}
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestRecompactionHonoursMinCompactionLag: segments whose newest record is
// younger than min.compaction.lag.ms are left as they are.
func TestRecompactionHonoursMinCompactionLag(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{"min.compaction.lag.ms": "3600000"})})
	appended := h.keyedSegments(3, 5)
	h.mustSync()
	if n := len(h.committed()); n != 3 {
		t.Fatalf("%d segments committed within min.compaction.lag.ms, want the 3 uploaded", n)
	}
	h.clock.Advance(2 * time.Hour)
	h.mustSync()
	if n := len(h.committed()); n != 1 {
		t.Fatalf("%d segments committed past min.compaction.lag.ms, want 1", n)
	}
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestRecompactionMapSpansPasses: with a map too small for every key, a
// pass rewrites up to where its map ended and the next passes go on, until
// every key's older versions are gone.
func TestRecompactionMapSpansPasses(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil), tweak: func(c *Config) { c.RecompactMapKeys = 4 }})
	appended := h.keyedSegments(3, 10)
	h.mustSync()
	var checkpoints []int64
	for range 20 {
		checkpoints = append(checkpoints, h.manifest().CleanedOffset)
		if h.manifest().CleanedOffset == 30 {
			break
		}
		h.mustSync()
	}
	if len(checkpoints) < 3 || !slices.IsSorted(checkpoints) || checkpoints[len(checkpoints)-1] != 30 {
		t.Fatalf("checkpoints %v: want several passes reaching 30", checkpoints)
	}
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestRecompactionCrashBetweenSteps stops a recompaction after each step
// of its swap, as a crash would, and checks that the next Manager's pass
// leaves the latest records, every entry committed, and no object no entry
// names once the retire delay has passed.
func TestRecompactionCrashBetweenSteps(t *testing.T) {
	for at := step(stepReplaceBegun); at <= stepReplaceCommitted; at++ {
		t.Run(at.String(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
			appended := h.keyedSegments(3, 8)
			h.startManager(crashOnce(at))
			if err := h.sync(); !errors.Is(err, errCrash) {
				t.Fatalf("Sync with a crash at %s: %v", at, err)
			}
			h.startManager(nil)
			h.mustSync()
			checkRecords(t, h.remoteRecords(), latest(appended))
			h.clock.Advance(h.cfg.RetireDelay)
			h.mustSync()
			h.checkBucket()
			for _, s := range h.manifest().Segments {
				if s.State != meta.SegmentCommitted {
					t.Fatalf("segment %d..%d is %s after the retire delay", s.BaseOffset, s.EndOffset, s.State)
				}
			}
			checkRecords(t, h.remoteRecords(), latest(appended))
		})
	}
}

// TestRecompactionWaitsForTheDirtyRatio: a pass runs only once the bytes
// uploaded since the last one are min.cleanable.dirty.ratio of the
// cleanable bytes, or once max.compaction.lag.ms has passed over them.
func TestRecompactionWaitsForTheDirtyRatio(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{
		"min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": "3600000",
	})})
	appended := h.keyedSegments(3, 10)
	h.mustSync() // all dirty: a pass
	if n := len(h.committed()); n != 1 {
		t.Fatalf("%d segments after the first pass, want 1", n)
	}
	maps.Copy(appended, h.keyedSegments(1, 2))
	h.mustSync()
	if n := len(h.committed()); n != 2 {
		t.Fatalf("%d segments with a dirty ratio under min.cleanable.dirty.ratio, want 2 (no pass)", n)
	}
	h.clock.Advance(2 * time.Hour)
	h.mustSync()
	if n := len(h.committed()); n != 1 {
		t.Fatalf("%d segments past max.compaction.lag.ms, want 1", n)
	}
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestBatchReaderAcrossARecompaction: a batch job that opened the bucket
// manifest before a recompaction reads the old objects to the end during
// the retire delay, and one opened after reads the recompacted objects:
// each sees every offset once, and the records each manifest promised.
func TestBatchReaderAcrossARecompaction(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{"min.compaction.lag.ms": "3600000"})})
	appended := h.keyedSegments(4, 6)
	h.mustSync() // uploaded, too young to recompact
	loc := remotefetch.BucketLocation{Topic: h.topic.Name, TopicID: h.topic.ID}
	before := h.openBucketReader(loc)
	h.clock.Advance(2 * time.Hour)
	h.mustSync()
	if n := len(h.committed()); n != 1 {
		t.Fatalf("%d segments after recompaction, want 1", n)
	}
	checkRecords(t, h.batchJobRead(before), appended)
	checkRecords(t, h.batchJobRead(h.openBucketReader(loc)), latest(appended))
}

func (h *harness) openBucketReader(loc remotefetch.BucketLocation) *remotefetch.BucketReader {
	h.t.Helper()
	r, err := remotefetch.OpenBucketReader(h.t.Context(), h.store.Store, loc, remotefetch.DefaultConfig())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { r.Close() })
	return r
}

// batchJobRead reads every record a BucketReader serves, by offset,
// checking the batches follow each other without a gap.
func (h *harness) batchJobRead(r *remotefetch.BucketReader) map[int64]keyedRecord {
	h.t.Helper()
	out := map[int64]keyedRecord{}
	next := r.Manifest().LogStartOffset
	for b, err := range r.Batches(h.t.Context(), next, r.Manifest().NextOffset()) {
		if err != nil {
			h.t.Fatalf("batch job read at %d: %v", next, err)
		}
		if b.Header.BaseOffset != next {
			h.t.Fatalf("batch at %d, want %d", b.Header.BaseOffset, next)
		}
		records, err := record.Records(b.Bytes, record.MaxDecompressedBytes)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range records {
			out[b.Header.BaseOffset+int64(r.OffsetDelta)] = keyedRecord{key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil}
		}
		next = b.Header.NextOffset()
	}
	if next != r.Manifest().NextOffset() {
		h.t.Fatalf("batch job read ended at %d, the manifest at %d", next, r.Manifest().NextOffset())
	}
	return out
}

// TestRecompactionAgesTombstonesByTheirBatch: a run merges old batches
// with newly uploaded ones, so a merged object's newest record is always
// recent while writes go on; a tombstone is aged by its own batch, and
// goes once delete.retention.ms has passed since it was written.
func TestRecompactionAgesTombstonesByTheirBatch(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)}) // delete.retention.ms 60 s
	appended := h.appendKeyed(keyedRecord{key: "a", value: "1"}, keyedRecord{key: "a", tombstone: true})
	h.roll()
	h.mustSync()
	for i := range 4 {
		h.clock.Advance(30 * time.Second)
		maps.Copy(appended, h.appendKeyed(keyedRecord{key: "b", value: fmt.Sprint(i)}))
		h.roll()
		h.mustSync()
		if n := len(h.committed()); n != 1 {
			t.Fatalf("pass %d left %d segments, want the run merged into 1", i, n)
		}
	}
	want := latest(appended)
	for o, r := range want {
		if r.tombstone {
			delete(want, o)
		}
	}
	checkRecords(t, h.remoteRecords(), want)
}

// TestRecompactionReplacementThatCannotCommit: a run's segment deleted
// while its replacement uploads (retention, or another leader's pass
// abandoning it) makes the commit fail; the replacement is abandoned, the
// pass ends without moving the checkpoint past the run, and a later pass
// cleans what is left.
func TestRecompactionReplacementThatCannotCommit(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	appended := h.keyedSegments(3, 8)
	h.startManager(func(s step) error {
		if s != stepReplacePut {
			return nil
		}
		first := h.committed()[0]
		_, err := h.meta.Propose(t.Context(), meta.BeginSegmentDelete{Topic: h.topic.Name, TopicID: h.topic.ID, LeaderEpoch: h.epoch.Load(), SegmentID: first.ID})
		return err
	})
	if err := h.sync(); !errors.Is(err, errReplaceAbandoned) {
		t.Fatalf("Sync with the run's first segment deleted during the PUT: %v", err)
	}
	if got := h.manifest().CleanedOffset; got != 0 {
		t.Fatalf("checkpoint moved to %d past a run the pass did not rewrite", got)
	}
	h.startManager(nil)
	h.mustSync()
	h.clock.Advance(h.cfg.RetireDelay)
	h.mustSync()
	h.checkBucket()
	// The first segment went by the delete; the rest is compacted.
	want := latest(appended)
	start := h.manifest().RemoteLogStartOffset
	for o := range want {
		if o < start {
			delete(want, o)
		}
	}
	got := h.remoteRecords()
	for o := range got {
		if o < start {
			t.Fatalf("offset %d below the remote log start %d is served", o, start)
		}
	}
	checkRecords(t, got, want)
}

// TestRecompactionAfterTheHotLogCleaner: the hot log's cleaner drops a
// record superseded by one not yet uploaded; the segment reaches the
// bucket without it, so the remote checkpoint passes it while an older
// version of its key stays in the bucket, until the record that
// supersedes both is uploaded and mapped.
func TestRecompactionAfterTheHotLogCleaner(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	appended := h.appendKeyed(keyedRecord{key: "a", value: "1"})
	h.roll()
	h.mustSync()
	for _, v := range []string{"2", "3"} {
		maps.Copy(appended, h.appendKeyed(keyedRecord{key: "a", value: v}))
		h.roll()
	}
	res, err := compact.Clean(t.Context(), compact.Pass{
		Log: h.log, End: h.log.LogEndOffset(), Now: h.clock.Now(),
		KeepTombstones: true, MaxKeys: 10, DecompressLimit: record.MaxDecompressedBytes,
	})
	if err != nil || res.RecordsRemoved != 2 { // offset 0's local copy, and 1
		t.Fatalf("cleaning the hot log: %+v, %v; want 2 records removed", res, err)
	}
	// The pass uploads offset 1's emptied segment, not offset 2's.
	h.startManager(crashOnce(stepCopyCommitted))
	if err := h.sync(); !errors.Is(err, errCrash) {
		t.Fatalf("Sync with a crash at %s: %v", stepCopyCommitted, err)
	}
	if got := h.manifest().CleanedOffset; got != 2 {
		t.Fatalf("remote checkpoint at %d, want 2", got)
	}
	checkRecords(t, h.remoteRecords(), map[int64]keyedRecord{0: appended[0]})
	h.startManager(nil)
	h.mustSync()
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestRecompactionTakesAnUploadSlot: a replacement's PUT reads through
// the uploads' pace, so it waits for an upload slot as an upload does;
// beside uploads holding every slot of a pace near its minimum, it would
// slow them and itself below MinUploadRate, past their attempt timeouts.
// With every slot held the pass uploads (Sync's copy pass takes none) and
// then waits, the replacement not begun; once a slot is free it is put
// and committed.
func TestRecompactionTakesAnUploadSlot(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	h.keyedSegments(4, 10)
	for range cap(h.mgr.copySlots) {
		h.mgr.copySlots <- struct{}{}
	}
	synced := make(chan error, 1)
	go func() { synced <- h.sync() }()
	ended := func() {
		t.Helper()
		select {
		case err := <-synced:
			t.Fatalf("the pass ended (%v) with every upload slot held; committed %+v", err, h.committed())
		default:
		}
	}
	for deadline := time.Now().Add(time.Minute); len(h.committed()) < 4; time.Sleep(10 * time.Millisecond) {
		ended()
		if time.Now().After(deadline) {
			t.Fatalf("committed %+v after a minute, want the four segments", h.committed())
		}
	}
	time.Sleep(200 * time.Millisecond) // what a pass not waiting would need to go on
	ended()
	for _, s := range h.manifest().Segments {
		if len(s.Replaces) > 0 {
			t.Fatalf("replacement %+v begun while every upload slot was held", s)
		}
	}
	for range cap(h.mgr.copySlots) {
		<-h.mgr.copySlots
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if got := h.committed(); len(got) != 1 {
		t.Fatalf("committed %+v once a slot was free, want the one replacement", got)
	}
}

// TestNewRemovesStaleSpoolFilesOnly: a spool file a crash left is removed
// when the Manager starts; the data directory's partition directories and
// purge markers, whatever their topics are called, are not.
func TestNewRemovesStaleSpoolFilesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stale, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		t.Fatal(err)
	}
	stale.Close()
	kept := []string{
		filepath.Join(dir, "strata-recompact-audit-0.AAAAAAAAAAAAAAAAAAAAAA.purge"),
		filepath.Join(dir, "strata-recompact-audit-1"),
	}
	if err := os.WriteFile(kept[0], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(kept[1], 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SpoolDir = dir
	mgr, err := New(cfg, testMeta(t), newCountingStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	if _, err := os.Stat(stale.Name()); !os.IsNotExist(err) {
		t.Fatalf("the stale spool file %s is still there: %v", stale.Name(), err)
	}
	for _, path := range kept {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s, a topic's, was removed with the spool files: %v", path, err)
		}
	}
}
