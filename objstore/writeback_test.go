package objstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWritebackWriterBoundsDirtyBytes writes five chunks and a bit
// through a writebackWriter and asks the kernel (cachestat) how much of
// the file is dirty or under writeback: at most the unfinished chunk,
// where plain writes would leave all of it dirty for the next fsync.
func TestWritebackWriterBoundsDirtyBytes(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "object"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &writebackWriter{f: f}
	piece := bytes.Repeat([]byte{0xa5}, 100_000) // not chunk-aligned
	for w.written < 5*writebackChunk+12345 {
		if _, err := w.Write(piece); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Cachestat_t
	err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: uint64(w.written)}, &st, 0)
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("SKIPPED: cachestat(2) needs Linux 6.5; nothing else tells a file's dirty pages")
	}
	if err != nil {
		t.Fatal(err)
	}
	pages := uint64(os.Getpagesize())
	if limit := uint64(writebackChunk)/pages + 1; st.Dirty+st.Writeback > limit {
		t.Fatalf("%d pages dirty and %d under writeback of %d written: more than one chunk (%d pages) left for the fsync",
			st.Dirty, st.Writeback, uint64(w.written)/pages, limit)
	}
	if w.settled != 5*writebackChunk {
		t.Fatalf("%d bytes written out, want the five whole chunks (%d)", w.settled, 5*writebackChunk)
	}
}
