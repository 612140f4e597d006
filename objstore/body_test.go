package objstore

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestExactBody(t *testing.T) {
	t.Parallel()
	errBody := errors.New("connection reset")
	for _, tt := range []struct {
		name    string
		body    io.Reader
		want    int64
		wantErr error // nil: the whole body, then io.EOF
	}{
		{"exact", strings.NewReader("0123456789"), 10, nil},
		{"exact, one byte at a time", iotest.OneByteReader(strings.NewReader("0123456789")), 10, nil},
		{"exact, data with EOF", iotest.DataErrReader(strings.NewReader("0123456789")), 10, nil},
		{"empty", strings.NewReader(""), 0, nil},
		{"short, clean EOF", strings.NewReader("01234"), 10, io.ErrUnexpectedEOF},
		{"empty, clean EOF", strings.NewReader(""), 10, io.ErrUnexpectedEOF},
		{"long", strings.NewReader("0123456789!"), 10, errLong},
		{"failing", io.MultiReader(strings.NewReader("01234"), iotest.ErrReader(errBody)), 10, errBody},
		{"failing at the end", io.MultiReader(strings.NewReader("0123456789"), iotest.ErrReader(errBody)), 10, errBody},
	} {
		b := newExactBody(t.Context(), io.NopCloser(tt.body), "k", tt.want)
		got, err := io.ReadAll(b)
		switch {
		case tt.wantErr == nil && (err != nil || int64(len(got)) != tt.want):
			t.Errorf("%s: read %d bytes, %v; want %d and EOF", tt.name, len(got), err, tt.want)
		case tt.wantErr == errLong && (err == nil || !strings.Contains(err.Error(), "past")):
			t.Errorf("%s: %v, want an error about a long body", tt.name, err)
		case tt.wantErr != nil && tt.wantErr != errLong && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: %v, want %v", tt.name, err, tt.wantErr)
		}
		if tt.wantErr != nil {
			// The failure sticks: no later read may look like a clean end.
			if _, again := b.Read(make([]byte, 10)); again == nil || again == io.EOF {
				t.Errorf("%s: read after the failure returned %v", tt.name, again)
			}
		}
	}
}

// errLong marks the case of a body longer than expected.
var errLong = errors.New("long")

func TestReadBody(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 10)
	if err := readBody(strings.NewReader("0123456789"), buf, 0, 10, true); err != nil {
		t.Errorf("exact: %v", err)
	}
	if err := readBody(strings.NewReader("0123456789more"), buf, 0, 20, false); err != nil {
		t.Errorf("not last, more to come: %v", err)
	}
	for name, r := range map[string]io.Reader{
		"short": strings.NewReader("01234"),
		"long":  strings.NewReader("0123456789!"),
	} {
		if err := readBody(r, buf, 0, 10, true); !errors.Is(err, ErrSizeMismatch) {
			t.Errorf("%s: %v, want ErrSizeMismatch", name, err)
		}
	}
	errBody := errors.New("disk on fire")
	if err := readBody(iotest.ErrReader(errBody), buf, 0, 10, true); !errors.Is(err, errBody) {
		t.Errorf("failing reader: %v, want its error", err)
	}
	if err := readBody(io.MultiReader(bytes.NewReader(buf), iotest.ErrReader(errBody)), buf, 0, 10, true); !errors.Is(err, errBody) {
		t.Errorf("reader failing after size bytes: %v, want its error", err)
	}
}
