package segmentobject

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stratalog/strata/record"
)

// testSegment builds a segment the way the hot log lays one out: batches of
// varied sizes, an index entry every interval bytes, a time index entry when
// the maximum timestamp grows at an indexed batch.
type testSegment struct {
	src       Source
	log       []byte
	positions []int64 // position of each batch
	bases     []int64 // base offset of each batch
}

func makeSegment(t testing.TB, base int64, batches int, interval int) testSegment {
	t.Helper()
	seg := testSegment{}
	var offsetIndex, timeIndex []byte
	next := base
	maxTS := int64(-1)
	lastIndexed := int64(0)
	for i := range batches {
		recs := make([]record.Record, 1+i%5)
		for j := range recs {
			recs[j] = record.Record{Value: bytes.Repeat([]byte{byte(i)}, 100*(1+(i*7+j)%13)), TimestampDelta: int64(j)}
		}
		b, err := record.Build(record.BuildOptions{FirstTimestamp: 1000 + int64(i)*10, ProducerID: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		record.SetBaseOffset(b, next)
		h, _ := record.ParseHeader(b)
		pos := int64(len(seg.log))
		if pos > 0 && pos-lastIndexed >= int64(interval) {
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(next-base))
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(pos))
			lastIndexed = pos
			if h.MaxTimestamp > maxTS {
				timeIndex = binary.BigEndian.AppendUint64(timeIndex, uint64(h.MaxTimestamp))
				timeIndex = binary.BigEndian.AppendUint32(timeIndex, uint32(next-base))
			}
		}
		maxTS = max(maxTS, h.MaxTimestamp)
		seg.positions = append(seg.positions, pos)
		seg.bases = append(seg.bases, next)
		seg.log = append(seg.log, b...)
		next = h.NextOffset()
	}
	seg.src = Source{
		BaseOffset: base, NextOffset: next, MaxTimestamp: maxTS,
		Log: bytes.NewReader(seg.log), LogSize: int64(len(seg.log)),
		OffsetIndex: offsetIndex, TimeIndex: timeIndex,
		Epochs: []EpochEntry{{Epoch: 3, StartOffset: base}, {Epoch: 5, StartOffset: base + 10}},
	}
	return seg
}

func writeObject(t testing.TB, src Source) ([]byte, Footer) {
	t.Helper()
	var buf bytes.Buffer
	f, err := Write(&buf, src)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if int64(buf.Len()) != src.ObjectSize() || f.ObjectSize() != src.ObjectSize() {
		t.Fatalf("object is %d bytes, ObjectSize says %d, footer %d", buf.Len(), src.ObjectSize(), f.ObjectSize())
	}
	return buf.Bytes(), f
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 5000, 300, 4096)
	obj, f := writeObject(t, seg.src)
	if !bytes.Equal(obj[:len(seg.log)], seg.log) {
		t.Fatal("log section is not the log, byte for byte, at object offset 0")
	}
	ix, err := ParseTail(obj[len(obj)-int(f.TailSize()):], int64(len(obj)))
	if err != nil {
		t.Fatalf("ParseTail: %v", err)
	}
	if ix.Footer != f || ix.LogLength() != int64(len(seg.log)) {
		t.Fatalf("footer %+v, want %+v", ix.Footer, f)
	}
	if fmt.Sprint(ix.Epochs) != fmt.Sprint(seg.src.Epochs) {
		t.Fatalf("epochs %v, want %v", ix.Epochs, seg.src.Epochs)
	}
	if ix.offsetEntries() < 10 {
		t.Fatalf("only %d index entries; the test wants a sparse index with many", ix.offsetEntries())
	}
	// Every offset: the start position is a batch boundary at or before the
	// batch holding the offset, and no further back than one interval.
	for i, base := range seg.bases {
		h, _ := record.ParseHeader(seg.log[seg.positions[i]:])
		for off := base; off < h.NextOffset(); off++ {
			pos, base, err := ix.StartPosition(off)
			if err != nil {
				t.Fatalf("StartPosition(%d): %v", off, err)
			}
			if pos > seg.positions[i] || seg.positions[i]-pos > 4096+int64(h.Size()) {
				t.Fatalf("StartPosition(%d) = %d, batch at %d", off, pos, seg.positions[i])
			}
			at, err := record.ParseHeader(seg.log[pos:])
			if err != nil {
				t.Fatalf("StartPosition(%d) = %d is not a batch boundary: %v", off, pos, err)
			}
			if at.BaseOffset != base {
				t.Fatalf("StartPosition(%d) = %d with base offset %d; the batch there starts at %d", off, pos, base, at.BaseOffset)
			}
		}
	}
	for _, off := range []int64{4999, seg.src.NextOffset} {
		if _, _, err := ix.StartPosition(off); !errors.Is(err, ErrOutOfSegment) {
			t.Errorf("StartPosition(%d) = %v, want ErrOutOfSegment", off, err)
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 0, 200, 2048)
	obj, f := writeObject(t, seg.src)
	ix, err := ParseTail(obj[len(obj)-int(f.TailSize()):], int64(len(obj)))
	if err != nil {
		t.Fatal(err)
	}
	for ts := int64(990); ts <= seg.src.MaxTimestamp+1; ts += 3 {
		// The first batch whose max timestamp reaches ts, by linear scan.
		want := int64(-1)
		for i := range seg.bases {
			h, _ := record.ParseHeader(seg.log[seg.positions[i]:])
			if h.MaxTimestamp >= ts {
				want = h.BaseOffset
				break
			}
		}
		got, ok := ix.OffsetForTimestamp(ts)
		if want < 0 {
			if ok {
				t.Fatalf("OffsetForTimestamp(%d) = %d, want none", ts, got)
			}
			continue
		}
		if !ok || got > want {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %v; the first batch reaching it starts at %d", ts, got, ok, want)
		}
	}
}

