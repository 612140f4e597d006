package hotlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// syncer performs every durability system call of a Log, so tests can
// count, fail or skip them (Config.fsync).
type syncer struct {
	fsync func(f *os.File, dataOnly bool) error
}

func newSyncer(fsync func(*os.File, bool) error) syncer {
	if fsync == nil {
		fsync = systemFsync
	}
	return syncer{fsync: fsync}
}

func systemFsync(f *os.File, dataOnly bool) error {
	if dataOnly {
		return unix.Fdatasync(int(f.Fd()))
	}
	return f.Sync()
}

// syncData makes f's data durable (fdatasync): enough for a file whose
// bytes, including its size, are what matters.
func (s syncer) syncData(f *os.File) error {
	if err := s.fsync(f, true); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// syncPath opens path and fsyncs it: a directory after entries changed, or
// an index file whose mapping was written.
func (s syncer) syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = s.fsync(f, false)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces dir/name with data: write a temporary file,
// fsync it, rename it over name, fsync the directory. A crash leaves either
// the old content or the new, never a mix; Open deletes stray temporaries.
func (s syncer) writeFileAtomic(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + temporarySuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = s.fsync(f, false)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		return s.syncPath(dir)
	}
	return errors.Join(fmt.Errorf("rewrite %s: %w", path, err), removeIfExists(tmp))
}

// removeIfExists removes path, ignoring its absence.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
