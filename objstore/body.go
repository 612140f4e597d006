package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// exactBody passes on exactly want bytes of a response body and turns every
// way a body can come out wrong into an error: ending early (even with a
// clean EOF, as a connection-delimited or re-chunked body can), running
// long, or failing mid-way. A reader of an object never sees short data.
// Once ctx is done every read fails, even if the rest of the body has
// already arrived.
type exactBody struct {
	ctx  context.Context
	body io.ReadCloser
	key  string
	want int64
	got  int64
	err  error // sticky: once a read fails, every later read fails the same way
}

func newExactBody(ctx context.Context, body io.ReadCloser, key string, want int64) *exactBody {
	return &exactBody{ctx: ctx, body: body, key: key, want: want}
}

func (b *exactBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = fmt.Errorf("objstore: reading %q after %d of %d bytes: %w", b.key, b.got, b.want, err)
		return 0, b.err
	}
	if b.got == b.want {
		// Read on to the body's own end: a longer body is an error, and a
		// checksum-validating body checks only at its end.
		var one [1]byte
		n, err := io.ReadFull(b.body, one[:])
		switch {
		case n > 0:
			b.err = fmt.Errorf("objstore: body of %q runs past the %d bytes expected", b.key, b.want)
		case err == io.EOF:
			b.err = io.EOF
		default:
			b.err = fmt.Errorf("objstore: reading %q: %w", b.key, err)
		}
		return 0, b.err
	}
	if int64(len(p)) > b.want-b.got {
		p = p[:b.want-b.got]
	}
	n, err := b.body.Read(p)
	b.got += int64(n)
	switch {
	case err == nil || (err == io.EOF && b.got == b.want):
		return n, nil
	case err == io.EOF:
		b.err = fmt.Errorf("objstore: body of %q ended after %d of %d bytes: %w", b.key, b.got, b.want, io.ErrUnexpectedEOF)
	default:
		b.err = fmt.Errorf("objstore: reading %q after %d of %d bytes: %w", b.key, b.got, b.want, err)
	}
	return n, b.err
}

func (b *exactBody) Close() error { return b.body.Close() }

// ctxReader fails reads once ctx is done, for readers (files) that do not
// watch a context themselves.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readBody fills buf from r, which must then be at its end if last is set.
// It turns a reader that is shorter or longer than declared into
// ErrSizeMismatch; read is how many bytes came before buf.
func readBody(r io.Reader, buf []byte, read, size int64, last bool) error {
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: reader ended after %d bytes, size is %d", ErrSizeMismatch, read+int64(n), size)
	}
	if err != nil {
		return fmt.Errorf("objstore: reading body: %w", err)
	}
	if last {
		return checkDrained(r, size)
	}
	return nil
}

// checkDrained reports whether r, having yielded size bytes, is at its end.
func checkDrained(r io.Reader, size int64) error {
	var one [1]byte
	_, err := io.ReadFull(r, one[:])
	switch {
	case err == nil:
		return fmt.Errorf("%w: reader holds more than %d bytes", ErrSizeMismatch, size)
	case err == io.EOF:
		return nil
	}
	return fmt.Errorf("objstore: reading body: %w", err)
}
