package remotefetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// testIndexInterval is the hot log's index.interval.bytes in the segments
// the tests build: small, so that lookups scan past indexed batches.
const testIndexInterval = 2048

// testBlockSize makes segments of a few dozen blocks, with batches that
// span two or three of them.
const testBlockSize = 4 << 10

// testEpoch is the leader epoch every test batch is stamped with.
const testEpoch = 3

// testConfig is DefaultConfig scaled down to the test segments, with
// metrics registered nowhere.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.BlockSize = testBlockSize
	cfg.BlockCacheBytes = 1 << 20
	cfg.ReadAheadBytes = 64 * testBlockSize
	cfg.RetryBackoff = time.Millisecond
	cfg.RetryBackoffMax = 4 * time.Millisecond
	return cfg
}

// segmentSpec describes a segment for buildSegment.
type segmentSpec struct {
	base    int64
	batches int
	// firstTimestamp is the first batch's; each batch starts 100 ms after
	// the one before, its records 1 ms apart.
	firstTimestamp int64
	codec          record.Codec
	// bigEvery makes every n-th batch larger than a test block (0: none).
	bigEvery int
	// valueSize, when set, is every record's value size.
	valueSize int
}

// testSegment is a segment object and what a reader should find in it.
type testSegment struct {
	seg     segmentobject.ManifestSegment
	object  []byte
	batches [][]byte
	headers []record.Header
}

// buildSegment makes a segment object the way offload does from a sealed
// hot-log segment: batches from record.Build, stamped; offset and time
// index entries by hotlog's rule (segment.go addBatch); one epoch.
func buildSegment(tb testing.TB, prefix string, spec segmentSpec) testSegment {
	tb.Helper()
	var log bytes.Buffer
	var offsetIndex, timeIndex []byte
	ts, id := testSegment{}, uuid.New()
	offset := spec.base
	lastIndexed, maxTimestamp, offsetOfMax, lastTimeIndexed := int64(0), int64(-1), spec.base, int64(-1)
	for i := range spec.batches {
		first := spec.firstTimestamp + int64(i)*100
		valueSize := 40 + (i*397)%1500
		if spec.bigEvery > 0 && i%spec.bigEvery == spec.bigEvery-1 {
			valueSize = 3 * testBlockSize
		}
		if spec.valueSize > 0 {
			valueSize = spec.valueSize
		}
		var records []record.Record
		for j := range 1 + i%4 {
			records = append(records, record.Record{
				TimestampDelta: int64(j),
				Key:            fmt.Appendf(nil, "key-%d-%d", offset, j),
				Value:          bytes.Repeat([]byte{byte(i + j)}, valueSize),
			})
		}
		b, err := record.Build(record.BuildOptions{Codec: spec.codec, FirstTimestamp: first, ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			tb.Fatal(err)
		}
		record.SetBaseOffset(b, offset)
		record.SetPartitionLeaderEpoch(b, testEpoch)
		h, err := record.Validate(b)
		if err != nil {
			tb.Fatal(err)
		}
		pos := int64(log.Len())
		if h.MaxTimestamp > maxTimestamp {
			maxTimestamp, offsetOfMax = h.MaxTimestamp, h.BaseOffset
		}
		if pos > 0 && pos-lastIndexed >= testIndexInterval {
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(h.BaseOffset-spec.base))
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(pos))
			lastIndexed = pos
			if maxTimestamp > lastTimeIndexed {
				timeIndex = appendTimeEntry(timeIndex, maxTimestamp, offsetOfMax-spec.base)
				lastTimeIndexed = maxTimestamp
			}
		}
		log.Write(b)
		ts.batches = append(ts.batches, b)
		ts.headers = append(ts.headers, h)
		offset = h.NextOffset()
	}
	if maxTimestamp > lastTimeIndexed {
		timeIndex = appendTimeEntry(timeIndex, maxTimestamp, offsetOfMax-spec.base)
	}
	var object bytes.Buffer
	footer, err := segmentobject.Write(&object, segmentobject.Source{
		BaseOffset: spec.base, NextOffset: offset, MaxTimestamp: maxTimestamp,
		Log: bytes.NewReader(log.Bytes()), LogSize: int64(log.Len()),
		OffsetIndex: offsetIndex, TimeIndex: timeIndex,
		Epochs: []segmentobject.EpochEntry{{Epoch: testEpoch, StartOffset: spec.base}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ts.object = object.Bytes()
	ts.seg = segmentobject.ManifestSegment{
		ID: id, Key: segmentobject.SegmentKey(prefix, spec.base, id),
		BaseOffset: spec.base, EndOffset: offset - 1, MaxTimestamp: maxTimestamp,
		LogBytes: int64(log.Len()), TailBytes: footer.TailSize(),
		LeaderEpochs: []segmentobject.EpochEntry{{Epoch: testEpoch, StartOffset: spec.base}},
	}
	return ts
}

func appendTimeEntry(b []byte, timestamp, relativeOffset int64) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(timestamp))
	return binary.BigEndian.AppendUint32(b, uint32(relativeOffset))
}

