package offload

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/segmentobject"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	cases := []struct {
		name  string
		tweak func(*Config)
	}{
		{"KeyPrefix", func(c *Config) { c.KeyPrefix = "a//b" }},
		{"KeyPrefix", func(c *Config) { c.KeyPrefix = strings.Repeat("a/", segmentobject.MaxKeyPrefix/2+1) + "a" }},
		{"KeyPrefix", func(c *Config) { c.KeyPrefix = "a/.strata-b" }},
		{"UploadConcurrency", func(c *Config) { c.UploadConcurrency = 0 }},
		{"ExpiryConcurrency", func(c *Config) { c.ExpiryConcurrency = 0 }},
		{"CopyInterval", func(c *Config) { c.CopyInterval = 0 }},
		{"AttemptTimeout", func(c *Config) { c.AttemptTimeout = -1 }},
		{"MinUploadRate", func(c *Config) { c.MinUploadRate = 0 }},
		{"RetryMaxDelay", func(c *Config) { c.RetryMaxDelay = c.RetryBaseDelay - 1 }},
		{"MaxAttempts", func(c *Config) { c.MaxAttempts = 0 }},
		{"StallAlarm", func(c *Config) { c.StallAlarm = 0 }},
		{"StallAttempts", func(c *Config) { c.StallAttempts = 0 }},
		{"DiskHighWaterMark", func(c *Config) { c.DataDir, c.DiskHighWaterMark = "d", 1.5 }},
		{"DiskLowWaterMark", func(c *Config) { c.DataDir, c.DiskLowWaterMark = "d", 0.95 }},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.tweak(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
}

// TestCheckIndexes: trimmed indexes pass; the zero-padded ones of a
// segment hotlog has rolled but not yet sealed on disk do not, unless the
// index is full (and so already final).
func TestCheckIndexes(t *testing.T) {
	be := binary.BigEndian
	offsets := func(entries ...[2]uint32) []byte {
		var b []byte
		for _, e := range entries {
			b = be.AppendUint32(be.AppendUint32(b, e[0]), e[1])
		}
		return b
	}
	times := func(entries ...[2]int64) []byte {
		var b []byte
		for _, e := range entries {
			b = be.AppendUint32(be.AppendUint64(b, uint64(e[0])), uint32(e[1]))
		}
		return b
	}
	trimmedIndex := offsets([2]uint32{3, 4100}, [2]uint32{7, 8300})
	trimmedTimes := times([2]int64{1000, 3}, [2]int64{2000, 9})
	if err := checkIndexes(trimmedIndex, trimmedTimes, 10, 9000); err != nil {
		t.Fatalf("trimmed indexes: %v", err)
	}
	if err := checkIndexes(nil, nil, 10, 9000); err != nil {
		t.Fatalf("empty indexes: %v", err)
	}
	padded := func(b []byte, entry int) []byte { return append(slices.Clone(b), make([]byte, 3*entry)...) }
	for name, c := range map[string][2][]byte{
		"padded offset index": {padded(trimmedIndex, indexEntrySize), trimmedTimes},
		"padded time index":   {trimmedIndex, padded(trimmedTimes, timeIndexEntrySize)},
		"empty, padded":       {padded(nil, indexEntrySize), padded(nil, timeIndexEntrySize)},
		"position past log":   {offsets([2]uint32{3, 9000}), nil},
		"offset past segment": {nil, times([2]int64{1000, 10})},
		"torn entry":          {trimmedIndex[:5], nil},
	} {
		if err := checkIndexes(c[0], c[1], 10, 9000); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSegmentEpochs(t *testing.T) {
	cache := []hotlog.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 50}, {Epoch: 4, StartOffset: 80}}
	cases := []struct {
		base, next int64
		want       []segmentobject.EpochEntry
	}{
		{0, 50, []segmentobject.EpochEntry{{Epoch: 1, StartOffset: 0}}},
		{10, 60, []segmentobject.EpochEntry{{Epoch: 1, StartOffset: 10}, {Epoch: 3, StartOffset: 50}}},
		{50, 100, []segmentobject.EpochEntry{{Epoch: 3, StartOffset: 50}, {Epoch: 4, StartOffset: 80}}},
		{90, 95, []segmentobject.EpochEntry{{Epoch: 4, StartOffset: 90}}},
	}
	for _, c := range cases {
		got, err := segmentEpochs(cache, c.base, c.next)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("[%d, %d): %v, %v; want %v", c.base, c.next, got, err, c.want)
		}
	}
	if _, err := segmentEpochs(cache[1:], 10, 60); !errors.Is(err, ErrNoLeaderEpoch) {
		t.Errorf("uncovered base: %v", err)
	}
	if _, err := segmentEpochs(nil, 0, 1); !errors.Is(err, ErrNoLeaderEpoch) {
		t.Errorf("no epochs: %v", err)
	}
}

// TestMetricsRegistered: every metric in MetricNames is registered, and
// Close unregisters them so a new Manager can use the same registry.
func TestMetricsRegistered(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	reg := h.cfg.Registerer.(*prometheus.Registry)
	h.mgr.metrics.failures.WithLabelValues("put")
	h.mgr.metrics.remoteDeletes.WithLabelValues("abandoned")
	h.mgr.metrics.localDeletes.WithLabelValues("retention")
	h.mgr.metrics.recompactBytes.WithLabelValues("read")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		got = append(got, f.GetName())
	}
	want := slices.Sorted(slices.Values(MetricNames))
	if !slices.Equal(got, want) {
		t.Fatalf("registered %v\nwant %v", got, want)
	}
	h.startManager(nil) // closes the first Manager, registers anew
	if _, err := New(h.cfg, h.meta, h.store); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("a second Manager on a registry in use: %v", err)
	}
}
