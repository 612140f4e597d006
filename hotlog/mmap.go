package hotlog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile memory-maps the first size bytes of f. A writable mapping is
// shared, so stores reach the page cache and, in time, the file; an fsync of
// the file makes them durable. A zero size maps nothing and returns nil.
// The mapping stays valid after f is closed.
func mapFile(f *os.File, size int, writable bool) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), size, err)
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
