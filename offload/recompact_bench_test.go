package offload

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/record"
)

// BenchmarkRecompaction (issue 15): the bucket of a compacted topic before
// and after remote recompaction, and the pass's speed beside the limit
// measured in the same run:
//
//	go test ./offload/ -run '^$' -bench BenchmarkRecompaction -benchtime 1x
//
// One partition takes 1,000,000 updates of ~100-byte values over 10,000
// keys, in batches of 100 records, into 8 MiB segments (segment.bytes
// 8 MiB on the topic and the hot log, as a broker sets both), all uploaded
// to a file:// store on tmpfs while min.compaction.lag.ms holds
// recompaction back. Then the clock passes the lag and one Sync pass maps
// and rewrites them; it is timed, and its GETs counted. The limit is the
// same I/O without the compaction: a GET of every object the pass read,
// and PUTs of as many bytes as it wrote, to the same store.
//
// Reported: the bucket's objects and MB (manifest.json included) before
// and after (once the retire delay has let the replaced objects go), and
// after the next pass, which 1,000 more updates prompt; the records and
// distinct keys left in the bucket (the check fails unless they are
// exactly each key's latest); the pass's MB/s (segment bytes it rewrote
// per second), raw_getput_MB/s (bytes read per second by the raw GETs and
// PUTs) and their ratio; GET bytes per segment byte (reads_per_byte) and
// MB written. Each iteration runs the whole setup again (about a second
// here), so -benchtime 1x runs it once; the default 1s mostly does too.
func BenchmarkRecompaction(b *testing.B) {
	for range b.N {
		benchRecompactionOnce(b)
	}
	b.ReportMetric(0, "ns/op")
}

const (
	recompactBenchUpdates      = 1_000_000
	recompactBenchKeys         = 10_000
	recompactBenchBatchRecords = 100
	recompactBenchValueBytes   = 100
	recompactBenchSegmentBytes = 8 << 20
	// recompactBenchAppendBatches batches go in one Append, acknowledged
	// by one WaitAck.
	recompactBenchAppendBatches = 10
	recompactBenchLag           = time.Hour
)

func benchRecompactionOnce(b *testing.B) {
	ctx := b.Context()
	files, err := objstore.Open(ctx, "file://"+tempDir(b, "offload-store-"), objstore.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { files.Close() })
	store := &readCounter{Store: files}
	h := newHarness(b, harnessOptions{
		topicConfigs: compactedTopic(map[string]string{
			"segment.bytes":         fmt.Sprint(recompactBenchSegmentBytes),
			"min.compaction.lag.ms": fmt.Sprint(recompactBenchLag.Milliseconds()),
		}),
		store:        store,
		segmentBytes: recompactBenchSegmentBytes,
		tweak: func(c *Config) {
			c.Logger = nil
			c.CopyDrainTime = 0 // the setup's uploads unpaced
		},
	})
	useBrokerLog(h)
	updates := newKeyedUpdates(h.rng)

	// Before: everything uploaded, nothing recompacted (the lag).
	updates.append(h, recompactBenchUpdates)
	rollAndSeal(h)
	h.mustSync()
	before := h.committed()
	if n := len(before); n == 0 || before[n-1].EndOffset != recompactBenchUpdates-1 {
		b.Fatalf("after the upload, %d segments committed, want every offset below %d: %+v", n, recompactBenchUpdates, before)
	}
	objectsBefore, bytesBefore := bucketUsage(b, files)
	var logBefore int64
	for _, s := range before {
		logBefore += s.SizeBytes
	}

	// The pass, timed.
	h.clock.Advance(recompactBenchLag + time.Minute)
	read := h.mgr.metrics.recompactBytes.WithLabelValues("read")
	written := h.mgr.metrics.recompactBytes.WithLabelValues("written")
	gets := store.read.Load()
	start := time.Now()
	h.mustSync()
	elapsed := time.Since(start)
	passRead, passWritten := testutil.ToFloat64(read), testutil.ToFloat64(written)
	passGets := store.read.Load() - gets
	if passRead == 0 {
		b.Fatalf("no recompaction pass ran: manifest %+v", h.manifest())
	}
	got := h.remoteRecords()
	checkLatest(b, got, updates.latest())
	var sizes []int64
	for _, s := range h.committed() {
		sizes = append(sizes, s.SizeBytes)
	}
	b.Logf("after the pass, %d segments of %v log bytes replace %d", len(sizes), sizes, len(before))

	// The limit: GET every object the pass read, PUT what it wrote.
	limit, limitBytes := rawGetPut(b, files, before, h.committed())
	if limitBytes.put != int64(passWritten) {
		b.Errorf("the replacements committed hold %d bytes, the pass counted %v written", limitBytes.put, passWritten)
	}

	// After: the replaced objects gone once the retire delay has passed.
	h.clock.Advance(h.cfg.RetireDelay)
	h.mustSync()
	h.checkBucket()
	objectsAfter, bytesAfter := bucketUsage(b, files)

	// The next pass, prompted by a little more data, rewrites what the
	// first one left together with it.
	updates.append(h, 1_000)
	rollAndSeal(h)
	h.mustSync()
	h.clock.Advance(recompactBenchLag + time.Minute)
	h.mustSync()
	h.clock.Advance(h.cfg.RetireDelay)
	h.mustSync()
	h.checkBucket()
	checkLatest(b, h.remoteRecords(), updates.latest())
	objectsNext, _ := bucketUsage(b, files)

	// Bytes of history recompacted per second, as the limit counts them
	// (each object once, though the pass reads it twice).
	rate := float64(logBefore) / elapsed.Seconds()
	liveKeys := map[string]bool{}
	for _, r := range got {
		liveKeys[r.key] = true
	}
	b.ReportMetric(float64(objectsBefore), "objects_before")
	b.ReportMetric(float64(objectsAfter), "objects_after")
	b.ReportMetric(float64(objectsNext), "objects_after_next_pass")
	b.ReportMetric(float64(bytesBefore)/1e6, "bucket_MB_before")
	b.ReportMetric(float64(bytesAfter)/1e6, "bucket_MB_after")
	b.ReportMetric(float64(len(got)), "records_after")
	b.ReportMetric(float64(len(liveKeys)), "live_keys")
	b.ReportMetric(elapsed.Seconds(), "pass_s")
	b.ReportMetric(rate/1e6, "recompact_MB/s")
	b.ReportMetric(limit/1e6, "raw_getput_MB/s")
	b.ReportMetric(rate/limit, "ratio")
	b.ReportMetric(float64(passGets)/float64(logBefore), "reads_per_byte")
	b.ReportMetric(passWritten/1e6, "written_MB")
}

