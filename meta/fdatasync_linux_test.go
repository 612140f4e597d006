package meta

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync is what bbolt calls on Linux to make a commit durable.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
