package offload

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/meta"
)

// TestUploadEndToEnd takes sealed segments through the whole protocol with
// a real meta node and a file:// store: uploaded in order, committed, the
// bucket manifest published, local files deleted only once committed and
// only when local retention says so.
func TestUploadEndToEnd(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: map[string]string{"local.retention.ms": "3600000"}})
	h.segments(3)
	h.append(2, 100) // the active segment: never uploaded
	sealed := h.sealedSegments()

	// Step 1: the high watermark holds the third segment back.
	h.hwm.Store(sealed[2].NextOffset - 1)
	h.mustSync()
	if got := h.committed(); len(got) != 2 {
		t.Fatalf("%d segments committed with the third above the high watermark, want 2", len(got))
	}
	h.checkConsistent()
	st := h.mgr.Status().Partitions[0]
	if st.HighestTieredOffset != sealed[1].NextOffset-1 || st.SegmentsAwaitingUpload != 1 || st.BytesAwaitingUpload != sealed[2].Size {
		t.Fatalf("status %+v, want 2 tiered and the third awaiting", st)
	}

	// Local retention has not passed: nothing local goes, uploaded or not.
	if h.log.LogStartOffset() != 0 {
		t.Fatalf("local start %d before local.retention.ms passed", h.log.LogStartOffset())
	}
	// Once it has, only what is committed goes.
	h.clock.Advance(2 * time.Hour)
	h.mustSync()
	if got := h.log.LogStartOffset(); got != sealed[1].NextOffset {
		t.Fatalf("local start %d after local retention, want %d (the end of what is committed)", got, sealed[1].NextOffset)
	}

	h.hwm.Store(-1)
	h.mustSync()
	h.mustSync() // the expiry pass that follows the upload deletes it locally
	if got := h.committed(); len(got) != 3 {
		t.Fatalf("%d segments committed, want 3", len(got))
	}
	if got := h.log.LogStartOffset(); got != sealed[2].NextOffset {
		t.Fatalf("local start %d, want %d", got, sealed[2].NextOffset)
	}
	h.checkConsistent()
	for _, s := range h.committed() {
		if n := h.store.putCount(s.ObjectKey); n != 1 {
			t.Fatalf("%s put %d times", s.ObjectKey, n)
		}
	}
	reg := h.cfg.Registerer.(*prometheus.Registry)
	if n := testutil.ToFloat64(h.mgr.metrics.uploadedSegments); n != 3 {
		t.Fatalf("uploaded_segments_total %v", n)
	}
	if n, err := testutil.GatherAndCount(reg, "strata_offload_puts_per_segment"); err != nil || n != 1 {
		t.Fatalf("puts_per_segment: %d series, %v", n, err)
	}
	if got := testutil.ToFloat64(h.mgr.metrics.localDeletes.WithLabelValues("retention")); got != 3 {
		t.Fatalf("local retention deletes %v, want 3", got)
	}
	if st := h.mgr.Status().Partitions[0]; st.LastUpload.IsZero() || st.SegmentsAwaitingUpload != 0 || st.LastError != "" {
		t.Fatalf("status %+v", st)
	}
}

// TestLeaderEpochFences: a Manager whose leader epoch is not the
// partition's uploads nothing and sweeps nothing.
func TestLeaderEpochFences(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(1)
	h.epoch.Store(7)
	err := h.sync()
	if !errors.Is(err, meta.ErrFencedLeaderEpoch) {
		t.Fatalf("Sync at a stale leader epoch: %v", err)
	}
	if len(h.manifest().Segments) != 0 {
		t.Fatalf("manifest %+v", h.manifest())
	}
	if st := h.mgr.Status().Partitions[0]; st.LastError == "" {
		t.Fatal("status shows no error")
	}
}

// TestTieringDisabled: remote.storage.enable=false and
// remote.log.copy.disable=true copy nothing.
func TestTieringDisabled(t *testing.T) {
	for _, configs := range []map[string]string{
		{"remote.storage.enable": "false"},
		{"remote.log.copy.disable": "true"},
	} {
		h := newHarness(t, harnessOptions{topicConfigs: configs})
		h.segments(1)
		h.mustSync()
		if len(h.manifest().Segments) != 0 {
			t.Fatalf("%v: manifest %+v", configs, h.manifest())
		}
	}
}

// TestCopyDisabledKeepsTheTotalRetention: with remote.log.copy.disable
// nothing more reaches the bucket, so the hot log keeps the topic-wide
// retention and deletes by it segments the bucket never held (before, it
// deleted nothing uncommitted and the disk filled). A segment older than
// local.retention.ms (its default, an hour) but younger than retention.ms
// stays.
func TestCopyDisabledKeepsTheTotalRetention(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: map[string]string{
		"remote.log.copy.disable": "true", "retention.ms": strconv.Itoa(int((2 * time.Hour).Milliseconds())),
	}})
	h.segments(3) // [0, 17]
	h.clock.Advance(3 * time.Hour)
	h.segments(1) // [18, 23]
	h.clock.Advance(90 * time.Minute)
	h.segments(1) // [24, 29]
	h.mustSync()
	if start := h.log.LogStartOffset(); start != 18 {
		t.Fatalf("log start %d once three segments were older than retention.ms, want 18", start)
	}
	if got := h.manifest().Segments; len(got) != 0 {
		t.Fatalf("uploaded %+v with copying disabled", got)
	}
}

// TestCopyDisabledWaitsForTheLogsRetention: copying is turned off, and
// until the hot log's config follows (its retention still the local one,
// an hour), the segments the bucket never held stay, though older than
// that: the local retention would have deleted what only the hot log
// holds ninety minutes after it was written, where retention.ms keeps it
// two hours.
func TestCopyDisabledWaitsForTheLogsRetention(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: map[string]string{
		"remote.log.copy.disable": "false", "retention.ms": strconv.Itoa(int((2 * time.Hour).Milliseconds())),
	}})
	if _, err := h.meta.Propose(t.Context(), meta.AlterTopicConfigs{
		Name: h.topic.Name, ID: h.topic.ID, Set: map[string]string{"remote.log.copy.disable": "true"},
	}); err != nil {
		t.Fatal(err)
	}
	h.segments(3) // [0, 17], never uploaded
	h.clock.Advance(90 * time.Minute)
	h.segments(1)
	h.mustSync()
	if start := h.log.LogStartOffset(); start != 0 {
		t.Fatalf("log start %d before the log's retention followed the change, want 0", start)
	}
}

// TestSegmentBeingSwappedWaits: while the cleaner swaps a sealed
// segment's files (its .log.swap exists: hotlog/rewrite.go), the index
// files at their paths may be the new ones beside the old .log, so the
// copy task waits for the next pass rather than upload them together.
func TestSegmentBeingSwappedWaits(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(1)
	swap := segmentPath(h.dir, 0, ".log.swap")
	if err := os.WriteFile(swap, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	if got := h.manifest().Segments; len(got) != 0 {
		t.Fatalf("uploaded %+v during a swap", got)
	}
	if !strings.Contains(h.logged(), "swapped by a rewrite") {
		t.Fatalf("the wait was not logged:\n%s", h.logged())
	}
	if err := os.Remove(swap); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	h.checkConsistent()
	if got := h.committed(); len(got) != 1 {
		t.Fatalf("committed %+v after the swap, want the segment", got)
	}
}
