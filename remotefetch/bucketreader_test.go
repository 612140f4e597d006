package remotefetch

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// A BucketReader reads a partition from nothing but the bucket: the
// published manifest (its topic id found by listing) and the segment
// objects. Batches yields verified batches in order over any range.
func TestBucketReader(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "export", 2, []int{25, 1, 30}, segmentSpec{bigEvery: 6})
	p.put(t, s)
	p.publish(t, s)
	other := buildPartition(t, "export-other", 2, []int{3}, segmentSpec{}) // a topic whose name extends this one's
	other.put(t, s)
	other.publish(t, s)

	b, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "export", Partition: 2}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Partition() != p.part {
		t.Fatalf("reads %v, want %v", b.Partition(), p.part)
	}
	if m := b.Manifest(); m.NextOffset() != p.end() || len(m.Segments) != 3 || m.Segments[0].Key != p.segments[0].seg.Key {
		t.Fatalf("manifest %+v does not match the published one", m)
	}

	var all []byte
	for batch, err := range b.Batches(t.Context(), 0, p.end()) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, batch.Bytes...)
	}
	if !bytes.Equal(all, p.allBatches()) {
		t.Fatal("a full export differs from what was stored")
	}

	from, to := p.segments[0].headers[10].BaseOffset+1, p.segments[2].headers[3].BaseOffset+1
	var got []int64
	for batch, err := range b.Batches(t.Context(), from, to) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, batch.Header.BaseOffset)
	}
	var want []int64
	for _, seg := range p.segments {
		for _, h := range seg.headers {
			if h.NextOffset() > from && h.BaseOffset < to {
				want = append(want, h.BaseOffset)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Batches(%d, %d) yielded batches at %v, want %v", from, to, got, want)
	}

	at := p.segments[2].headers[5]
	ts, found, err := b.OffsetForTimestamp(t.Context(), at.FirstTimestamp)
	if err != nil || !found || ts.Offset != at.BaseOffset {
		t.Fatalf("OffsetForTimestamp = %+v, %v, %v; want offset %d", ts, found, err, at.BaseOffset)
	}
	if m := b.Metrics(); m.Prefetches == 0 {
		t.Fatal("an export scan made no prefetches: it should read ahead from its first read")
	}

	var errs []error
	for _, err := range b.Batches(t.Context(), -1, 10) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrOffsetOutOfRange) {
		t.Fatalf("Batches from -1 yielded %v, want one ErrOffsetOutOfRange", errs)
	}
}

// A scan gives each block back once its batches are yielded, and not
// before: a long export holds a few blocks at a time whatever the
// partition's length, and reads into the buffers of blocks it has passed;
// and a block emptied from the cache while its batches are being yielded
// keeps its bytes until the loop moves past it (released buffers are
// poisoned in tests, so one given back too early would show).
func TestBucketReaderGivesBlocksBack(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "export", 0, []int{40, 30}, segmentSpec{bigEvery: 7})
	p.put(t, s)
	p.publish(t, s)
	scan := func(cfg Config, each func(*BucketReader)) (peak int64) {
		t.Helper()
		b, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "export", Partition: 0}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		var all []byte
		for batch, err := range b.Batches(t.Context(), 0, p.end()) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, batch.Bytes...)
			peak = max(peak, b.Metrics().Blocks.BufferBytes)
			each(b)
		}
		if !bytes.Equal(all, p.allBatches()) {
			t.Fatal("a full export differs from what was stored")
		}
		if n := b.Metrics().Blocks.BuffersReused; n == 0 {
			t.Fatal("no block buffer was reused while scanning the partition")
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if n := b.Metrics().Blocks.BufferBytes; n != 0 {
			t.Fatalf("%d bytes of block buffers still held once the scan ended and the reader closed, want 0", n)
		}
		return peak
	}

	cfg := recyclingConfig()
	// The cache's blocks, the read-ahead windows', the one in hand and a
	// batch spanning two.
	most := cfg.BlockCacheBytes + cfg.ReadAheadBytes + 2*cfg.BlockSize
	if peak := scan(cfg, func(*BucketReader) {}); peak > most {
		t.Fatalf("the scan held %d bytes of block buffers at once, want at most %d", peak, most)
	}

	cfg.ReadAheadBlocks, cfg.ReadAheadBytes = 0, 0 // only the loop and the cache hold a block
	scan(cfg, func(b *BucketReader) { b.reader.emptyCaches() })
}

