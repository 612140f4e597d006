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
	// returns a partly filled p without an error.
	ReadAt(ctx context.Context, key string, p []byte, off int64) error
	// ReadSuffix returns the last n bytes of the object (all of it when it
	// is shorter) and the object's size.
	ReadSuffix(ctx context.Context, key string, n int64) (tail []byte, size int64, err error)
}

// StoreBucket returns s as a Bucket.
func StoreBucket(s objstore.Store) Bucket { return storeBucket{s} }

type storeBucket struct{ store objstore.Store }

func (b storeBucket) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	return objstore.ReadAt(ctx, b.store, key, p, off)
}

func (b storeBucket) ReadSuffix(ctx context.Context, key string, n int64) ([]byte, int64, error) {
	return objstore.ReadSuffix(ctx, b.store, key, n)
}
