package smallfs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTmpfsFillsUp writes into a 1 MiB mount until the file system
// refuses: the refusal is ENOSPC, after about 1 MiB and not before.
func TestTmpfsFillsUp(t *testing.T) {
	t.Parallel()
	if written := fill(t, Tmpfs(t, "1m")); written < 1<<20-64<<10 || written > 1<<20 {
		t.Fatalf("the 1 MiB file system took %d bytes", written)
	}
}

// TestExt4FillsUp: the same for a 16 MiB ext4 (its metadata and journal
// take a few MiB of it), which is ext4.
func TestExt4FillsUp(t *testing.T) {
	t.Parallel()
	dir := Ext4(t, "16M")
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.EXT4_SUPER_MAGIC {
		t.Fatalf("file system type %#x, want ext4", st.Type)
	}
	if written := fill(t, dir); written < 8<<20 || written > 16<<20 {
		t.Fatalf("the 16 MiB file system took %d bytes", written)
	}
}

// fill writes a file into dir until ENOSPC and returns how much went in.
func fill(t *testing.T, dir string) int {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	written := 0
	page := make([]byte, 4096)
	for written < 64<<20 {
		n, err := f.Write(page)
		written += n
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("after %d bytes: %v, want ENOSPC", written, err)
			}
			return written
		}
	}
	t.Fatalf("%d bytes went in without ENOSPC", written)
	return written
}

// childEnv marks the process TestWithoutRoot starts.
const childEnv = "STRATA_SMALLFS_TEST_CHILD"

// TestMountInChild is the test TestWithoutRoot runs in a child process
// that cannot mount; run on its own, it has nothing to do.
func TestMountInChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestWithoutRoot in a child process without root")
	}
	Tmpfs(t, "1m")
	t.Log("MOUNTED")
}

// TestWithoutRoot runs TestMountInChild in a process that cannot mount
// (as nobody, when this one is root): a full run fails and says how to
// run it; a -short run skips and says why. It is not parallel: a fork
// elsewhere in the process while the copied binary is open for writing
// would hold that descriptor and make the exec fail with ETXTBSY.
func TestWithoutRoot(t *testing.T) {
	binary := childBinary(t)
	for _, c := range []struct {
		short    bool
		wantFail bool
		wantLine string
	}{
		{short: false, wantFail: true, wantLine: "Run the tests as root"},
		{short: true, wantFail: false, wantLine: "SKIPPED, -short: this disk-full test needs a size-limited tmpfs"},
	} {
		args := []string{"-test.run=^TestMountInChild$", "-test.v", "-test.count=1"}
		if c.short {
			args = append(args, "-test.short")
		}
		cmd := exec.Command(binary, args...)
		cmd.Dir = filepath.Dir(binary)
		cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+filepath.Dir(binary))
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("short=%v: starting the child: %v", c.short, err)
		}
		if failed := err != nil; failed != c.wantFail {
			t.Errorf("short=%v: child failed=%v, want %v:\n%s", c.short, failed, c.wantFail, out)
		}
		if !strings.Contains(string(out), c.wantLine) || strings.Contains(string(out), "MOUNTED") {
			t.Errorf("short=%v: child output lacks %q (or it mounted):\n%s", c.short, c.wantLine, out)
		}
	}
}

// childBinary copies this test binary into a directory where another user
// can run it and make temporary files (the go tool's build directory is
// private to the user who built it).
func childBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "smallfs-child-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "smallfs.test")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
