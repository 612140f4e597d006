package offload

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/hotlog"
)

// diskModel is an injected statfs: a disk of total bytes holding other
// bytes plus the hot log's segments, and the ones it deleted until their
// blocks are reclaimed.
type diskModel struct {
	h        *harness
	total    uint64
	other    atomic.Uint64
	measured atomic.Int64 // usage calls

	mu     sync.Mutex
	events []bool // OnDiskPressure calls
}

func (d *diskModel) usage(string) (DiskUsage, error) {
	d.measured.Add(1)
	used := d.other.Load() + uint64(d.h.log.Unreclaimed())
	for _, s := range d.h.log.Segments() {
		used += uint64(s.Size)
	}
	return DiskUsage{Total: d.total, Available: d.total - min(used, d.total)}, nil
}

func (d *diskModel) onPressure(full bool) {
	d.mu.Lock()
	d.events = append(d.events, full)
	d.mu.Unlock()
}

func (d *diskModel) calls() []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]bool(nil), d.events...)
}

func pressureHarness(t *testing.T) (*harness, *diskModel) {
	d := &diskModel{total: 200_000}
	h := newHarness(t, harnessOptions{tweak: func(c *Config) {
		c.DataDir = "hot"
		c.DiskUsage = d.usage
		c.OnDiskPressure = d.onPressure
	}})
	d.h = h
	return h, d
}

// TestDiskPressureDeletesUploadedFirst: past the high-water mark, uploaded
// segments leave the hot disk oldest first, down to the low-water mark,
// before local retention would have let them.
func TestDiskPressureDeletesUploadedFirst(t *testing.T) {
	h, d := pressureHarness(t)
	h.segments(4)
	h.mustSync()
	segs := h.sealedSegments()
	// 0.905 used; one segment (6%) brings it under the low-water mark.
	d.other.Store(181_000 - uint64(4*segs[0].Size))
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	if got := h.log.LogStartOffset(); got != segs[0].NextOffset {
		t.Fatalf("local start %d after relief, want %d (only the oldest segment gone)", got, segs[0].NextOffset)
	}
	if h.mgr.DiskPressure() || len(d.calls()) != 0 {
		t.Fatalf("pressure %v, calls %v, after relief succeeded", h.mgr.DiskPressure(), d.calls())
	}
	if got := testutil.ToFloat64(h.mgr.metrics.localDeletes.WithLabelValues("disk_pressure")); got != 1 {
		t.Fatalf("disk_pressure deletes %v", got)
	}
}

// fullWithOneUploaded is a disk at 0.97 of four sealed segments (each
// about 6%) of which the first is uploaded, after a disk check: that one
// freed still leaves 0.91, so the disk is full; one more would bring it
// under the low-water mark.
func fullWithOneUploaded(t *testing.T) (*harness, *diskModel, []hotlog.SegmentInfo) {
	t.Helper()
	h, d := pressureHarness(t)
	h.segments(4)
	segs := h.sealedSegments()
	h.hwm.Store(segs[0].NextOffset)
	h.mustSync()
	d.other.Store(145_000)
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	return h, d, segs
}

// TestDiskFullUntilUploaded: when deleting every uploaded segment is not
// enough, the disk is full (Produce refused) and nothing not yet uploaded
// is deleted; once it is uploaded, relief frees enough and full clears by
// itself.
func TestDiskFullUntilUploaded(t *testing.T) {
	h, d, segs := fullWithOneUploaded(t)
	if !h.mgr.DiskPressure() || !h.mgr.Status().DiskFull {
		t.Fatal("disk not reported full")
	}
	if got := h.log.LogStartOffset(); got != segs[1].BaseOffset {
		t.Fatalf("local start %d, want %d: the segments not uploaded must stay", got, segs[1].BaseOffset)
	}
	h.checkNothingLocalLost()
	// Still full, nothing more to delete: no new call.
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	h.hwm.Store(-1)
	h.mustSync()
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	if h.mgr.DiskPressure() {
		t.Fatal("disk pressure did not clear")
	}
	if got := d.calls(); len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("OnDiskPressure calls %v, want [true false]", got)
	}
	h.checkNothingLocalLost()
}

// TestAFullDiskIsRelievedBetweenTheMarks: a disk that went full stays
// under relief down to the low-water mark. Space came back in part (usage
// between the marks) and uploads went on while Produce was refused:
// deleting the newly uploaded segments must clear full, not wait for
// local retention because usage is under the high-water mark.
func TestAFullDiskIsRelievedBetweenTheMarks(t *testing.T) {
	h, d, segs := fullWithOneUploaded(t)
	if !h.mgr.DiskPressure() {
		t.Fatal("disk not reported full")
	}
	d.other.Store(140_000) // 0.89: between the marks
	h.hwm.Store(-1)
	h.mustSync()
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	if h.mgr.DiskPressure() {
		u, _ := h.mgr.cfg.DiskUsage("")
		t.Fatalf("disk still full at %.3f used with uploaded segments to delete (local start %d)", u.UsedRatio(), h.log.LogStartOffset())
	}
	if got := h.log.LogStartOffset(); got != segs[1].NextOffset {
		t.Fatalf("local start %d, want %d: relief stops under the low-water mark", got, segs[1].NextOffset)
	}
	h.checkNothingLocalLost()
}

