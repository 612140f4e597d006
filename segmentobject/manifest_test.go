package segmentobject

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// goldenManifest is what testdata/manifest-v1.golden holds: a published
// manifest as offload wrote it before the format moved here.
func goldenManifest() Manifest {
	topicID := uuid.MustParse("6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5")
	first := uuid.MustParse("0b6e2a4c-1f3d-4e5a-9b8c-7d6e5f4a3b2c")
	second := uuid.MustParse("5d4c3b2a-1908-4f7e-8d6c-5b4a39281706")
	prefix := PartitionPrefix("", "orders", topicID, 3)
	return Manifest{
		Version: ManifestVersion, Topic: "orders", TopicID: topicID, Partition: 3, LogStartOffset: 1500,
		Segments: []ManifestSegment{{
			ID: first, Key: SegmentKey(prefix, 1200, first), BaseOffset: 1200, EndOffset: 2399,
			MaxTimestamp: 1700000000000, LogBytes: 1048117, TailBytes: 2712,
			LeaderEpochs: []EpochEntry{{Epoch: 4, StartOffset: 1200}, {Epoch: 6, StartOffset: 2000}},
		}, {
			ID: second, Key: SegmentKey(prefix, 2400, second), BaseOffset: 2400, EndOffset: 3055,
			MaxTimestamp: 1700000360000, LogBytes: 524288, TailBytes: 1460,
			LeaderEpochs: []EpochEntry{{Epoch: 6, StartOffset: 2400}, {Epoch: 7, StartOffset: 2950}},
		}},
	}
}

// The golden manifest pins format version 1, which batch jobs and every
// bucket written so far depend on: it must parse to goldenManifest, and
// goldenManifest must encode to it byte for byte. If this fails, the
// format changed: bump ManifestVersion and keep reading version 1 instead.
// STRATA_UPDATE_FIXTURES=1 rewrites the fixture.
func TestGoldenManifest(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("testdata", "manifest-v1.golden")
	want := goldenManifest()
	if os.Getenv("STRATA_UPDATE_FIXTURES") != "" {
		if err := os.WriteFile(golden, want.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("golden manifest parsed to\n%+v\nwant\n%+v", got, want)
	}
	if enc := want.Encode(); string(enc) != string(data) {
		t.Fatalf("manifest JSON\n%s\nwant\n%s", enc, data)
	}
}

func TestEncodeEmptyManifest(t *testing.T) {
	t.Parallel()
	m := Manifest{Version: ManifestVersion, Topic: "t", Partition: 1, LogStartOffset: 7}
	want := `{"version":1,"topic":"t","topic_id":"00000000-0000-0000-0000-000000000000","partition":1,"log_start_offset":7,"segments":[]}` + "\n"
	if got := string(m.Encode()); got != want {
		t.Fatalf("empty manifest JSON\n%s\nwant\n%s", got, want)
	}
	back, err := ParseManifest([]byte(want))
	if err != nil || back.NextOffset() != 7 || len(back.Segments) != 0 {
		t.Fatalf("ParseManifest: %+v, %v", back, err)
	}
}

// ParseManifest refuses what a reader must not read.
func TestParseManifestRefusals(t *testing.T) {
	t.Parallel()
	cases := map[string]func(m *Manifest){
		"version":        func(m *Manifest) { m.Version = 2 },
		"no version":     func(m *Manifest) { m.Version = 0 },
		"log start":      func(m *Manifest) { m.LogStartOffset = -1 },
		"short tail":     func(m *Manifest) { m.Segments[0].TailBytes = FooterSize - 1 },
		"no tail":        func(m *Manifest) { m.Segments[0].TailBytes = 0 },
		"no log":         func(m *Manifest) { m.Segments[1].LogBytes = 0 },
		"negative log":   func(m *Manifest) { m.Segments[1].LogBytes = -1 },
		"no key":         func(m *Manifest) { m.Segments[0].Key = "" },
		"ends first":     func(m *Manifest) { m.Segments[0].EndOffset = m.Segments[0].BaseOffset - 1 },
		"largest offset": func(m *Manifest) { m.Segments[1].EndOffset = math.MaxInt64 },
		"overlap":        func(m *Manifest) { m.Segments[1].BaseOffset, m.Segments[1].LeaderEpochs[0].StartOffset = 2399, 2399 },
		"unsorted":       func(m *Manifest) { m.Segments[0], m.Segments[1] = m.Segments[1], m.Segments[0] },
		"epochs start":   func(m *Manifest) { m.Segments[0].LeaderEpochs[0].StartOffset++ },
		"no epochs":      func(m *Manifest) { m.Segments[0].LeaderEpochs = nil },
		"epochs go back": func(m *Manifest) { m.Segments[0].LeaderEpochs[1].Epoch = 3 },
		"epoch past end": func(m *Manifest) { m.Segments[0].LeaderEpochs[1].StartOffset = m.Segments[0].NextOffset() },
		"negative epoch": func(m *Manifest) { m.Segments[1].LeaderEpochs[0].Epoch = -1 },
	}
	for name, breakIt := range cases {
		m := goldenManifest()
		breakIt(&m)
		if _, err := ParseManifest(m.Encode()); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: ParseManifest = %v, want ErrInvalidManifest", name, err)
		}
	}
	good := string(goldenManifest().Encode())
	if _, err := ParseManifest([]byte(good[:20])); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("cut short: ParseManifest = %v, want ErrInvalidManifest", err)
	}
	extra := strings.Replace(good, `"partition":3,`, `"partition":3,"added_later":true,`, 1)
	if _, err := ParseManifest([]byte(extra)); err != nil {
		t.Errorf("a field added within the version: %v", err)
	}
}

