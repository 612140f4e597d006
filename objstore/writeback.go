package objstore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// writebackChunk is how many bytes of a file-store object may be dirty
// before Put writes them out and waits for them. An object written whole
// and then fsynced puts all its bytes in the disk's queue at once, and
// every other writer's fdatasync on that disk (the hot log's, before it
// acknowledges a produce) waits behind them: with a 110 MiB object the
// hot log's fdatasyncs stalled for 65-80 ms; written out 2 MiB at a time
// they stalled for at most 6-11 ms, and the object took about a third
// longer to write (docs/bench.md, "Produce latency while tiering").
const writebackChunk = 2 << 20

// writebackWriter writes to a file and, every writebackChunk bytes, makes
// the kernel write the finished chunk out and waits for it
// (sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER), so at most one chunk of
// the object is dirty or in flight at a time. It promises no durability:
// the file's fsync after the last write still does that, and finds little
// left to write.
type writebackWriter struct {
	f       *os.File
	written int64 // bytes written to f
	settled int64 // bytes of f written out
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	for err == nil && w.written-w.settled >= writebackChunk {
		const flags = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
		if serr := unix.SyncFileRange(int(w.f.Fd()), w.settled, writebackChunk, flags); serr != nil {
			err = fmt.Errorf("writing out %s: %w", w.f.Name(), serr)
			break
		}
		w.settled += writebackChunk
	}
	return n, err
}
