package segmentobject

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// FooterSize is the fixed size of the footer that ends every object.
const FooterSize = 128

// Version is the format version this package writes and reads.
const Version = 1

const (
	indexEntrySize     = 8
	timeIndexEntrySize = 12
	epochEntrySize     = 12
	sectionSize        = 20
	posSections        = 40
	posFooterCRC       = 124
)

var magic = [8]byte{'S', 'T', 'R', 'A', 'T', 'S', 'E', 'G'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors, returned wrapped with detail.
var (
	// ErrCorrupt means bytes that fail their CRC or contradict the footer.
	ErrCorrupt = errors.New("segmentobject: corrupt")
	// ErrUnsupportedVersion means a footer from a newer format.
	ErrUnsupportedVersion = errors.New("segmentobject: unsupported format version")
	// ErrShortTail means the tail given to ParseTail does not reach back to
	// the end of the log section; TailNeeded says how much is.
	ErrShortTail = errors.New("segmentobject: tail too short")
)

// Section names one contiguous part of the object.
type Section struct {
	Offset uint64
	Length uint64
	CRC    uint32
}

// End is the offset just past the section.
func (s Section) End() uint64 { return s.Offset + s.Length }

// Section indexes in Footer.Sections.
const (
	SectionLog = iota
	SectionOffsetIndex
	SectionTimeIndex
	SectionEpochs
	sectionCount
)

// Footer is the decoded footer of a segment object.
type Footer struct {
	Version      uint16
	BaseOffset   int64
	NextOffset   int64
	MaxTimestamp int64
	Sections     [sectionCount]Section
}

// ObjectSize is the size of the whole object the footer ends.
func (f Footer) ObjectSize() int64 {
	return int64(f.Sections[SectionEpochs].End()) + FooterSize
}

// TailSize is how many bytes at the end of the object hold everything but
// the log: what a reader fetches to parse the indexes.
func (f Footer) TailSize() int64 {
	return f.ObjectSize() - int64(f.Sections[SectionLog].End())
}

func (f Footer) encode() []byte {
	b := make([]byte, FooterSize)
	copy(b, magic[:])
	be := binary.BigEndian
	be.PutUint16(b[8:], f.Version)
	be.PutUint64(b[12:], uint64(f.BaseOffset))
	be.PutUint64(b[20:], uint64(f.NextOffset))
	be.PutUint64(b[28:], uint64(f.MaxTimestamp))
	for i, s := range f.Sections {
		p := b[posSections+i*sectionSize:]
		be.PutUint64(p, s.Offset)
		be.PutUint64(p[8:], s.Length)
		be.PutUint32(p[16:], s.CRC)
	}
	be.PutUint32(b[posFooterCRC:], crc32.Checksum(b[:posFooterCRC], castagnoli))
	return b
}

// ParseFooter decodes and checks the last FooterSize bytes of an object of
// objectSize bytes: magic, CRC, version, and that the sections tile the
// object exactly, log first at 0.
func ParseFooter(b []byte, objectSize int64) (Footer, error) {
	if len(b) != FooterSize {
		return Footer{}, fmt.Errorf("%w: footer of %d bytes, want %d", ErrCorrupt, len(b), FooterSize)
	}
	if [8]byte(b[:8]) != magic {
		return Footer{}, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:8])
	}
	be := binary.BigEndian
	if got, want := crc32.Checksum(b[:posFooterCRC], castagnoli), be.Uint32(b[posFooterCRC:]); got != want {
		return Footer{}, fmt.Errorf("%w: footer crc %#08x, stored %#08x", ErrCorrupt, got, want)
	}
	f := Footer{
		Version:      be.Uint16(b[8:]),
		BaseOffset:   int64(be.Uint64(b[12:])),
		NextOffset:   int64(be.Uint64(b[20:])),
		MaxTimestamp: int64(be.Uint64(b[28:])),
	}
	if f.Version != Version {
		return Footer{}, fmt.Errorf("%w: %d (this build reads %d)", ErrUnsupportedVersion, f.Version, Version)
	}
	if f.BaseOffset < 0 || f.NextOffset <= f.BaseOffset || f.NextOffset-f.BaseOffset > 1<<32 {
		return Footer{}, fmt.Errorf("%w: offsets [%d, %d)", ErrCorrupt, f.BaseOffset, f.NextOffset)
	}
	next := uint64(0)
	for i := range f.Sections {
		p := b[posSections+i*sectionSize:]
		s := Section{Offset: be.Uint64(p), Length: be.Uint64(p[8:]), CRC: be.Uint32(p[16:])}
		if s.Offset != next || s.Length > uint64(objectSize) {
			return Footer{}, fmt.Errorf("%w: section %d at %d+%d, expected to start at %d", ErrCorrupt, i, s.Offset, s.Length, next)
		}
		next = s.End()
		f.Sections[i] = s
	}
	if int64(next)+FooterSize != objectSize {
		return Footer{}, fmt.Errorf("%w: sections end at %d, object is %d bytes", ErrCorrupt, next, objectSize)
	}
	lengths := []struct {
		section, entry int
	}{{SectionOffsetIndex, indexEntrySize}, {SectionTimeIndex, timeIndexEntrySize}, {SectionEpochs, epochEntrySize}}
	for _, l := range lengths {
		if f.Sections[l.section].Length%uint64(l.entry) != 0 {
			return Footer{}, fmt.Errorf("%w: section %d length %d is not a multiple of %d", ErrCorrupt, l.section, f.Sections[l.section].Length, l.entry)
		}
	}
	if f.Sections[SectionLog].Length > 1<<32 {
		return Footer{}, fmt.Errorf("%w: log section of %d bytes exceeds 4 GiB", ErrCorrupt, f.Sections[SectionLog].Length)
	}
	return f, nil
}
