package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/objstore"
)

// Conformance checks the behaviour objstore.Store promises, the same on
// every backend, against s. Open s with Config.PartSize =
// objstore.MinPartSize so that its large objects go up as multipart uploads
// (VersityGW.Config does). Keys go under a fresh random prefix, so s need
// not be empty, but nothing else should write under "conformance-".
func Conformance(t *testing.T, s objstore.Store) {
	t.Helper()
	c := &conformance{s: s, run: fmt.Sprintf("conformance-%016x", rand.Uint64())}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"PutGet", c.putGet},
		{"RangedGet", c.rangedGet},
		{"SuffixGet", c.suffixGet},
		{"InvalidRange", c.invalidRange},
		{"NotFound", c.notFound},
		{"Overwrite", c.overwrite},
		{"OverwriteWhileReading", c.overwriteWhileReading},
		{"SpecialKeys", c.specialKeys},
		{"InvalidKeys", c.invalidKeys},
		{"List", c.list},
		{"ListPagination", c.listPagination},
		{"Delete", c.delete},
		{"Multipart", c.multipart},
		{"SizeMismatch", c.sizeMismatch},
		{"ReaderError", c.readerError},
		{"ConcurrentPuts", c.concurrentPuts},
		{"CanceledContext", c.canceledContext},
		{"CancelDuringRead", c.cancelDuringRead},
		{"CancelDuringPut", c.cancelDuringPut},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.fn)
	}
}

type conformance struct {
	s   objstore.Store
	run string // prefix of every key
}

// key is a key unique to this run and test.
func (c *conformance) key(t *testing.T, name string) string {
	return c.run + "/" + strings.ReplaceAll(t.Name(), "/", "_") + "/" + name
}

// Data returns n bytes of deterministic pseudo-random data for seed, for
// tests that check bytes round-trip.
func Data(seed string, n int) []byte {
	p := make([]byte, n)
	_, _ = rand.NewChaCha8(sha256.Sum256([]byte(seed))).Read(p)
	return p
}

func (c *conformance) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if err := c.s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

// get reads a range and fails the test on any error.
func (c *conformance) get(t *testing.T, key string, offset, length int64) []byte {
	t.Helper()
	rc, err := c.s.Get(t.Context(), key, offset, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, offset, length, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): reading: %v", key, offset, length, err)
	}
	return got
}

