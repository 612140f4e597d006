package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"

	"github.com/google/uuid"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// BucketLocation names one partition's objects in a bucket.
type BucketLocation struct {
	// KeyPrefix is the prefix offload put before its keys (its
	// Config.KeyPrefix), usually "".
	KeyPrefix string
	Topic     string
	// TopicID names one incarnation of the topic. uuid.Nil finds it by
	// listing the bucket and reading the manifests found (a long name's
	// topic dir may be shared, segmentobject/key.go), which fails when the
	// bucket holds more than one incarnation (a topic deleted and
	// recreated) and, on a big bucket, takes a while.
	TopicID   uuid.UUID
	Partition int32
}

// BucketReader reads one partition's tiered log straight from the bucket,
// with nothing but bucket credentials: no broker, no metadata group. It is
// the reader behind `strata export`, and a Go API for batch jobs.
//
// It reads the manifest offload publishes in the partition's prefix
// (manifest.json) at open and serves reads from that snapshot. A segment
// object found missing during a long scan has the manifest read again:
// one the remote recompaction replaced (its objects are deleted a
// RetireDelay after) is read from its replacement, from the same offset;
// one remote retention deleted fails with ErrSegmentMissing, as the
// offsets are gone. Every batch it yields has passed its CRC-32C check,
// as with Reader, whose caches, read-ahead and retries it uses: a scan
// keeps Config.ReadAheadBlocks ranged GETs ahead of the consumer, in
// parallel, and yields batches in offset order.
type BucketReader struct {
	reader *Reader
	source *snapshotSource
	store  objstore.Store
	key    string // the manifest's
}

// snapshotSource is a BucketReader's ManifestSource: the manifest read at
// open, or read again since, set before the Reader serves any read.
type snapshotSource struct {
	partition Partition
	mu        sync.Mutex
	manifest  segmentobject.Manifest
}

func (s *snapshotSource) Manifest(_ context.Context, p Partition) (segmentobject.Manifest, error) {
	if p != s.partition {
		return segmentobject.Manifest{}, fmt.Errorf("%w: %s (this reader reads %s)", ErrUnknownPartition, p, s.partition)
	}
	return s.current(), nil
}

func (s *snapshotSource) current() segmentobject.Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.manifest
}

// OpenBucketReader reads the partition's published manifest from store
// and returns a reader of the segments it names. Config is a Reader's;
// DefaultConfig suits a scan, and ReadAheadBlocks sets its parallelism.
func OpenBucketReader(ctx context.Context, store objstore.Store, loc BucketLocation, cfg Config) (*BucketReader, error) {
	src := &snapshotSource{}
	r, err := New(StoreBucket(store), src, cfg)
	if err != nil {
		return nil, err
	}
	if loc.TopicID == uuid.Nil {
		src.partition, src.manifest, err = r.findBucketManifest(ctx, store, loc)
	} else {
		src.partition = Partition{Topic: loc.Topic, TopicID: loc.TopicID, Index: loc.Partition}
		key := segmentobject.ManifestKey(loc.KeyPrefix, loc.Topic, loc.TopicID, loc.Partition)
		src.manifest, err = r.readBucketManifest(ctx, store, key, src.partition)
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	key := segmentobject.ManifestKey(loc.KeyPrefix, src.partition.Topic, src.partition.TopicID, src.partition.Index)
	return &BucketReader{reader: r, source: src, store: store, key: key}, nil
}

// Manifest is the manifest the reader serves: LogStartOffset and
// NextOffset() bound what Batches can read; the segments' sizes total the
// bytes a full scan fetches.
func (b *BucketReader) Manifest() segmentobject.Manifest { return b.source.current() }

// replaced reads the manifest again after a segment object was found
// missing at offset, and reports whether the new one still holds offset
// in another object (a replacement), which the reader then serves.
func (b *BucketReader) replaced(ctx context.Context, offset int64) bool {
	old := b.source.current()
	i, ok := old.SegmentFor(offset)
	if !ok {
		return false
	}
	m, err := b.reader.readBucketManifest(ctx, b.store, b.key, b.source.partition)
	if err != nil {
		return false
	}
	j, ok := m.SegmentFor(offset)
	if !ok || m.Segments[j].Key == old.Segments[i].Key {
		return false
	}
	b.source.mu.Lock()
	b.source.manifest = m
	b.source.mu.Unlock()
	return true
}

// Partition is the partition read, with its topic id.
func (b *BucketReader) Partition() Partition { return b.source.partition }

// Batch is one verified record batch.
type Batch struct {
	Header record.Header
	// Bytes is the whole batch, byte for byte as stored. It shares memory
	// with the reader's blocks, which go back to be filled by later GETs:
	// it holds the batch only until the loop over Batches takes its next
	// step or ends, and must not be modified. A caller that keeps a batch
	// copies it.
	Bytes []byte
}

// Batches yields, in offset order, every batch holding an offset in
// [from, to): the first may start before from and the last end after to,
// as batches are whole. to beyond the tiered log's end means its end; an
// empty range yields nothing. A from below LogStartOffset is
// ErrOffsetOutOfRange. On failure Batches yields one error and stops; a
// batch is never yielded unverified. A batch's bytes are the reader's
// memory, lent until the loop takes its next step (Batch.Bytes): a caller
// that keeps a batch copies it.
func (b *BucketReader) Batches(ctx context.Context, from, to int64) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		to = min(to, b.source.current().NextOffset())
		for offset := from; offset < to; {
			res, err := b.reader.read(ctx, Request{Partition: b.source.partition, Offset: offset, MaxBytes: int(b.reader.cfg.BlockSize)}, true)
			if errors.Is(err, ErrSegmentMissing) && b.replaced(ctx, offset) {
				continue
			}
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if !yieldBatches(res, to, yield) {
				return
			}
			offset = res.NextOffset
		}
	}
}

// yieldBatches yields a Result's batches below offset to, and then lets
// the Reader reuse the memory they share with its blocks (Batch.Bytes says
// so). It reports whether the loop goes on.
func yieldBatches(res Result, to int64, yield func(Batch, error) bool) bool {
	defer res.Release()
	for h, batch := range splitVerified(res.Records) {
		if h.BaseOffset >= to || !yield(Batch{Header: h, Bytes: batch}, nil) {
			return false
		}
	}
	return true
}

// OffsetForTimestamp finds the first record with a timestamp at or after
// ts, as Reader.OffsetForTimestamp does: where an export "from a time"
// starts.
func (b *BucketReader) OffsetForTimestamp(ctx context.Context, ts int64) (TimestampOffset, bool, error) {
	return b.reader.OffsetForTimestamp(ctx, b.source.partition, ts, math.MaxInt64)
}

// Metrics returns the underlying Reader's counters.
func (b *BucketReader) Metrics() Metrics { return b.reader.Metrics() }

// Close stops the reader's background reads. The store stays open: it is
// the caller's.
func (b *BucketReader) Close() error { return b.reader.Close() }

// splitVerified yields the batches of a Result's Records, which the Reader
// has verified: it only cuts them apart.
func splitVerified(records []byte) iter.Seq2[record.Header, []byte] {
	return func(yield func(record.Header, []byte) bool) {
		for len(records) > 0 {
			h, err := record.ParseHeader(records)
			if err != nil || h.Size() > len(records) {
				panic(fmt.Sprintf("remotefetch: verified records do not split: %v", err))
			}
			if !yield(h, records[:h.Size():h.Size()]) {
				return
			}
			records = records[h.Size():]
		}
	}
}