// Opening fails cleanly without a manifest, and when the topic has
// manifests under two ids, unless one is named.
func TestOpenBucketReaderErrors(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	if _, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "nothing"}, testConfig()); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("no manifest: %v, want ErrUnknownPartition", err)
	}
	if _, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "nothing", TopicID: uuid.New()}, testConfig()); !errors.Is(err, ErrSegmentMissing) {
		t.Fatalf("no manifest under a named id: %v, want ErrSegmentMissing", err)
	}
	first := buildPartition(t, "twice", 0, []int{2}, segmentSpec{})
	first.publish(t, s)
	second := buildPartition(t, "twice", 0, []int{2}, segmentSpec{})
	second.publish(t, s)
	if _, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "twice"}, testConfig()); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("two topic ids: %v, want ErrUnknownPartition", err)
	}
	b, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "twice", TopicID: second.part.TopicID}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Manifest().Segments[0].Key != second.segments[0].seg.Key {
		t.Fatal("opened the wrong topic id's manifest")
	}
}

// Topics of 249 and 230 characters that share their first
// segmentobject.MaxTopicDirName bytes share a topic dir name in the
// bucket: found by listing, each opens its own manifest, told apart by the
// name the manifest holds.
func TestOpenBucketReaderLongTopicNames(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	long := strings.Repeat("l", 249)
	shorter := long[:230]
	a := buildPartition(t, long, 0, []int{3}, segmentSpec{})
	a.put(t, s)
	a.publish(t, s)
	b := buildPartition(t, shorter, 0, []int{5}, segmentSpec{})
	b.put(t, s)
	b.publish(t, s)
	for _, p := range []*testPartition{a, b} {
		r, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: p.part.Topic}, testConfig())
		if err != nil {
			t.Fatalf("topic of %d characters: %v", len(p.part.Topic), err)
		}
		var all []byte
		for batch, err := range r.Batches(t.Context(), 0, p.end()) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, batch.Bytes...)
		}
		r.Close()
		if r.Partition() != p.part || !bytes.Equal(all, p.allBatches()) {
			t.Fatalf("topic of %d characters: read %v, %d bytes; want %v, %d bytes", len(p.part.Topic), r.Partition(), len(all), p.part, len(p.allBatches()))
		}
	}
	if _, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: long[:240]}, testConfig()); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("a third name of the same dir name, with no manifest: %v, want ErrUnknownPartition", err)
	}
}

// TestBucketReaderFollowsAReplacedSegment: a long scan reaches a segment
// that the remote recompaction replaced since the reader read the
// manifest (the old object deleted a RetireDelay later). The reader reads
// the manifest again and goes on from the replacement, from the same
// offset; it used to fail the export with ErrSegmentMissing though the
// records were all there. A segment deleted for good still fails.
func TestBucketReaderFollowsAReplacedSegment(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "replaced", 0, []int{5, 5, 5}, segmentSpec{})
	p.put(t, s)
	p.publish(t, s)
	b, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "replaced", TopicID: p.part.TopicID, Partition: 0}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// The replacement: the same batches under a new segment id and key.
	old := p.segments[1].seg
	replacement := old
	replacement.ID = uuid.New()
	replacement.Key = segmentobject.SegmentKey(segmentobject.PartitionPrefix("", "replaced", p.part.TopicID, 0), old.BaseOffset, replacement.ID)
	if err := s.Put(t.Context(), replacement.Key, bytes.NewReader(p.segments[1].object), int64(len(p.segments[1].object))); err != nil {
		t.Fatal(err)
	}
	p.segments[1].seg, p.manifest.Segments[1] = replacement, replacement
	p.publish(t, s)
	if err := s.Delete(t.Context(), old.Key); err != nil {
		t.Fatal(err)
	}

	var all []byte
	for batch, err := range b.Batches(t.Context(), 0, p.end()) {
		if err != nil {
			t.Fatalf("a scan across a replaced segment: %v", err)
		}
		all = append(all, batch.Bytes...)
	}
	if !bytes.Equal(all, p.allBatches()) {
		t.Fatal("a scan across a replaced segment differs from what was stored")
	}

	if err := s.Delete(t.Context(), p.segments[2].seg.Key); err != nil {
		t.Fatal(err)
	}
	fresh, err := OpenBucketReader(t.Context(), s, BucketLocation{Topic: "replaced", TopicID: p.part.TopicID, Partition: 0}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	var errs []error
	for _, err := range fresh.Batches(t.Context(), p.segments[2].seg.BaseOffset, p.end()) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrSegmentMissing) {
		t.Fatalf("a scan of a segment deleted for good yielded %v, want one ErrSegmentMissing", errs)
	}
}
