package offload

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// TestRemoteRetentionByTime: segments whose newest record is older than
// retention.ms leave the bucket, oldest first, and the remote log start
// offset moves past them, in meta and in the bucket manifest.
func TestRemoteRetentionByTime(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: map[string]string{"retention.ms": "3600000", "local.retention.ms": "60000"}})
	h.segments(2)
	h.clock.Advance(40 * time.Minute)
	h.segments(2)
	h.mustSync()
	if n := len(h.committed()); n != 4 {
		t.Fatalf("%d committed", n)
	}
	h.clock.Advance(30 * time.Minute) // the first two are 70 minutes old, the others 30
	h.mustSync()
	committed := h.committed()
	if len(committed) != 2 {
		t.Fatalf("%d committed after retention.ms, want 2", len(committed))
	}
	if got := h.manifest().RemoteLogStartOffset; got != committed[0].BaseOffset {
		t.Fatalf("remote log start %d, want %d", got, committed[0].BaseOffset)
	}
	if got := h.bucketManifest().LogStartOffset; got != committed[0].BaseOffset {
		t.Fatalf("bucket manifest log start %d", got)
	}
	if got := testutil.ToFloat64(h.mgr.metrics.remoteDeletes.WithLabelValues("retention_ms")); got != 2 {
		t.Fatalf("retention_ms deletes %v", got)
	}
	h.checkConsistent()
}

// TestRemoteRetentionByBytes: the oldest segments go while the partition,
// remote plus not-yet-tiered local bytes, exceeds retention.bytes by at
// least their size.
func TestRemoteRetentionByBytes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(4)
	h.mustSync()
	committed := h.committed()
	var total int64
	for _, s := range committed {
		total += s.SizeBytes
	}
	// A little less than the newest two segments: deleting a third would
	// leave less than retention.bytes, which Kafka never does.
	limit := committed[2].SizeBytes + committed[3].SizeBytes - 10
	if _, err := h.meta.Propose(t.Context(), meta.AlterTopicConfigs{
		Name: h.topic.Name, ID: h.topic.ID, Set: map[string]string{"retention.bytes": strconv.FormatInt(limit, 10)},
	}); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	got := h.committed()
	if len(got) != 2 || got[0].ID != committed[2].ID {
		t.Fatalf("committed after retention.bytes=%d of %d: %+v", limit, total, got)
	}
	// The hot log follows the remote log start in the same pass.
	if local, remote := h.log.LogStartOffset(), h.manifest().RemoteLogStartOffset; local < remote {
		t.Fatalf("the hot log starts at %d, below the remote log start %d", local, remote)
	}
	h.checkConsistent()
}

