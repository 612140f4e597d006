package objstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileStore keeps each object as a file under one directory, the key's
// '/'-separated components becoming subdirectories. All access goes through
// an os.Root, so no key, symlink or race can reach outside the directory.
//
// A Put writes a temporary file (named with reservedPrefix) in the target's
// directory, with O_DIRECT where the file system has it (direct.go), else
// writing it out to disk as it goes (writeback.go), fsyncs it,
// renames it over the target and fsyncs the directory, so a reader sees the
// old object or the new one, and a crash leaves at most a stray temporary
// file, which List skips. A Delete prunes directories it leaves empty.
//
// A key cannot be both an object and a directory of other objects here ("a"
// and "a/b"), as it can on S3; Put fails for the second one.
type fileStore struct {
	root *os.Root
	dir  string
	log  *slog.Logger
	// buffered is set once the file system refused O_DIRECT: objects are
	// written through the page cache from then on.
	buffered atomic.Bool
	// durable holds the directories whose entries this store has synced
	// into their parents (mkdirs), so that each is synced once while it
	// lasts; prune forgets the ones it removes.
	durable sync.Map
	// synced, if set, is told each directory syncDir synced (tests).
	synced func(dir string)
}

// createAttempts bounds how often Put recreates a directory that a
// concurrent Delete pruned between Put's mkdir and its create.
const createAttempts = 8

func openFile(ctx context.Context, loc location, cfg Config) (Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(loc.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: creating store directory: %w", err)
	}
	root, err := os.OpenRoot(loc.Dir)
	if err != nil {
		return nil, fmt.Errorf("objstore: opening store directory: %w", err)
	}
	return &fileStore{root: root, dir: loc.Dir, log: cfg.logger()}, nil
}

func (s *fileStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("%w: negative size %d", ErrSizeMismatch, size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := path.Dir(key)
	tmp, f, direct, err := s.createTemp(dir)
	if err != nil {
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	if err := s.writeTemp(ctx, f, r, size, direct); err != nil {
		s.removeTemp(tmp)
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	if err := s.root.Rename(tmp, key); err != nil {
		s.removeTemp(tmp)
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	if err := s.syncDir(dir); err != nil {
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	return nil
}

// createTemp creates a fresh temporary file in dir, creating dir (durably)
// as needed, opened with O_DIRECT (direct) unless the file system refused
// it.
func (s *fileStore) createTemp(dir string) (tmp string, f *os.File, direct bool, err error) {
	var lastErr error
	for range createAttempts {
		if err := s.mkdirs(dir); err != nil {
			return "", nil, false, err
		}
		var random [8]byte
		_, _ = rand.Read(random[:])
		tmp := path.Join(dir, reservedPrefix+"tmp-"+hex.EncodeToString(random[:]))
		direct := !s.buffered.Load()
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if direct {
			flags |= unix.O_DIRECT
		}
		f, err := s.root.OpenFile(tmp, flags, 0o644)
		switch {
		case direct && errors.Is(err, unix.EINVAL):
			// The file system has no O_DIRECT; the file may exist by now.
			s.removeTemp(tmp)
			s.writeBuffered("the file system refuses O_DIRECT")
			lastErr = err
			continue
		case direct && err == nil && !directAligned(f):
			if err = clearDirect(f); err != nil {
				_ = f.Close()
				s.removeTemp(tmp)
				return "", nil, false, err
			}
			s.writeBuffered("the file system wants O_DIRECT writes aligned on more than 4 KiB")
			direct = false
		}
		if err == nil {
			return tmp, f, direct, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, false, err
		}
		lastErr = err // a concurrent Delete pruned dir: make it again
	}
	return "", nil, false, lastErr
}

// writeBuffered makes every later Put write through the page cache, saying
// why once.
func (s *fileStore) writeBuffered(why string) {
	if !s.buffered.Swap(true) {
		s.log.Info("objstore: "+why+"; objects are written through the page cache", "dir", s.dir)
	}
}

// putCopyBuffer is how much of a Put's reader writeTemp copies at a time
// where objects are written through the page cache:
// io.CopyN's 32 KiB took a read and a write for every 32 KiB of an upload,
// which cost more CPU a byte (offload.BenchmarkUploadCPU). A smaller object
// gets a buffer of its size.
const putCopyBuffer = 256 << 10

// writeTemp writes the object's size bytes from r into f, opened with
// O_DIRECT if direct, and fsyncs it.
func (s *fileStore) writeTemp(ctx context.Context, f *os.File, r io.Reader, size int64, direct bool) error {
	var n int64
	var err error
	if direct {
		n, err = copyDirect(f, ctxReader{ctx, r}, size)
		if errors.Is(err, unix.EINVAL) {
			// A write the file system refused though it opened the file
			// with O_DIRECT: this Put fails, and its retry goes through
			// the page cache.
			s.writeBuffered("the file system refused an O_DIRECT write")
		}
	} else {
		n, err = io.CopyBuffer(&writebackWriter{f: f}, io.LimitReader(ctxReader{ctx, r}, size), make([]byte, max(1, min(size, putCopyBuffer))))
	}
	if err == nil && n < size {
		err = fmt.Errorf("%w: reader ended after %d bytes, size is %d", ErrSizeMismatch, n, size)
	}
	if err == nil {
		err = checkDrained(r, size)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *fileStore) removeTemp(tmp string) {
	if err := s.root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("objstore: cannot remove temporary file", "dir", s.dir, "file", tmp, "err", err)
	}
}

// mkdirs creates dir and its missing parents and fsyncs each parent
// whose entry for the next is not known durable, so that the directories
// survive a crash. A directory found already there is synced too: a
// concurrent Put may have made it and not yet synced its parent, and an
// object this Put reports written must not depend on that.
func (s *fileStore) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	if _, ok := s.durable.Load(dir); ok {
		if fi, err := s.root.Stat(dir); err == nil && fi.IsDir() {
			return nil
		}
	}
	parent := "."
	for component := range strings.SplitSeq(dir, "/") {
		next := path.Join(parent, component)
		err := s.root.Mkdir(next, 0o755)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if _, known := s.durable.Load(next); err == nil || !known {
			if err := s.syncDir(parent); err != nil {
				return err
			}
			s.durable.Store(next, struct{}{})
		}
		parent = next
	}
	return nil
}

func (s *fileStore) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err == nil && s.synced != nil {
		s.synced(dir)
	}
	return err
}

// open opens the object at key for reading, with its size.
func (s *fileStore) open(ctx context.Context, op, key string) (*os.File, fs.FileInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f, err := s.root.Open(key)
	if err != nil {
		return nil, nil, fileError(op, key, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fileError(op, key, err)
	}
	return f, fi, nil
}

func (s *fileStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := checkRangeArgs(offset, length); err != nil {
		return nil, err
	}
	f, fi, err := s.open(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	n, err := rangeLength(offset, length, fi.Size())
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("objstore: get %q: %w", key, err)
	}
	return s.reader(ctx, f, key, offset, n), nil
}

func (s *fileStore) GetSuffix(ctx context.Context, key string, n int64) (io.ReadCloser, int64, error) {
	if n <= 0 {
		return nil, 0, fmt.Errorf("%w: suffix length %d is not positive", ErrInvalidRange, n)
	}
	f, fi, err := s.open(ctx, "get", key)
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	n = min(n, size)
	return s.reader(ctx, f, key, size-n, n), size, nil
}

// reader reads n bytes of f from offset, until ctx is done.
func (s *fileStore) reader(ctx context.Context, f *os.File, key string, offset, n int64) io.ReadCloser {
	return newExactBody(ctx, struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, offset, n), f}, key, n)
}

func (s *fileStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	fi, err := s.root.Stat(key)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return ObjectInfo{}, fileError("head", key, err)
	}
	return fileInfo(key, fi), nil
}

// fileInfo describes the object a file holds. The ETag joins the inode
// (new for every Put, which renames a new file in), size and modification
// time.
func fileInfo(key string, fi fs.FileInfo) ObjectInfo {
	etag := strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		etag = strconv.FormatUint(st.Ino, 16) + "-" + etag
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ETag: etag, LastModified: fi.ModTime()}
}

