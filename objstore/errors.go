package objstore

import "errors"

// Sentinel errors. Every backend returns them wrapped with context, so test
// with errors.Is.
var (
	// ErrNotFound: Get, GetSuffix or Head named a key that holds no object.
	ErrNotFound = errors.New("objstore: object not found")

	// ErrInvalidRange: the requested byte range does not lie within the
	// object (see Store.Get), or a suffix length is not positive.
	ErrInvalidRange = errors.New("objstore: byte range outside object")

	// ErrInvalidKey: a key or list prefix breaks the key grammar in doc.go.
	ErrInvalidKey = errors.New("objstore: invalid key")

	// ErrSizeMismatch: the reader given to Put yielded more or fewer bytes
	// than the declared size. Nothing was stored.
	ErrSizeMismatch = errors.New("objstore: body length differs from declared size")

	// ErrBucketNotFound: the bucket named in the store URL does not exist.
	// It is never reported as ErrNotFound, so that a missing bucket cannot
	// pass for a missing object.
	ErrBucketNotFound = errors.New("objstore: bucket not found")

	// ErrInvalidURL: Open could not make sense of the store URL. The
	// message names the problem and the fix.
	ErrInvalidURL = errors.New("objstore: invalid store URL")

	// ErrInvalidConfig: Config.Validate refused a setting.
	ErrInvalidConfig = errors.New("objstore: invalid config")
)