// testPartition is a tiered partition: its segments and their manifest.
type testPartition struct {
	part     Partition
	segments []testSegment
	manifest segmentobject.Manifest
}

// buildPartition makes a partition of segments of the given batch counts,
// back to back from offset 0.
func buildPartition(tb testing.TB, topic string, index int32, batchCounts []int, spec segmentSpec) *testPartition {
	tb.Helper()
	p := &testPartition{part: Partition{Topic: topic, TopicID: uuid.New(), Index: index}}
	p.manifest = segmentobject.Manifest{Version: segmentobject.ManifestVersion, Topic: topic, TopicID: p.part.TopicID, Partition: index}
	prefix := segmentobject.PartitionPrefix("", topic, p.part.TopicID, index)
	next := int64(0)
	for i, n := range batchCounts {
		spec.base, spec.batches = next, n
		spec.firstTimestamp = 1_700_000_000_000 + int64(i)*1_000_000
		s := buildSegment(tb, prefix, spec)
		p.segments = append(p.segments, s)
		p.manifest.Segments = append(p.manifest.Segments, s.seg)
		next = s.seg.NextOffset()
	}
	return p
}

// put stores every segment object in store.
func (p *testPartition) put(tb testing.TB, store objstore.Store) {
	tb.Helper()
	for _, s := range p.segments {
		if err := store.Put(tb.Context(), s.seg.Key, bytes.NewReader(s.object), int64(len(s.object))); err != nil {
			tb.Fatal(err)
		}
	}
}

// metaManifest is the partition's manifest as meta holds it.
func (p *testPartition) metaManifest() meta.Manifest {
	m := meta.Manifest{Topic: p.part.Topic, Partition: p.part.Index, RemoteLogStartOffset: p.manifest.LogStartOffset}
	for _, s := range p.segments {
		m.Segments = append(m.Segments, meta.RemoteSegment{
			ID: s.seg.ID, State: meta.SegmentCommitted,
			BaseOffset: s.seg.BaseOffset, EndOffset: s.seg.EndOffset, MaxTimestamp: s.seg.MaxTimestamp,
			SizeBytes: s.seg.LogBytes, ObjectKey: s.seg.Key, LeaderEpochs: s.seg.LeaderEpochs,
		})
	}
	return m
}

// publish writes the partition's manifest.json into store as offload
// does (segmentobject.Manifest.Encode), so that the reader is tested
// against the bytes the broker publishes.
func (p *testPartition) publish(tb testing.TB, store objstore.Store) {
	tb.Helper()
	data := p.manifest.Encode()
	if _, err := segmentobject.ParseManifest(data); err != nil {
		tb.Fatalf("the test manifest is not one offload could write: %v", err)
	}
	key := segmentobject.ManifestKey("", p.part.Topic, p.part.TopicID, p.part.Index)
	if err := store.Put(tb.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		tb.Fatal(err)
	}
}

// Manifest makes a testPartition the ManifestSource of a Reader.
func (p *testPartition) Manifest(_ context.Context, part Partition) (segmentobject.Manifest, error) {
	if part != p.part {
		return segmentobject.Manifest{}, fmt.Errorf("%w: %s", ErrUnknownPartition, part)
	}
	return p.manifest, nil
}

// expect is the model of Read with testConfig's blocks: the batches from
// the one holding offset in its segment, up to maxBytes but at least one,
// all in the first one's block (a first batch that spans blocks alone).
func (p *testPartition) expect(offset int64, maxBytes int) (records []byte, next int64) {
	for _, s := range p.segments {
		if offset >= s.seg.NextOffset() {
			continue
		}
		block := int64(-1) // the block of the first batch, -1 when it spans two
		var pos int64
		for i, h := range s.headers {
			at, end := pos, pos+int64(len(s.batches[i]))
			pos = end
			if h.NextOffset() <= offset {
				continue
			}
			inBlock := at/testBlockSize == (end-1)/testBlockSize
			if len(records) > 0 && (len(records)+len(s.batches[i]) > maxBytes || !inBlock || at/testBlockSize != block) {
				break
			}
			if len(records) == 0 && inBlock {
				block = at / testBlockSize
			}
			records = append(records, s.batches[i]...)
			next = h.NextOffset()
			if len(records) >= maxBytes {
				break
			}
		}
		return records, next
	}
	return nil, 0
}

