package objstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A file system that opens a file with O_DIRECT and then refuses its
// writes with EINVAL (no local file system here does; some FUSE and
// network ones do): the Put that meets the refusal fails and leaves no
// file behind, and from then on the store writes through the page cache,
// so the same Put again, and every later one, succeeds. The file system is
// a FUSE loopback over a temporary directory (refusingDirectWrites).
func TestFilePutAfterADirectWriteIsRefused(t *testing.T) {
	t.Parallel()
	backing, dir := t.TempDir(), t.TempDir()
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		t.Fatal(err)
	}
	server, err := fs.Mount(dir, &refusingDirectWrites{root.(*fs.LoopbackNode)}, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMountStrict: true, Name: "strata-objstore-test"},
	})
	switch {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		t.Skipf("SKIPPED: mounting a FUSE file system needs CAP_SYS_ADMIN (root): %v", err)
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENODEV):
		t.Skipf("SKIPPED: this machine has no FUSE (/dev/fuse, the fuse module): %v", err)
	}
	if err != nil {
		t.Fatalf("mounting a FUSE file system at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			t.Errorf("unmounting the FUSE file system at %s: %v", dir, err)
		}
	})
	s := openFileStoreAt(t, dir)
	want := bytes.Repeat([]byte{7}, directChunk+directAlign+1)
	err = s.Put(t.Context(), "p/first", bytes.NewReader(want), int64(len(want)))
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("the Put whose O_DIRECT write was refused returned %v, want EINVAL", err)
	}
	if !s.buffered.Load() {
		t.Fatal("the store still opens objects with O_DIRECT after a write with it was refused")
	}
	for _, key := range []string{"p/first", "p/second"} {
		if err := s.Put(t.Context(), key, bytes.NewReader(want), int64(len(want))); err != nil {
			t.Fatalf("Put %s after O_DIRECT was refused: %v", key, err)
		}
		got, err := os.ReadFile(filepath.Join(backing, key))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes put, %d read back (%v)", key, len(want), len(got), err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(backing, "p"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("directory holds %v, want the two objects and no temporary file", entries)
	}
}

// refusingDirectWrites is a loopback file system whose files, when
// created with O_DIRECT, refuse every write with EINVAL.
type refusingDirectWrites struct{ *fs.LoopbackNode }

// WrapChild makes every node under the root refuse as it does.
func (n *refusingDirectWrites) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &refusingDirectWrites{ops.(*fs.LoopbackNode)}
}

func (n *refusingDirectWrites) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	// The backing file opens without O_DIRECT, which the directory under
	// the mount (TMPDIR's file system) may itself refuse: the refusal
	// here is this file system's, at the write.
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_DIRECT, mode, out)
	if errno == 0 && flags&syscall.O_DIRECT != 0 {
		fh = refusedWrites{fh.(loopbackFile)}
	}
	return inode, fh, fuseFlags, errno
}

// loopbackFile is the methods of a loopback file handle that
// refusedWrites forwards: those the store's Put, Get and Stat reach. It
// leaves out FilePassthroughFder on purpose: with FUSE passthrough the
// kernel would write to the backing file without asking Write.
type loopbackFile interface {
	fs.FileReader
	fs.FileWriter
	fs.FileFlusher
	fs.FileReleaser
	fs.FileFsyncer
	fs.FileGetattrer
	fs.FileSetattrer
	fs.FileAllocater
	fs.FileLseeker
}

var _ loopbackFile = (*fs.LoopbackFile)(nil)

// refusedWrites is a loopback file handle that refuses every write.
type refusedWrites struct{ loopbackFile }

func (refusedWrites) Write(context.Context, []byte, int64) (uint32, syscall.Errno) {
	return 0, syscall.EINVAL
}
