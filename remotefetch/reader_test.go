package remotefetch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/record"
)

// Every offset of a tiered partition reads back byte-identical to what was
// stored, from a file:// store and from versitygw: the batch holding the
// offset first, whole batches up to MaxBytes, at least one.
func TestReadEveryOffset(t *testing.T) {
	t.Parallel()
	stores := []struct {
		name string
		open func(testing.TB) objstore.Store
	}{
		{"file", func(tb testing.TB) objstore.Store { s, _ := openFileStore(tb); return s }},
		{"s3", func(tb testing.TB) objstore.Store { return openS3Store(tb, "") }},
	}
	for _, store := range stores {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			s := store.open(t)
			p := buildPartition(t, "orders", 0, []int{40, 1, 60}, segmentSpec{bigEvery: 7})
			p.put(t, s)
			r := newReader(t, StoreBucket(s), p, testConfig())
			for _, maxBytes := range []int{0, 3000, 20000} {
				for offset := int64(0); offset < p.end(); offset++ {
					want, wantNext := p.expect(offset, maxBytes)
					res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: maxBytes})
					if err != nil {
						t.Fatalf("Read(%d, %d): %v", offset, maxBytes, err)
					}
					if !bytes.Equal(res.Records, want) || res.NextOffset != wantNext {
						t.Fatalf("Read(%d, %d): %d bytes to %d, want %d bytes to %d", offset, maxBytes, len(res.Records), res.NextOffset, len(want), wantNext)
					}
					res.Release()
				}
			}
			if got := readAll(t, r, p, 0, 1<<20); !bytes.Equal(got, p.allBatches()) {
				t.Fatalf("a scan of the partition differs from what was stored")
			}
		})
	}
}

// The first batch comes whole even when it is larger than MaxBytes.
func TestReadFirstBatchWhole(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "big", 0, []int{6}, segmentSpec{bigEvery: 3})
	p.put(t, s)
	r := newReader(t, StoreBucket(s), p, testConfig())
	big := p.segments[0].headers[2]
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: big.BaseOffset, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != big.Size() || res.NextOffset != big.NextOffset() {
		t.Fatalf("got %d bytes to %d, want the one batch of %d bytes to %d", len(res.Records), res.NextOffset, big.Size(), big.NextOffset())
	}
	if big.Size() <= 2*testBlockSize {
		t.Fatalf("the big batch (%d bytes) does not span blocks: the test proves nothing", big.Size())
	}
}

// Offsets outside [LogStartOffset, end) are ErrOffsetOutOfRange; a log
// start inside a segment is served from there; an unknown partition is the
// source's error.
func TestReadBounds(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "bounds", 0, []int{10, 10}, segmentSpec{})
	p.put(t, s)
	start := p.segments[0].headers[5].BaseOffset + 1 // inside batch 5
	p.manifest.LogStartOffset = start
	r := newReader(t, StoreBucket(s), p, testConfig())
	for _, offset := range []int64{0, start - 1, p.end(), p.end() + 10} {
		if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 1}); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("Read(%d) = %v, want ErrOffsetOutOfRange", offset, err)
		}
	}
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: start, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := record.ParseHeader(res.Records); h.BaseOffset != start-1 {
		t.Errorf("read at the log start began at batch %d, want the batch holding %d", h.BaseOffset, start)
	}
	other := p.part
	other.Index = 7
	if _, err := r.Read(t.Context(), Request{Partition: other, Offset: 0}); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("Read of an unknown partition = %v, want ErrUnknownPartition", err)
	}
}

// A segment object whose footer disagrees with the manifest is refused.
func TestReadWrongObject(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "wrong", 0, []int{5}, segmentSpec{})
	p.put(t, s)
	p.manifest.Segments[0].EndOffset++
	r := newReader(t, StoreBucket(s), p, testConfig())
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read = %v, want ErrCorrupt", err)
	}
}

// A missing object is ErrSegmentMissing, after one request.
func TestReadMissingObject(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "missing", 0, []int{5}, segmentSpec{})
	counting := newCountingBucket(StoreBucket(s))
	r := newReader(t, counting, p, testConfig())
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0}); !errors.Is(err, ErrSegmentMissing) {
		t.Fatalf("Read = %v, want ErrSegmentMissing", err)
	}
	if n := counting.suffixes.Load(); n != 1 {
		t.Fatalf("%d requests for a missing object, want 1 (no retries)", n)
	}
}

