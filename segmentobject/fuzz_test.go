package segmentobject

import "testing"

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
	})
}
