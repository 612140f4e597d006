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

// directAlign is the alignment the store gives an O_DIRECT write's memory,
// file offset and length. A file system that asks for more (statx's
// STATX_DIOALIGN) is written through the page cache.
const directAlign = 4096

// copyDirect writes the size bytes r yields into f, which was opened with
// O_DIRECT and is empty, and returns how many it wrote; the caller checks
// that r ends there. Each chunk is read whole before it is written, so
// every write but the last starts and ends on directAlign; the object's
// last bytes short of directAlign are written after O_DIRECT is cleared
// on f.
//
// Why: an uploaded object is not read again soon (a fetch below the
// local log start, a recompaction or a manifest read comes later, if at
// all), so copying its bytes into the page cache only to write them out
// cost the broker a second copy of everything it tiers (nearly the CPU of
// the hot log's own writes, in a tiered produce run's profile), and the
// writeback of pages that then sat in memory in place of the hot log's.
// Here the bytes go from the reader's buffer to the disk.
func copyDirect(f *os.File, r io.Reader, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	bufSize := directChunk
	if size < directChunk {
		bufSize = (int(size) + directAlign - 1) &^ (directAlign - 1)
	}
	// Page-aligned memory, as O_DIRECT wants it; Go's heap promises no
	// alignment.
	buf, err := unix.Mmap(-1, 0, bufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0, fmt.Errorf("mapping a write buffer: %w", err)
	}
	defer func() { _ = unix.Munmap(buf) }()
	var written int64
	for written < size {
		want := int(min(int64(bufSize), size-written))
		n, err := io.ReadFull(r, buf[:want])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
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

// directAligned reports whether the file system asks no more alignment of
// f's O_DIRECT writes than directAlign gives them. A file system that does
// not say (no STATX_DIOALIGN) is taken at its word when it opened f with
// O_DIRECT; a write it then refuses fails its Put, and the store writes
// through the page cache from then on (writeTemp).
func directAligned(f *os.File) bool {
	var st unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st); err != nil || st.Mask&unix.STATX_DIOALIGN == 0 {
		return true
	}
	return st.Dio_mem_align != 0 && st.Dio_mem_align <= directAlign && st.Dio_offset_align != 0 && st.Dio_offset_align <= directAlign
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
