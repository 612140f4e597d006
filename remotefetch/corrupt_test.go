package remotefetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// A segment object corrupted in the bucket never yields a bad byte: a read
// that would include the bad batch returns the verified batches before it,
// and a read that starts at it fails with ErrCorrupt after fetching its
// blocks afresh once. Reads of batches after it are unaffected if its
// header is intact; a broken header cannot be scanned past, so reads that
// must scan through it fail with ErrCorrupt too.
func TestCorruptObject(t *testing.T) {
	t.Parallel()
	const bad = 12 // the corrupted batch
	cases := []struct {
		name         string
		corrupt      func(batch []byte)
		headerIntact bool
	}{
		{"payload bit", func(b []byte) { b[len(b)-3] ^= 0x04 }, true},
		{"crc", func(b []byte) { b[17] ^= 0x80 }, true},
		{"length", func(b []byte) { binary.BigEndian.PutUint32(b[8:], binary.BigEndian.Uint32(b[8:])+1) }, false},
		{"magic", func(b []byte) { b[16] = 1 }, false},
		{"base offset", func(b []byte) { binary.BigEndian.PutUint64(b, 1<<40) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, dir := openFileStore(t)
			p := buildPartition(t, "corrupt", 0, []int{30}, segmentSpec{bigEvery: 4})
			p.put(t, s)
			seg := p.segments[0]
			object := bytes.Clone(seg.object)
			pos := 0
			for _, b := range seg.batches[:bad] {
				pos += len(b)
			}
			c.corrupt(object[pos : pos+len(seg.batches[bad])])
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(seg.seg.Key)), object, 0o644); err != nil {
				t.Fatal(err)
			}
			counting := newCountingBucket(StoreBucket(s))
			r := newReader(t, counting, p, testConfig())
			badHeader := seg.headers[bad]

			for offset := int64(0); offset < p.end(); offset++ {
				res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 1 << 20})
				if offset >= badHeader.BaseOffset && offset < badHeader.NextOffset() {
					if !errors.Is(err, ErrCorrupt) || res.Records != nil {
						t.Fatalf("Read(%d) in the bad batch: %d bytes, err %v; want ErrCorrupt and nothing", offset, len(res.Records), err)
					}
					continue
				}
				if offset >= badHeader.NextOffset() && !c.headerIntact && errors.Is(err, ErrCorrupt) && res.Records == nil {
					continue // its scan starts before the bad header
				}
				if err != nil {
					t.Fatalf("Read(%d): %v", offset, err)
				}
				want, _ := p.expect(offset, 1<<20)
				if offset < badHeader.BaseOffset {
					want, _ = p.expect(offset, pos-startOf(seg, offset))
				}
				if !bytes.Equal(res.Records, want) {
					t.Fatalf("Read(%d): %d bytes, want the %d verified bytes", offset, len(res.Records), len(want))
				}
				if _, _, err := record.Split(res.Records); err != nil {
					t.Fatalf("Read(%d) returned bytes that do not verify: %v", offset, err)
				}
			}
			m := r.Metrics()
			if m.CorruptFailed == 0 || m.CorruptRecovered != 0 {
				t.Fatalf("corrupt reads %d failed, %d recovered; want failures only", m.CorruptFailed, m.CorruptRecovered)
			}
			if n := counting.rangeReads(seg.seg.Key, int64(pos)/testBlockSize*testBlockSize); n < 2 {
				t.Fatalf("the bad block was fetched %d times, want it evicted and fetched again", n)
			}
		})
	}
}

// startOf is the log position of the batch holding offset.
func startOf(seg testSegment, offset int64) int {
	pos := 0
	for i, h := range seg.headers {
		if h.NextOffset() > offset {
			return pos
		}
		pos += len(seg.batches[i])
	}
	return pos
}

// Bytes corrupted on the way (one GET's body) are caught, evicted and
// fetched again: the read succeeds with the right bytes.
func TestCorruptionInTransitRecovers(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "transit", 0, []int{20}, segmentSpec{})
	p.put(t, s)
	counting := newCountingBucket(StoreBucket(s))
	counting.corruptNext.Store(1)
	cfg := testConfig()
	cfg.ReadAheadBlocks = 0
	r := newReader(t, counting, p, cfg)
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20})
	want, _ := p.expect(0, 1<<20)
	if err != nil || !bytes.Equal(res.Records, want) {
		t.Fatalf("Read: %d bytes, err %v; want %d good bytes", len(res.Records), err, len(want))
	}
	if m := r.Metrics(); m.CorruptRecovered != 1 || m.CorruptFailed != 0 {
		t.Fatalf("corrupt reads %d recovered, %d failed; want 1 recovered", m.CorruptRecovered, m.CorruptFailed)
	}
	if n := counting.rangeReads(p.segments[0].seg.Key, 0); n != 2 {
		t.Fatalf("the corrupted block was fetched %d times, want 2", n)
	}
}

