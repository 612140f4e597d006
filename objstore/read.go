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
	return ReadAtFilling(ctx, s, key, p, off, 0, nil)
}

// ReadAtFilling is ReadAt that reads the body piece bytes at a time and,
// after each piece, calls filled with how many of p's first bytes hold the
// object's: a reader can work on bytes while the CPU's cache still holds
// them. piece 0 (or filled nil) reads the body in one go.
func ReadAtFilling(ctx context.Context, s Store, key string, p []byte, off int64, piece int, filled func(n int)) error {
	rc, err := s.Get(ctx, key, off, int64(len(p)))
	if err != nil {
		return err
	}
	if filled == nil || piece <= 0 {
		return readAllInto(rc, key, p)
	}
	for n := 0; n < len(p); {
		m, err := io.ReadFull(rc, p[n:min(n+piece, len(p))])
		n += m
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the body ended short of p, at a piece's start
			}
			_ = rc.Close()
			return err
		}
		filled(n)
	}
	return closeBody(rc, key, nil)
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
	return closeBody(rc, key, err)
}

// closeBody closes a body read with err, and returns err or, if the read
// went well, the close's error.
func closeBody(rc io.ReadCloser, key string, err error) error {
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("objstore: closing %q: %w", key, cerr)
	}
	return err
}