func (c *conformance) suffix(t *testing.T, key string, n int64) ([]byte, int64) {
	t.Helper()
	rc, size, err := c.s.GetSuffix(t.Context(), key, n)
	if err != nil {
		t.Fatalf("GetSuffix(%q, %d): %v", key, n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetSuffix(%q, %d): reading: %v", key, n, err)
	}
	return got, size
}

func (c *conformance) listKeys(t *testing.T, prefix string) []objstore.ObjectInfo {
	t.Helper()
	var infos []objstore.ObjectInfo
	for info, err := range c.s.List(t.Context(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		infos = append(infos, info)
	}
	return infos
}

func keysOf(infos []objstore.ObjectInfo) []string {
	keys := make([]string, len(infos))
	for i, info := range infos {
		keys[i] = info.Key
	}
	return keys
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: got %d bytes, want %d; first difference at byte %d", what, len(got), len(want), i)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func (c *conformance) putGet(t *testing.T) {
	for _, size := range []int{0, 1, 1000, 1<<20 + 7} {
		key := c.key(t, fmt.Sprintf("size-%d", size))
		data := Data(key, size)
		c.put(t, key, data)
		sameBytes(t, key, c.get(t, key, 0, -1), data)
		info, err := c.s.Head(t.Context(), key)
		if err != nil {
			t.Fatalf("Head(%q): %v", key, err)
		}
		if info.Key != key || info.Size != int64(size) || info.ETag == "" || info.LastModified.IsZero() {
			t.Fatalf("Head(%q) = %+v, want key, size %d, an ETag and a time", key, info, size)
		}
	}
}

func (c *conformance) rangedGet(t *testing.T) {
	key := c.key(t, "object")
	data := Data(key, 100_000)
	c.put(t, key, data)
	for _, r := range []struct{ offset, length int64 }{
		{0, 1}, {0, 100}, {99_999, 1}, {12_345, 50_000}, {50_000, 50_000}, {0, 100_000},
		{1, -1}, {99_999, -1}, {40_000, -1}, {0, -1},
	} {
		end := int64(len(data))
		if r.length > 0 {
			end = r.offset + r.length
		}
		sameBytes(t, fmt.Sprintf("Get(%d, %d)", r.offset, r.length), c.get(t, key, r.offset, r.length), data[r.offset:end])
	}
	p := make([]byte, 4096)
	if err := objstore.ReadAt(t.Context(), c.s, key, p, 70_000); err != nil {
		t.Fatalf("ReadAt: %v", err)
	}
	sameBytes(t, "ReadAt", p, data[70_000:74_096])
}

func (c *conformance) suffixGet(t *testing.T) {
	key := c.key(t, "object")
	data := Data(key, 10_000)
	c.put(t, key, data)
	for _, n := range []int64{1, 100, 9_999, 10_000, 10_001, 1 << 30} {
		got, size := c.suffix(t, key, n)
		if size != 10_000 {
			t.Fatalf("GetSuffix(%d) size = %d, want 10000", n, size)
		}
		sameBytes(t, fmt.Sprintf("GetSuffix(%d)", n), got, data[10_000-min(n, 10_000):])
	}
	got, size, err := objstore.ReadSuffix(t.Context(), c.s, key, 64)
	if err != nil || size != 10_000 {
		t.Fatalf("ReadSuffix = %d, %v; want size 10000", size, err)
	}
	sameBytes(t, "ReadSuffix", got, data[10_000-64:])

	empty := c.key(t, "empty")
	c.put(t, empty, nil)
	got, size = c.suffix(t, empty, 100)
	if size != 0 || len(got) != 0 {
		t.Fatalf("GetSuffix of an empty object = %d bytes, size %d; want nothing, size 0", len(got), size)
	}
}

func (c *conformance) invalidRange(t *testing.T) {
	key := c.key(t, "object")
	c.put(t, key, Data(key, 1000))
	empty := c.key(t, "empty")
	c.put(t, empty, nil)
	for _, r := range []struct {
		key            string
		offset, length int64
	}{
		{key, -1, 10}, {key, 0, 0}, {key, 10, 0},
		{key, 999, 2}, {key, 0, 1001}, {key, 500, 501},
		{key, 1000, 1}, {key, 1000, -1}, {key, 5000, 1}, {key, 5000, -1},
		{key, 1 << 62, 1 << 62},
		{empty, 0, 1}, {empty, 1, -1},
	} {
		rc, err := c.s.Get(t.Context(), r.key, r.offset, r.length)
		if err == nil {
			rc.Close()
		}
		wantErr(t, fmt.Sprintf("Get(%d, %d) of %s", r.offset, r.length, r.key), err, objstore.ErrInvalidRange)
	}
	for _, n := range []int64{0, -1} {
		_, _, err := c.s.GetSuffix(t.Context(), key, n)
		wantErr(t, fmt.Sprintf("GetSuffix(%d)", n), err, objstore.ErrInvalidRange)
	}
	if got := c.get(t, empty, 0, -1); len(got) != 0 {
		t.Fatalf("Get(0, -1) of an empty object = %d bytes", len(got))
	}
}

func (c *conformance) notFound(t *testing.T) {
	key := c.key(t, "missing")
	_, err := c.s.Get(t.Context(), key, 0, -1)
	wantErr(t, "Get", err, objstore.ErrNotFound)
	_, err = c.s.Get(t.Context(), key, 10, 10)
	wantErr(t, "ranged Get", err, objstore.ErrNotFound)
	_, _, err = c.s.GetSuffix(t.Context(), key, 10)
	wantErr(t, "GetSuffix", err, objstore.ErrNotFound)
	_, err = c.s.Head(t.Context(), key)
	wantErr(t, "Head", err, objstore.ErrNotFound)
	// Below an object, as if it were a directory.
	parent := c.key(t, "object")
	c.put(t, parent, []byte("x"))
	_, err = c.s.Head(t.Context(), parent+"/child")
	wantErr(t, "Head below an object", err, objstore.ErrNotFound)
	// Above an object, as if the prefix were one.
	c.put(t, c.key(t, "dir/child"), []byte("x"))
	_, err = c.s.Get(t.Context(), c.key(t, "dir"), 0, -1)
	wantErr(t, "Get of a prefix", err, objstore.ErrNotFound)
}

func (c *conformance) overwrite(t *testing.T) {
	key := c.key(t, "object")
	first := Data(key+"1", 3000)
	c.put(t, key, first)
	before, err := c.s.Head(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	second := Data(key+"2", 1234)
	c.put(t, key, second)
	sameBytes(t, "after overwrite", c.get(t, key, 0, -1), second)
	after, err := c.s.Head(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size != 1234 || after.ETag == before.ETag {
		t.Fatalf("Head after overwrite = %+v, before %+v: want size 1234 and a new ETag", after, before)
	}
	if infos := c.listKeys(t, key); len(infos) != 1 || infos[0].Size != 1234 {
		t.Fatalf("List after overwrite = %+v, want one object of 1234 bytes", infos)
	}
}

// overwriteWhileReading: a reader opened before an overwrite sees the old
// object whole, or fails; never a mix or a short read.
func (c *conformance) overwriteWhileReading(t *testing.T) {
	key := c.key(t, "object")
	old := Data(key+"old", 1<<20)
	c.put(t, key, old)
	rc, err := c.s.Get(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	c.put(t, key, Data(key+"new", 1<<20))
	rest, err := io.ReadAll(rc)
	if err != nil {
		return // failing is allowed; mixing is not
	}
	sameBytes(t, "reader across an overwrite", append(head, rest...), old)
}

func (c *conformance) specialKeys(t *testing.T) {
	names := []string{
		"with space/a b",
		"unicode/ü€😀",
		"punctuation/+%=&?#;:@,$!'()*[]{}~^|`\"<>",
		"percent/%2F%00%zz",
		"dots/.hidden",
		"dots/a..b",
		"dots/..x",
		"dots/x..",
	}
	var want []string
	for _, name := range names {
		key := c.key(t, name)
		c.put(t, key, []byte(name))
		sameBytes(t, key, c.get(t, key, 0, -1), []byte(name))
		if _, err := c.s.Head(t.Context(), key); err != nil {
			t.Fatalf("Head(%q): %v", key, err)
		}
		want = append(want, key)
	}
	slices.Sort(want)
	if got := keysOf(c.listKeys(t, c.key(t, ""))); !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

func (c *conformance) invalidKeys(t *testing.T) {
	base := c.key(t, "")
	for _, key := range []string{
		"", "/abs", base + "trailing/", base + "double//slash", base + "../up", base + "a/../b", base + "./here",
		base + ".", base + "..", base + "nul\x00", base + "tab\t", base + "back\\slash", base + "bad-utf8-\xff",
		base + ".strata-tmp-123", base + strings.Repeat("x", 256), base + strings.Repeat("x/", objstore.MaxKeyLength/2) + "x",
	} {
		ctx := t.Context()
		wantErr(t, fmt.Sprintf("Put(%q)", key), c.s.Put(ctx, key, strings.NewReader("x"), 1), objstore.ErrInvalidKey)
		_, err := c.s.Get(ctx, key, 0, -1)
		wantErr(t, fmt.Sprintf("Get(%q)", key), err, objstore.ErrInvalidKey)
		_, _, err = c.s.GetSuffix(ctx, key, 1)
		wantErr(t, fmt.Sprintf("GetSuffix(%q)", key), err, objstore.ErrInvalidKey)
		_, err = c.s.Head(ctx, key)
		wantErr(t, fmt.Sprintf("Head(%q)", key), err, objstore.ErrInvalidKey)
		wantErr(t, fmt.Sprintf("Delete(%q)", key), c.s.Delete(ctx, key), objstore.ErrInvalidKey)
	}
	for _, prefix := range []string{"/abs", base + "double//", "../", base + "../x", base + "a/../"} {
		wantErr(t, fmt.Sprintf("List(%q)", prefix), listErr(t, c.s, prefix), objstore.ErrInvalidKey)
	}
}

// listErr is the error a listing ends with, or nil.
func listErr(t *testing.T, s objstore.Store, prefix string) error {
	for _, err := range s.List(t.Context(), prefix) {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *conformance) list(t *testing.T) {
	// In byte order: '-' < '.' < '/' < 'b'. A walk of directories that
	// sorted "x" before "x-c" or "x.b" would get this wrong.
	names := []string{"p/x-c", "p/x.b", "p/x/y", "p/x/z/w", "p/xb"}
	sizes := map[string]int64{}
	for i, name := range names {
		key := c.key(t, name)
		c.put(t, key, Data(key, 10*i))
		sizes[key] = int64(10 * i)
	}
	c.put(t, c.key(t, "q/other"), []byte("x"))
	c.put(t, c.key(t, "px"), []byte("x"))

	for _, tt := range []struct {
		prefix string
		want   []string
	}{
		{"p/", names},
		{"p/x", names},
		{"p/x/", []string{"p/x/y", "p/x/z/w"}},
		{"p/x.", []string{"p/x.b"}},
		{"p/x/z/w", []string{"p/x/z/w"}},
		{"p/x/z/w/", nil},
		{"p/nothing", nil},
		{"none/", nil},
	} {
		var want []string
		for _, name := range tt.want {
			want = append(want, c.key(t, name))
		}
		infos := c.listKeys(t, c.key(t, tt.prefix))
		if got := keysOf(infos); !slices.Equal(got, want) {
			t.Fatalf("List(%q) = %q, want %q", tt.prefix, got, want)
		}
		for _, info := range infos {
			if info.Size != sizes[info.Key] || info.ETag == "" || info.LastModified.IsZero() {
				t.Fatalf("List(%q) gave %+v, want size %d, an ETag and a time", tt.prefix, info, sizes[info.Key])
			}
		}
	}
	// A consumer may stop early.
	n := 0
	for _, err := range c.s.List(t.Context(), c.key(t, "p/")) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("early stop after %d objects, want 2", n)
	}
}

// listPagination lists more keys than one S3 page (1000) holds.
func (c *conformance) listPagination(t *testing.T) {
	const count = 1100
	var want []string
	for i := range count {
		want = append(want, c.key(t, fmt.Sprintf("%05d", i)))
	}
	parallel(t, 16, count, func(i int) error {
		return c.s.Put(t.Context(), want[i], strings.NewReader(want[i]), int64(len(want[i])))
	})
	if got := keysOf(c.listKeys(t, c.key(t, ""))); !slices.Equal(got, want) {
		t.Fatalf("List of %d keys returned %d; first difference at %d", count, len(got), firstDifference(got, want))
	}
	// A prefix whose keys straddle the first page's end.
	if got := keysOf(c.listKeys(t, c.key(t, "009"))); !slices.Equal(got, want[900:1000]) {
		t.Fatalf("List of the prefix 009 returned %d keys, want 100", len(got))
	}
}

func firstDifference(a, b []string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func (c *conformance) delete(t *testing.T) {
	key := c.key(t, "nested/dir/object")
	c.put(t, key, []byte("data"))
	for i := range 2 { // the second delete finds nothing
		if err := c.s.Delete(t.Context(), key); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	_, err := c.s.Get(t.Context(), key, 0, -1)
	wantErr(t, "Get after Delete", err, objstore.ErrNotFound)
	_, err = c.s.Head(t.Context(), key)
	wantErr(t, "Head after Delete", err, objstore.ErrNotFound)
	if infos := c.listKeys(t, c.key(t, "")); len(infos) != 0 {
		t.Fatalf("List after Delete = %+v, want nothing", infos)
	}
	if err := c.s.Delete(t.Context(), c.key(t, "never/was")); err != nil {
		t.Fatalf("Delete of a key never written: %v", err)
	}
	// The key's directory can be used again.
	c.put(t, key, []byte("again"))
	sameBytes(t, "after re-put", c.get(t, key, 0, -1), []byte("again"))
}

func (c *conformance) multipart(t *testing.T) {
	key := c.key(t, "large")
	const size = 3*objstore.MinPartSize + 1<<20 + 3
	data := Data(key, size)
	c.put(t, key, data)
	info, err := c.s.Head(t.Context(), key)
	if err != nil || info.Size != size {
		t.Fatalf("Head = %+v, %v; want size %d", info, err, size)
	}
	sameBytes(t, "whole", c.get(t, key, 0, -1), data)
	sameBytes(t, "across a part boundary", c.get(t, key, objstore.MinPartSize-10, 20), data[objstore.MinPartSize-10:objstore.MinPartSize+10])
	got, n := c.suffix(t, key, 100)
	if n != size {
		t.Fatalf("GetSuffix size = %d, want %d", n, size)
	}
	sameBytes(t, "suffix", got, data[size-100:])
}

// sizeMismatch: a reader longer or shorter than declared stores nothing,
// and leaves an object already there untouched.
func (c *conformance) sizeMismatch(t *testing.T) {
	const large = 2*objstore.MinPartSize + 1
	for _, tt := range []struct {
		name       string
		size, have int
	}{
		{"short", 100, 50},
		{"long", 50, 100},
		{"empty-declared", 0, 1},
		{"short-multipart", large, objstore.MinPartSize + 5},
		{"long-multipart", large, large + 1},
	} {
		fresh := c.key(t, tt.name+"-fresh")
		err := c.s.Put(t.Context(), fresh, bytes.NewReader(Data(fresh, tt.have)), int64(tt.size))
		wantErr(t, tt.name, err, objstore.ErrSizeMismatch)
		_, err = c.s.Head(t.Context(), fresh)
		wantErr(t, tt.name+": Head after the failed Put", err, objstore.ErrNotFound)

		existing := c.key(t, tt.name+"-existing")
		old := Data(existing, 777)
		c.put(t, existing, old)
		err = c.s.Put(t.Context(), existing, bytes.NewReader(Data(fresh, tt.have)), int64(tt.size))
		wantErr(t, tt.name+" over an object", err, objstore.ErrSizeMismatch)
		sameBytes(t, tt.name+": object after the failed Put", c.get(t, existing, 0, -1), old)
	}
	err := c.s.Put(t.Context(), c.key(t, "negative"), strings.NewReader(""), -1)
	wantErr(t, "negative size", err, objstore.ErrSizeMismatch)
}

var errReader = errors.New("objstoretest: reader failed")

// failingReader yields n bytes of zeros, then errReader.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errReader
	}
	n := min(len(p), r.n)
	clear(p[:n])
	r.n -= n
	return n, nil
}

func (c *conformance) readerError(t *testing.T) {
	for _, tt := range []struct {
		name     string
		size, ok int
	}{
		{"single", 1000, 500},
		{"multipart", 3 * objstore.MinPartSize, 2*objstore.MinPartSize + 10},
	} {
		key := c.key(t, tt.name)
		old := Data(key, 100)
		c.put(t, key, old)
		err := c.s.Put(t.Context(), key, &failingReader{n: tt.ok}, int64(tt.size))
		wantErr(t, tt.name, err, errReader)
		sameBytes(t, tt.name+": object after the failed Put", c.get(t, key, 0, -1), old)
	}
}

func (c *conformance) concurrentPuts(t *testing.T) {
	const count = 32
	keys := make([]string, count)
	for i := range keys {
		keys[i] = c.key(t, fmt.Sprintf("object-%d", i))
	}
	size := func(i int) int { return 1000 + i*7919 }
	parallel(t, count, count, func(i int) error {
		data := Data(keys[i], size(i))
		return c.s.Put(t.Context(), keys[i], bytes.NewReader(data), int64(len(data)))
	})
	for i, key := range keys {
		sameBytes(t, key, c.get(t, key, 0, -1), Data(key, size(i)))
	}
}

func (c *conformance) canceledContext(t *testing.T) {
	key := c.key(t, "object")
	c.put(t, key, []byte("data"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	wantErr(t, "Put", c.s.Put(ctx, c.key(t, "new"), strings.NewReader("data"), 4), context.Canceled)
	_, err := c.s.Get(ctx, key, 0, -1)
	wantErr(t, "Get", err, context.Canceled)
	_, _, err = c.s.GetSuffix(ctx, key, 2)
	wantErr(t, "GetSuffix", err, context.Canceled)
	_, err = c.s.Head(ctx, key)
	wantErr(t, "Head", err, context.Canceled)
	wantErr(t, "Delete", c.s.Delete(ctx, key), context.Canceled)
	var listErr error
	for _, err := range c.s.List(ctx, c.key(t, "")) {
		listErr = err
	}
	wantErr(t, "List", listErr, context.Canceled)
	if _, err := c.s.Head(t.Context(), c.key(t, "new")); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Head of the canceled Put's key: %v, want not found", err)
	}
	sameBytes(t, "object after canceled Delete", c.get(t, key, 0, -1), []byte("data"))
}

// cancelDuringRead: cancelling a Get's context fails its reader, never
// ends it early with io.EOF.
func (c *conformance) cancelDuringRead(t *testing.T) {
	key := c.key(t, "object")
	c.put(t, key, Data(key, 4<<20))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rc, err := c.s.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	n, err := io.Copy(io.Discard, rc)
	if err == nil {
		t.Fatalf("read %d more bytes and no error after cancel, want an error", n)
	}
}

// blockingReader yields n bytes, then blocks until release, then yields
// the rest as if nothing happened.
type blockingReader struct {
	r       io.Reader
	n       int
	blocked chan struct{}
	release <-chan struct{}
}

func (b *blockingReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		close(b.blocked)
		<-b.release
		b.n = -1
	}
	if b.n > 0 {
		p = p[:min(len(p), b.n)]
	}
	n, err := b.r.Read(p)
	if b.n > 0 {
		b.n -= n
	}
	return n, err
}

// cancelDuringPut: a Put whose context ends while it reads stores nothing,
// even though its reader then goes on to deliver every byte.
func (c *conformance) cancelDuringPut(t *testing.T) {
	for _, size := range []int{100_000, 2*objstore.MinPartSize + 1} {
		key := c.key(t, fmt.Sprintf("size-%d", size))
		ctx, cancel := context.WithCancel(t.Context())
		release := make(chan struct{})
		r := &blockingReader{r: bytes.NewReader(Data(key, size)), n: size / 2, blocked: make(chan struct{}), release: release}
		go func() {
			<-r.blocked
			cancel()
			close(release)
		}()
		err := c.s.Put(ctx, key, r, int64(size))
		cancel()
		wantErr(t, "Put", err, context.Canceled)
		_, err = c.s.Head(t.Context(), key)
		wantErr(t, "Head after the canceled Put", err, objstore.ErrNotFound)
	}
}

// parallel runs fn(0..count-1) on workers goroutines and fails the test on
// the first error.
func parallel(t *testing.T, workers, count int, fn func(i int) error) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		errs []error
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= count {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("#%d: %w", i, err))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
}