// useBrokerLog replaces the harness's hot log with one set up as a broker
// sets up a topic's, with hotlog's default index sizes: the harness's
// 4 KiB indexes would roll a segment every few hundred batches, long before
// segment.bytes.
func useBrokerLog(h *harness) {
	h.t.Helper()
	h.mgr.Close()
	h.log.Close()
	h.dir = tempDir(h.t, "offload-log-")
	c := hotlog.DefaultConfig()
	c.SegmentBytes = h.segmentBytes
	c.Clock = h.clock
	c.RetentionMs, c.RetentionBytes = LocalRetention(h.topic)
	c.CanDelete = LocalDeletionHook(h.meta.State, h.topic.Name, 0, func() (int64, int64) { return h.log.Retention() })
	c.Events.Sealed = func(hotlog.SegmentInfo) { h.sealed.Add(1) }
	l, err := hotlog.Open(h.dir, c)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := l.AssignEpoch(0, l.LogEndOffset()); err != nil {
		h.t.Fatal(err)
	}
	h.log = l
	h.startManager(nil)
}

// rollAndSeal rolls the active segment and waits until every segment but
// the new active one is sealed on disk, so that one pass uploads them all.
func rollAndSeal(h *harness) {
	h.t.Helper()
	if err := h.log.Roll(); err != nil {
		h.t.Fatal(err)
	}
	waitFor(h.t, "every rolled segment to be sealed", func() bool {
		for _, s := range h.log.Segments()[:len(h.log.Segments())-1] {
			if !s.Sealed {
				return false
			}
		}
		return true
	})
}

// keyedUpdates appends updates of keys key-00000 … to a log, each to a
// random key, with random values, and remembers each key's latest offset
// and value (not every update: a million of them would outweigh what is
// measured).
type keyedUpdates struct {
	rng    *rand.Rand
	offset [recompactBenchKeys]int64
	value  [recompactBenchKeys][]byte
}

func newKeyedUpdates(rng *rand.Rand) *keyedUpdates {
	u := &keyedUpdates{rng: rng}
	for k := range u.offset {
		u.offset[k] = -1
	}
	return u
}

