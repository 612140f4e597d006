package objstore

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// directChunk is how much of an object Put writes at a time with O_DIRECT:
// each write goes to the disk before the next is read, so at most this
// much of an upload is in the disk's queue ahead of the hot log's
// fdatasyncs (as writebackChunk bounds the buffered path).
const directChunk = 1 << 20

// directAlign is the alignment O_DIRECT asks of a write's memory, file
// offset and length: the page size, which is a multiple of every logical
// block size Linux supports.
const directAlign = 4096

// Objects are written with O_DIRECT where the file system allows it. A
// bucket's object is not read back soon, and never by the process that
// wrote it, so copying its bytes into the page cache only to write them
// out cost the broker a second copy of everything it uploads (the same
// CPU as the hot log's own writes, on the project's machine), and the
// writeback of pages that then sat in memory in place of the hot log's.
// The bytes go from the reader's buffer to the disk; only an object's
// last bytes short of directAlign go through the page cache, after
// O_DIRECT is cleared on the file. Where opening with O_DIRECT fails with
// EINVAL (a file system without it), the store writes through the page
// cache from then on, chunk by chunk (writeback.go).

// copyDirect writes the size bytes r yields into f, which was opened with
// O_DIRECT and is empty, and returns how many it wrote; the caller checks
// that r ends there. Each chunk is read whole before it is written, so
// every write but the last starts and ends on directAlign.
func copyDirect(f *os.File, r io.Reader, size int64) (int64, error) {
	bufSize := int(min(size+directAlign-1, directChunk)) &^ (directAlign - 1)
	if bufSize == 0 {
		return 0, nil
	}
	// Page-aligned memory, as O_DIRECT wants it; Go's heap promises no
	// alignment.
	buf, err := unix.Mmap(-1, 0, bufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0, fmt.Errorf("objstore: mapping a write buffer: %w", err)
	}
	defer func() { _ = unix.Munmap(buf) }()
	var written int64
	for written < size {
		want := int(min(int64(bufSize), size-written))
		n, err := io.ReadFull(r, buf[:want])
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			err = nil // a short object: the caller compares sizes
		}
		if err != nil {
			return written, err
		}
		whole := n &^ (directAlign - 1)
		if whole > 0 {
			if _, err := f.Write(buf[:whole]); err != nil {
				return written, err
			}
			written += int64(whole)
		}
		if whole < n {
			// The object's last bytes, less than a block: O_DIRECT cannot
			// write them, and nothing follows them.
			if err := clearDirect(f); err != nil {
				return written, err
			}
			if _, err := f.Write(buf[whole:n]); err != nil {
				return written, err
			}
			written += int64(n - whole)
		}
		if n < want {
			break
		}
	}
	return written, nil
}

// clearDirect turns O_DIRECT off on f, for a write that is not aligned.
func clearDirect(f *os.File) error {
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_DIRECT)
	}
	if err != nil {
		return fmt.Errorf("clearing O_DIRECT on %s: %w", f.Name(), err)
	}
	return nil
}
