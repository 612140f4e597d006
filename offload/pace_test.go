package offload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// TestPacedReaderKeepsToItsRate reads 3 MiB through a 4 MiB/s pace with a
// 1 MiB burst: it cannot take less than the 2 MiB past the burst need,
// half a second, and gets every byte.
func TestPacedReaderKeepsToItsRate(t *testing.T) {
	data := bytes.Repeat([]byte("strata"), 3<<20/6)
	r := pacedReader{ctx: context.Background(), r: bytes.NewReader(data), pace: newPace(Config{CopyMaxBytesPerSecond: 4 << 20})}
	start := time.Now()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(data))
	}
	floor := time.Duration(float64(len(data)-paceBurst) / float64(4<<20) * float64(time.Second))
	if took := time.Since(start); took < floor-10*time.Millisecond {
		t.Fatalf("3 MiB read in %v through a 4 MiB/s pace, faster than its %v", took, floor)
	}
}

// TestPacedReaderStopsWithItsContext: a cancelled upload does not wait
// out its pace.
func TestPacedReaderStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := pacedReader{ctx: ctx, r: bytes.NewReader(make([]byte, 4<<20)), pace: newPace(Config{CopyMaxBytesPerSecond: 1 << 20})}
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestCopyMaxBytesPerSecondBelowMinUploadRateIsRefused(t *testing.T) {
	c := DefaultConfig()
	for _, rate := range []int64{-1, 1, c.MinUploadRate - 1} {
		c.CopyMaxBytesPerSecond = rate
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("CopyMaxBytesPerSecond %d: %v, want ErrInvalidConfig", rate, err)
		}
	}
	for _, rate := range []int64{0, c.MinUploadRate, 100 << 20} {
		c.CopyMaxBytesPerSecond = rate
		if err := c.Validate(); err != nil {
			t.Errorf("CopyMaxBytesPerSecond %d: %v", rate, err)
		}
	}
}

// TestPaceBoundsUploadsInFlight: uploads sharing a pace each keep at least
// MinUploadRate, so none outruns its attempt timeout.
func TestPaceBoundsUploadsInFlight(t *testing.T) {
	c := DefaultConfig()
	c.UploadConcurrency, c.MinUploadRate = 4, 1<<20
	for _, tc := range []struct {
		pace int64
		want int
	}{
		{0, 4},         // unpaced
		{1 << 20, 1},   // one upload at the whole pace
		{3<<20 - 1, 2}, // two at 1.5 MiB/s each, not three below 1 MiB/s
		{4 << 20, 4},   // four at 1 MiB/s
		{100 << 20, 4}, // UploadConcurrency bounds it
	} {
		c.CopyMaxBytesPerSecond = tc.pace
		if got := uploadSlots(c); got != tc.want {
			t.Errorf("pace %d: %d uploads in flight, want %d", tc.pace, got, tc.want)
		}
		if tc.pace > 0 && tc.pace/int64(uploadSlots(c)) < c.MinUploadRate {
			t.Errorf("pace %d: a share of %d bytes/s, below MinUploadRate", tc.pace, tc.pace/int64(uploadSlots(c)))
		}
	}
	c.CopyMaxBytesPerSecond = 2 << 20
	m, err := New(c, testMeta(t), newCountingStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cap(m.copySlots); got != 2 {
		t.Fatalf("a Manager paced at 2 MiB/s has %d copy slots, want 2", got)
	}
}

// TestDrainRate: the drain pace is the backlog over CopyDrainTime, at
// least every upload slot's MinUploadRate, at most CopyMaxBytesPerSecond,
// and lifted to that cap (or none) while the hot disk is full.
func TestDrainRate(t *testing.T) {
	c := DefaultConfig()
	c.UploadConcurrency, c.MinUploadRate, c.CopyDrainTime = 4, 1<<20, 10*time.Second
	m, err := New(c, testMeta(t), newCountingStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		backlog int64
		cap     int64
		full    bool
		want    rate.Limit
	}{
		{0, 0, false, 4 << 20},                // the floor: four slots at 1 MiB/s
		{1 << 30, 0, false, (1 << 30) / 10.0}, // a gigabyte over 10 s
		{1 << 30, 50 << 20, false, 50 << 20},  // capped
		{1 << 30, 0, true, rate.Inf},          // the disk is full: unpaced
		{1 << 30, 50 << 20, true, 50 << 20},   // but never above the cap
	} {
		m.cfg.CopyMaxBytesPerSecond = tc.cap
		m.pressure.full.Store(tc.full)
		if got := m.drainRate(tc.backlog); got != tc.want {
			t.Errorf("backlog %d, cap %d, full %v: %v bytes/s, want %v", tc.backlog, tc.cap, tc.full, got, tc.want)
		}
	}
}

// TestRepaceFollowsTheBacklog: an upload's reads set the pace from the
// partitions' sealed bytes not yet uploaded, at most every paceInterval.
func TestRepaceFollowsTheBacklog(t *testing.T) {
	h := newHarness(t, harnessOptions{tweak: func(c *Config) { c.CopyDrainTime = time.Second }})
	h.segments(3)
	var backlog int64
	for _, s := range h.log.Segments() {
		if s.Sealed {
			backlog += s.Size
		}
	}
	h.mgr.repace()
	if got, want := h.mgr.pace.Limit(), h.mgr.drainRate(backlog); got != want {
		t.Fatalf("pace %v with %d bytes awaiting upload, want %v", got, backlog, want)
	}
	h.mgr.pace.SetLimit(1)
	h.mgr.repace() // within paceInterval of the last: kept
	if got := h.mgr.pace.Limit(); got != 1 {
		t.Fatalf("pace recomputed within paceInterval: %v", got)
	}
}

// TestAwaitingUploadCountsTheUntieredPart: the backlog holds the sealed
// segments above the tiered end whole and, of one that straddles it, the
// part above by its share of offsets; the active segment, none.
func TestAwaitingUploadCountsTheUntieredPart(t *testing.T) {
	man := meta.Manifest{Segments: []meta.RemoteSegment{{State: meta.SegmentCommitted, BaseOffset: 0, EndOffset: 29}}}
	local := []hotlog.SegmentInfo{
		{BaseOffset: 10, NextOffset: 20, Size: 100, Sealed: true}, // tiered
		{BaseOffset: 20, NextOffset: 40, Size: 200, Sealed: true}, // straddles 30: half above
		{BaseOffset: 40, NextOffset: 50, Size: 100, Sealed: true},
		{BaseOffset: 50, NextOffset: 60, Size: 100},
	}
	if bytes, segments := awaitingUpload(local, man); bytes != 200 || segments != 2 {
		t.Fatalf("awaiting %d bytes in %d segments, want 200 in 2", bytes, segments)
	}
}
