package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDataDirLockNamesTheHolder takes the lock twice: flock locks belong
// to open files, so the second take fails as a second process's would,
// and the error names this process by pid and command line. Not in
// parallel: a parallel test that starts a process forks this one, and the
// child holds a copy of every descriptor until it execs, the lock's among
// them, so the take after the release could fail (it did, once in CI).
func TestDataDirLockNamesTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(dir, lockFileName))
	if err != nil || string(content) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("LOCK holds %q (%v), want this pid", content, err)
	}
	_, err = lockDataDir(dir)
	if !errors.Is(err, errDataDirInUse) {
		t.Fatalf("second lock: %v, want errDataDirInUse", err)
	}
	msg := err.Error()
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), filepath.Base(os.Args[0]), "another --data"} {
		if !strings.Contains(msg, want) {
			t.Errorf("second lock: %q does not name %q", msg, want)
		}
	}
	if err := first.release(); err != nil {
		t.Fatal(err)
	}
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}

func TestNodeIDIsRecordedAndChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := checkNodeID(dir, 3); err != nil {
		t.Fatalf("first start: %v", err)
	}
	if content, err := os.ReadFile(filepath.Join(dir, nodeIDFileName)); err != nil || string(content) != "3\n" {
		t.Fatalf("node-id holds %q (%v)", content, err)
	}
	if err := checkNodeID(dir, 3); err != nil {
		t.Fatalf("same id again: %v", err)
	}
	err := checkNodeID(dir, 4)
	if !errors.Is(err, errNodeIDMismatch) || !strings.Contains(err.Error(), "--node-id 3") || !strings.Contains(err.Error(), "--node-id 4") {
		t.Fatalf("another id: %v, want both ids named", err)
	}
	os.WriteFile(filepath.Join(dir, nodeIDFileName), []byte("three\n"), 0o644)
	if err := checkNodeID(dir, 3); err == nil || !strings.Contains(err.Error(), "not a node id") {
		t.Fatalf("garbage node-id file: %v", err)
	}
}

func FuzzParseNodeID(f *testing.F) {
	for _, s := range []string{"1\n", "-7\n", "007\n", "1", "", "\n", "99999999999\n", "1\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		id, ok := parseNodeID(content)
		if !ok {
			return
		}
		// Whatever is accepted is exactly what recordNodeID writes.
		if got := strconv.Itoa(id) + "\n"; got != string(content) {
			t.Fatalf("parseNodeID(%q) = %d, which is written as %q", content, id, got)
		}
	})
}

func FuzzParseLockPID(f *testing.F) {
	for _, s := range []string{"1234\n", "1234", "0\n", "-1\n", "", "12a\n", "99999999999\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		pid, ok := parseLockPID(content)
		if ok && (pid <= 0 || strings.TrimLeft(strings.TrimSuffix(string(content), "\n"), "0") != strconv.Itoa(pid)) {
			t.Fatalf("parseLockPID(%q) = %d", content, pid)
		}
	})
}
