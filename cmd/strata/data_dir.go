package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The two small files `strata server` keeps at the top of its data
// directory:
//
//	<data>/LOCK     the pid of the server that holds the directory, as
//	                decimal text and a newline; the server holds an
//	                exclusive flock(2) on it while it runs, so a second
//	                server on the same directory fails at once, naming
//	                the first
//	<data>/node-id  the --node-id the directory was first started with,
//	                as decimal text and a newline; a start with another
//	                id is refused, because the metadata group's Raft
//	                state and the partitions' leadership belong to that id
//
// The lock dies with its process (kill -9 included), so a stale LOCK file
// holds nothing and is simply taken over.
const (
	lockFileName   = "LOCK"
	nodeIDFileName = "node-id"
)

// errDataDirInUse is a data directory another process holds the lock on.
var errDataDirInUse = errors.New("data directory in use")

// errNodeIDMismatch is a data directory first started with another node id.
var errNodeIDMismatch = errors.New("data directory belongs to another node id")

// dataDirLock is the flock on <data>/LOCK, held until release.
type dataDirLock struct {
	file *os.File
}

// lockDataDir creates dir if needed and takes the exclusive lock on its
// LOCK file, writing this process's pid into it. When another process
// holds it, the error names that process (its pid, and its command line
// when /proc shows it) and the fix.
func lockDataDir(dir string) (*dataDirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("--data %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--data %s: opening the lock file: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("--data %s: locking %s: %w", dir, path, err)
		}
		holder := "another process"
		content, _ := os.ReadFile(path)
		if pid, ok := parseLockPID(content); ok {
			holder = describeProcess(pid)
		}
		return nil, fmt.Errorf("--data %s: %w: %s holds %s (stop that server first, or give this one another --data)", dir, errDataDirInUse, holder, path)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--data %s: writing the pid to %s: %w", dir, path, err)
	}
	return &dataDirLock{file: f}, nil
}

// release drops the lock. The LOCK file stays: removing it would let a
// server that opened it just before lock a file nobody else sees.
func (l *dataDirLock) release() error { return l.file.Close() }

// parseLockPID reads the pid a LOCK file holds: decimal digits and an
// optional newline, a positive number.
func parseLockPID(content []byte) (int, bool) {
	text := strings.TrimSuffix(string(content), "\n")
	if text == "" || len(text) > 10 || strings.TrimLeft(text, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(text)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// describeProcess names a process for an error message: "pid 1234
// (strata server --data d)", or "pid 1234" when /proc does not show its
// command line.
func describeProcess(pid int) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return fmt.Sprintf("pid %d", pid)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return fmt.Sprintf("pid %d (%s)", pid, truncate(strings.Join(args, " "), 200))
}

// checkNodeID compares nodeID with the one recorded in dir's node-id file,
// recording it on the directory's first start. Call it with the data
// directory locked.
func checkNodeID(dir string, nodeID int) error {
	path := filepath.Join(dir, nodeIDFileName)
	content, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return recordNodeID(dir, path, nodeID)
	case err != nil:
		return fmt.Errorf("--data %s: reading %s: %w", dir, path, err)
	}
	recorded, ok := parseNodeID(content)
	if !ok {
		return fmt.Errorf("--data %s: %s holds %q, not a node id (write the directory's node id there, a number and a newline)", dir, path, truncate(string(content), 40))
	}
	if recorded != nodeID {
		return fmt.Errorf("--data %s: %w: it was first started with --node-id %d, and this start gives --node-id %d (restart with --node-id %d, or give node %d a data directory of its own with --data)",
			dir, errNodeIDMismatch, recorded, nodeID, recorded, nodeID)
	}
	return nil
}

// parseNodeID reads a node-id file: a decimal number and a newline.
func parseNodeID(content []byte) (int, bool) {
	text, ok := strings.CutSuffix(string(content), "\n")
	if !ok || text == "" || len(text) > 10 || strings.TrimLeft(text, "-0123456789") != "" {
		return 0, false
	}
	id, err := strconv.Atoi(text)
	if err != nil || strconv.Itoa(id) != text {
		return 0, false
	}
	return id, true
}

// recordNodeID writes the node-id file durably: a temporary file, fsync,
// rename, fsync of the directory.
func recordNodeID(dir, path string, nodeID int) error {
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, []byte(strconv.Itoa(nodeID)+"\n"), 0o644)
	if err == nil {
		err = syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncFile(dir)
	}
	if err != nil {
		return fmt.Errorf("--data %s: recording the node id in %s: %w", dir, path, err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
