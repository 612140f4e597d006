package offload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// commitFormerLeaders commits, as a former leader whose segments ended
// elsewhere would have, one segment holding the appended batches in
// [0, end); end must be a batch's base offset.
func (h *harness) commitFormerLeaders(end int64) meta.RemoteSegment {
	h.t.Helper()
	var batches [][]byte
	for at := int64(0); at < end; {
		b, ok := h.appended[at]
		if !ok {
			h.t.Fatalf("no batch appended at %d", at)
		}
		hd, err := record.ParseHeader(b)
		if err != nil {
			h.t.Fatal(err)
		}
		batches = append(batches, b)
		at = hd.NextOffset()
	}
	id := uuid.New()
	return h.putFormerLeaders(meta.RemoteSegment{
		ID: id, BaseOffset: 0, EndOffset: end - 1, ObjectKey: segmentobject.SegmentKey(h.prefix(), 0, id),
	}, batches...)
}

// putFormerLeaders stores the object of segment s, holding batches, and
// commits s, its size and max timestamp theirs, under leader epoch 0.
func (h *harness) putFormerLeaders(s meta.RemoteSegment, batches ...[]byte) meta.RemoteSegment {
	h.t.Helper()
	var log []byte
	ix := segmentobject.NewIndexer(s.BaseOffset, 4096)
	for _, b := range batches {
		hd, err := record.ParseHeader(b)
		if err != nil {
			h.t.Fatal(err)
		}
		ix.Add(hd.BaseOffset, len(b), hd.MaxTimestamp)
		log = append(log, b...)
	}
	offsetIndex, timeIndex, size, maxTimestamp := ix.Finish()
	s.SizeBytes, s.MaxTimestamp = size, maxTimestamp
	s.LeaderEpochs = []meta.EpochEntry{{Epoch: 0, StartOffset: s.BaseOffset}}
	var object bytes.Buffer
	_, err := segmentobject.Write(&object, segmentobject.Source{
		BaseOffset: s.BaseOffset, NextOffset: s.EndOffset + 1, MaxTimestamp: maxTimestamp, Log: bytes.NewReader(log), LogSize: size,
		OffsetIndex: offsetIndex, TimeIndex: timeIndex, Epochs: s.LeaderEpochs,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx := h.t.Context()
	if err := h.store.Store.Put(ctx, s.ObjectKey, bytes.NewReader(object.Bytes()), int64(object.Len())); err != nil {
		h.t.Fatal(err)
	}
	for _, cmd := range []meta.Command{
		meta.BeginSegmentCopy{
			Topic: h.topic.Name, TopicID: h.topic.ID, SegmentID: s.ID, BaseOffset: s.BaseOffset, EndOffset: s.EndOffset,
			MaxTimestamp: maxTimestamp, SizeBytes: size, LeaderEpochs: s.LeaderEpochs, ObjectKey: s.ObjectKey,
		},
		meta.CommitSegmentCopy{Topic: h.topic.Name, TopicID: h.topic.ID, SegmentID: s.ID},
	} {
		if _, err := h.meta.Propose(ctx, cmd); err != nil {
			h.t.Fatal(err)
		}
	}
	return s
}

// checkIndexFinds checks that the object of s finds each of its batches
// by offset and by timestamp: the index leads to a batch at or before it,
// from which the batches run to it.
func (h *harness) checkIndexFinds(s meta.RemoteSegment) {
	h.t.Helper()
	ix, batches, headers := h.readObject(s)
	positions := map[int64]int64{} // batch base offset by position
	at := int64(0)
	for i, hd := range headers {
		positions[at] = hd.BaseOffset
		at += int64(len(batches[i]))
	}
	for _, hd := range headers {
		pos, base, err := ix.StartPosition(hd.BaseOffset)
		if err != nil || positions[pos] != base || base > hd.BaseOffset {
			h.t.Fatalf("%s: offset %d indexed at position %d, offset %d (%v); batches at %v", s.ObjectKey, hd.BaseOffset, pos, base, err, positions)
		}
		if from, ok := ix.OffsetForTimestamp(hd.MaxTimestamp); !ok || from > hd.BaseOffset {
			h.t.Fatalf("%s: timestamp %d of the batch at %d found from offset %d (%v)", s.ObjectKey, hd.MaxTimestamp, hd.BaseOffset, from, ok)
		}
	}
}

// TestStraddlingSegmentUploadsFromTheTieredEnd: a former leader ended its
// segment inside this replica's first one (replicas roll by segment.ms
// each at its own time). The copy task uploads that segment from the
// tiered end on, its indexes rebuilt for the part, and the segments after
// it whole: the committed segments stay contiguous, every object holds
// the batches appended, the part's index follows the topic's
// index.interval.bytes, and the straddling segment may then leave the
// hot disk.
func TestStraddlingSegmentUploadsFromTheTieredEnd(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: map[string]string{"local.retention.ms": "1000", "index.interval.bytes": "1"}})
	// The first segment's newest batches are in its first half, which the
	// former leader uploaded: the part's max timestamp is its own.
	h.clock.Advance(2 * time.Second)
	h.append(3, 2000)
	h.clock.Advance(-time.Second)
	h.append(3, 2000)
	h.roll()
	h.clock.Advance(2 * time.Second)
	h.append(6, 2000)
	h.roll()
	sealed := h.sealedSegments()
	former := h.commitFormerLeaders(3)
	h.mustSync()
	h.checkConsistent()
	got := h.committed()
	if len(got) != 3 || got[0].ID != former.ID || got[1].BaseOffset != 3 || got[1].EndOffset != sealed[0].NextOffset-1 ||
		got[2].BaseOffset != sealed[1].BaseOffset {
		t.Fatalf("committed %+v, want the former leader's [0, 2], then [3, %d] and the next segment", got, sealed[0].NextOffset-1)
	}
	if want := sealed[0].Size - former.SizeBytes; got[1].SizeBytes != want {
		t.Fatalf("the straddling segment's part is %d bytes, want %d (the segment's %d less the former leader's %d)",
			got[1].SizeBytes, want, sealed[0].Size, former.SizeBytes)
	}
	if want := h.clock.Now().Add(-2 * time.Second).UnixMilli(); got[1].MaxTimestamp != want {
		t.Fatalf("the part's max timestamp %d, want %d (its batches', not the segment's %d)", got[1].MaxTimestamp, want, sealed[0].MaxTimestamp)
	}
	if len(got[1].LeaderEpochs) != 1 || got[1].LeaderEpochs[0].StartOffset != 3 {
		t.Fatalf("the part's leader epochs %+v, want one from offset 3", got[1].LeaderEpochs)
	}
	for _, s := range got {
		h.checkIndexFinds(s)
	}
	// An interval of one byte indexes every batch but the first.
	ix, _, headers := h.readObject(got[1])
	if n := ix.Footer.Sections[segmentobject.SectionOffsetIndex].Length / 8; n != uint64(len(headers)-1) {
		t.Fatalf("the part's offset index has %d entries for %d batches, want one for each but the first (index.interval.bytes=1)", n, len(headers))
	}
	if !strings.Contains(h.logged(), "uploading a segment from the tiered end") {
		t.Fatalf("the partial upload was not logged:\n%s", h.logged())
	}
	h.clock.Advance(2 * time.Second)
	h.mustSync()
	if start := h.log.LogStartOffset(); start != sealed[1].NextOffset {
		t.Fatalf("local start %d after local retention, want %d: the straddling segment is tiered", start, sealed[1].NextOffset)
	}
}

