package remotefetch

import (
	"bytes"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// The broker's path: segments committed through a real metadata node are
// read back byte-identical through MetaManifests; copying segments stay
// invisible, and a topic id that is not the topic's is refused.
func TestMetaManifests(t *testing.T) {
	t.Parallel()
	node := startMeta(t)
	s, _ := openFileStore(t)
	p := buildPartition(t, "tiered", 0, []int{20, 20, 5}, segmentSpec{bigEvery: 5})
	p.put(t, s)
	if _, err := node.Propose(t.Context(), meta.CreateTopic{ID: p.part.TopicID, Name: p.part.Topic, Replicas: [][]int32{{1}}}); err != nil {
		t.Fatal(err)
	}
	for i, seg := range p.metaManifest().Segments {
		begin := meta.BeginSegmentCopy{
			Topic: p.part.Topic, TopicID: p.part.TopicID, Partition: 0, SegmentID: seg.ID,
			BaseOffset: seg.BaseOffset, EndOffset: seg.EndOffset, MaxTimestamp: seg.MaxTimestamp,
			SizeBytes: seg.SizeBytes, LeaderEpochs: seg.LeaderEpochs, ObjectKey: seg.ObjectKey,
		}
		if _, err := node.Propose(t.Context(), begin); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			break // the last upload is still copying
		}
		commit := meta.CommitSegmentCopy{Topic: p.part.Topic, TopicID: p.part.TopicID, Partition: 0, SegmentID: seg.ID}
		if _, err := node.Propose(t.Context(), commit); err != nil {
			t.Fatal(err)
		}
	}

	r := newReader(t, StoreBucket(s), MetaManifests(node.State), testConfig())
	committedEnd := p.segments[1].seg.NextOffset()
	var got []byte
	for offset := int64(0); offset < committedEnd; {
		res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 5000})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Records...)
		offset = res.NextOffset
	}
	var want []byte
	for _, seg := range p.segments[:2] {
		want = append(want, bytes.Join(seg.batches, nil)...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes through meta, want the %d bytes of the two committed segments", len(got), len(want))
	}
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: committedEnd}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read of a copying segment: %v, want ErrOffsetOutOfRange", err)
	}
	recreated := p.part
	recreated.TopicID = uuid.New()
	if _, err := r.Read(t.Context(), Request{Partition: recreated, Offset: 0}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("Read under another topic id: %v, want ErrUnknownPartition", err)
	}
}

// startMeta runs a one-voter metadata group with broker 1 registered,
// closed with the test.
func startMeta(t *testing.T) *meta.Node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := meta.DefaultConfig()
	cfg.NodeID = "remotefetch-test"
	cfg.Listener = l
	cfg.BindAddr = l.Addr().String()
	cfg.DataDir = t.TempDir()
	cfg.HeartbeatTimeout = 200 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	cfg.BrokerSessionTimeout = 24 * time.Hour // the test never heartbeats
	node, err := meta.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })
	if err := node.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Propose(t.Context(), meta.RegisterBroker{ID: 1, Listeners: []meta.Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	return node
}

// FromMeta keeps the committed segments at or above the remote log start,
// as meta's Committed gives them: no tail sizes.
func TestFromMeta(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "meta", 0, []int{3, 3, 3}, segmentSpec{})
	mm := p.metaManifest()
	mm.RemoteLogStartOffset = mm.Segments[1].BaseOffset
	mm.Segments[2].State = meta.SegmentCopying
	mm.Segments = append(mm.Segments, meta.RemoteSegment{ID: uuid.New(), State: meta.SegmentDeleting, BaseOffset: 1000, EndOffset: 1001, ObjectKey: "x",
		LeaderEpochs: []meta.EpochEntry{{Epoch: testEpoch, StartOffset: 1000}}})
	got, err := FromMeta(mm)
	if err != nil {
		t.Fatal(err)
	}
	want := segmentobject.Manifest{
		Version: segmentobject.ManifestVersion, Topic: p.part.Topic, Partition: p.part.Index,
		LogStartOffset: mm.RemoteLogStartOffset, Segments: []segmentobject.ManifestSegment{p.segments[1].seg},
	}
	want.Segments[0].TailBytes = 0 // meta does not know it
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromMeta =\n%+v\nwant\n%+v", got, want)
	}
}
