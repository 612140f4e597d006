package offload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// A local segment, read for upload straight from its sealed files: the
// .log streamed, the trimmed .index and .timeindex read whole (they are
// small: 8 or 12 bytes per index.interval.bytes of log). Nothing here takes
// the log's writer lock.
//
// A segment that straddles the end of the tiered data (a former leader
// ended its segments elsewhere: replicas roll by segment.ms, or by a
// changed segment.bytes, each at its own time) is uploaded from the
// tiered end on: its log from the batch at that offset, with indexes
// rebuilt from the headers of the batches from there (segmentobject's
// Indexer, as remote recompaction builds them). On a compacted topic the
// cleaner may have joined batches it emptied on both sides of that
// offset into one empty batch (compact.Writer): the part then starts
// with an empty batch of its own for the run's offsets from there, which
// carries no producer to split. Kafka's remote log
// manager copies such a segment whole, overlapping the one before; here
// the committed segments stay contiguous without overlap, as readers and
// the deletion hook expect.

// errNotReady means a rolled segment whose files hotlog has not finished
// sealing on disk (its indexes are not trimmed yet), or whose files are
// already gone. The copy task tries again on its next pass.
var errNotReady = errors.New("offload: segment files not sealed yet")

const (
	indexEntrySize     = 8
	timeIndexEntrySize = 12
)