// TestRemoteExpired checks the retention rules on their own.
func TestRemoteExpired(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	seg := func(base, end, ts, size int64, state meta.SegmentState) meta.RemoteSegment {
		return meta.RemoteSegment{ID: uuid.New(), State: state, BaseOffset: base, EndOffset: end, MaxTimestamp: ts, SizeBytes: size}
	}
	topic := func(ms, bytes string) meta.Topic {
		return meta.Topic{Configs: map[string]string{"retention.ms": ms, "retention.bytes": bytes}}
	}
	c := meta.SegmentCommitted
	cases := []struct {
		name   string
		man    meta.Manifest
		topic  meta.Topic
		local  []hotlog.SegmentInfo
		want   []string // reasons, oldest first
		wantID []int    // indexes into man.Segments
	}{
		{"nothing expires", meta.Manifest{Segments: []meta.RemoteSegment{seg(0, 9, 9_999_000, 10, c)}}, topic("10000", "-1"), nil, nil, nil},
		{"by time, a prefix", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 1_000, 10, c), seg(10, 19, 9_999_000, 10, c), seg(20, 29, 2_000, 10, c)}},
			topic("10000", "-1"), nil, []string{"retention_ms"}, []int{0}},
		{"no timestamp stops time retention", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, hotlog.NoTimestamp, 10, c), seg(10, 19, 1_000, 10, c)}},
			topic("10000", "-1"), nil, nil, nil},
		{"below the log start", meta.Manifest{RemoteLogStartOffset: 20, Segments: []meta.RemoteSegment{
			seg(0, 9, 9_999_000, 10, c), seg(20, 29, 9_999_000, 10, c)}},
			topic("-1", "-1"), nil, []string{"log_start"}, []int{0}},
		{"copying and deleting are not retention's", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 1_000, 10, meta.SegmentDeleting), seg(10, 19, 1_000, 10, meta.SegmentCopying)}},
			topic("10000", "0"), nil, nil, nil},
		{"by bytes, local bytes counted", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 9_999_000, 100, c), seg(10, 19, 9_999_000, 100, c), seg(20, 29, 9_999_000, 100, c)}},
			topic("-1", "150"), []hotlog.SegmentInfo{{BaseOffset: 20, NextOffset: 30, Size: 100}, {BaseOffset: 30, NextOffset: 35, Size: 60}},
			[]string{"retention_bytes", "retention_bytes"}, []int{0, 1}},
		{"by bytes, a straddling segment's untiered share counted", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 9_999_000, 100, c), seg(10, 19, 9_999_000, 100, c)}},
			topic("-1", "150"), []hotlog.SegmentInfo{{BaseOffset: 15, NextOffset: 25, Size: 100}},
			[]string{"retention_bytes"}, []int{0}},
		{"by bytes, never below the limit", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 9_999_000, 100, c), seg(10, 19, 9_999_000, 100, c)}},
			topic("-1", "150"), nil, nil, nil},
		{"by bytes, down to the limit", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 9_999_000, 100, c), seg(10, 19, 9_999_000, 100, c)}},
			topic("-1", "100"), nil, []string{"retention_bytes"}, []int{0}},
		{"time then bytes", meta.Manifest{Segments: []meta.RemoteSegment{
			seg(0, 9, 1_000, 100, c), seg(10, 19, 9_999_000, 100, c), seg(20, 29, 9_999_000, 100, c)}},
			topic("10000", "100"), nil, []string{"retention_ms", "retention_bytes"}, []int{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := remoteExpired(tc.man, tc.topic, tc.local, now)
			if len(got) != len(tc.want) {
				t.Fatalf("expired %+v, want reasons %v", got, tc.want)
			}
			for i, e := range got {
				if e.reason != tc.want[i] || e.segment.ID != tc.man.Segments[tc.wantID[i]].ID {
					t.Fatalf("expired %d: %s %d..%d, want %s of segment %d", i, e.reason, e.segment.BaseOffset, e.segment.EndOffset, tc.want[i], tc.wantID[i])
				}
			}
		})
	}
}

// TestLocalRetention resolves local retention against the total.
func TestLocalRetention(t *testing.T) {
	cases := []struct {
		configs       map[string]string
		wantMs, wantB int64
	}{
		{nil, 3_600_000, -1}, // strata's defaults: an hour locally; bytes follow retention.bytes
		{map[string]string{"local.retention.ms": "-2", "retention.ms": "5000"}, 5000, -1},
		{map[string]string{"retention.ms": "1000"}, 1000, -1}, // the default capped at the total
		{map[string]string{"local.retention.ms": "-1", "retention.ms": "-1"}, -1, -1},
		{map[string]string{"local.retention.bytes": "100", "retention.bytes": "1000"}, 3_600_000, 100},
		{map[string]string{"retention.bytes": "1000"}, 3_600_000, 1000},
	}
	for _, c := range cases {
		ms, b := LocalRetention(meta.Topic{Configs: c.configs})
		if ms != c.wantMs || b != c.wantB {
			t.Errorf("%v: local retention %d ms, %d bytes; want %d, %d", c.configs, ms, b, c.wantMs, c.wantB)
		}
	}
}

// TestCovered checks which local ranges the committed segments hold.
func TestCovered(t *testing.T) {
	man := meta.Manifest{RemoteLogStartOffset: 5, Segments: []meta.RemoteSegment{
		{BaseOffset: 0, EndOffset: 9, State: meta.SegmentCommitted},
		{BaseOffset: 10, EndOffset: 19, State: meta.SegmentCommitted},
		{BaseOffset: 20, EndOffset: 29, State: meta.SegmentCopying},
		{BaseOffset: 30, EndOffset: 39, State: meta.SegmentCommitted},
	}}
	cases := []struct {
		base, next int64
		want       bool
	}{
		{0, 10, true}, {0, 20, true}, {5, 15, true}, {15, 21, false}, {20, 30, false},
		{30, 40, true}, {30, 41, false}, {0, 5, true}, // below the remote log start
	}
	for _, c := range cases {
		if got := covered(man, c.base, c.next); got != c.want {
			t.Errorf("covered [%d, %d) = %v", c.base, c.next, got)
		}
	}
}