// Validate holds for a manifest whatever its source; one derived from meta
// knows no tail sizes.
func TestManifestValidate(t *testing.T) {
	t.Parallel()
	seg := func(key string, base, end int64) ManifestSegment {
		return ManifestSegment{Key: key, BaseOffset: base, EndOffset: end, LeaderEpochs: []EpochEntry{{Epoch: 1, StartOffset: base}}}
	}
	cases := []struct {
		name string
		m    Manifest
		ok   bool
	}{
		{"empty", Manifest{}, true},
		{"contiguous", Manifest{Segments: []ManifestSegment{seg("a", 0, 9), seg("b", 10, 19)}}, true},
		{"gap", Manifest{LogStartOffset: 5, Segments: []ManifestSegment{seg("a", 0, 9), seg("b", 12, 19)}}, true},
		{"one offset", Manifest{Segments: []ManifestSegment{seg("a", 5, 5)}}, true},
		{"overlap", Manifest{Segments: []ManifestSegment{seg("a", 0, 9), seg("b", 9, 19)}}, false},
		{"unsorted", Manifest{Segments: []ManifestSegment{seg("b", 10, 19), seg("a", 0, 9)}}, false},
		{"empty segment", Manifest{Segments: []ManifestSegment{seg("a", 5, 4)}}, false},
		{"no key", Manifest{Segments: []ManifestSegment{seg("", 0, 4)}}, false},
		{"negative start", Manifest{LogStartOffset: -1}, false},
		{"negative size", Manifest{Segments: []ManifestSegment{{Key: "a", LogBytes: -1, LeaderEpochs: []EpochEntry{{1, 0}}}}}, false},
		{"short tail", Manifest{Segments: []ManifestSegment{{Key: "a", LogBytes: 10, TailBytes: FooterSize - 1, LeaderEpochs: []EpochEntry{{1, 0}}}}}, false},
		{"no epochs", Manifest{Segments: []ManifestSegment{{Key: "a", EndOffset: 4}}}, false},
	}
	for _, c := range cases {
		if err := c.m.Validate(); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidManifest)) {
			t.Errorf("%s: Validate = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

func TestManifestSegmentFor(t *testing.T) {
	t.Parallel()
	m := Manifest{LogStartOffset: 5, Segments: []ManifestSegment{{Key: "a", BaseOffset: 0, EndOffset: 9}, {Key: "b", BaseOffset: 12, EndOffset: 19}}}
	for offset, want := range map[int64]int{5: 0, 9: 0, 10: 1, 11: 1, 12: 1, 19: 1} {
		if i, ok := m.SegmentFor(offset); !ok || i != want {
			t.Errorf("SegmentFor(%d) = %d, %v; want %d", offset, i, ok, want)
		}
	}
	for _, offset := range []int64{-1, 0, 4, 20, 100} {
		if _, ok := m.SegmentFor(offset); ok {
			t.Errorf("SegmentFor(%d) found a segment", offset)
		}
	}
	if n := m.NextOffset(); n != 20 {
		t.Errorf("NextOffset = %d, want 20", n)
	}
	if n := (Manifest{LogStartOffset: 30, Segments: m.Segments}).NextOffset(); n != 30 {
		t.Errorf("NextOffset of a manifest whose segments are all below the start = %d, want 30", n)
	}
}

// EpochsBelow gives the epoch history a replica starting at offset needs:
// merged across segments, cut at offset and at the log start.
func TestEpochsBelow(t *testing.T) {
	t.Parallel()
	seg := func(base, end int64, epochs ...EpochEntry) ManifestSegment {
		return ManifestSegment{Key: "k", BaseOffset: base, EndOffset: end, LeaderEpochs: epochs}
	}
	m := Manifest{Segments: []ManifestSegment{
		seg(0, 99, EpochEntry{1, 0}, EpochEntry{2, 50}),
		seg(100, 199, EpochEntry{2, 100}, EpochEntry{4, 150}),
		seg(200, 299, EpochEntry{5, 200}),
	}}
	cases := []struct {
		name     string
		logStart int64
		offset   int64
		want     []EpochEntry
	}{
		{"all", 0, 300, []EpochEntry{{1, 0}, {2, 50}, {4, 150}, {5, 200}}},
		{"past the tiered end", 0, 1000, []EpochEntry{{1, 0}, {2, 50}, {4, 150}, {5, 200}}},
		{"an epoch across segments is one entry", 0, 150, []EpochEntry{{1, 0}, {2, 50}}},
		{"an epoch starting at offset is not below it", 0, 200, []EpochEntry{{1, 0}, {2, 50}, {4, 150}}},
		{"one offset", 0, 1, []EpochEntry{{1, 0}}},
		{"nothing below", 0, 0, nil},
		{"log start inside an epoch", 60, 300, []EpochEntry{{2, 60}, {4, 150}, {5, 200}}},
		{"log start at an epoch's start", 150, 300, []EpochEntry{{4, 150}, {5, 200}}},
		{"log start in a later segment", 120, 160, []EpochEntry{{2, 120}, {4, 150}}},
		{"offset at the log start", 120, 120, nil},
		{"offset below the log start", 120, 10, nil},
	}
	for _, c := range cases {
		m.LogStartOffset = c.logStart
		if got := m.EpochsBelow(c.offset); !slices.Equal(got, c.want) {
			t.Errorf("%s: EpochsBelow(%d) from %d = %v, want %v", c.name, c.offset, c.logStart, got, c.want)
		}
	}
	if got := (Manifest{LogStartOffset: 5}).EpochsBelow(100); got != nil {
		t.Errorf("EpochsBelow of an empty manifest = %v", got)
	}
}