// The index costs one suffix GET per segment, even when the manifest does
// not know the tail's size and the first guess is short.
func TestIndexFetchedOnce(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "index", 0, []int{50}, segmentSpec{})
	p.put(t, s)
	p.manifest.Segments[0].TailBytes = 0
	cfg := testConfig()
	cfg.IndexTailGuess = 200 // shorter than the tail: one more GET of the right size
	counting := newCountingBucket(StoreBucket(s))
	r := newReader(t, counting, p, cfg)
	readAll(t, r, p, 0, 1000)
	readAll(t, r, p, 0, 1000)
	if n := counting.suffixes.Load(); n != 2 {
		t.Fatalf("%d suffix GETs, want 2 (the short guess, then the tail)", n)
	}
	if m := r.Metrics().Indexes; m.Misses != 1 || m.Hits == 0 {
		t.Fatalf("index cache %+v, want one miss and hits after", m)
	}
}

// Reads after Close fail with ErrClosed.
func TestReadAfterClose(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "closed", 0, []int{3}, segmentSpec{})
	p.put(t, s)
	r, err := New(StoreBucket(s), p, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v, want ErrClosed", err)
	}
}

// A read's batches lie in one block, so that they are a slice of it and
// never a copy, except a first batch that spans two blocks, which comes
// alone (copied); reading on from each read's end gives the whole log.
func TestReadStaysInOneBlock(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "blocks", 0, []int{80}, segmentSpec{bigEvery: 5})
	p.put(t, s)
	r := newReader(t, StoreBucket(s), p, testConfig())
	var all []byte
	spanning := 0
	for offset := int64(0); offset < p.end(); {
		res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		at := int64(len(all)) // one segment: log positions are offsets into all
		end := at + int64(len(res.Records))
		_, headers, err := record.Split(res.Records)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case at/testBlockSize == (end-1)/testBlockSize:
			if res.shared == nil {
				t.Fatalf("Read(%d): %d batches in block %d were copied, want a slice of the block", offset, len(headers), at/testBlockSize)
			}
		case len(headers) != 1 || res.shared != nil:
			t.Fatalf("Read(%d): %d batches over blocks %d to %d (shared: %v), want one batch, copied", offset, len(headers), at/testBlockSize, (end-1)/testBlockSize, res.shared != nil)
		default:
			spanning++
		}
		all = append(all, res.Records...)
		res.Release()
		offset = res.NextOffset
	}
	if !bytes.Equal(all, p.allBatches()) {
		t.Fatal("reads from each read's end differ from the log")
	}
	if spanning == 0 {
		t.Fatal("no batch spanned two blocks: the test needs larger batches")
	}
}

// A read that stops at a block's end loads no block beyond the ones its
// batches lie in: it knows it stops without the next batch's header when
// that header starts in, or runs into, the next block.
func TestReadLoadsOnlyItsBlocks(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	cfg := testConfig()
	cfg.ReadAheadBytes = 0 // no prefetch: every GET is the read's own
	cases := 0
	for valueSize := 40; valueSize < 400 && cases < 4; valueSize += 23 {
		p := buildPartition(t, fmt.Sprintf("stops-%d", valueSize), 0, []int{40}, segmentSpec{valueSize: valueSize})
		p.put(t, s)
		seg := p.segments[0]
		ix := mustIndex(t, seg)
		var pos int64
		for i, h := range seg.headers {
			at := pos
			pos += int64(len(seg.batches[i]))
			if i == 0 || (at+record.HeaderSize-1)/testBlockSize == (at-1)/testBlockSize {
				continue // its header lies in the block of the batch before
			}
			before := seg.headers[i-1]
			bucket := newCountingBucket(StoreBucket(s))
			r := newReader(t, bucket, p, cfg)
			res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: before.BaseOffset, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			res.Release()
			from, _, err := ix.StartPosition(before.BaseOffset)
			if err != nil {
				t.Fatal(err)
			}
			if res.NextOffset != h.BaseOffset || from/testBlockSize != (at-1)/testBlockSize {
				continue // the scan starts in an earlier block, or the batch before spans blocks
			}
			cases++
			if gets := r.Metrics().BlockGets; gets != 1 {
				t.Fatalf("Read(%d) stopped before the batch at %d, whose header runs into the next block, with %d block GETs, want 1", before.BaseOffset, at, gets)
			}
		}
	}
	if cases == 0 {
		t.Fatal("no batch header lies past a block's end: the test needs other sizes")
	}
}
