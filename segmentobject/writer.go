package segmentobject

import (
	"encoding/binary"
	"fmt"
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

// logCopyBuffer is how much of the log Write reads, hashes and writes at a
// time: with io.CopyN's 32 KiB here and in the file:// store's copy an
// upload into that bucket cost more CPU a byte than with 256 KiB in both
// (offload.BenchmarkUploadCPU, docs/bench.md), and 256 KiB is small enough
// that the hash runs over bytes still in the CPU's cache.
const logCopyBuffer = 256 << 10

// Write streams src to w as one segment object and returns its footer. The
// log is copied once, hashed on the way; nothing is buffered whole.
func Write(w io.Writer, src Source) (Footer, error) {
	if src.BaseOffset < 0 || src.NextOffset <= src.BaseOffset || src.NextOffset-src.BaseOffset > 1<<32 {
		return Footer{}, fmt.Errorf("segmentobject: write: offsets [%d, %d) are not a segment", src.BaseOffset, src.NextOffset)
	}
	if src.LogSize <= 0 || src.LogSize > 1<<32 {
		return Footer{}, fmt.Errorf("segmentobject: write: log of %d bytes", src.LogSize)
	}
	if len(src.OffsetIndex)%indexEntrySize != 0 || len(src.TimeIndex)%timeIndexEntrySize != 0 {
		return Footer{}, fmt.Errorf("segmentobject: write: index lengths %d and %d are not whole entries", len(src.OffsetIndex), len(src.TimeIndex))
	}
	f := Footer{Version: Version, BaseOffset: src.BaseOffset, NextOffset: src.NextOffset, MaxTimestamp: src.MaxTimestamp}

	hash := crc32.New(castagnoli)
	n, err := io.CopyBuffer(io.MultiWriter(w, hash), io.LimitReader(src.Log, src.LogSize), make([]byte, min(src.LogSize, logCopyBuffer))) // LogSize > 0, checked above
	if err == nil && n < src.LogSize {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return Footer{}, fmt.Errorf("segmentobject: write log (%d of %d bytes): %w", n, src.LogSize, err)
	}
	f.Sections[SectionLog] = Section{Offset: 0, Length: uint64(src.LogSize), CRC: hash.Sum32()}

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
		if _, err := w.Write(section); err != nil {
			return Footer{}, fmt.Errorf("segmentobject: write section %d: %w", i, err)
		}
		f.Sections[i] = Section{Offset: next, Length: uint64(len(section)), CRC: crc32.Checksum(section, castagnoli)}
		next += uint64(len(section))
	}
	if _, err := w.Write(f.encode()); err != nil {
		return Footer{}, fmt.Errorf("segmentobject: write footer: %w", err)
	}
	return f, nil
}
