package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/stratalog/strata/objstore"
)

// ReadAtFilling reads a range piece by piece, reporting after each how much
// of p holds the object's bytes, and fills p exactly as ReadAt does.
func TestReadAtFillingReportsPieces(t *testing.T) {
	t.Parallel()
	s, _ := openFile(t)
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 31)
	}
	if err := s.Put(t.Context(), "object", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 200<<10)
	var reported []int
	if err := objstore.ReadAtFilling(t.Context(), s, "object", p, 10, 64<<10, func(n int) { reported = append(reported, n) }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, data[10:10+len(p)]) {
		t.Fatal("the pieces read differ from the object's range")
	}
	if want := []int{64 << 10, 128 << 10, 192 << 10, 200 << 10}; !slices.Equal(reported, want) {
		t.Fatalf("filled reported %v, want %v", reported, want)
	}
}

// A body that ends short of p, even where a piece would start, is
// io.ErrUnexpectedEOF, as for ReadAt.
func TestReadAtFillingShortBody(t *testing.T) {
	t.Parallel()
	s := shortStore{body: make([]byte, 64<<10)}
	for _, piece := range []int{0, 32 << 10, 64 << 10} {
		err := objstore.ReadAtFilling(t.Context(), s, "object", make([]byte, 128<<10), 0, piece, func(int) {})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("piece %d: a body of 64 KiB for 128 read gave %v, want io.ErrUnexpectedEOF", piece, err)
		}
	}
}

// shortStore's Get answers every range with the same short body; nothing
// else of the Store is used.
type shortStore struct {
	objstore.Store
	body []byte
}

func (s shortStore) Get(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(s.body)), nil
}
