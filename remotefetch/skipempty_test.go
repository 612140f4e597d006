package remotefetch

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// emptyBatch is what the cleaner leaves where it removed every record of
// a run of batches (compact.Writer.Flush): no records, the run's offsets
// (lastOffsetDelta of them after the first), no producer. Its base offset
// is 0 until a segment places it.
func emptyBatch(tb testing.TB, lastOffsetDelta int32, timestamp int64) []byte {
	tb.Helper()
	b, err := record.Rebuild(record.Header{
		PartitionLeaderEpoch: testEpoch, LastOffsetDelta: lastOffsetDelta,
		FirstTimestamp: timestamp, MaxTimestamp: timestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fullBatch is a batch of n keyed records of valueSize bytes each.
func fullBatch(tb testing.TB, n, valueSize int, timestamp int64) []byte {
	tb.Helper()
	records := make([]record.Record, n)
	for i := range records {
		records[i] = record.Record{
			TimestampDelta: int64(i),
			Key:            fmt.Appendf(nil, "key-%d-%d", timestamp, i),
			Value:          bytes.Repeat([]byte{byte(timestamp + int64(i))}, valueSize),
		}
	}
	b, err := record.Build(record.BuildOptions{FirstTimestamp: timestamp, ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// segmentOfBatches makes a segment object of the given batches from base
// on, stamped with their offsets and testEpoch, indexed as the remote
// recompaction indexes the objects it writes (segmentobject.Indexer).
func segmentOfBatches(tb testing.TB, prefix string, base int64, batches [][]byte) testSegment {
	tb.Helper()
	ts := testSegment{}
	var log []byte
	ix := segmentobject.NewIndexer(base, testIndexInterval)
	offset := base
	for _, b := range batches {
		b = bytes.Clone(b)
		record.SetBaseOffset(b, offset)
		h, err := record.Validate(b)
		if err != nil {
			tb.Fatal(err)
		}
		ix.Add(h.BaseOffset, h.Size(), h.MaxTimestamp)
		log = append(log, b...)
		ts.batches = append(ts.batches, b)
		ts.headers = append(ts.headers, h)
		offset = h.NextOffset()
	}
	offsetIndex, timeIndex, size, maxTimestamp := ix.Finish()
	epochs := []segmentobject.EpochEntry{{Epoch: testEpoch, StartOffset: base}}
	var object bytes.Buffer
	footer, err := segmentobject.Write(&object, segmentobject.Source{
		BaseOffset: base, NextOffset: offset, MaxTimestamp: maxTimestamp,
		Log: bytes.NewReader(log), LogSize: size,
		OffsetIndex: offsetIndex, TimeIndex: timeIndex, Epochs: epochs,
	})
	if err != nil {
		tb.Fatal(err)
	}
	id := uuid.New()
	ts.object = object.Bytes()
	ts.seg = segmentobject.ManifestSegment{
		ID: id, Key: segmentobject.SegmentKey(prefix, base, id),
		BaseOffset: base, EndOffset: offset - 1, MaxTimestamp: maxTimestamp,
		LogBytes: size, TailBytes: footer.TailSize(), LeaderEpochs: epochs,
	}
	return ts
}

// compactedPartition makes a partition of segments holding the given
// batches, the first at offset 0, each next one gap offsets after the one
// before ends.
func compactedPartition(tb testing.TB, topic string, gap int64, segments ...[][]byte) *testPartition {
	tb.Helper()
	p := &testPartition{part: Partition{Topic: topic, TopicID: uuid.New(), Index: 0}}
	p.manifest = segmentobject.Manifest{Version: segmentobject.ManifestVersion, Topic: topic, TopicID: p.part.TopicID, Partition: 0}
	prefix := segmentobject.PartitionPrefix("", topic, p.part.TopicID, 0)
	next := int64(0)
	for _, batches := range segments {
		s := segmentOfBatches(tb, prefix, next, batches)
		p.segments = append(p.segments, s)
		p.manifest.Segments = append(p.manifest.Segments, s.seg)
		next = s.seg.NextOffset() + gap
	}
	if err := p.manifest.Validate(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// onlyEmpty reports whether every batch in batches has no records.
func onlyEmpty(tb testing.TB, batches []byte) bool {
	tb.Helper()
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil {
			tb.Fatal(err)
		}
		if h.NumRecords > 0 {
			return false
		}
		batches = batches[h.Size():]
	}
	return true
}

// expectSkipEmpty is the model of a SkipEmpty read: the plain read's,
// moved on past reads that return only empty batches until one returns
// a batch with records or reaches the end of the partition.
func (p *testPartition) expectSkipEmpty(tb testing.TB, offset int64, maxBytes int) (records []byte, next int64) {
	tb.Helper()
	for {
		records, next = p.expect(offset, maxBytes)
		if !onlyEmpty(tb, records) || next >= p.end() {
			return records, next
		}
		offset = next
	}
}

// readWithin is r.Read, failing the test if it has not returned after ten
// seconds (a SkipEmpty read that never stops).
func readWithin(t *testing.T, r *Reader, req Request) Result {
	t.Helper()
	type outcome struct {
		res Result
		err error
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		res, err := r.Read(ctx, req)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("Read(%d, max %d, skip empty %v): %v", req.Offset, req.MaxBytes, req.SkipEmpty, o.err)
		}
		return o.res
	case <-time.After(10 * time.Second):
		t.Fatalf("Read(%d, max %d, skip empty %v) has not returned after 10s", req.Offset, req.MaxBytes, req.SkipEmpty)
		return Result{}
	}
}

// A SkipEmpty read at offsets whose segments the cleaner emptied moves on
// to the first segment with records and returns its batches; a plain read
// returns the empty batches. At every batch boundary and read size,
// either read returns what the model says.
func TestReadSkipEmpty(t *testing.T) {
	t.Parallel()
	const ts = 1_700_000_000_000
	var emptied, emptiedToo, records, mixed [][]byte
	for i := range 5 {
		emptied = append(emptied, emptyBatch(t, int32(4+i), ts+int64(i)*100))
	}
	emptiedToo = append(emptiedToo, emptyBatch(t, 500, ts+1000)) // a whole segment's run
	records = append(records, fullBatch(t, 3, 200, ts+2000))
	for i := range 12 {
		if i%3 == 1 {
			records = append(records, emptyBatch(t, 2, ts+2100+int64(i)*100))
		} else {
			records = append(records, fullBatch(t, 1+i%4, 100+i*97, ts+2100+int64(i)*100))
		}
	}
	for i := range 30 { // a run of empty batches, then records, in one segment
		mixed = append(mixed, emptyBatch(t, int32(i%5), ts+5000+int64(i)))
	}
	mixed = append(mixed, fullBatch(t, 2, 3000, ts+6000), fullBatch(t, 1, 10, ts+6001))

	for _, gap := range []int64{0, 7} {
		t.Run(fmt.Sprintf("gap %d", gap), func(t *testing.T) {
			t.Parallel()
			s, _ := openFileStore(t)
			p := compactedPartition(t, "compacted", gap, emptied, emptiedToo, records, mixed)
			p.put(t, s)
			r := newReader(t, StoreBucket(s), p, testConfig())
			first := p.segments[2] // the first with records

			plain := readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20})
			if want := bytes.Join(p.segments[0].batches, nil); !bytes.Equal(plain.Records, want) || plain.NextOffset != p.segments[0].seg.NextOffset() {
				t.Fatalf("plain Read(0): %d bytes to %d, want the first segment's %d empty bytes to %d",
					len(plain.Records), plain.NextOffset, len(want), p.segments[0].seg.NextOffset())
			}

			skip := readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20, SkipEmpty: true})
			want, wantNext := p.expect(first.seg.BaseOffset, 1<<20)
			if !bytes.Equal(skip.Records, want) || skip.NextOffset != wantNext || skip.OnlyEmpty {
				t.Fatalf("SkipEmpty Read(0): %d bytes to %d (only empty %v), want segment %d's first block's %d bytes to %d",
					len(skip.Records), skip.NextOffset, skip.OnlyEmpty, first.seg.BaseOffset, len(want), wantNext)
			}
			if h, _ := record.ParseHeader(skip.Records); h.BaseOffset != first.seg.BaseOffset || h.NumRecords == 0 {
				t.Fatalf("SkipEmpty Read(0) starts with batch %d of %d records, want %d with records", h.BaseOffset, h.NumRecords, first.seg.BaseOffset)
			}

			// Small reads: each step of the skip returns at most a batch.
			skip = readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1, SkipEmpty: true})
			if !bytes.Equal(skip.Records, first.batches[0]) || skip.NextOffset != first.headers[0].NextOffset() {
				t.Fatalf("SkipEmpty Read(0, max 1): %d bytes to %d, want the batch at %d to %d",
					len(skip.Records), skip.NextOffset, first.headers[0].BaseOffset, first.headers[0].NextOffset())
			}

			for _, maxBytes := range []int{0, 1, 700, 5000, 1 << 20} {
				for _, s := range p.segments {
					for i, h := range s.headers {
						for _, offset := range []int64{h.BaseOffset, h.LastOffset(), s.seg.NextOffset()} {
							if offset >= p.end() || i > 0 && offset == s.seg.NextOffset() {
								continue
							}
							wantPlain, wantPlainNext := p.expect(offset, maxBytes)
							res := readWithin(t, r, Request{Partition: p.part, Offset: offset, MaxBytes: maxBytes})
							if !bytes.Equal(res.Records, wantPlain) || res.NextOffset != wantPlainNext {
								t.Fatalf("plain Read(%d, max %d): %d bytes to %d, want %d bytes to %d",
									offset, maxBytes, len(res.Records), res.NextOffset, len(wantPlain), wantPlainNext)
							}
							want, wantNext := p.expectSkipEmpty(t, offset, maxBytes)
							res = readWithin(t, r, Request{Partition: p.part, Offset: offset, MaxBytes: maxBytes, SkipEmpty: true})
							if !bytes.Equal(res.Records, want) || res.NextOffset != wantNext {
								t.Fatalf("SkipEmpty Read(%d, max %d): %d bytes to %d, want %d bytes to %d",
									offset, maxBytes, len(res.Records), res.NextOffset, len(want), wantNext)
							}
						}
					}
				}
			}
		})
	}
}

