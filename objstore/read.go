package objstore

import (
	"context"
	"fmt"
	"io"
)

// ReadAt fills p with the bytes of the object at key from off, in one
// ranged GET. The range must lie within the object (else ErrInvalidRange);
// it never returns a partly filled p without an error.
func ReadAt(ctx context.Context, s Store, key string, p []byte, off int64) error {
	rc, err := s.Get(ctx, key, off, int64(len(p)))
	if err != nil {
		return err
	}
	return readAllInto(rc, key, p)
}

// ReadSuffix returns the last n bytes of the object at key (all of it when
// it is shorter) and the object's size, in one suffix-range GET: the read a
// segment reader makes for its footer and indexes.
func ReadSuffix(ctx context.Context, s Store, key string, n int64) ([]byte, int64, error) {
	rc, size, err := s.GetSuffix(ctx, key, n)
	if err != nil {
		return nil, 0, err
	}
	p := make([]byte, min(n, size))
	if err := readAllInto(rc, key, p); err != nil {
		return nil, 0, err
	}
	return p, size, nil
}

func readAllInto(rc io.ReadCloser, key string, p []byte) error {
	_, err := io.ReadFull(rc, p)
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("objstore: closing %q: %w", key, cerr)
	}
	return err
}
