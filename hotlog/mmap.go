package hotlog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile memory-maps the first size bytes of f. A writable mapping is
// private: stores stay in this process's copy of the pages they touch
// and never reach the file by themselves; persistIndexesLocked copies the
// entries a checkpoint or a seal vouches for into the file. Shared, every
// store dirtied a 4 KiB page of the file for an 8-byte entry, each
// syncfs round (DiskSync) wrote those pages out, and the next store took
// a write fault on the page just cleaned: at 512 partitions and 40 MB/s
// the produce p50 fell from 45-62 ms to 26-33 ms when that stopped
// (docs/bench.md). A writable mapping is also advised random access
// (MADV_RANDOM): the first store to a page reads that page in, and a new
// segment's index files are sparse, so the read-around the kernel
// otherwise does on a fault (up to the device's read_ahead_kb, 8 MiB on
// the project's machine) zero-filled the holes of the whole file (1 MiB
// by default) into the page cache. 512 partitions rolling together made
// the appending goroutine spend a second in that memset, and the produce
// p99 was 530 ms and more against 150 ms (docs/bench.md, "Roll bursts,
// found"). A zero size maps nothing and returns nil. The mapping stays
// valid after f is closed.
func mapFile(f *os.File, size int, writable bool) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	prot, flags := unix.PROT_READ, unix.MAP_SHARED
	if writable {
		prot, flags = prot|unix.PROT_WRITE, unix.MAP_PRIVATE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, prot, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), size, err)
	}
	if writable {
		// A hint: where it is refused, faults read around as before.
		_ = unix.Madvise(b, unix.MADV_RANDOM)
	}
	return b, nil
}

// unmap releases a mapping made by mapFile.
func unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Munmap(b)
}
