// Package smallfs gives tests a small, real file system that fills up,
// mounted on a fresh directory, for the disk-full paths of the hot log and
// the broker: a size-limited tmpfs, or an ext4 on a loop device where the
// path needs what tmpfs lacks (a syncfs that reports every failed write,
// so the hot log's disk journal is allowed; files that record their birth
// time).
//
// Mounting needs root (or CAP_SYS_ADMIN); CI runs as root. These tests are
// the only real tests of a full disk, so where the mount cannot be made a
// full run fails, saying how to run it: a suite that cannot test a full
// disk must not pass as if it had. Only with -short (make test-short), the
// quick loop that promises less, is the test skipped instead, with a line
// saying why. There is no other way out.
package smallfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's notation: "2m", "32m") on a fresh
// directory and unmounts it when the test ends. Where it cannot mount, it
// fails the test, or skips it under -short; see the package comment.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := mount("a size-limited tmpfs", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir); err != nil {
		cannotMount(t, "a size-limited tmpfs", err)
	}
	unmountAtCleanup(t, dir)
	return dir
}

// Ext4 makes an ext4 file system of size (truncate's notation: "16M") in
// a sparse image file, with no blocks reserved for root (the tests run as
// root, and a reserve would let them write past "full"), mounts it on a
// fresh directory through a loop device, and unmounts it when the test
// ends. Where it cannot, it fails the test, or skips it under -short.
func Ext4(t testing.TB, size string) string {
	t.Helper()
	const what = "a small ext4 file system on a loop device"
	image := filepath.Join(t.TempDir(), "ext4.img")
	dir := t.TempDir()
	for _, tool := range []string{"truncate", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannotMount(t, what, fmt.Errorf("%w (Debian's coreutils and e2fsprogs)", err))
		}
	}
	for _, args := range [][]string{{"truncate", "-s", size, image}, {"mkfs.ext4", "-q", "-F", "-m", "0", image}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			cannotMount(t, what, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out))
		}
	}
	if err := mount(what, "-o", "loop", image, dir); err != nil {
		cannotMount(t, what, err)
	}
	unmountAtCleanup(t, dir)
	return dir
}

// mount runs mount with args, as root.
func mount(what string, args ...string) error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("running as uid %d: mounting %s needs root", uid, what)
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mount %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// unmountAtCleanup unmounts dir when the test ends. Where something still
// holds a file there (a test that failed before closing its logs), it
// detaches the mount lazily, so it goes once the process exits rather
// than staying mounted, and fails the test.
func unmountAtCleanup(t testing.TB, dir string) {
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
			if out, err := exec.Command("umount", "--lazy", dir).CombinedOutput(); err != nil {
				t.Errorf("umount --lazy %s: %v: %s", dir, err, out)
			}
		}
	})
}

// cannotMount ends a test that needs a small file system, what, it
// cannot have.
func cannotMount(t testing.TB, what string, err error) {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIPPED, -short: this disk-full test needs %s: %v", what, err)
	}
	t.Fatalf("this disk-full test needs %s and cannot have one: %v\n"+
		"Run the tests as root (as CI does: sudo go test ...), or with -short (make test-short) to skip the disk-full tests knowingly.", what, err)
}
