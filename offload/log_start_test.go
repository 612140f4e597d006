package offload

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// appendTens appends n batches of ten records of 200 bytes each, timestamped
// now, and waits until they are durable: their offsets are multiples of
// ten (on an empty log).
func (h *harness) appendTens(n int) {
	h.t.Helper()
	for range n {
		records := make([]record.Record, 10)
		for i := range records {
			records[i].Value = make([]byte, 200)
			for j := 0; j < 200; j += 8 {
				binary.LittleEndian.PutUint64(records[i].Value[j:], h.rng.Uint64())
			}
		}
		b, err := record.Build(record.BuildOptions{FirstTimestamp: h.clock.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			h.t.Fatal(err)
		}
		h.appendBatch(b)
	}
}

// moveRemoteLogStart proposes what DeleteRecords proposes before it moves
// the hot log's start.
func (h *harness) moveRemoteLogStart(offset int64) {
	h.t.Helper()
	if _, err := h.meta.Propose(h.t.Context(), meta.MoveRemoteLogStart{
		Topic: h.topic.Name, TopicID: h.topic.ID, LeaderEpoch: h.epoch.Load(), Offset: offset,
	}); err != nil {
		h.t.Fatal(err)
	}
}

// TestUploadStartsAtTheBatchOfTheLogStart: DeleteRecords put the log start
// inside a batch of a segment not yet uploaded (meta's, then the hot
// log's, which trims the epoch cache to it). The segment uploads from the
// batch that holds the start, with the epoch in force there from the
// batch's base; the segments after it whole.
func TestUploadStartsAtTheBatchOfTheLogStart(t *testing.T) {
	h := newHarness(t, harnessOptions{segmentBytes: 1 << 20})
	h.appendTens(10) // [0, 100)
	h.roll()
	h.appendTens(3) // [100, 130)
	h.roll()
	h.moveRemoteLogStart(45)
	if _, err := h.log.DeleteBefore(45); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	h.checkConsistent()
	got := h.committed()
	if len(got) != 2 || got[0].BaseOffset != 40 || got[0].EndOffset != 99 || got[1].BaseOffset != 100 {
		t.Fatalf("committed %+v, want [40, 99] (from the batch holding the log start 45) and [100, 129]", got)
	}
	if e := got[0].LeaderEpochs; len(e) != 1 || e[0].StartOffset != 40 {
		t.Fatalf("the part's leader epochs %+v, want one from its base 40", e)
	}
	h.checkIndexFinds(got[0])
	if bm := h.bucketManifest(); bm.LogStartOffset != 45 {
		t.Fatalf("the bucket manifest starts at %d, want 45", bm.LogStartOffset)
	}
	if !strings.Contains(h.logged(), "uploading a segment from the log start") {
		t.Fatalf("the upload from the log start was not logged:\n%s", h.logged())
	}
}

// TestHotLogFollowsTheRemoteLogStart: a leader crashed after DeleteRecords
// moved the remote log start and before it moved its hot log's (or a new
// leader took over before following it). Offload uploads from the batch
// at that start and moves the hot log's start up to it.
func TestHotLogFollowsTheRemoteLogStart(t *testing.T) {
	h := newHarness(t, harnessOptions{segmentBytes: 1 << 20})
	h.appendTens(10) // [0, 100)
	h.roll()
	h.appendTens(10) // [100, 200)
	h.roll()
	h.moveRemoteLogStart(123)
	h.mustSync()
	h.checkConsistent()
	if start := h.log.LogStartOffset(); start != 123 {
		t.Fatalf("the hot log starts at %d, want the remote log start 123", start)
	}
	got := h.committed()
	if len(got) != 1 || got[0].BaseOffset != 120 || got[0].EndOffset != 199 {
		t.Fatalf("committed %+v, want [120, 199] alone", got)
	}
}

// TestUploadPastAGapMovesTheRemoteLogStart: the hot log deleted past the
// bucket's end while the topic was untiered (local retention, then the
// total one, or DeleteRecords). Uploading from the hot log's start would
// leave offsets in the bucket beyond a gap no reader crosses, so the
// remote log start moves to it first and remote retention deletes what is
// below.
func TestUploadPastAGapMovesTheRemoteLogStart(t *testing.T) {
	h := newHarness(t, harnessOptions{segmentBytes: 1 << 20})
	h.appendTens(10) // [0, 100)
	h.roll()
	h.mustSync()
	h.appendTens(10) // [100, 200)
	h.roll()
	h.appendTens(10) // [200, 300)
	h.roll()
	if _, err := h.log.DeleteBefore(200); err != nil { // past the tiered end, 100
		t.Fatal(err)
	}
	h.mustSync()
	h.checkConsistent()
	if m := h.manifest(); m.RemoteLogStartOffset != 200 {
		t.Fatalf("the remote log start is %d, want the hot log's start 200", m.RemoteLogStartOffset)
	}
	got := h.committed()
	if len(got) != 1 || got[0].BaseOffset != 200 || got[0].EndOffset != 299 {
		t.Fatalf("committed %+v, want [200, 299] alone, [0, 99] deleted below the start", got)
	}
	if !strings.Contains(h.logged(), "past a gap") {
		t.Fatalf("the moved start was not logged:\n%s", h.logged())
	}
}

// TestRecompactionAcrossTheLogStart: on a compact,delete topic,
// DeleteRecords puts the remote log start inside a recompacted segment;
// the next passes recompact the run that starts with that segment, which
// stays readable from the start, rather than fail on it every pass.
func TestRecompactionAcrossTheLogStart(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{"cleanup.policy": "compact,delete"})})
	h.keyedSegments(4, 10)
	h.mustSync()
	if got := h.committed(); len(got) != 1 || got[0].BaseOffset != 0 {
		t.Fatalf("committed after the first pass: %+v, want one recompacted segment from 0", got)
	}
	h.moveRemoteLogStart(15)
	h.keyedSegments(2, 10)
	h.mustSync()
	man := h.manifest()
	got := h.committed()
	if len(got) != 1 || got[0].BaseOffset > 15 || man.CleanedOffset != got[0].EndOffset+1 {
		t.Fatalf("after DeleteRecords to 15 and two more segments: committed %+v, cleaned to %d; want one recompacted segment holding 15 and cleaned to its end",
			got, man.CleanedOffset)
	}
}