// A read from the middle of a segment whose first batch's base offset (no
// CRC covers it) arrives damaged is not fooled into skipping or
// renumbering records: the offset index anchors the scan, the block is
// fetched again, and the read returns exactly the batches a clean read
// would.
func TestCorruptBaseOffsetMidSegment(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "base", 0, []int{200}, segmentSpec{})
	p.put(t, s)
	seg := p.segments[0]
	ix, err := segmentobject.ParseTail(seg.object[len(seg.object)-int(seg.seg.TailBytes):], int64(len(seg.object)))
	if err != nil {
		t.Fatal(err)
	}
	// The last offset of an indexed batch well inside the segment: a scan
	// for it starts at that batch.
	var offset, pos int64
	for o := seg.seg.NextOffset() / 2; o < seg.seg.NextOffset(); o++ {
		at, base, err := ix.StartPosition(o)
		if err != nil {
			t.Fatal(err)
		}
		if at > 0 && base < o {
			if next, _, _ := ix.StartPosition(o + 1); next != at {
				offset, pos = o, at
				break
			}
		}
	}
	if pos == 0 {
		t.Fatal("no indexed batch of several offsets in the second half of the segment")
	}
	counting := newCountingBucket(StoreBucket(s))
	counting.flipAt.Store(pos + 7) // the base offset's low byte
	cfg := testConfig()
	cfg.ReadAheadBlocks = 0
	r := newReader(t, counting, p, cfg)
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: offset, MaxBytes: 1 << 20})
	want, next := p.expect(offset, 1<<20)
	if err != nil || !bytes.Equal(res.Records, want) || res.NextOffset != next {
		t.Fatalf("Read(%d) with a damaged base offset at position %d: %d bytes to %d, err %v; want the %d bytes to %d a clean read returns",
			offset, pos, len(res.Records), res.NextOffset, err, len(want), next)
	}
	if m := r.Metrics(); m.CorruptRecovered != 1 {
		t.Fatalf("%d corrupt reads recovered, want 1: the damage went unnoticed", m.CorruptRecovered)
	}
}

// A segment whose indexes fail their CRC is fetched once more, then
// refused with ErrCorrupt.
func TestCorruptTail(t *testing.T) {
	t.Parallel()
	s, dir := openFileStore(t)
	p := buildPartition(t, "tail", 0, []int{20}, segmentSpec{})
	p.put(t, s)
	seg := p.segments[0]
	object := bytes.Clone(seg.object)
	object[len(object)-int(seg.seg.TailBytes)] ^= 1 // the first byte of the offset index
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(seg.seg.Key)), object, 0o644); err != nil {
		t.Fatal(err)
	}
	counting := newCountingBucket(StoreBucket(s))
	r := newReader(t, counting, p, testConfig())
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read = %v, want ErrCorrupt", err)
	}
	if n := counting.suffixes.Load(); n != 2 {
		t.Fatalf("%d suffix GETs, want 2 (the tail, fetched again once)", n)
	}
}

// rereadBucket damages the second GET of one block at one position, and
// evicts that block from the cache when the block after it is read, as
// other readers' blocks would push it out.
type rereadBucket struct {
	Bucket
	r               *Reader
	block, damageAt int64
	gets            atomic.Int64 // of block
}

func (c *rereadBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	if err := c.Bucket.ReadAt(ctx, key, p, off, nil); err != nil {
		return err
	}
	if off == c.block*testBlockSize && c.gets.Add(1) == 2 {
		p[c.damageAt-off] ^= 1
	}
	if off == (c.block+1)*testBlockSize {
		c.r.blocks.evict(blockID{key, c.block})
	}
	if filled != nil {
		filled(len(p))
	}
	return nil
}

// TestSpanningBatchReadAgainIsCheckedAgainstItsHeader: a batch whose
// header spans two blocks is copied out of them after its header was
// checked; its first block, evicted meanwhile, comes back from a GET that
// damaged the base offset, which the CRC does not cover. The copy is
// checked against the header that was, so the damage is caught and the
// blocks fetched again: before, the batch went out renumbered.
func TestSpanningBatchReadAgainIsCheckedAgainstItsHeader(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "reread", 0, []int{300}, segmentSpec{})
	p.put(t, s)
	seg := p.segments[0]
	var pos int64
	at := -1
	for i, b := range seg.batches {
		if i > 0 && pos/testBlockSize != (pos+record.HeaderSize-1)/testBlockSize {
			at = i
			break
		}
		pos += int64(len(b))
	}
	if at < 0 {
		t.Fatal("no batch header spans two blocks")
	}
	bucket := &rereadBucket{Bucket: StoreBucket(s), block: pos / testBlockSize, damageAt: pos + 7}
	cfg := testConfig()
	cfg.ReadAheadBlocks, cfg.ReadAheadBytes = 0, 0
	r := newReader(t, bucket, p, cfg)
	bucket.r = r
	want := seg.headers[at]
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: want.BaseOffset, MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if !bytes.Equal(res.Records, seg.batches[at]) || r.Metrics().CorruptRecovered != 1 {
		h, _ := record.ParseHeader(res.Records)
		t.Fatalf("read batch %d, base offset %d (%d corrupt reads recovered); want %d as stored, one recovery", at, h.BaseOffset, r.Metrics().CorruptRecovered, want.BaseOffset)
	}
}
