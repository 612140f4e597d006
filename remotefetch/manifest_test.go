package remotefetch

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
)

func TestManifestValidate(t *testing.T) {
	t.Parallel()
	seg := func(key string, base, next int64) Segment {
		return Segment{Key: key, BaseOffset: base, NextOffset: next}
	}
	cases := []struct {
		name string
		m    Manifest
		ok   bool
	}{
		{"empty", Manifest{}, true},
		{"contiguous", Manifest{Segments: []Segment{seg("a", 0, 10), seg("b", 10, 20)}}, true},
		{"gap", Manifest{LogStartOffset: 5, Segments: []Segment{seg("a", 0, 10), seg("b", 12, 20)}}, true},
		{"overlap", Manifest{Segments: []Segment{seg("a", 0, 10), seg("b", 9, 20)}}, false},
		{"unsorted", Manifest{Segments: []Segment{seg("b", 10, 20), seg("a", 0, 10)}}, false},
		{"empty segment", Manifest{Segments: []Segment{seg("a", 5, 5)}}, false},
		{"no key", Manifest{Segments: []Segment{seg("", 0, 5)}}, false},
		{"negative start", Manifest{LogStartOffset: -1}, false},
		{"negative size", Manifest{Segments: []Segment{{Key: "a", NextOffset: 1, LogSize: -1}}}, false},
	}
	for _, c := range cases {
		if err := c.m.Validate(); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidManifest)) {
			t.Errorf("%s: Validate = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

func TestManifestSegmentFor(t *testing.T) {
	t.Parallel()
	m := Manifest{LogStartOffset: 5, Segments: []Segment{{Key: "a", BaseOffset: 0, NextOffset: 10}, {Key: "b", BaseOffset: 12, NextOffset: 20}}}
	cases := []struct {
		offset int64
		want   int
		ok     bool
	}{{4, 0, false}, {5, 0, true}, {9, 0, true}, {10, 1, true}, {12, 1, true}, {19, 1, true}, {20, 0, false}}
	for _, c := range cases {
		if got, ok := m.segmentFor(c.offset); ok != c.ok || (ok && got != c.want) {
			t.Errorf("segmentFor(%d) = %d, %v; want %d, %v", c.offset, got, ok, c.want, c.ok)
		}
	}
	if n := m.NextOffset(); n != 20 {
		t.Errorf("NextOffset = %d, want 20", n)
	}
	if n := (Manifest{LogStartOffset: 30, Segments: m.Segments}).NextOffset(); n != 30 {
		t.Errorf("NextOffset of a manifest whose segments are all below the start = %d, want 30", n)
	}
}

// FromMeta keeps committed segments at or above the remote log start, with
// exclusive end offsets and log sizes.
func TestFromMeta(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "meta", 0, []int{3, 3, 3}, segmentSpec{})
	mm := p.metaManifest()
	mm.RemoteLogStartOffset = mm.Segments[1].BaseOffset
	mm.Segments[2].State = meta.SegmentCopying
	mm.Segments = append(mm.Segments, meta.RemoteSegment{ID: uuid.New(), State: meta.SegmentDeleting, BaseOffset: 1000, EndOffset: 1001, ObjectKey: "x"})
	got, err := FromMeta(mm)
	if err != nil {
		t.Fatal(err)
	}
	want := Manifest{LogStartOffset: mm.RemoteLogStartOffset, Segments: []Segment{p.segments[1].seg}}
	want.Segments[0].TailSize = 0 // meta does not know it
	if len(got.Segments) != 1 || got.Segments[0] != want.Segments[0] || got.LogStartOffset != want.LogStartOffset {
		t.Fatalf("FromMeta = %+v, want %+v", got, want)
	}
}

// The bucket manifest decoder refuses what it must not read.
func TestDecodeBucketManifest(t *testing.T) {
	t.Parallel()
	part := Partition{Topic: "t", TopicID: uuid.MustParse("6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10"), Index: 1}
	good := `{"version":1,"topic":"t","topic_id":"6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10","partition":1,"log_start_offset":0,` +
		`"segments":[{"key":"k","base_offset":0,"end_offset":9,"max_timestamp":5,"log_bytes":100,"tail_bytes":200}]}`
	m, err := decodeBucketManifest([]byte(good), part)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Segment{Key: "k", NextOffset: 10, MaxTimestamp: 5, LogSize: 100, TailSize: 200}); len(m.Segments) != 1 || m.Segments[0] != want {
		t.Fatalf("decoded %+v, want %+v", m.Segments, want)
	}
	bad := map[string]string{
		"version":         `{"version":2,"topic":"t","topic_id":"6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10","partition":1}`,
		"other partition": `{"version":1,"topic":"t","topic_id":"6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10","partition":2}`,
		"other topic id":  `{"version":1,"topic":"t","topic_id":"00000000-2d1c-4b59-9c71-3f2b8c2a9d10","partition":1}`,
		"not json":        `{"version":1,`,
		"overlap": `{"version":1,"topic":"t","topic_id":"6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10","partition":1,` +
			`"segments":[{"key":"a","base_offset":0,"end_offset":9},{"key":"b","base_offset":5,"end_offset":19}]}`,
	}
	for name, data := range bad {
		if _, err := decodeBucketManifest([]byte(data), part); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: %v, want ErrInvalidManifest", name, err)
		}
	}
}
