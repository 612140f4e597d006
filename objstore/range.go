package objstore

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// checkRangeArgs refuses the ranges that are invalid whatever the object's
// size, before any request is made.
func checkRangeArgs(offset, length int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrInvalidRange, offset)
	}
	if length == 0 {
		return fmt.Errorf("%w: zero length at offset %d", ErrInvalidRange, offset)
	}
	if length > 0 && offset > (1<<63-1)-length {
		return fmt.Errorf("%w: offset %d + length %d overflows", ErrInvalidRange, offset, length)
	}
	return nil
}

// rangeLength checks a range (already through checkRangeArgs) against the
// object's size and returns how many bytes it covers.
func rangeLength(offset, length, size int64) (int64, error) {
	switch {
	case length < 0 && offset == 0:
		return size, nil
	case offset >= size:
		return 0, rangeError(offset, length, size)
	case length < 0:
		return size - offset, nil
	case offset+length > size:
		return 0, rangeError(offset, length, size)
	}
	return length, nil
}

func rangeError(offset, length, size int64) error {
	if length < 0 {
		return fmt.Errorf("%w: offset %d is at or past the end of a %d-byte object", ErrInvalidRange, offset, size)
	}
	return fmt.Errorf("%w: [%d, %d) passes the end of a %d-byte object", ErrInvalidRange, offset, offset+length, size)
}

// httpRange renders a checked range as an HTTP Range header value, or ""
// for a whole-object read.
func httpRange(offset, length int64) string {
	switch {
	case length < 0 && offset == 0:
		return ""
	case length < 0:
		return "bytes=" + strconv.FormatInt(offset, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(offset, 10) + "-" + strconv.FormatInt(offset+length-1, 10)
}

// contentRange is a parsed "Content-Range: bytes first-last/size" header of
// a 206 response.
type contentRange struct {
	First, Last int64 // inclusive
	Size        int64 // -1 when the server sent "*"
}

// parseContentRange parses a Content-Range header from a server; it is
// untrusted input.
func parseContentRange(s string) (contentRange, error) {
	bad := func() (contentRange, error) {
		return contentRange{}, fmt.Errorf("objstore: malformed Content-Range %q", s)
	}
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return bad()
	}
	span, total, ok := strings.Cut(rest, "/")
	if !ok {
		return bad()
	}
	first, last, ok := strings.Cut(span, "-")
	if !ok {
		return bad()
	}
	cr := contentRange{Size: -1}
	var err error
	if cr.First, err = parseNonNegative(first); err != nil {
		return bad()
	}
	if cr.Last, err = parseNonNegative(last); err != nil || cr.Last < cr.First {
		return bad()
	}
	if total != "*" {
		if cr.Size, err = parseNonNegative(total); err != nil || cr.Last >= cr.Size {
			return bad()
		}
	}
	return cr, nil
}

func parseNonNegative(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(s, 10, 64)
}

// Len is the number of bytes the range covers.
func (cr contentRange) Len() int64 { return cr.Last - cr.First + 1 }

// responseLength checks that a response to a Get of the checked range
// (offset, length) answers that range, from its Content-Range header ("" if
// absent) and Content-Length (-1 if absent), and returns how many body bytes
// to expect. A server that cut the range at the object's end yields
// ErrInvalidRange; one that ignored the Range header, or answered another
// range, yields an error.
func responseLength(key string, offset, length int64, contentRangeHeader string, contentLength int64) (int64, error) {
	if httpRange(offset, length) == "" {
		if contentLength < 0 {
			return 0, fmt.Errorf("objstore: get %q: response has no Content-Length", key)
		}
		return contentLength, nil
	}
	if contentRangeHeader == "" {
		return 0, fmt.Errorf("objstore: get %q: server ignored the Range header (no Content-Range in the response)", key)
	}
	cr, err := parseContentRange(contentRangeHeader)
	if err != nil {
		return 0, fmt.Errorf("objstore: get %q: %w", key, err)
	}
	if cr.First != offset {
		return 0, fmt.Errorf("objstore: get %q: asked for bytes from %d, got Content-Range %q", key, offset, contentRangeHeader)
	}
	want := length
	if cr.Size >= 0 {
		if want, err = rangeLength(offset, length, cr.Size); err != nil {
			return 0, fmt.Errorf("objstore: get %q: %w", key, err)
		}
	} else if length < 0 {
		want = cr.Len()
	}
	if cr.Len() != want {
		return 0, fmt.Errorf("objstore: get %q: asked for %d bytes from %d, got Content-Range %q", key, want, offset, contentRangeHeader)
	}
	if contentLength >= 0 && contentLength != want {
		return 0, fmt.Errorf("objstore: get %q: Content-Length %d disagrees with Content-Range %q", key, contentLength, contentRangeHeader)
	}
	return want, nil
}

// suffixResponse checks a response to a suffix read of n bytes and returns
// the object's size and how many body bytes to expect.
func suffixResponse(key string, n int64, contentRangeHeader string, contentLength int64) (size, want int64, err error) {
	if contentRangeHeader == "" {
		// A 200 with the whole object is a valid answer when it is no
		// longer than the suffix asked for.
		if contentLength < 0 || contentLength > n {
			return 0, 0, fmt.Errorf("objstore: get %q: server ignored the suffix Range header", key)
		}
		return contentLength, contentLength, nil
	}
	cr, err := parseContentRange(contentRangeHeader)
	if err != nil {
		return 0, 0, fmt.Errorf("objstore: get %q: %w", key, err)
	}
	if cr.Size < 0 || cr.Last != cr.Size-1 || cr.Len() != min(n, cr.Size) {
		return 0, 0, fmt.Errorf("objstore: get %q: asked for the last %d bytes, got Content-Range %q", key, n, contentRangeHeader)
	}
	if contentLength >= 0 && contentLength != cr.Len() {
		return 0, 0, fmt.Errorf("objstore: get %q: Content-Length %d disagrees with Content-Range %q", key, contentLength, contentRangeHeader)
	}
	return cr.Size, cr.Len(), nil
}

// suffixRange renders a suffix read of n bytes as an HTTP Range header value.
func suffixRange(n int64) string { return "bytes=-" + strconv.FormatInt(n, 10) }

// emptySuffix answers a suffix read the server refused as out of range:
// S3 refuses every range of an empty object, so a suffix of one is empty.
func emptySuffix(ctx context.Context, s Store, key string, rangeErr error) (io.ReadCloser, int64, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if info.Size != 0 {
		return nil, 0, rangeErr
	}
	return io.NopCloser(strings.NewReader("")), 0, nil
}
