package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// openFileStore opens a file:// store in a fresh directory.
func openFileStore(t *testing.T) (*fileStore, string) {
	t.Helper()
	dir := t.TempDir()
	return openFileStoreAt(t, dir), dir
}

// openFileStoreAt opens a file:// store in dir, closed with the test.
func openFileStoreAt(t *testing.T, dir string) *fileStore {
	t.Helper()
	s, err := Open(t.Context(), "file://"+dir, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*fileStore)
}

// Every size reads back as written, by either way of writing: sizes
// around the alignment O_DIRECT wants and around a chunk, where the
// object's last bytes take the buffered write.
func TestFilePutSizes(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, directAlign - 1, directAlign, directAlign + 1, directChunk - 1, directChunk, directChunk + 1, 3*directChunk + 5000}
	for _, buffered := range []bool{false, true} {
		t.Run(fmt.Sprintf("buffered=%v", buffered), func(t *testing.T) {
			t.Parallel()
			s, dir := openFileStore(t)
			s.buffered.Store(buffered)
			for _, size := range sizes {
				want := make([]byte, size)
				for i := range want {
					want[i] = byte(rand.Uint32())
				}
				key := fmt.Sprintf("p/%d", size)
				if err := s.Put(t.Context(), key, bytes.NewReader(want), int64(size)); err != nil {
					t.Fatalf("Put %d bytes: %v", size, err)
				}
				got, err := os.ReadFile(filepath.Join(dir, key))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%d bytes put, %d read back (%v), equal %v", size, len(got), err, bytes.Equal(got, want))
				}
			}
		})
	}
}

// A reader that ends early or runs long fails the Put on the direct path
// too, leaving no object.
func TestFilePutDirectSizeMismatch(t *testing.T) {
	t.Parallel()
	s, dir := openFileStore(t)
	for _, tc := range []struct{ have, size int }{{directChunk + 10, directChunk + 11}, {directChunk, directChunk - 1}, {0, 1}} {
		err := s.Put(t.Context(), "p/o", bytes.NewReader(make([]byte, tc.have)), int64(tc.size))
		if !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("%d bytes for a size of %d: %v, want ErrSizeMismatch", tc.have, tc.size, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "p", "o")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("object after failed Puts: %v", err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "p"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("left in the directory: %v", entries)
	}
}

// An object put by the direct path does not sit in the page cache: the
// kernel (cachestat) holds at most the page of its last bytes, where a
// buffered write would leave every page cached after writeback.
func TestFilePutBypassesPageCache(t *testing.T) {
	t.Parallel()
	s, dir := openFileStore(t)
	const size = 5*directChunk + 100
	if err := s.Put(t.Context(), "p/o", bytes.NewReader(bytes.Repeat([]byte{0x5a}, size)), size); err != nil {
		t.Fatal(err)
	}
	if s.buffered.Load() {
		t.Skipf("SKIPPED: the file system of %s refuses O_DIRECT; objects are written through the page cache there", dir)
	}
	var fsStat unix.Statfs_t
	if err := unix.Statfs(dir, &fsStat); err != nil {
		t.Fatal(err)
	}
	if fsStat.Type == unix.TMPFS_MAGIC {
		t.Skipf("SKIPPED: %s is on a tmpfs, whose page cache is its storage; set TMPDIR to a disk's file system", dir)
	}
	f, err := os.Open(filepath.Join(dir, "p", "o"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Cachestat_t
	err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: size}, &st, 0)
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("SKIPPED: cachestat(2) needs Linux 6.5; nothing else tells a file's cached pages")
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Cache > 1 {
		t.Fatalf("%d of the object's %d pages in the page cache after Put, want at most its last", st.Cache, size/os.Getpagesize()+1)
	}
}

// On a file system that refuses O_DIRECT at open (ramfs, mounted here for
// the test), the first Put falls back to the page cache and succeeds, and
// every later one writes there: objects read back whole and no temporary
// file is left behind.
func TestFilePutWithoutDirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := unix.Mount("ramfs", dir, "ramfs", 0, "")
	if errors.Is(err, unix.EPERM) {
		t.Skipf("SKIPPED: mounting a ramfs (a file system without O_DIRECT) needs CAP_SYS_ADMIN (root): %v", err)
	}
	if err != nil {
		t.Fatalf("mounting a ramfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the ramfs at %s: %v", dir, err)
		}
	})
	s := openFileStoreAt(t, dir)
	for i, size := range []int{directChunk + 1, directAlign, 0} {
		want := bytes.Repeat([]byte{byte(i + 1)}, size)
		key := fmt.Sprintf("p/%d", size)
		if err := s.Put(t.Context(), key, bytes.NewReader(want), int64(size)); err != nil {
			t.Fatalf("Put %d bytes on a ramfs: %v", size, err)
		}
		if !s.buffered.Load() {
			t.Fatal("the store still opens objects with O_DIRECT after the ramfs refused it")
		}
		got, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes put, %d read back (%v)", size, len(got), err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("directory holds %v, want the three objects and no temporary file", entries)
	}
}

// TestFilePutSyncsDirectoriesItFinds: a Put whose directories another
// writer made (here, by hand; in the broker, a concurrent Put not done
// with its fsyncs) syncs their entries into their parents itself before it
// reports the object written, once while the store knows them; a
// directory pruned and made again is synced again.
func TestFilePutSyncsDirectoriesItFinds(t *testing.T) {
	t.Parallel()
	s, dir := openFileStore(t)
	var mu sync.Mutex
	synced := map[string]int{}
	s.synced = func(dir string) {
		mu.Lock()
		synced[dir]++
		mu.Unlock()
	}
	if err := os.MkdirAll(filepath.Join(dir, "t", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		t.Helper()
		if err := s.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	put("t/0/one")
	put("t/0/two")
	mu.Lock()
	got := maps.Clone(synced)
	mu.Unlock()
	// "." holds t's entry, t holds 0's; t/0 is synced by each Put for its
	// object's entry.
	if got["."] != 1 || got["t"] != 1 || got["t/0"] != 2 {
		t.Fatalf("directories synced %v, want . and t once, t/0 once a Put", got)
	}
	for _, key := range []string{"t/0/one", "t/0/two"} {
		if err := s.Delete(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	put("t/0/three")
	mu.Lock()
	defer mu.Unlock()
	if synced["."] != 2 || synced["t"] != 2 {
		t.Fatalf("after the directories were pruned and made again: synced %v, want . and t twice", synced)
	}
}
