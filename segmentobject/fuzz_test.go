package segmentobject

import (
	"bytes"
	"testing"
)

// FuzzParseTail feeds arbitrary tails and object sizes to the reader: it
// must never panic, and whatever it accepts must answer lookups inside the
// log section.
func FuzzParseTail(f *testing.F) {
	seg := makeSegment(f, 100, 40, 1024)
	var obj []byte
	{
		o, footer := writeObject(f, seg.src)
		obj = o
		f.Add(obj[len(obj)-int(footer.TailSize()):], int64(len(obj)))
	}
	f.Add(obj[len(obj)-FooterSize:], int64(len(obj)))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, tail []byte, objectSize int64) {
		ix, err := ParseTail(tail, objectSize)
		if err != nil {
			return
		}
		for off := ix.Footer.BaseOffset; off < ix.Footer.NextOffset && off < ix.Footer.BaseOffset+1000; off++ {
			pos, base, err := ix.StartPosition(off)
			if err != nil || pos < 0 || pos >= max(ix.LogLength(), 1) || base < ix.Footer.BaseOffset || base > off {
				t.Fatalf("StartPosition(%d) = %d, %d, %v with a log of %d", off, pos, base, err, ix.LogLength())
			}
		}
		ix.OffsetForTimestamp(0)
		for _, pos := range []int64{0, 1, ix.LogLength() / 2, ix.LogLength()} {
			if found, ok := ix.BatchFrom(pos); ok && (found < pos || found >= ix.LogLength()) {
				t.Fatalf("BatchFrom(%d) = %d with a log of %d", pos, found, ix.LogLength())
			}
		}
	})
}

// FuzzParseManifest: whatever the bytes, parsing does not panic, and a
// manifest it accepts is valid, encodes to one that parses back the same,
// maps every offset it serves to the segment a read starts in, and gives
// an epoch history that only grows and stays within what it serves.
func FuzzParseManifest(f *testing.F) {
	f.Add(goldenManifest().Encode())
	f.Add([]byte(`{"version":1,"topic":"t","partition":0,"segments":[{"key":"a","base_offset":0,"end_offset":9223372036854775807}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		if again, err := ParseManifest(m.Encode()); err != nil || !bytes.Equal(again.Encode(), m.Encode()) {
			t.Fatalf("re-encoded manifest parsed to %+v, %v; want %+v", again, err, m)
		}
		for _, offset := range []int64{m.LogStartOffset - 1, m.LogStartOffset, m.NextOffset() - 1, m.NextOffset()} {
			i, ok := m.SegmentFor(offset)
			if ok != (offset >= m.LogStartOffset && offset < m.NextOffset()) {
				t.Fatalf("SegmentFor(%d) = %v in [%d, %d)", offset, ok, m.LogStartOffset, m.NextOffset())
			}
			if ok && (m.Segments[i].EndOffset < offset || (i > 0 && m.Segments[i-1].EndOffset >= offset)) {
				t.Fatalf("SegmentFor(%d) = segment %d %+v", offset, i, m.Segments[i])
			}
			epochs := m.EpochsBelow(offset)
			for j, e := range epochs {
				if e.StartOffset < m.LogStartOffset || e.StartOffset >= offset || (j > 0 && (e.Epoch <= epochs[j-1].Epoch || e.StartOffset <= epochs[j-1].StartOffset)) {
					t.Fatalf("EpochsBelow(%d) = %v from log start %d", offset, epochs, m.LogStartOffset)
				}
			}
		}
	})
}