// end is one past the partition's last offset.
func (p *testPartition) end() int64 { return p.manifest.NextOffset() }

// sources serves several test partitions to one Reader.
type sources []*testPartition

func (ss sources) Manifest(ctx context.Context, part Partition) (segmentobject.Manifest, error) {
	for _, p := range ss {
		if p.part == part {
			return p.Manifest(ctx, part)
		}
	}
	return segmentobject.Manifest{}, fmt.Errorf("%w: %s", ErrUnknownPartition, part)
}

// openFileStore opens a file:// store in a fresh directory, closed with the
// test.
func openFileStore(tb testing.TB) (objstore.Store, string) {
	tb.Helper()
	dir := tb.TempDir()
	s, err := objstore.Open(tb.Context(), "file://"+dir, objstore.DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, dir
}

// newReader makes a Reader closed with the test.
func newReader(tb testing.TB, bucket Bucket, source ManifestSource, cfg Config) *Reader {
	tb.Helper()
	r, err := New(bucket, source, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// countingBucket counts the requests that reach the bucket it wraps, by
// key, and can hold block reads at a gate. It stands in for nothing: every
// request goes on to the real store.
type countingBucket struct {
	Bucket
	reads    atomic.Int64
	suffixes atomic.Int64
	mu       sync.Mutex
	byRange  map[string]int // "key@offset" → ranged reads
	// gate, when set, is received from before every ranged read.
	gate chan struct{}
	// corruptNext, when positive, flips a bit in that many ranged reads.
	corruptNext atomic.Int64
	// flipAt, when not negative, is an object position whose byte the next
	// ranged read covering it flips (once).
	flipAt atomic.Int64
}

func newCountingBucket(b Bucket) *countingBucket {
	c := &countingBucket{Bucket: b, byRange: make(map[string]int)}
	c.flipAt.Store(-1)
	return c
}

// ReadAt reports the bytes filled only once they are whole and any bit
// it flips is flipped, as damage in transit would be.
func (c *countingBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	c.reads.Add(1)
	c.mu.Lock()
	c.byRange[fmt.Sprintf("%s@%d", key, off)]++
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := c.Bucket.ReadAt(ctx, key, p, off, nil); err != nil {
		return err
	}
	if c.corruptNext.Add(-1) >= 0 {
		p[len(p)/2] ^= 0x10
	}
	if at := c.flipAt.Load(); at >= off && at < off+int64(len(p)) && c.flipAt.CompareAndSwap(at, -1) {
		p[at-off] ^= 0xff
	}
	if filled != nil {
		filled(len(p))
	}
	return nil
}

func (c *countingBucket) ReadSuffix(ctx context.Context, key string, n int64) ([]byte, int64, error) {
	c.suffixes.Add(1)
	return c.Bucket.ReadSuffix(ctx, key, n)
}

// rangeReads is how many ranged reads of key at off reached the bucket.
func (c *countingBucket) rangeReads(key string, off int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byRange[fmt.Sprintf("%s@%d", key, off)]
}

// readAll reads a partition from from to its end with maxBytes per read
// and returns the concatenated records.
func readAll(tb testing.TB, r *Reader, p *testPartition, from int64, maxBytes int) []byte {
	tb.Helper()
	var all []byte
	for offset := from; offset < p.end(); {
		res, err := r.Read(tb.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: maxBytes})
		if err != nil {
			tb.Fatalf("Read(%d): %v", offset, err)
		}
		all = append(all, res.Records...)
		res.Release()
		offset = res.NextOffset
	}
	return all
}

// allBatches is every batch of the partition, concatenated.
func (p *testPartition) allBatches() []byte {
	var all []byte
	for _, s := range p.segments {
		for _, b := range s.batches {
			all = append(all, b...)
		}
	}
	return all
}

// emptyCaches drops every cached block and index, as if the Reader's
// caches were full of other partitions' data: the next read of any block
// or index makes a GET. Released blocks' buffers go back to the pool.
func (r *Reader) emptyCaches() {
	r.blocks.cache.Clear()
	c := r.indexes
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.mu.entries)
	c.mu.lru.Init()
	c.mu.size = 0
}