func TestShortTail(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 0, 100, 1024)
	obj, f := writeObject(t, seg.src)
	for _, n := range []int{0, FooterSize - 1, FooterSize, int(f.TailSize()) - 1} {
		_, err := ParseTail(obj[len(obj)-n:], int64(len(obj)))
		var short *ShortTailError
		if !errors.As(err, &short) || !errors.Is(err, ErrShortTail) {
			t.Fatalf("ParseTail(last %d bytes) = %v, want a ShortTailError", n, err)
		}
		if n >= FooterSize && short.Need != f.TailSize() {
			t.Fatalf("ParseTail(last %d bytes) needs %d, want %d", n, short.Need, f.TailSize())
		}
	}
	// A longer tail than needed, reaching into the log, is fine.
	if _, err := ParseTail(obj[len(obj)-int(f.TailSize())-100:], int64(len(obj))); err != nil {
		t.Fatalf("ParseTail(longer tail): %v", err)
	}
}

// TestEveryCorruptTailByte flips each byte of the tail in turn: every flip
// must be caught by a CRC or a structural check.
func TestEveryCorruptTailByte(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 0, 60, 1024)
	obj, f := writeObject(t, seg.src)
	tail := obj[len(obj)-int(f.TailSize()):]
	for i := range tail {
		bad := bytes.Clone(tail)
		bad[i] ^= 0x40
		if _, err := ParseTail(bad, int64(len(obj))); err == nil {
			t.Fatalf("a flipped bit at tail byte %d of %d went unnoticed", i, len(tail))
		}
	}
	if _, err := ParseTail(tail, int64(len(obj))+1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ParseTail with the wrong object size = %v, want ErrCorrupt", err)
	}
}

func TestWriteRejects(t *testing.T) {
	t.Parallel()
	good := makeSegment(t, 0, 3, 4096).src
	for name, mutate := range map[string]func(*Source){
		"empty range":           func(s *Source) { s.NextOffset = s.BaseOffset },
		"empty log":             func(s *Source) { s.LogSize = 0 },
		"ragged index":          func(s *Source) { s.OffsetIndex = []byte{1, 2, 3} },
		"log shorter than said": func(s *Source) { s.LogSize += 10 },
	} {
		src := good
		src.Log = bytes.NewReader(makeSegment(t, 0, 3, 4096).log)
		mutate(&src)
		if _, err := Write(&bytes.Buffer{}, src); err == nil {
			t.Errorf("%s: Write succeeded", name)
		}
	}
}

// The Reader yields the object, laid out here from the format (the log,
// the two indexes, the epochs, the footer with each section's CRC-32C),
// whatever the sizes of the reads asked of it (iotest.TestReader: one
// byte at a time, odd sizes, reads at the end); and a log that ends short
// of LogSize is io.ErrUnexpectedEOF.
func TestReaderYieldsTheObject(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 0, 40, 4096)
	bare := seg.src // no index entries, no epochs: empty sections
	bare.OffsetIndex, bare.TimeIndex, bare.Epochs = nil, nil, nil
	for _, src := range []Source{seg.src, bare} {
		var epochs []byte
		for _, e := range src.Epochs {
			epochs = binary.BigEndian.AppendUint32(epochs, uint32(e.Epoch))
			epochs = binary.BigEndian.AppendUint64(epochs, uint64(e.StartOffset))
		}
		footer := Footer{Version: Version, BaseOffset: src.BaseOffset, NextOffset: src.NextOffset, MaxTimestamp: src.MaxTimestamp}
		var want []byte
		for i, section := range [][]byte{seg.log, src.OffsetIndex, src.TimeIndex, epochs} {
			footer.Sections[i] = Section{Offset: uint64(len(want)), Length: uint64(len(section)), CRC: crc32.Checksum(section, crc32.MakeTable(crc32.Castagnoli))}
			want = append(want, section...)
		}
		want = append(want, footer.encode()...)
		src.Log = bytes.NewReader(seg.log)
		r, err := NewReader(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := iotest.TestReader(r, want); err != nil {
			t.Fatalf("%d epochs: %v", len(src.Epochs), err)
		}
		if r.Footer() != footer {
			t.Fatalf("%d epochs: the Reader's footer %+v, want %+v", len(src.Epochs), r.Footer(), footer)
		}
	}
	for _, cut := range []int{1, len(seg.log) / 2} {
		short := seg.src
		short.Log = bytes.NewReader(seg.log[:len(seg.log)-cut])
		r, err := NewReader(short)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(iotest.HalfReader(r)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a log %d bytes short read as %v, want io.ErrUnexpectedEOF", cut, err)
		}
		if _, err := r.Read(make([]byte, 10)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a log %d bytes short: the next Read gave %v, want io.ErrUnexpectedEOF again", cut, err)
		}
	}
}

func TestUnsupportedVersion(t *testing.T) {
	t.Parallel()
	seg := makeSegment(t, 0, 5, 4096)
	obj, f := writeObject(t, seg.src)
	f.Version = Version + 1
	copy(obj[len(obj)-FooterSize:], f.encode())
	if _, err := ParseFooter(obj[len(obj)-FooterSize:], int64(len(obj))); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("ParseFooter(version %d) = %v, want ErrUnsupportedVersion", f.Version, err)
	}
}
