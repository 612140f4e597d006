package hotlog

import (
	"bytes"
	"fmt"
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

// logCheckpoint is the content of the log-checkpoint file.
type logCheckpoint struct {
	logStartOffset int64
	recoveryPoint  recoveryPoint
}

func formatLogCheckpoint(c logCheckpoint) []byte {
	var b bytes.Buffer
	p := c.recoveryPoint
	fmt.Fprintf(&b, "%d\n%d\n%d %d %d %d %d\n", checkpointFileVersion, c.logStartOffset,
		p.offset, p.segmentBase, p.position, p.indexEntries, p.timeIndexEntries)
	return b.Bytes()
}

func parseLogCheckpoint(data []byte) (logCheckpoint, error) {
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
	p := c.recoveryPoint
	if p.offset < p.segmentBase || (p.position == 0) != (p.offset == p.segmentBase) ||
		p.indexEntries > 1<<31 || p.timeIndexEntries > 1<<31 {
		return logCheckpoint{}, fmt.Errorf("%w: %s: inconsistent recovery point %q", ErrCorruptFile, logCheckpointName, lines[2])
	}
	return c, nil
}
