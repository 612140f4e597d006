package remotefetch

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// swappableSource is a manifest source a test changes under the reader.
type swappableSource struct {
	mu sync.Mutex
	m  segmentobject.Manifest
}

func (s *swappableSource) Manifest(context.Context, Partition) (segmentobject.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m, nil
}

// expiringBucket runs remote retention of the first segment when the
// reader's first GET of an index arrives, after the read took the
// manifest: meta moves the log start past the segment (BeginSegmentDelete),
// then offload deletes its object (finishDeletes).
type expiringBucket struct {
	Bucket
	once  sync.Once
	store objstore.Store
	src   *swappableSource
}

func (b *expiringBucket) ReadSuffix(ctx context.Context, key string, n int64) ([]byte, int64, error) {
	b.once.Do(func() {
		b.src.mu.Lock()
		first := b.src.m.Segments[0]
		b.src.m.LogStartOffset = first.NextOffset()
		b.src.m.Segments = b.src.m.Segments[1:]
		b.src.mu.Unlock()
		if err := b.store.Delete(ctx, first.Key); err != nil {
			panic(err)
		}
	})
	return b.Bucket.ReadSuffix(ctx, key, n)
}

// TestReadRacingRetentionIsOutOfRange: a read whose segment remote
// retention deletes after the read took the manifest is out of range, as
// a read a moment later is, not a storage error; a timestamp lookup then
// answers from the segments left.
func TestReadRacingRetentionIsOutOfRange(t *testing.T) {
	s, _ := openFileStore(t)
	p := buildPartition(t, "race", 0, []int{10, 10}, segmentSpec{})
	p.put(t, s)
	src := &swappableSource{m: p.manifest}
	r := newReader(t, &expiringBucket{Bucket: StoreBucket(s), store: s, src: src}, src, testConfig())
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("a read of offset 0 while retention deletes its segment: %v, want ErrOffsetOutOfRange", err)
	}

	p = buildPartition(t, "race-ts", 0, []int{10, 10}, segmentSpec{})
	p.put(t, s)
	src = &swappableSource{m: p.manifest}
	r = newReader(t, &expiringBucket{Bucket: StoreBucket(s), store: s, src: src}, src, testConfig())
	got, found, err := r.OffsetForTimestamp(t.Context(), p.part, 0, math.MaxInt64)
	if err != nil || !found || got.Offset != p.manifest.Segments[1].BaseOffset {
		t.Fatalf("a timestamp lookup while retention deletes the first segment: %+v, %v, %v; want the second segment's first record, %d",
			got, found, err, p.manifest.Segments[1].BaseOffset)
	}
}