// idle reports whether the scheduler runs no pass of the partition and
// has none due before the fake clock moves.
func (h *harness) idle() bool {
	m := h.mgr
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, p := range m.mu.order {
		for _, s := range []*taskSchedule{&p.copy, &p.expiry} {
			if s.running || !now.Before(s.due) {
				return false
			}
		}
	}
	return true
}

// TestNotifyLogStartRepublishesAtOnce: after DeleteRecords moved the remote
// log start, the broker's notice runs the expiry task at once (the fake
// clock never reaches ExpiryInterval here): the segment wholly below the
// start is deleted, the hot log follows and the bucket manifest starts
// there, so a batch job is no longer shown the deleted records.
func TestNotifyLogStartRepublishesAtOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{segmentBytes: 1 << 20})
	h.appendTens(10) // [0, 100)
	h.roll()
	h.appendTens(10) // [100, 200)
	h.roll()
	if err := h.mgr.Start(); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	waitFor(t, "the passes the start ran to end", h.idle)
	h.moveRemoteLogStart(123)
	h.mgr.NotifyLogStart(h.topic.Name, 0)
	waitFor(t, "the bucket manifest to start at 123", func() bool { return h.bucketManifest().LogStartOffset == 123 }, h.logged)
	waitFor(t, "the expiry pass to delete [0, 99]", func() bool {
		got := h.committed()
		return len(got) == 1 && got[0].BaseOffset == 100 && len(h.manifest().Segments) == 1
	})
	if start := h.log.LogStartOffset(); start != 123 {
		t.Fatalf("the hot log starts at %d, want the remote log start 123", start)
	}
	h.checkConsistent()
}

// TestRecompactionFromALogStartInsideTheLastBatch: DeleteRecords put the
// remote log start inside the last batch the bucket holds, on a compacted
// topic with nothing after it. The pass maps that batch and cleans past
// it: before, it skipped the batch, found the map empty and failed with
// "map too small" on every pass.
func TestRecompactionFromALogStartInsideTheLastBatch(t *testing.T) {
	// Not cleanable until the clock moves: uploaded first, uncleaned.
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{"min.compaction.lag.ms": "3600000"})})
	h.appendTens(1) // [0, 10), one batch
	h.roll()
	h.mustSync()
	if man := h.manifest(); man.CleanedOffset != 0 || len(h.committed()) != 1 {
		t.Fatalf("after the upload: cleaned to %d, committed %+v; want 0 and the segment", man.CleanedOffset, h.committed())
	}
	h.moveRemoteLogStart(5)
	if _, err := h.log.DeleteBefore(5); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Hour)
	h.mustSync()
	if man := h.manifest(); man.CleanedOffset != 10 {
		t.Fatalf("cleaned to %d, want past the batch holding the log start, 10", man.CleanedOffset)
	}
}
