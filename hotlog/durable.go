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
	fsync     func(f *os.File, dataOnly bool) error
	writeback func(f *os.File, offset, n int64) error
	// disk, when set, makes segment data durable instead of fsync.
	disk *DiskSync
}

// newSyncer returns the system calls, or the tests' replacements: a test
// that replaces fsync and not writeback skips writeback hints.
func newSyncer(fsync func(*os.File, bool) error, writeback func(*os.File, int64, int64) error) syncer {
	s := syncer{fsync: fsync, writeback: writeback}
	if s.writeback == nil {
		s.writeback = systemWriteback
		if s.fsync != nil {
			s.writeback = func(*os.File, int64, int64) error { return nil }
		}
	}
	if s.fsync == nil {
		s.fsync = systemFsync
	}
	return s
}

// isNoSpace reports whether err is the file system running out of room
// (ENOSPC, or EDQUOT for a quota), as opposed to an I/O failure.
func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// systemWriteback starts writeback of f's bytes [offset, offset+n) without
// waiting for it and without any durability promise (sync_file_range with
// SYNC_FILE_RANGE_WRITE).
func systemWriteback(f *os.File, offset, n int64) error {
	return unix.SyncFileRange(int(f.Fd()), offset, n, unix.SYNC_FILE_RANGE_WRITE)
}

func systemFsync(f *os.File, dataOnly bool) error {
	if dataOnly {
		return unix.Fdatasync(int(f.Fd()))
	}
	return f.Sync()
}

// syncData makes f's data durable (fdatasync, or a DiskSync's round):
// enough for a file whose bytes, including its size, are what matters.
func (s syncer) syncData(f *os.File) error {
	if s.disk != nil {
		// The DiskSync's error names its call: a shared syncfs, or f's own.
		if err := s.disk.Sync(f); err != nil {
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
		return nil
	}
	if err := s.fsync(f, true); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// syncFile makes f durable as fsync does, data and metadata: through a
// DiskSync's rounds where the Log has one (concurrent callers share a
// syncfs), else with fsync.
func (s syncer) syncFile(f *os.File) error {
	if s.disk != nil {
		return s.disk.SyncFile(f)
	}
	return s.fsync(f, false)
}

// syncFiles makes files durable, each as syncFile (full[i]) or syncData
// would, and returns the first error, naming its file: with a DiskSync
// in one round where it shares its calls (DiskSync.SyncFiles), else with
// one call per file, in order.
func (s syncer) syncFiles(files []*os.File, full []bool) error {
	if s.disk != nil {
		for i, err := range s.disk.SyncFiles(files, full) {
			if err != nil {
				return fmt.Errorf("sync %s: %w", files[i].Name(), err)
			}
		}
		return nil
	}
	for i, f := range files {
		sync := s.syncData
		if full[i] {
			sync = s.syncFile
		}
		if err := sync(f); err != nil {
			return err
		}
	}
	return nil
}

// journaled reports whether a DiskSync's journal takes the flushers'
// rounds of the active segment (syncActiveLocked).
func (s syncer) journaled() bool { return s.disk != nil && s.disk.journal != nil }

// syncPath opens path and fsyncs it (syncFile): a directory after entries
// changed.
func (s syncer) syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = s.syncFile(f)
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
		err = s.syncFile(f)
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
