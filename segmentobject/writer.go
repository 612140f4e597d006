package segmentobject

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// EpochEntry says that offsets from StartOffset on were written under leader
// Epoch, until the next entry's StartOffset. It is the one leader-epoch
// entry of the segment's epochs section, the manifest and meta's commands
// and state; the JSON names are theirs.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// Source is a sealed segment to be written as one object.
type Source struct {
	BaseOffset   int64
	NextOffset   int64
	MaxTimestamp int64
	// Log yields exactly LogSize bytes of whole batches.
	Log     io.Reader
	LogSize int64
	// OffsetIndex and TimeIndex are the segment's trimmed index files.
	OffsetIndex []byte
	TimeIndex   []byte
	Epochs      []EpochEntry
}

// ObjectSize is the size of the object Write makes from src.
func (src Source) ObjectSize() int64 {
	return src.LogSize + int64(len(src.OffsetIndex)+len(src.TimeIndex)+len(src.Epochs)*epochEntrySize) + FooterSize
}

// Write writes src to w as one segment object and returns its footer: a
// copy of NewReader's bytes.
func Write(w io.Writer, src Source) (Footer, error) {
	r, err := NewReader(src)
	if err != nil {
		return Footer{}, err
	}
	if _, err := io.Copy(w, r); err != nil {
		return Footer{}, err
	}
	return r.Footer(), nil
}

// Reader yields the segment object of a Source: the log as src.Log
// yields it, hashed on the way, then the index and epoch sections and the
// footer. A store's PUT reads it straight into its own buffer, so the log
// is copied once between src.Log and the store, with no pipe and no
// goroutine between them; nothing is buffered whole (the sections are
// src's own slices).
type Reader struct {
	src    Source
	log    io.Reader // src.Log up to LogSize
	read   int64     // log bytes read
	hash   hash.Hash32
	err    error    // the log's failure, returned by every later Read
	tail   [][]byte // what is left of the sections and the footer, once the log is read
	footer Footer
	done   bool // tail and footer made
}

// NewReader checks src and returns the reader of its object, which is
// src.ObjectSize() bytes long.
func NewReader(src Source) (*Reader, error) {
	if src.BaseOffset < 0 || src.NextOffset <= src.BaseOffset || src.NextOffset-src.BaseOffset > 1<<32 {
		return nil, fmt.Errorf("segmentobject: write: offsets [%d, %d) are not a segment", src.BaseOffset, src.NextOffset)
	}
	if src.LogSize <= 0 || src.LogSize > 1<<32 {
		return nil, fmt.Errorf("segmentobject: write: log of %d bytes", src.LogSize)
	}
	if len(src.OffsetIndex)%indexEntrySize != 0 || len(src.TimeIndex)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("segmentobject: write: index lengths %d and %d are not whole entries", len(src.OffsetIndex), len(src.TimeIndex))
	}
	return &Reader{src: src, log: io.LimitReader(src.Log, src.LogSize), hash: crc32.New(castagnoli)}, nil
}

// Read reads the object's next bytes. A log that ends short of LogSize is
// io.ErrUnexpectedEOF; a log's failure is returned by this Read and every
// later one.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.read < r.src.LogSize {
		n, err := r.log.Read(p)
		r.hash.Write(p[:n])
		r.read += int64(n)
		if err == io.EOF && r.read < r.src.LogSize {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			r.err = fmt.Errorf("segmentobject: write log (%d of %d bytes): %w", r.read, r.src.LogSize, err)
			return n, r.err
		}
		return n, nil
	}
	if !r.done {
		r.finish()
	}
	n := 0
	for n < len(p) && len(r.tail) > 0 {
		m := copy(p[n:], r.tail[0])
		n += m
		if r.tail[0] = r.tail[0][m:]; len(r.tail[0]) == 0 {
			r.tail = r.tail[1:]
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// finish makes the footer and the list of what follows the log, once the
// whole log is read.
func (r *Reader) finish() {
	src := r.src
	f := Footer{Version: Version, BaseOffset: src.BaseOffset, NextOffset: src.NextOffset, MaxTimestamp: src.MaxTimestamp}
	f.Sections[SectionLog] = Section{Offset: 0, Length: uint64(src.LogSize), CRC: r.hash.Sum32()}
	epochs := make([]byte, 0, len(src.Epochs)*epochEntrySize)
	for _, e := range src.Epochs {
		epochs = binary.BigEndian.AppendUint32(epochs, uint32(e.Epoch))
		epochs = binary.BigEndian.AppendUint64(epochs, uint64(e.StartOffset))
	}
	next := uint64(src.LogSize)
	for i, section := range [][]byte{SectionOffsetIndex: src.OffsetIndex, SectionTimeIndex: src.TimeIndex, SectionEpochs: epochs} {
		if i == SectionLog {
			continue
		}
		if len(section) > 0 {
			r.tail = append(r.tail, section)
		}
		f.Sections[i] = Section{Offset: next, Length: uint64(len(section)), CRC: crc32.Checksum(section, castagnoli)}
		next += uint64(len(section))
	}
	r.tail, r.footer, r.done = append(r.tail, f.encode()), f, true
}

// Footer is the object's footer, known once Read has returned io.EOF.
func (r *Reader) Footer() Footer { return r.footer }
