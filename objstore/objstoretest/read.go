package objstoretest

import (
	"context"
	"io"

	"github.com/stratalog/strata/objstore"
)

// ReadThrough reads length bytes of key from offset (-1: to the object's
// end) with one GET, each read into buf taking what the body has, and
// returns how many bytes came: the bare streaming read benchmarks measure
// the store's rate with. Not io.Copy to io.Discard, which reads 8 KiB at
// a time, a system call each.
func ReadThrough(ctx context.Context, s objstore.Store, key string, offset, length int64, buf []byte) (int64, error) {
	rc, err := s.Get(ctx, key, offset, length)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	var total int64
	for {
		n, err := rc.Read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
