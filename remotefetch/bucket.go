package remotefetch

import (
	"context"

	"github.com/stratalog/strata/objstore"
)

// Bucket is all remotefetch asks of object storage: ranged reads of objects
// whose keys it already knows (pebble's objstorage/remote keeps its reads
// to the same shape). Both methods make one request; neither retries.
// StoreBucket adapts any objstore.Store.
type Bucket interface {
	// ReadAt fills p with the object's bytes from off, or fails; it never
	// returns a partly filled p without an error. While it reads, it calls
	// filled, when not nil, from the calling goroutine and never after it
	// returns, with how many of p's first bytes hold the object's: a number
	// that only grows, up to len(p). Bytes it reports do not change again
	// in this call; a call that fails may have reported some.
	ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(n int)) error
	// ReadSuffix returns the last n bytes of the object (all of it when it
	// is shorter) and the object's size.
	ReadSuffix(ctx context.Context, key string, n int64) (tail []byte, size int64, err error)
}

// StoreBucket returns s as a Bucket.
func StoreBucket(s objstore.Store) Bucket { return storeBucket{s} }

type storeBucket struct{ store objstore.Store }

// readPiece is how much of a block the store reads before it reports the
// bytes filled: small enough that the batches in them are checked while
// the CPU's cache holds them (docs/bench.md, "Cold reads").
const readPiece = 64 << 10

func (b storeBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(n int)) error {
	return objstore.ReadAtFilling(ctx, b.store, key, p, off, readPiece, filled)
}

func (b storeBucket) ReadSuffix(ctx context.Context, key string, n int64) ([]byte, int64, error) {
	return objstore.ReadSuffix(ctx, b.store, key, n)
}