// append appends n updates (a multiple of the batch size) in batches of
// recompactBenchBatchRecords, recompactBenchAppendBatches per Append.
func (u *keyedUpdates) append(h *harness, n int) {
	h.t.Helper()
	perCall := recompactBenchBatchRecords * recompactBenchAppendBatches
	keys := make([]int, perCall)
	values := make([]byte, perCall*recompactBenchValueBytes)
	records := make([]record.Record, recompactBenchBatchRecords)
	batches := make([]record.Batch, 0, recompactBenchAppendBatches)
	for done := 0; done < n; {
		batches = batches[:0]
		for i := 0; i < len(values); i += 8 {
			binary.LittleEndian.PutUint64(values[i:], u.rng.Uint64())
		}
		for len(batches) < recompactBenchAppendBatches && done < n {
			first := len(batches) * recompactBenchBatchRecords
			for i := range records {
				k := u.rng.IntN(recompactBenchKeys)
				keys[first+i] = k
				v := values[(first+i)*recompactBenchValueBytes:][:recompactBenchValueBytes]
				records[i] = record.Record{Key: fmt.Appendf(nil, "key-%05d", k), Value: v}
			}
			raw, err := record.Build(record.BuildOptions{FirstTimestamp: h.clock.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
			if err != nil {
				h.t.Fatal(err)
			}
			batch, err := record.Check(raw)
			if err != nil {
				h.t.Fatal(err)
			}
			batches = append(batches, batch)
			done += len(records)
		}
		res, err := h.log.Append(batches...)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := res.WaitAck(h.t.Context()); err != nil {
			h.t.Fatal(err)
		}
		if want := int64(len(batches)*recompactBenchBatchRecords) - 1; res.LastOffset-res.FirstOffset != want {
			h.t.Fatalf("append of %d batches took offsets %d..%d", len(batches), res.FirstOffset, res.LastOffset)
		}
		for i := range len(batches) * recompactBenchBatchRecords {
			k := keys[i]
			u.offset[k] = res.FirstOffset + int64(i)
			u.value[k] = append(u.value[k][:0], values[i*recompactBenchValueBytes:][:recompactBenchValueBytes]...)
		}
	}
}

// latest is what compaction must leave: each key's latest record, by
// offset.
func (u *keyedUpdates) latest() map[int64]keyedRecord {
	out := map[int64]keyedRecord{}
	for k, o := range u.offset {
		if o >= 0 {
			out[o] = keyedRecord{key: fmt.Sprintf("key-%05d", k), value: string(u.value[k])}
		}
	}
	return out
}

// checkLatest fails the benchmark unless got holds exactly want, naming
// the first few differences.
func checkLatest(b *testing.B, got, want map[int64]keyedRecord) {
	b.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diffs []string
	for _, o := range slices.Sorted(maps.Keys(want)) {
		if r, ok := got[o]; !ok || r != want[o] {
			diffs = append(diffs, fmt.Sprintf("offset %d: got %q (present %v), want key %q", o, r.key, ok, want[o].key))
		}
	}
	for _, o := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[o]; !ok {
			diffs = append(diffs, fmt.Sprintf("offset %d: got key %q, want nothing", o, got[o].key))
		}
	}
	b.Fatalf("the bucket holds %d records, want each key's latest (%d); %d differ, first: %q",
		len(got), len(want), len(diffs), diffs[:min(len(diffs), 10)])
}

// bucketUsage counts a store's objects and their bytes.
func bucketUsage(b *testing.B, s objstore.Store) (objects int, size int64) {
	b.Helper()
	for info, err := range s.List(b.Context(), "") {
		if err != nil {
			b.Fatalf("List: %v", err)
		}
		objects++
		size += info.Size
	}
	return objects, size
}

// getPutBytes is what rawGetPut moved.
type getPutBytes struct{ get, put int64 }

// rawGetPut is the limit of a recompaction pass: every object of before
// read whole with one GET each, then, for each object of after that is
// not in before (the replacements), as many bytes PUT to a key of its
// own, all timed together. It returns the bytes read per second, and
// deletes what it put.
func rawGetPut(b *testing.B, s objstore.Store, before, after []meta.RemoteSegment) (float64, getPutBytes) {
	b.Helper()
	ctx := b.Context()
	old := map[string]bool{}
	for _, seg := range before {
		old[seg.ObjectKey] = true
	}
	var sizes []int64
	for _, seg := range after {
		if old[seg.ObjectKey] {
			continue
		}
		info, err := s.Head(ctx, seg.ObjectKey)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, info.Size)
	}
	data := objstoretest.Data("recompact-bench", int(slices.Max(append(sizes, 1))))
	buf := make([]byte, 1<<20)
	var moved getPutBytes
	start := time.Now()
	for _, seg := range before {
		n, err := objstoretest.ReadThrough(ctx, s, seg.ObjectKey, 0, -1, buf)
		if err != nil {
			b.Fatal(err)
		}
		moved.get += n
	}
	for i, size := range sizes {
		if err := s.Put(ctx, fmt.Sprintf("limit/%d", i), bytes.NewReader(data[:size]), size); err != nil {
			b.Fatal(err)
		}
		moved.put += size
	}
	elapsed := time.Since(start)
	for i := range sizes {
		if err := s.Delete(ctx, fmt.Sprintf("limit/%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	return float64(moved.get) / elapsed.Seconds(), moved
}

// readCounter is a store that counts the bytes read through Get.
type readCounter struct {
	objstore.Store
	read atomic.Int64
}

func (s *readCounter) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rc, err := s.Store.Get(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	return countedReader{rc, &s.read}, nil
}

type countedReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