// segmentPath is the path of one of a segment's files; hotlog/format.go
// names them <20-digit base offset><suffix>.
func segmentPath(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// localSegment is an open sealed segment, or the part of one from an
// offset on, and what its object needs.
type localSegment struct {
	info hotlog.SegmentInfo // the segment as the log lists it
	log  *os.File
	// The object's span: [base, info.NextOffset), logSize bytes of log:
	// head, then the .log from position from; the whole segment unless cut.
	base, maxTimestamp     int64
	from, logSize          int64
	head                   []byte // an empty batch that starts a cut inside a cleaned run
	offsetIndex, timeIndex []byte
	epochs                 []segmentobject.EpochEntry
}

// openSegment opens a sealed segment's files for the upload of its
// offsets from offset from on: all of them when from is at or below its
// base offset; else the part from the batch at from, indexed every
// indexInterval bytes. An empty run the cleaner joined across from is
// split there (cut). Any other batch that holds from without starting at
// it starts the part when from is the log start (atLogStart), as
// DeleteRecords keeps the batch its offset falls in, and fails with
// ErrStraddlesRemote otherwise. It fails with errNotReady when the files
// are not (or no longer) those of a segment sealed on disk.
func openSegment(dir string, info hotlog.SegmentInfo, epochCache []hotlog.EpochEntry, from int64, atLogStart bool, indexInterval int64) (*localSegment, error) {
	f, err := os.Open(segmentPath(dir, info.BaseOffset, ".log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: segment %d: %w", errNotReady, info.BaseOffset, err)
	}
	if err != nil {
		return nil, err
	}
	s := &localSegment{
		info: info, log: f,
		base: info.BaseOffset, maxTimestamp: info.MaxTimestamp, logSize: info.Size,
	}
	err = s.readIndexes(dir)
	if err == nil && from > info.BaseOffset {
		err = s.cut(from, atLogStart, indexInterval)
	}
	if err == nil {
		// A log start inside the part's first batch trimmed the epoch
		// cache to it; the batch has the one epoch in force there.
		s.epochs, err = segmentEpochs(epochCache, max(s.base, from), info.NextOffset)
	}
	if err == nil {
		s.epochs[0].StartOffset = s.base
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// readIndexes reads the trimmed index files and checks them as a reader of
// the object will. hotlog trims a rolled segment's preallocated indexes in
// its flusher, shortly after the roll: until then the files end in zeroed
// entries, which the checks refuse (a zero entry can follow no valid one),
// and the segment is not ready. A full index needs no trimming, so one that
// passes the checks is final either way.
func (s *localSegment) readIndexes(dir string) error {
	stat, err := s.log.Stat()
	if err != nil {
		return err
	}
	if stat.Size() != s.info.Size {
		return fmt.Errorf("%w: segment %d: .log is %d bytes, the log says %d", errNotReady, s.info.BaseOffset, stat.Size(), s.info.Size)
	}
	for _, f := range []struct {
		suffix string
		into   *[]byte
	}{{".index", &s.offsetIndex}, {".timeindex", &s.timeIndex}} {
		data, err := os.ReadFile(segmentPath(dir, s.info.BaseOffset, f.suffix))
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: segment %d: %w", errNotReady, s.info.BaseOffset, err)
		}
		if err != nil {
			return err
		}
		*f.into = data
	}
	switch match, err := hotlog.SegmentFilesMatch(dir, s.info.BaseOffset, s.log); {
	case err != nil:
		return err
	case !match: // the cleaner swapped, or is swapping, the segment's files
		return fmt.Errorf("%w: segment %d: its files were swapped by a rewrite", errNotReady, s.info.BaseOffset)
	}
	if err := checkIndexes(s.offsetIndex, s.timeIndex, s.info.NextOffset-s.info.BaseOffset, s.info.Size); err != nil {
		return fmt.Errorf("%w: segment %d: %w", errNotReady, s.info.BaseOffset, err)
	}
	return nil
}

// cut makes s the part of its segment from offset from on: the log from
// the batch at from, found by its headers from the last indexed batch
// below it, and indexes built from the headers of the batches from there.
// When from is inside a run of emptied batches the cleaner joined into
// one, the part starts with an empty batch for the run's offsets from
// from, and the .log from the batch after the run; with atLogStart, any
// other batch that holds from without starting at it starts the part.
func (s *localSegment) cut(from int64, atLogStart bool, indexInterval int64) error {
	rel := from - s.info.BaseOffset
	pos := int64(0)
	for i := 0; i < len(s.offsetIndex); i += indexEntrySize { // checked: increasing
		if int64(binary.BigEndian.Uint32(s.offsetIndex[i:])) > rel {
			break
		}
		pos = int64(binary.BigEndian.Uint32(s.offsetIndex[i+4:]))
	}
	buf := make([]byte, record.HeaderSize)
	var ix *segmentobject.Indexer
	for ix == nil {
		h, err := readHeader(s.log, buf, pos, s.info.Size)
		if err != nil {
			return fmt.Errorf("segment %d: %w", s.info.BaseOffset, err)
		}
		switch {
		case h.BaseOffset == from:
			ix = segmentobject.NewIndexer(from, indexInterval)
		case h.NextOffset() <= from:
			pos += int64(h.Size())
		case h.NumRecords == 0 && h.ProducerID == -1: // an emptied run, split at from
			pos += int64(h.Size())
			h.BaseOffset, h.LastOffsetDelta = from, int32(h.LastOffset()-from)
			if s.head, err = record.Rebuild(h, nil); err != nil {
				return err
			}
			ix = segmentobject.NewIndexer(from, indexInterval)
			ix.Add(from, len(s.head), h.MaxTimestamp)
		case atLogStart:
			from = h.BaseOffset
			ix = segmentobject.NewIndexer(from, indexInterval)
		default:
			return fmt.Errorf("%w: segment [%d, %d) has no batch at the tiered end %d (batch [%d, %d))",
				ErrStraddlesRemote, s.info.BaseOffset, s.info.NextOffset, from, h.BaseOffset, h.NextOffset())
		}
	}
	if err := addBatches(ix, s.log, pos, s.info.Size); err != nil {
		return fmt.Errorf("segment %d: %w", s.info.BaseOffset, err)
	}
	offsetIndex, timeIndex, logSize, maxTimestamp := ix.Finish()
	s.base, s.maxTimestamp, s.from, s.logSize = from, maxTimestamp, pos, logSize
	s.offsetIndex, s.timeIndex = offsetIndex, timeIndex
	return nil
}

// addBatches adds the batches at positions [from, to) of r to ix, reading
// their headers.
func addBatches(ix *segmentobject.Indexer, r io.ReaderAt, from, to int64) error {
	buf := make([]byte, record.HeaderSize)
	for pos := from; pos < to; {
		h, err := readHeader(r, buf, pos, to)
		if err != nil {
			return err
		}
		ix.Add(h.BaseOffset, h.Size(), h.MaxTimestamp)
		pos += int64(h.Size())
	}
	return nil
}

// readHeader reads the header of the batch at pos of r, whose batches end
// at end, into buf.
func readHeader(r io.ReaderAt, buf []byte, pos, end int64) (record.Header, error) {
	if _, err := r.ReadAt(buf, pos); err != nil {
		return record.Header{}, fmt.Errorf("batch header at %d: %w", pos, err)
	}
	h, err := record.ParseHeader(buf)
	if err == nil && pos+int64(h.Size()) > end {
		err = fmt.Errorf("%w: batch of %d bytes runs past %d", record.ErrTruncated, h.Size(), end)
	}
	if err != nil {
		return record.Header{}, fmt.Errorf("batch header at %d: %w", pos, err)
	}
	return h, nil
}

// checkIndexes checks index entries the way segmentobject.ParseTail will:
// whole entries, offsets inside the segment, offset entries strictly
// increasing in both columns with positions inside the log, time entries
// strictly increasing in time and not decreasing in offset.
func checkIndexes(offsetIndex, timeIndex []byte, span, logSize int64) error {
	if len(offsetIndex)%indexEntrySize != 0 || len(timeIndex)%timeIndexEntrySize != 0 {
		return fmt.Errorf("index lengths %d and %d are not whole entries", len(offsetIndex), len(timeIndex))
	}
	be := binary.BigEndian
	var prevRel, prevPos uint32
	for i := 0; i < len(offsetIndex); i += indexEntrySize {
		rel, pos := be.Uint32(offsetIndex[i:]), be.Uint32(offsetIndex[i+4:])
		if int64(rel) >= span || int64(pos) >= logSize || (i > 0 && (rel <= prevRel || pos <= prevPos)) {
			return fmt.Errorf("offset index entry %d (%d, %d) out of order or range", i/indexEntrySize, rel, pos)
		}
		prevRel, prevPos = rel, pos
	}
	var prevTime int64
	prevRel = 0
	for i := 0; i < len(timeIndex); i += timeIndexEntrySize {
		ts, rel := int64(be.Uint64(timeIndex[i:])), be.Uint32(timeIndex[i+8:])
		if int64(rel) >= span || (i > 0 && (ts <= prevTime || rel < prevRel)) {
			return fmt.Errorf("time index entry %d (%d, %d) out of order or range", i/timeIndexEntrySize, ts, rel)
		}
		prevTime, prevRel = ts, rel
	}
	return nil
}

// segmentEpochs cuts the leader epoch cache down to the entries that cover
// [base, next), the first moved up to base, as meta and the object want
// them.
func segmentEpochs(cache []hotlog.EpochEntry, base, next int64) ([]segmentobject.EpochEntry, error) {
	var out []segmentobject.EpochEntry
	for i, e := range cache {
		end := int64(-1) // the last entry runs on forever
		if i+1 < len(cache) {
			end = cache[i+1].StartOffset
		}
		if (end >= 0 && end <= base) || e.StartOffset >= next {
			continue
		}
		out = append(out, segmentobject.EpochEntry{Epoch: e.Epoch, StartOffset: max(e.StartOffset, base)})
	}
	if len(out) == 0 || out[0].StartOffset != base {
		return nil, fmt.Errorf("%w: segment [%d, %d), cache %v", ErrNoLeaderEpoch, base, next, cache)
	}
	return out, nil
}

// source describes the object to segmentobject.NewReader. Each call
// returns a fresh reader of the log from its start, for each attempt.
func (s *localSegment) source() segmentobject.Source {
	var log io.Reader = io.NewSectionReader(s.log, s.from, s.logSize-int64(len(s.head)))
	if len(s.head) > 0 {
		log = io.MultiReader(bytes.NewReader(s.head), log)
	}
	return segmentobject.Source{
		BaseOffset:   s.base,
		NextOffset:   s.info.NextOffset,
		MaxTimestamp: s.maxTimestamp,
		Log:          log,
		LogSize:      s.logSize,
		OffsetIndex:  s.offsetIndex,
		TimeIndex:    s.timeIndex,
		Epochs:       s.epochs,
	}
}

func (s *localSegment) close() error { return s.log.Close() }
