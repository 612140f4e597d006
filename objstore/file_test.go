package objstore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/objstore"
)

// Keys become paths below the directory, one directory per component.
func TestFileLayout(t *testing.T) {
	t.Parallel()
	s, dir := openFile(t)
	if err := s.Put(t.Context(), "topic-0/3/seg", strings.NewReader("data"), 4); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "topic-0", "3", "seg"))
	if err != nil || string(got) != "data" {
		t.Fatalf("file = %q, %v; want \"data\"", got, err)
	}
	assertNoTempFiles(t, dir)
}

// Open makes the directory, parents included.
func TestFileOpenCreatesDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := objstore.Open(t.Context(), "file://"+dir, objstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("store directory: %v", err)
	}
}

// A crash mid-Put leaves a temporary file, which no listing or read shows.
func TestFileSkipsLeftoverTempFiles(t *testing.T) {
	t.Parallel()
	s, dir := openFile(t)
	if err := s.Put(t.Context(), "p/object", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", ".strata-tmp-0123456789abcdef"), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for info, err := range s.List(t.Context(), "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	if len(keys) != 1 || keys[0] != "p/object" {
		t.Fatalf("List = %q, want only p/object", keys)
	}
}

// Delete removes the directories it empties, up to the store's own.
func TestFileDeletePrunesDirectories(t *testing.T) {
	t.Parallel()
	s, dir := openFile(t)
	for _, key := range []string{"a/b/c/one", "a/two"} {
		if err := s.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(t.Context(), "a/b/c/one"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a/b after its last object went: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "two")); err != nil {
		t.Fatalf("a/two: %v", err)
	}
	if err := s.Delete(t.Context(), "a/two"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the store's directory went too: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("store directory holds %d entries after every delete", len(entries))
	}
}

// On file:// a key cannot be both an object and a directory of objects;
// the second Put fails cleanly and the first object is intact.
func TestFileKeyAndDirectoryConflict(t *testing.T) {
	t.Parallel()
	s, _ := openFile(t)
	if err := s.Put(t.Context(), "a", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "a/b", strings.NewReader("y"), 1); err == nil {
		t.Fatal("Put of a/b over the object a succeeded")
	}
	if err := s.Put(t.Context(), "c/d", strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "c", strings.NewReader("x"), 1); err == nil {
		t.Fatal("Put of c over the directory c succeeded")
	}
	if err := s.Delete(t.Context(), "c"); err != nil {
		t.Fatalf("Delete of a directory's name: %v, want nil (no object there)", err)
	}
	if info, err := s.Head(t.Context(), "c/d"); err != nil || info.Size != 1 {
		t.Fatalf("c/d after the conflicts: %+v, %v", info, err)
	}
}

// No key reaches outside the store's directory, not even through a
// symlink planted inside it.
func TestFileStaysInsideRoot(t *testing.T) {
	t.Parallel()
	s, dir := openFile(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "link/secret", 0, -1); err == nil {
		t.Fatal("Get through a symlink out of the store succeeded")
	}
	if err := s.Put(t.Context(), "link/planted", bytes.NewReader([]byte("x")), 1); err == nil {
		t.Fatal("Put through a symlink out of the store succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file appeared outside the store: %v", err)
	}
	for info, err := range s.List(t.Context(), "") {
		if err == nil && strings.Contains(info.Key, "secret") {
			t.Fatalf("List showed %q from outside the store", info.Key)
		}
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".strata-") {
			t.Errorf("temporary file left: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