// TestStraddlingUploadResumes: a crash after the part's object was stored
// leaves a copying entry of the part, which the next process resumes
// under its key without storing the object again.
func TestStraddlingUploadResumes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.append(6, 2000)
	h.roll()
	h.commitFormerLeaders(4)
	h.startManager(crashOnce(stepObjectPut))
	if err := h.sync(); !errors.Is(err, errCrash) {
		t.Fatalf("Sync: %v, want the crash", err)
	}
	var key string
	for _, s := range h.manifest().Segments {
		if s.State == meta.SegmentCopying {
			key = s.ObjectKey
		}
	}
	if key == "" {
		t.Fatalf("no copying entry after the crash: %+v", h.manifest())
	}
	h.startManager(nil)
	h.mustSync()
	h.checkConsistent()
	got := h.committed()
	if len(got) != 2 || got[1].ObjectKey != key || got[1].BaseOffset != 4 {
		t.Fatalf("committed %+v, want the part from offset 4 resumed as %s", got, key)
	}
	if n := h.store.putCount(key); n != 1 {
		t.Fatalf("%s put %d times, want once", key, n)
	}
}

// TestCopyOfOtherSizeIsAbandoned: a copying entry over the very offsets
// to upload next, the part's, but of another size (a former leader's
// part, its segment cleaned otherwise) is not resumed: it is abandoned,
// its object deleted (checkConsistent: the bucket holds the committed
// objects alone), and the part uploaded under a key of its own.
func TestCopyOfOtherSizeIsAbandoned(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.append(6, 2000)
	h.roll()
	h.commitFormerLeaders(2)
	next := h.sealedSegments()[0].NextOffset
	ctx := t.Context()
	stale := uuid.New()
	staleKey := segmentobject.SegmentKey(h.prefix(), 2, stale)
	_, err := h.meta.Propose(ctx, meta.BeginSegmentCopy{
		Topic: h.topic.Name, TopicID: h.topic.ID, SegmentID: stale, BaseOffset: 2, EndOffset: next - 1,
		MaxTimestamp: h.clock.Now().UnixMilli(), SizeBytes: 100,
		LeaderEpochs: []meta.EpochEntry{{Epoch: 0, StartOffset: 2}}, ObjectKey: staleKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Store.Put(ctx, staleKey, strings.NewReader("stale"), 5); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	h.mustSync() // the expiry pass deletes the abandoned entry's object
	h.checkConsistent()
	got := h.committed()
	if len(got) != 2 || got[1].BaseOffset != 2 || got[1].ObjectKey == staleKey {
		t.Fatalf("committed %+v, want the part from offset 2 under a new key", got)
	}
}

// TestTieredEndInsideABatchIsRefused: when no batch of the local segment
// starts at the tiered end (the logs diverge: a batch holds offsets on
// both sides of it), nothing is uploaded and the status says why.
func TestTieredEndInsideABatchIsRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.append(2, 2000)
	values := []record.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}
	b, err := record.Build(record.BuildOptions{FirstTimestamp: h.clock.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, values)
	if err != nil {
		t.Fatal(err)
	}
	h.appendBatch(b)
	h.append(1, 2000)
	h.roll()
	// The former leader's segment ends at offset 3, inside the batch [2, 4].
	// Its object is never read here; the bucket manifest needs a size that
	// leaves room for a tail.
	ctx := t.Context()
	id := uuid.New()
	key := segmentobject.SegmentKey(h.prefix(), 0, id)
	object := make([]byte, 1+segmentobject.FooterSize)
	if err := h.store.Store.Put(ctx, key, bytes.NewReader(object), int64(len(object))); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []meta.Command{
		meta.BeginSegmentCopy{
			Topic: h.topic.Name, TopicID: h.topic.ID, SegmentID: id, BaseOffset: 0, EndOffset: 3,
			MaxTimestamp: h.clock.Now().UnixMilli(), SizeBytes: 1,
			LeaderEpochs: []meta.EpochEntry{{Epoch: 0, StartOffset: 0}}, ObjectKey: key,
		},
		meta.CommitSegmentCopy{Topic: h.topic.Name, TopicID: h.topic.ID, SegmentID: id},
	} {
		if _, err := h.meta.Propose(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.sync(); !errors.Is(err, ErrStraddlesRemote) {
		t.Fatalf("Sync: %v, want ErrStraddlesRemote", err)
	}
	if n := len(h.manifest().Segments); n != 1 {
		t.Fatalf("manifest %+v, want the former leader's segment alone", h.manifest())
	}
	if st := h.mgr.Status().Partitions[0]; !strings.Contains(st.LastError, "no batch at the tiered end 4") {
		t.Fatalf("status %+v does not name the batch holding the tiered end", st)
	}
}

// TestTieredEndInsideACleanedRun: the cleaner joins the batches it
// empties into one empty batch, across the offset where a former
// leader's segment ended. The part then starts with an empty batch of
// its own for the run's offsets from there.
func TestTieredEndInsideACleanedRun(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.append(2, 2000)
	ts := h.clock.Now().UnixMilli()
	run, err := record.Rebuild(record.Header{ // offsets 2 to 6, as compact.Writer joins them
		LastOffsetDelta: 4, FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.appendBatch(run)
	h.append(3, 2000)
	h.roll()
	h.commitFormerLeaders(2) // its segment [0, 1]; then one ending inside the run
	id := uuid.New()
	key := segmentobject.SegmentKey(h.prefix(), 2, id)
	tail, err := record.Rebuild(record.Header{
		BaseOffset: 2, LastOffsetDelta: 1, FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.putFormerLeaders(meta.RemoteSegment{ID: id, BaseOffset: 2, EndOffset: 3, ObjectKey: key}, tail)
	h.mustSync()
	got := h.committed()
	if len(got) != 3 || got[2].BaseOffset != 4 || got[2].EndOffset != 9 {
		t.Fatalf("committed %+v, want [0, 1], [2, 3] and the part [4, 9]", got)
	}
	_, batches, headers := h.readObject(got[2])
	if headers[0].BaseOffset != 4 || headers[0].LastOffset() != 6 || headers[0].NumRecords != 0 {
		t.Fatalf("the part starts with %+v, want an empty batch for offsets 4 to 6", headers[0])
	}
	if _, err := record.Validate(batches[0]); err != nil {
		t.Fatalf("the part's first batch: %v", err)
	}
	for i, hd := range headers[1:] {
		if !bytes.Equal(batches[i+1], h.appended[hd.BaseOffset]) {
			t.Fatalf("the part's batch at %d differs from the one appended", hd.BaseOffset)
		}
	}
	h.checkIndexFinds(got[2])
}
