package segmentobject

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// indexerInterval is index.interval.bytes in the Indexer tests: small, so
// that segments of a few hundred batches get many index entries.
const indexerInterval = 256

// timestampPattern says a batch's max timestamp from its index i in the
// segment and the largest max timestamp before it (hotlog.NoTimestamp if
// none); hotlog.NoTimestamp means the batch carries none.
type timestampPattern func(rng *rand.Rand, i int, largest int64) int64

// indexerCases are the segments the Indexer tests build: timestamps that
// rise, fall, stand still, go missing and go back, and batch sizes from a
// few bytes under the interval to a few times over it.
var indexerCases = []struct {
	name    string
	batches int
	// minValue and maxValue bound each record's value size: [minValue, maxValue).
	minValue, maxValue int
	// sizes, when set, are the batch sizes in turn instead, each batch
	// of one record: sizes that add up to the interval put batches
	// exactly index.interval.bytes past the last entry.
	sizes     []int
	timestamp timestampPattern
}{
	{"rising", 150, 0, 300, nil, func(_ *rand.Rand, i int, _ int64) int64 { return 1_700_000_000_000 + int64(i)*10 }},
	{"mixed", 250, 0, 400, nil, func(rng *rand.Rand, i int, largest int64) int64 {
		switch {
		case i > 0 && rng.IntN(5) == 0:
			return hotlog.NoTimestamp
		case largest < 0:
			return 1_700_000_000_000 + int64(i)*10
		default:
			return largest + int64(rng.IntN(40)) - 25 // often back in time
		}
	}},
	{"untimed start", 120, 0, 200, nil, func(_ *rand.Rand, i int, _ int64) int64 {
		if i < 40 {
			return hotlog.NoTimestamp
		}
		return 1_700_000_000_000 + int64(i)
	}},
	{"untimed", 60, 0, 300, nil, func(*rand.Rand, int, int64) int64 { return hotlog.NoTimestamp }},
	{"falling", 80, 0, 300, nil, func(_ *rand.Rand, i int, _ int64) int64 { return 1_700_000_000_000 - int64(i)*7 }},
	{"constant", 80, 0, 300, nil, func(*rand.Rand, int, int64) int64 { return 1_700_000_000_000 }},
	{"big batches", 60, indexerInterval, 4 * indexerInterval, nil, func(_ *rand.Rand, i int, _ int64) int64 { return 1_700_000_000_000 + int64(i%7)*1000 + int64(i) }},
	{"one batch", 1, 0, 300, nil, func(*rand.Rand, int, int64) int64 { return 1_700_000_000_000 }},
	{"tiny batches", 300, 0, 1, nil, func(_ *rand.Rand, i int, _ int64) int64 { return 1_700_000_000_000 + int64(i/3) }},
	{"exact interval", 100, 0, 0, []int{128}, func(_ *rand.Rand, i int, _ int64) int64 { return 1_700_000_000_000 + int64(i) }},
	{"exact interval mixed", 150, 0, 0, []int{80, 176, 100, 156, 90}, func(rng *rand.Rand, i int, _ int64) int64 {
		if i%4 == 3 {
			return hotlog.NoTimestamp
		}
		return 1_700_000_000_000 + int64(rng.IntN(500))
	}},
}

// buildBatch makes a batch of 1 to 5 records with values of
// [minValue, maxValue) bytes and the given max timestamp (NoTimestamp: the
// records carry none). Its base offset is 0.
func buildBatch(tb testing.TB, rng *rand.Rand, minValue, maxValue int, maxTimestamp int64) []byte {
	tb.Helper()
	records := make([]record.Record, 1+rng.IntN(5))
	first, last := maxTimestamp, maxTimestamp
	if maxTimestamp != hotlog.NoTimestamp {
		first = maxTimestamp - int64(len(records)-1)
	}
	for i := range records {
		records[i] = record.Record{Value: make([]byte, minValue+rng.IntN(maxValue-minValue))}
		if maxTimestamp != hotlog.NoTimestamp {
			records[i].TimestampDelta = int64(i)
		}
		for j := range records[i].Value {
			records[i].Value[j] = byte(rng.Uint32())
		}
	}
	b, err := record.Build(record.BuildOptions{FirstTimestamp: first, MaxTimestamp: last, ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		tb.Fatal(err)
	}
	if h, _ := record.ParseHeader(b); h.MaxTimestamp != maxTimestamp {
		tb.Fatalf("built a batch with max timestamp %d, want %d", h.MaxTimestamp, maxTimestamp)
	}
	return b
}

// caseBatch makes batch i of a case with the given max timestamp: an
// exact-size one when the case lists sizes, else from buildBatch.
func caseBatch(tb testing.TB, rng *rand.Rand, sizes []int, minValue, maxValue, i int, maxTimestamp int64) []byte {
	tb.Helper()
	if len(sizes) == 0 {
		return buildBatch(tb, rng, minValue, maxValue, maxTimestamp)
	}
	size := sizes[i%len(sizes)]
	for v := range size {
		b, err := record.Build(record.BuildOptions{FirstTimestamp: maxTimestamp, MaxTimestamp: maxTimestamp, ProducerID: -1, BaseSequence: -1},
			[]record.Record{{Value: make([]byte, v)}})
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) == size {
			return b
		}
	}
	tb.Fatalf("no one-record batch is %d bytes", size)
	return nil
}

