package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memoryCgroup creates a cgroup (the v1 memory controller) limited to
// limit bytes, without swap, and removes it when the test ends; it skips
// the test, saying why, where it cannot.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	const root = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		t.Skipf("needs the cgroup v1 memory controller at %s to bound a process's memory: %v", root, err)
	}
	dir, err := os.MkdirTemp(root, "strata-test-")
	if err != nil {
		t.Skipf("needs to create a memory cgroup (root, cgroups mounted writable): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the cgroup: %v", err)
		}
	})
	writeCgroupFile(t, dir, "memory.limit_in_bytes", strconv.FormatInt(limit, 10))
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil { // swap accounting
		writeCgroupFile(t, dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10))
	}
	writeCgroupFile(t, dir, "memory.swappiness", "0")
	return dir
}

func writeCgroupFile(t *testing.T, dir, name, value string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(value)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatalf("cgroup %s: %v", name, err)
	}
}

// cgroupFile is a cgroup file's contents on one line, or why it could not
// be read.
func cgroupFile(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ", ")
}