func (s *fileStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := checkPrefix(prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		dir, name := splitPrefix(prefix)
		if dir == "" {
			dir = "."
		}
		if _, err := s.walk(ctx, dir, name, yield); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("objstore: list %q: %w", prefix, err))
		}
	}
}

// walk yields the objects below dir whose first path component (below dir)
// starts with name, in key order, and reports whether to go on. Entries are
// visited in the order of their name with '/' appended to directories,
// which is the order of the keys below them.
func (s *fileStore) walk(ctx context.Context, dir, name string, yield func(ObjectInfo, error) bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	d, err := s.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return true, nil // nothing below, or pruned while we walked
	}
	if err != nil {
		return false, err
	}
	entries, err := d.ReadDir(-1)
	_ = d.Close()
	if errors.Is(err, syscall.ENOTDIR) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	sortName := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(sortName(a), sortName(b)) })
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), name) || strings.HasPrefix(e.Name(), reservedPrefix) {
			continue
		}
		key := e.Name()
		if dir != "." {
			key = dir + "/" + key
		}
		switch {
		case e.IsDir():
			more, err := s.walk(ctx, key, "", yield)
			if !more || err != nil {
				return more, err
			}
		case e.Type().IsRegular():
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while we walked
			}
			if err != nil {
				return false, err
			}
			if !yield(fileInfo(key, fi), nil) {
				return false, nil
			}
		}
	}
	return true, nil
}

func (s *fileStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := s.root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || (err == nil && fi.IsDir()) {
		return nil
	}
	if err == nil {
		err = s.root.Remove(key)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: delete %q: %w", key, err)
	}
	dir := path.Dir(key)
	if err := s.syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: delete %q: %w", key, err)
	}
	s.prune(dir)
	return nil
}

// prune removes dir and its parents while they are empty. It is best
// effort: a directory a concurrent Put is filling is not empty, and a Put
// whose directory vanishes makes it again.
func (s *fileStore) prune(dir string) {
	for dir != "." {
		// Forgotten first: a Put that makes it again once removed must
		// sync it into its parent, and one that finds it so made too.
		s.durable.Delete(dir)
		if err := s.root.Remove(dir); err != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

func (s *fileStore) Close() error { return s.root.Close() }

// fileError maps a file system error to the package's errors. A missing
// file, or a path through a file ("a/b" when "a" is an object), is not
// found.
func fileError(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s %q", ErrNotFound, op, key)
	}
	return fmt.Errorf("objstore: %s %q: %w", op, key, err)
}
