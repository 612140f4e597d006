package hotlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// recoveryPoint marks the end of the log prefix that is fsynced and
// trusted after a crash (see log-checkpoint in format.go).
type recoveryPoint struct {
	offset           int64 // the first offset after the trusted prefix
	segmentBase      int64 // the segment holding that offset's position
	position         int64 // byte position in that segment
	indexEntries     int   // trusted offset-index entries of that segment
	timeIndexEntries int   // trusted time-index entries of that segment
}

// segmentStart is the recovery point at the start of the segment based at
// base: nothing of it trusted, so Open scans it whole.
func segmentStart(base int64) recoveryPoint {
	return recoveryPoint{offset: base, segmentBase: base}
}

// logCheckpoint is the content of the log-checkpoint file.
type logCheckpoint struct {
	logStartOffset int64
	recoveryPoint  recoveryPoint
}

// The log-checkpoint file's two slots (format.go).
const (
	checkpointSlotSize   = 60
	checkpointSlotStride = 4096
	checkpointFileSize   = checkpointSlotStride + checkpointSlotSize
	checkpointSlotMagic  = "hlcp"
	checkpointSlotFormat = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpointSlotOffset is where the checkpoint numbered seq is written:
// the slot the one before it is not in.
func checkpointSlotOffset(seq uint64) int64 {
	return int64(seq%2) * checkpointSlotStride
}

// encodeCheckpointSlot returns the slot holding c as checkpoint number
// seq.
func encodeCheckpointSlot(seq uint64, c logCheckpoint) []byte {
	b := make([]byte, checkpointSlotSize)
	be := binary.BigEndian
	copy(b, checkpointSlotMagic)
	be.PutUint32(b[4:], checkpointSlotFormat)
	be.PutUint64(b[8:], seq)
	p := c.recoveryPoint
	for i, v := range []int64{c.logStartOffset, p.offset, p.segmentBase, p.position} {
		be.PutUint64(b[16+8*i:], uint64(v))
	}
	be.PutUint32(b[48:], uint32(p.indexEntries))
	be.PutUint32(b[52:], uint32(p.timeIndexEntries))
	be.PutUint32(b[56:], crc32.Checksum(b[:56], castagnoli))
	return b
}

// checkpointFileImage is a whole log-checkpoint file holding c as
// checkpoint 0, its other slot empty.
func checkpointFileImage(c logCheckpoint) []byte {
	image := make([]byte, checkpointFileSize)
	copy(image, encodeCheckpointSlot(0, c))
	return image
}

// errUnknownSlotFormat is a whole slot of a format this release does not
// know: written by a later release, whose checkpoint in the other slot,
// if any, may be older than its last truncation. Open refuses the file.
var errUnknownSlotFormat = errors.New("slot of an unknown format (written by a later release?)")

// decodeCheckpointSlot parses slot i, refusing one never written, torn or
// damaged, and one whose number does not belong in it.
func decodeCheckpointSlot(b []byte, i int) (c logCheckpoint, seq uint64, err error) {
	be := binary.BigEndian
	switch {
	case len(b) < checkpointSlotSize || string(b[:4]) != checkpointSlotMagic:
		return logCheckpoint{}, 0, fmt.Errorf("%w: %s: slot %d empty", ErrCorruptFile, logCheckpointName, i)
	case be.Uint32(b[56:]) != crc32.Checksum(b[:56], castagnoli):
		return logCheckpoint{}, 0, fmt.Errorf("%w: %s: slot %d checksum mismatch", ErrCorruptFile, logCheckpointName, i)
	case be.Uint32(b[4:]) != checkpointSlotFormat:
		return logCheckpoint{}, 0, fmt.Errorf("%w: %s: slot %d format %d: %w", ErrCorruptFile, logCheckpointName, i, be.Uint32(b[4:]), errUnknownSlotFormat)
	case checkpointSlotOffset(be.Uint64(b[8:])) != int64(i)*checkpointSlotStride:
		return logCheckpoint{}, 0, fmt.Errorf("%w: %s: checkpoint %d in slot %d", ErrCorruptFile, logCheckpointName, be.Uint64(b[8:]), i)
	}
	var v [4]int64
	for j := range v {
		v[j] = int64(be.Uint64(b[16+8*j:]))
	}
	c = logCheckpoint{
		logStartOffset: v[0],
		recoveryPoint: recoveryPoint{
			offset: v[1], segmentBase: v[2], position: v[3],
			indexEntries: int(be.Uint32(b[48:])), timeIndexEntries: int(be.Uint32(b[52:])),
		},
	}
	if err := checkRecoveryPoint(c); err != nil {
		return logCheckpoint{}, 0, err
	}
	return c, be.Uint64(b[8:]), nil
}

// checkpointFile is what Open read of a log-checkpoint file: the newest
// checkpoint, its number, and whether the file has both slots, so the
// next checkpoint may be written into the other in place. damaged is why
// the other slot was not valid, when it was written once (a write cut
// short).
type checkpointFile struct {
	checkpoint logCheckpoint
	seq        uint64
	inPlace    bool
	damaged    error
}

// parseCheckpointFile returns the newest valid checkpoint of a
// log-checkpoint file, in the slot format or in the text format of
// releases before it (read only to upgrade: the next checkpoint replaces
// it with the slot format). A text file is short; a slot file reaches the
// second slot even when its first is torn.
func parseCheckpointFile(data []byte) (checkpointFile, error) {
	if len(data) < checkpointSlotStride && !bytes.HasPrefix(data, []byte(checkpointSlotMagic)) {
		c, err := parseTextLogCheckpoint(data)
		return checkpointFile{checkpoint: c}, err
	}
	var newest checkpointFile
	var errs [2]error
	found := -1
	for i := range 2 {
		at := i * checkpointSlotStride
		if at >= len(data) {
			errs[i] = fmt.Errorf("%w: %s: slot %d missing (%d bytes)", ErrCorruptFile, logCheckpointName, i, len(data))
			continue
		}
		c, seq, err := decodeCheckpointSlot(data[at:min(len(data), at+checkpointSlotSize)], i)
		if errors.Is(err, errUnknownSlotFormat) {
			return checkpointFile{}, err
		}
		if errs[i] = err; err == nil && (found < 0 || seq > newest.seq) {
			newest, found = checkpointFile{checkpoint: c, seq: seq}, i
		}
	}
	if found < 0 {
		return checkpointFile{}, fmt.Errorf("no valid slot: %w; %w", errs[0], errs[1])
	}
	// A slot never written is all zeros (checkpointFileImage), or beyond
	// a short file's end.
	at := min(len(data), (1-found)*checkpointSlotStride)
	if other := data[at:min(len(data), at+checkpointSlotSize)]; !allZero(other) {
		newest.damaged = errs[1-found]
	}
	newest.inPlace = len(data) == checkpointFileSize
	return newest, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseTextLogCheckpoint parses the text format of log-checkpoint that
// releases before the slot format wrote.
func parseTextLogCheckpoint(data []byte) (logCheckpoint, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return logCheckpoint{}, err
	}
	if len(lines) != 3 {
		return logCheckpoint{}, fmt.Errorf("%w: %s: %d lines, want 3", ErrCorruptFile, logCheckpointName, len(lines))
	}
	start, err := checkpointFields(lines[1], 1)
	if err != nil {
		return logCheckpoint{}, fmt.Errorf("%s: %w", logCheckpointName, err)
	}
	f, err := checkpointFields(lines[2], 5)
	if err != nil {
		return logCheckpoint{}, fmt.Errorf("%s: %w", logCheckpointName, err)
	}
	c := logCheckpoint{
		logStartOffset: start[0],
		recoveryPoint: recoveryPoint{
			offset: f[0], segmentBase: f[1], position: f[2],
			indexEntries: int(f[3]), timeIndexEntries: int(f[4]),
		},
	}
	return c, checkRecoveryPoint(c)
}

// checkRecoveryPoint refuses a checkpoint whose fields contradict each
// other.
func checkRecoveryPoint(c logCheckpoint) error {
	p := c.recoveryPoint
	if c.logStartOffset < 0 || p.segmentBase < 0 || p.position < 0 || p.offset < p.segmentBase ||
		(p.position == 0) != (p.offset == p.segmentBase) || p.indexEntries > 1<<31 || p.timeIndexEntries > 1<<31 {
		return fmt.Errorf("%w: %s: inconsistent recovery point %+v", ErrCorruptFile, logCheckpointName, c)
	}
	return nil
}