// TestReliefCountsDeletedSegmentsNotYetReclaimed: a deleted segment's
// blocks come back after its readers, file.delete.delay.ms and paced
// cuts, so a statfs right after the delete has not moved. Relief counts
// them as free (hotlog's Unreclaimed) and deletes what the low-water mark
// needs, not every uploaded segment, now or at the next check, and the
// disk is not full; the room to write goes by statfs, as the space is not
// there yet. The disk here is the log directory's files, as statfs counts
// them.
func TestReliefCountsDeletedSegmentsNotYetReclaimed(t *testing.T) {
	for _, delayMs := range []int64{0, 60_000} {
		var usage func() DiskUsage
		h := newHarness(t, harnessOptions{tweak: func(c *Config) {
			c.DataDir = "hot"
			c.DiskUsage = func(string) (DiskUsage, error) { return usage(), nil }
		}})
		c := hotlog.DefaultConfig()
		c.SegmentBytes, c.IndexIntervalBytes, c.SegmentIndexBytes = h.segmentBytes, 1024, 4<<10
		c.RetentionMs, c.RetentionBytes = LocalRetention(h.topic)
		c.FileDeleteDelayMs = delayMs
		if err := h.log.Reconfigure(c); err != nil {
			t.Fatal(err)
		}
		h.segments(8)
		h.mustSync()
		segs := h.sealedSegments()
		files := func() (used uint64) {
			entries, err := os.ReadDir(h.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
					used += uint64(info.Size())
				}
			}
			return used
		}
		// 0.905 used: freeing one segment's files is enough.
		const total = 200_000
		other := uint64(0.905*total) - files()
		usage = func() DiskUsage { return DiskUsage{Total: total, Available: total - min(other+files(), total)} }
		for range 2 {
			if err := h.mgr.checkDisk(); err != nil {
				t.Fatal(err)
			}
		}
		deleted := slices.IndexFunc(segs, func(s hotlog.SegmentInfo) bool { return s.NextOffset > h.log.LogStartOffset() })
		if deleted < 0 {
			deleted = len(segs)
		}
		if deleted != 1 {
			t.Errorf("file.delete.delay.ms %d: relief deleted %d of %d uploaded segments, want 1", delayMs, deleted, len(segs))
		}
		if h.mgr.DiskPressure() {
			t.Errorf("file.delete.delay.ms %d: relief freed enough, yet the disk is full", delayMs)
		}
		if delayMs > 0 && h.mgr.AdmitWrite(1) {
			t.Errorf("file.delete.delay.ms %d: a write admitted into space the deleted segment still holds", delayMs)
		}
	}
}

// TestAdmitWriteStopsAtTheHighWaterMark: AdmitWrite counts admitted
// bytes against the room under the high-water mark and measures the disk
// again only when that room is spent, so a burst of writes meets the mark,
// not a full disk, however long the check interval; a write that would
// cross the mark is refused and wakes the disk watch, which frees uploaded
// segments at once, and writes are admitted again without the clock
// moving.
func TestAdmitWriteStopsAtTheHighWaterMark(t *testing.T) {
	h, d := pressureHarness(t)
	h.segments(4)
	h.mustSync()
	var local uint64
	for _, s := range h.sealedSegments() {
		local += uint64(s.Size)
	}
	// 0.80 used: 20,000 bytes of room under the 0.90 mark, as the disk
	// watch's first check measures. Its next is DiskCheckInterval away on
	// a clock that does not move.
	d.other.Store(160_000 - local)
	if err := h.mgr.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.measured.Load() == 0 || h.mgr.Status().DiskUsedRatio == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the disk watch did not make its first check")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 20 {
		if !h.mgr.AdmitWrite(1_000) {
			t.Fatalf("write %d of 1,000 bytes refused with room for 20", i)
		}
	}
	if got := d.measured.Load(); got != 1 {
		t.Fatalf("%d measurements for 20 writes that fit the room measured once, want 1", got)
	}
	d.other.Add(20_000) // the writes landed: 0.90 used

	// The next write would cross the mark: refused, and the watch is
	// woken; it relieves the disk and writes are admitted again.
	if h.mgr.AdmitWrite(1_000) {
		t.Fatal("a write past the high-water mark was admitted")
	}
	for !h.mgr.AdmitWrite(1_000) {
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 10s after the watch was woken; local start %d", h.log.LogStartOffset())
		}
		time.Sleep(time.Millisecond)
	}
	if got := h.log.LogStartOffset(); got == 0 {
		t.Fatal("writes admitted again but no uploaded segment left the hot disk")
	}
	if h.mgr.DiskPressure() {
		t.Fatal("relief freed enough, yet the disk is reported full")
	}
	h.checkNothingLocalLost()
}
