package offload

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// diskModel is an injected statfs: a disk of total bytes holding other
// bytes plus the hot log's segments.
type diskModel struct {
	h     *harness
	total uint64
	other atomic.Uint64

	mu     sync.Mutex
	events []bool // OnDiskPressure calls
}

func (d *diskModel) usage(string) (DiskUsage, error) {
	used := d.other.Load()
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

// TestDiskFullUntilUploaded: when deleting every uploaded segment is not
// enough, the disk is full (Produce refused) and nothing not yet uploaded
// is deleted; once it is uploaded, relief frees enough and full clears by
// itself.
func TestDiskFullUntilUploaded(t *testing.T) {
	h, d := pressureHarness(t)
	h.segments(4)
	segs := h.sealedSegments()
	h.hwm.Store(segs[2].NextOffset)
	h.mustSync()
	// Three uploaded segments freed still leave 0.90 used; the fourth
	// brings it to 0.84.
	d.other.Store(168_000)
	if err := h.mgr.checkDisk(); err != nil {
		t.Fatal(err)
	}
	if !h.mgr.DiskPressure() || !h.mgr.Status().DiskFull {
		t.Fatal("disk not reported full")
	}
	if got := h.log.LogStartOffset(); got != segs[3].BaseOffset {
		t.Fatalf("local start %d, want %d: the segment not uploaded must stay", got, segs[3].BaseOffset)
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