// batchesOf splits a log into its batches' headers and positions.
func batchesOf(tb testing.TB, log []byte) (headers []record.Header, positions []int64) {
	tb.Helper()
	for pos := 0; pos < len(log); {
		h, err := record.ParseHeader(log[pos:])
		if err == nil && pos+h.Size() > len(log) {
			err = fmt.Errorf("a batch of %d bytes in the last %d", h.Size(), len(log)-pos)
		}
		if err == nil {
			h, err = record.Validate(log[pos : pos+h.Size()])
		}
		if err != nil {
			tb.Fatalf("batch at %d: %v", pos, err)
		}
		headers = append(headers, h)
		positions = append(positions, int64(pos))
		pos += h.Size()
	}
	return headers, positions
}

// indexLog runs the batches of log, which starts at base, through an
// Indexer.
func indexLog(tb testing.TB, base int64, log []byte) (offsetIndex, timeIndex []byte, logSize, maxTimestamp int64) {
	tb.Helper()
	headers, _ := batchesOf(tb, log)
	ix := NewIndexer(base, indexerInterval)
	for _, h := range headers {
		ix.Add(h.BaseOffset, h.Size(), h.MaxTimestamp)
	}
	return ix.Finish()
}

// hotLogDir is a fresh directory for a hot log, on tmpfs when there is
// one: the log fsyncs every append, which this test needs correct, not
// durable.
func hotLogDir(t *testing.T) string {
	t.Helper()
	parent := os.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "segmentobject-indexer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// readSealedIndexes reads a sealed segment's .index and .timeindex, waiting
// until both are whole entries and stay the same size: hotlog's flusher
// trims the preallocated files shortly after the roll.
func readSealedIndexes(t *testing.T, dir string, base int64) (offsetIndex, timeIndex []byte) {
	t.Helper()
	read := func(suffix string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix)))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	deadline := time.Now().Add(10 * time.Second)
	var lastSizes [2]int
	for stable := 0; ; {
		offsetIndex, timeIndex = read(".index"), read(".timeindex")
		sizes := [2]int{len(offsetIndex), len(timeIndex)}
		whole := sizes[0]%indexEntrySize == 0 && sizes[1]%timeIndexEntrySize == 0 && sizes[0] < indexerSegmentIndexBytes/2
		if whole && sizes == lastSizes {
			if stable++; stable >= 3 {
				return offsetIndex, timeIndex
			}
		} else {
			stable = 0
		}
		lastSizes = sizes
		if time.Now().After(deadline) {
			t.Fatalf("segment %d: indexes of %d and %d bytes are not trimmed", base, sizes[0], sizes[1])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// indexerSegmentIndexBytes is segment.index.bytes in the hot log: room for
// every entry the test segments need, so no index is capacity-limited (a
// full one would roll the segment early or, for the time index, skip
// entries the Indexer, which has no capacity, writes).
const indexerSegmentIndexBytes = 256 << 10

// An Indexer fed a hot-log segment's batches builds the same offset and
// time indexes, byte for byte, as the hot log did for the segment, with the
// same log size and max timestamp.
func TestIndexerMatchesHotLog(t *testing.T) {
	t.Parallel()
	dir := hotLogDir(t)
	sealed := make(chan hotlog.SegmentInfo, len(indexerCases))
	cfg := hotlog.DefaultConfig()
	cfg.IndexIntervalBytes = indexerInterval
	cfg.SegmentIndexBytes = indexerSegmentIndexBytes
	cfg.Events.Sealed = func(info hotlog.SegmentInfo) { sealed <- info }
	l, err := hotlog.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.AssignEpoch(0, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// The cases run in turn, one segment each, so every segment but the
	// first has a base offset other than 0.
	for _, tc := range indexerCases {
		t.Run(tc.name, func(t *testing.T) {
			base := l.LogEndOffset()
			var appended [][]byte
			maxTimestamp := int64(hotlog.NoTimestamp)
			for i := range tc.batches {
				ts := tc.timestamp(rng, i, maxTimestamp)
				b := caseBatch(t, rng, tc.sizes, tc.minValue, tc.maxValue, i, ts)
				batch, err := record.Check(b)
				if err != nil {
					t.Fatal(err)
				}
				res, err := l.Append(batch)
				if err != nil {
					t.Fatal(err)
				}
				if err := res.WaitAck(t.Context()); err != nil {
					t.Fatal(err)
				}
				appended = append(appended, b) // stamped in place by Append
				maxTimestamp = max(maxTimestamp, ts)
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			var info hotlog.SegmentInfo
			select {
			case info = <-sealed:
			case <-time.After(10 * time.Second):
				t.Fatal("timed out waiting for the rolled segment to be sealed")
			}
			if info.BaseOffset != base || info.NextOffset != l.LogEndOffset() {
				t.Fatalf("sealed segment [%d, %d), want [%d, %d)", info.BaseOffset, info.NextOffset, base, l.LogEndOffset())
			}

			log, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(log, bytes.Join(appended, nil)) {
				t.Fatalf("the sealed .log (%d bytes) is not the batches appended", len(log))
			}
			wantOffsets, wantTimes := readSealedIndexes(t, dir, base)

			gotOffsets, gotTimes, size, gotMax := indexLog(t, base, log)
			if size != info.Size || size != int64(len(log)) {
				t.Errorf("Indexer log size %d, hot log %d, file %d", size, info.Size, len(log))
			}
			if gotMax != info.MaxTimestamp || gotMax != maxTimestamp {
				t.Errorf("Indexer max timestamp %d, hot log %d, appended %d", gotMax, info.MaxTimestamp, maxTimestamp)
			}
			if !bytes.Equal(gotOffsets, wantOffsets) {
				t.Errorf("offset index differs:\nIndexer: %s\nhot log: %s", offsetEntries(gotOffsets), offsetEntries(wantOffsets))
			}
			if !bytes.Equal(gotTimes, wantTimes) {
				t.Errorf("time index differs:\nIndexer: %s\nhot log: %s", timeEntries(gotTimes), timeEntries(wantTimes))
			}
			// A match of two empty indexes proves little: the cases with
			// many batches must have made entries.
			if int64(len(log)) > 8*indexerInterval && len(wantOffsets) < 4*indexEntrySize {
				t.Errorf("only %d offset index entries for %d bytes of log", len(wantOffsets)/indexEntrySize, len(log))
			}
			if maxTimestamp != hotlog.NoTimestamp && len(wantTimes) == 0 {
				t.Errorf("no time index entry, max timestamp %d", maxTimestamp)
			}
		})
	}
}

// offsetEntries formats offset index entries for a failure message.
func offsetEntries(b []byte) string {
	var s []string
	for ; len(b) >= indexEntrySize; b = b[indexEntrySize:] {
		s = append(s, fmt.Sprintf("(%d %d)", binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])))
	}
	return fmt.Sprint(s)
}

// timeEntries formats time index entries for a failure message.
func timeEntries(b []byte) string {
	var s []string
	for ; len(b) >= timeIndexEntrySize; b = b[timeIndexEntrySize:] {
		s = append(s, fmt.Sprintf("(%d %d)", int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint32(b[8:])))
	}
	return fmt.Sprint(s)
}

// An object written with the Indexer's sections parses, and its lookups
// find every batch: StartPosition a batch boundary at or before the batch
// holding the offset and at most an index interval of batches before it,
// OffsetForTimestamp an offset at or before the first batch that reaches
// the timestamp, by brute force.
func TestIndexerRoundTrip(t *testing.T) {
	t.Parallel()
	for seed, tc := range indexerCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const base = 7_000
			rng := rand.New(rand.NewPCG(uint64(seed), 3))
			var log []byte
			next, maxTimestamp := int64(base), int64(hotlog.NoTimestamp)
			for i := range tc.batches {
				b := caseBatch(t, rng, tc.sizes, tc.minValue, tc.maxValue, i, tc.timestamp(rng, i, maxTimestamp))
				record.SetBaseOffset(b, next)
				h, _ := record.ParseHeader(b)
				next, maxTimestamp = h.NextOffset(), max(maxTimestamp, h.MaxTimestamp)
				log = append(log, b...)
			}
			headers, positions := batchesOf(t, log)
			offsetIndex, timeIndex, size, gotMax := indexLog(t, base, log)
			if size != int64(len(log)) || gotMax != maxTimestamp {
				t.Fatalf("Finish: log size %d, max timestamp %d; want %d, %d", size, gotMax, len(log), maxTimestamp)
			}
			var obj bytes.Buffer
			f, err := Write(&obj, Source{
				BaseOffset: base, NextOffset: next, MaxTimestamp: gotMax,
				Log: bytes.NewReader(log), LogSize: size,
				OffsetIndex: offsetIndex, TimeIndex: timeIndex,
				Epochs: []EpochEntry{{Epoch: 2, StartOffset: base}},
			})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			ix, err := ParseTail(obj.Bytes()[obj.Len()-int(f.TailSize()):], int64(obj.Len()))
			if err != nil {
				t.Fatalf("ParseTail: %v", err)
			}
			if ix.Footer.MaxTimestamp != maxTimestamp || ix.LogLength() != int64(len(log)) || ix.Footer.NextOffset != next {
				t.Fatalf("footer %+v; want max timestamp %d, log %d bytes, next offset %d", ix.Footer, maxTimestamp, len(log), next)
			}

			maxBatch := 0
			batchAt := make(map[int64]record.Header) // by position
			for i, h := range headers {
				maxBatch = max(maxBatch, h.Size())
				batchAt[positions[i]] = h
			}
			for i, h := range headers {
				for off := h.BaseOffset; off < h.NextOffset(); off++ {
					pos, at, err := ix.StartPosition(off)
					if err != nil {
						t.Fatalf("StartPosition(%d): %v", off, err)
					}
					found, ok := batchAt[pos]
					switch {
					case !ok:
						t.Fatalf("StartPosition(%d) = %d, not a batch boundary", off, pos)
					case found.BaseOffset != at:
						t.Fatalf("StartPosition(%d) = %d, base offset %d; the batch there starts at %d", off, pos, at, found.BaseOffset)
					case pos > positions[i]:
						t.Fatalf("StartPosition(%d) = %d, after the batch at %d", off, pos, positions[i])
					case positions[i]-pos >= indexerInterval+int64(maxBatch):
						t.Fatalf("StartPosition(%d) = %d, %d bytes before the batch at %d: more than an index interval", off, pos, positions[i]-pos, positions[i])
					}
				}
			}
			// BatchFrom: a batch boundary at or after the position, within
			// an index interval of batches of it, for every position that
			// has an indexed batch after it.
			for _, at := range positions {
				for _, pos := range []int64{at - 1, at, at + 1} {
					found, ok := ix.BatchFrom(pos)
					if !ok {
						if pos <= positions[len(positions)-1]-indexerInterval-int64(maxBatch) {
							t.Fatalf("BatchFrom(%d) found nothing, with batches up to %d", pos, positions[len(positions)-1])
						}
						continue
					}
					if _, boundary := batchAt[found]; !boundary || found < max(pos, 0) || found-pos >= indexerInterval+int64(maxBatch) {
						t.Fatalf("BatchFrom(%d) = %d (a boundary: %v)", pos, found, boundary)
					}
					want := int64(-1) // the first of position 0 and the indexed ones at or after pos
					if pos <= 0 {
						want = 0
					}
					for i := 0; want < 0 && i < ix.offsetEntries(); i++ {
						if _, at := ix.offsetEntry(i); int64(at) >= pos {
							want = int64(at)
						}
					}
					if found != want {
						t.Fatalf("BatchFrom(%d) = %d, want the first known start at or after it, %d", pos, found, want)
					}
				}
			}
			for _, off := range []int64{base - 1, next} {
				if _, _, err := ix.StartPosition(off); !errors.Is(err, ErrOutOfSegment) {
					t.Errorf("StartPosition(%d) = %v, want ErrOutOfSegment", off, err)
				}
			}

			// Every timestamp a batch has, and its neighbours.
			var probes []int64
			for _, h := range headers {
				probes = append(probes, h.MaxTimestamp-1, h.MaxTimestamp, h.MaxTimestamp+1)
			}
			probes = append(probes, 0, 1_699_999_999_999)
			rising := tc.name == "rising"
			for _, ts := range probes {
				want := -1 // the first batch that reaches ts
				for i, h := range headers {
					if h.MaxTimestamp >= ts {
						want = i
						break
					}
				}
				got, ok := ix.OffsetForTimestamp(ts)
				if want < 0 {
					if ok {
						t.Fatalf("OffsetForTimestamp(%d) = %d, want none: the max timestamp is %d", ts, got, maxTimestamp)
					}
					continue
				}
				if !ok || got > headers[want].BaseOffset {
					t.Fatalf("OffsetForTimestamp(%d) = %d, %v; the first batch reaching it starts at %d", ts, got, ok, headers[want].BaseOffset)
				}
				g := batchStartingAt(headers, got)
				if g < 0 {
					t.Fatalf("OffsetForTimestamp(%d) = %d, not a batch's base offset", ts, got)
				}
				// With rising timestamps every indexed batch has a time
				// entry, so the scan is at most an index interval long.
				if rising && positions[want]-positions[g] >= indexerInterval+int64(maxBatch) {
					t.Fatalf("OffsetForTimestamp(%d) = %d, %d bytes before the batch reaching it", ts, got, positions[want]-positions[g])
				}
			}
		})
	}
}

// batchStartingAt is the index of the batch whose base offset is offset,
// or -1.
func batchStartingAt(headers []record.Header, offset int64) int {
	for i, h := range headers {
		if h.BaseOffset == offset {
			return i
		}
	}
	return -1
}
