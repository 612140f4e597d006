// Package tmpfs gives tests a small, real file system that fills up: a
// size-limited tmpfs mounted on a fresh directory, for the disk-full paths
// of the hot log and the broker.
//
// Mounting needs root (or CAP_SYS_ADMIN); CI runs as root. These tests are
// the only real tests of a full disk, so where the mount cannot be made a
// full run fails, saying how to run it: a suite that cannot test a full
// disk must not pass as if it had. Only with -short (make test-short), the
// quick loop that promises less, is the test skipped instead, with a line
// saying why. There is no other way out.
package tmpfs

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of size (mount's notation: "2m", "32m") on a fresh
// directory and unmounts it when the test ends. Where it cannot mount, it
// fails the test, or skips it under -short; see the package comment.
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := mount(dir, size); err != nil {
		cannotMount(t, err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// mount mounts a tmpfs of size on dir.
func mount(dir, size string) error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("running as uid %d: mounting a tmpfs needs root", uid)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount -t tmpfs -o size=%s: %v: %s", size, err, out)
	}
	return nil
}

// cannotMount ends a test that needs a small file system it cannot have.
func cannotMount(t testing.TB, err error) {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIPPED, -short: this disk-full test needs a size-limited tmpfs: %v", err)
	}
	t.Fatalf("this disk-full test needs a size-limited tmpfs and cannot have one: %v\n"+
		"Run the tests as root (as CI does: sudo go test ...), or with -short (make test-short) to skip the disk-full tests knowingly.", err)
}
