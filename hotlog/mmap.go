package hotlog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile memory-maps the first size bytes of f. A writable mapping is
// private: stores stay in this process's copy of the pages they touch and
// never reach the file by themselves; writeIndexes copies the entries a
// checkpoint or a seal vouches for into the file. Shared, every store
// dirtied a page of the file, and a syncfs round (DiskSync) then wrote
// each such page out, 4 KiB for an 8-byte entry: at 512 partitions that
// was more index bytes written than log bytes, and every next store took a
// write fault on the page cleaned. A zero size maps nothing and returns
// nil. The mapping stays valid after f is closed.
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
	return b, nil
}

// unmap releases a mapping made by mapFile.
func unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Munmap(b)
}
