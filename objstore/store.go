package objstore

import (
	"context"
	"io"
	"iter"
	"time"
)

// Store is a flat namespace of immutable objects in one bucket (or one
// directory) under one prefix. Every method is safe for concurrent use.
// Every method takes a context: its deadline is the call's only timeout,
// and cancelling it ends the call, including a reader Get returned. Stores
// never retry a failed request; callers own retries and backoff.
type Store interface {
	// Put stores exactly size bytes from r under key, replacing any object
	// there. It is all or nothing: until Put returns nil no reader sees the
	// new object, and on error the previous object, if any, is untouched.
	// Objects larger than Config.PartSize go up as a multipart upload,
	// which is aborted if any part fails. If r yields more or fewer than
	// size bytes, Put fails with ErrSizeMismatch.
	Put(ctx context.Context, key string, r io.Reader, size int64) error

	// Get returns a reader of length bytes of the object at key from
	// offset, or of everything from offset to the end when length is
	// negative. The range must lie within the object: offset must be
	// below the object's size (or zero, for a whole-object read), and
	// offset+length must not pass its end; otherwise Get fails with
	// ErrInvalidRange. A length of zero is ErrInvalidRange too. The reader
	// yields exactly the requested bytes of one version of the object, or
	// an error: never a short read that ends in io.EOF. Once ctx is done,
	// every read fails. Close it.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// GetSuffix returns a reader of the last n bytes of the object at key,
	// or of all of it when it is shorter than n, and the object's size, in
	// one request. n must be positive (else ErrInvalidRange). The reader
	// yields min(n, size) bytes or an error. Close it.
	GetSuffix(ctx context.Context, key string, n int64) (rc io.ReadCloser, size int64, err error)

	// Head returns the object's size, ETag and modification time.
	Head(ctx context.Context, key string) (ObjectInfo, error)

	// List yields every object whose key starts with prefix, in ascending
	// byte order of key, paging through the backend's listing as it goes.
	// The prefix is matched as a string ("a/b" matches "a/b/c" and "a/bc").
	// On failure it yields one error and stops. Objects put or deleted
	// while a listing runs may or may not appear in it.
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]

	// Delete removes the object at key. Deleting a key that holds no object
	// is not an error.
	Delete(ctx context.Context, key string) error

	// Close releases idle connections. The store must not be used after.
	Close() error
}

// ObjectInfo describes one object.
type ObjectInfo struct {
	// Key is relative to the store, without the URL's prefix.
	Key  string
	Size int64
	// ETag changes whenever the object is replaced. Compare ETags only
	// from the same backend: S3's is an MD5 or a multipart digest,
	// file://'s is derived from the file's identity and modification time.
	ETag         string
	LastModified time.Time
}

// Open returns the store the URL names; doc.go lists the URL formats.
// For s3:// and minio:// it checks that the bucket exists and can be
// reached with the credentials, within ctx. For file:// it creates the
// directory if it is missing.
func Open(ctx context.Context, rawURL string, cfg Config) (Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	loc, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	switch loc.Scheme {
	case schemeFile:
		return openFile(ctx, loc, cfg)
	case schemeS3:
		return openS3(ctx, loc, cfg)
	default:
		return openMinio(ctx, loc, cfg)
	}
}