// When every remote segment holds only empty batches, a SkipEmpty read
// stops at the end of the remote data and returns the last empty batches
// it found, without an error, rather than looping.
func TestReadSkipEmptyAllEmpty(t *testing.T) {
	t.Parallel()
	const ts = 1_700_000_000_000
	var segments [][][]byte
	for s := range 4 {
		var batches [][]byte
		for i := range 3 + s*20 {
			batches = append(batches, emptyBatch(t, int32(i%6), ts+int64(s*1000+i)))
		}
		segments = append(segments, batches)
	}
	for _, gap := range []int64{0, 3} {
		t.Run(fmt.Sprintf("gap %d", gap), func(t *testing.T) {
			t.Parallel()
			s, _ := openFileStore(t)
			p := compactedPartition(t, "emptied", gap, segments...)
			p.put(t, s)
			r := newReader(t, StoreBucket(s), p, testConfig())
			last := p.segments[len(p.segments)-1]
			n := len(last.headers)

			res := readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20, SkipEmpty: true})
			if want := bytes.Join(last.batches, nil); !bytes.Equal(res.Records, want) || res.NextOffset != p.end() || !res.OnlyEmpty {
				t.Fatalf("SkipEmpty Read(0): %d bytes to %d, only empty %v; want the last segment's %d bytes to %d, only empty",
					len(res.Records), res.NextOffset, res.OnlyEmpty, len(want), p.end())
			}
			if plain := readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20}); plain.OnlyEmpty {
				t.Fatal("a plain read of empty batches says only empty: only a SkipEmpty read that reached the end does")
			}
			res = readWithin(t, r, Request{Partition: p.part, Offset: 0, MaxBytes: 1, SkipEmpty: true})
			if !bytes.Equal(res.Records, last.batches[n-1]) || res.NextOffset != p.end() {
				t.Fatalf("SkipEmpty Read(0, max 1): %d bytes to %d, want the last batch, %d bytes to %d", len(res.Records), res.NextOffset, len(last.batches[n-1]), p.end())
			}
			// From inside the last batch, there is nowhere to skip to.
			res = readWithin(t, r, Request{Partition: p.part, Offset: p.end() - 1, MaxBytes: 1 << 20, SkipEmpty: true})
			if !bytes.Equal(res.Records, last.batches[n-1]) || res.NextOffset != p.end() {
				t.Fatalf("SkipEmpty Read(%d): %d bytes to %d, want the last batch to %d", p.end()-1, len(res.Records), res.NextOffset, p.end())
			}
		})
	}
}
