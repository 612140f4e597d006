// Package tmpfs gives tests a small, real file system that fills up: a
// size-limited tmpfs mounted on a fresh directory, for the disk-full paths
// of the hot log and the broker. Mounting needs root (CI runs as root);
// elsewhere the test is skipped, saying why.
package tmpfs

import (
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of size (mount's notation: "2m", "32m") on a fresh
// directory and unmounts it when the test ends, failing the test if that
// does not work. It skips the test where mounting is not allowed.
func Mount(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a size-limited tmpfs needs root; CI runs as root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount -t tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
