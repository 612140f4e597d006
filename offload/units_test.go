package offload

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
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

// TestManifestFormat pins the JSON of the bucket manifest, which batch
// jobs depend on, and checks that parsing refuses what breaks it.
func TestManifestFormat(t *testing.T) {
	man := &Manifest{
		Version: ManifestVersion, Topic: "orders", TopicID: uuid.MustParse("6f1c0000-0000-4000-8000-000000000001"), Partition: 3,
		LogStartOffset: 1200,
		Segments: []ManifestSegment{{
			ID: uuid.MustParse("0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c"), Key: "k.seg",
			BaseOffset: 1200, EndOffset: 2399, MaxTimestamp: 1700000000000, LogBytes: 1048117, TailBytes: 2712,
			LeaderEpochs: []ManifestEpoch{{Epoch: 4, StartOffset: 1200}},
		}},
	}
	want := `{"version":1,"topic":"orders","topic_id":"6f1c0000-0000-4000-8000-000000000001","partition":3,` +
		`"log_start_offset":1200,"segments":[{"id":"0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c","key":"k.seg",` +
		`"base_offset":1200,"end_offset":2399,"max_timestamp":1700000000000,"log_bytes":1048117,"tail_bytes":2712,` +
		`"leader_epochs":[{"epoch":4,"start_offset":1200}]}]}` + "\n"
	data := encodeManifest(man)
	if string(data) != want {
		t.Fatalf("manifest JSON\n%s\nwant\n%s", data, want)
	}
	back, err := ParseManifest(data)
	if err != nil || back.Segments[0].TailBytes != 2712 {
		t.Fatalf("ParseManifest: %+v, %v", back, err)
	}
	for name, bad := range map[string]string{
		"version": strings.Replace(want, `"version":1`, `"version":2`, 1),
		"json":    want[:20],
		"tail":    strings.Replace(want, `"tail_bytes":2712`, `"tail_bytes":12`, 1),
		"epochs":  strings.Replace(want, `"start_offset":1200`, `"start_offset":1201`, 1),
		"overlap": strings.Replace(want, `]}]}`, `]},{"id":"0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2d","key":"k2.seg","base_offset":2399,"end_offset":2500,"max_timestamp":0,"log_bytes":1,"tail_bytes":200,"leader_epochs":[{"epoch":4,"start_offset":2399}]}]}`, 1),
	} {
		if _, err := ParseManifest([]byte(bad)); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: ParseManifest = %v", name, err)
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
