package objstore

import (
	"errors"
	"strconv"
	"testing"
)

func TestRangeLength(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		offset, length, size int64
		want                 int64 // -1: ErrInvalidRange
	}{
		{0, -1, 0, 0},
		{0, -1, 10, 10},
		{3, -1, 10, 7},
		{9, -1, 10, 1},
		{10, -1, 10, -1},
		{1, -1, 0, -1},
		{0, 10, 10, 10},
		{0, 11, 10, -1},
		{9, 1, 10, 1},
		{9, 2, 10, -1},
		{10, 1, 10, -1},
		{0, 1, 0, -1},
	} {
		got, err := rangeLength(tt.offset, tt.length, tt.size)
		if tt.want < 0 {
			if !errors.Is(err, ErrInvalidRange) {
				t.Errorf("rangeLength(%d, %d, %d) = %d, %v; want ErrInvalidRange", tt.offset, tt.length, tt.size, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("rangeLength(%d, %d, %d) = %d, %v; want %d", tt.offset, tt.length, tt.size, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ offset, length int64 }{{-1, 1}, {0, 0}, {1 << 62, 1 << 62}} {
		if err := checkRangeArgs(tt.offset, tt.length); !errors.Is(err, ErrInvalidRange) {
			t.Errorf("checkRangeArgs(%d, %d) = %v, want ErrInvalidRange", tt.offset, tt.length, err)
		}
	}
}

func TestHTTPRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		offset, length int64
		want           string
	}{
		{0, -1, ""},
		{5, -1, "bytes=5-"},
		{0, 1, "bytes=0-0"},
		{100, 50, "bytes=100-149"},
	} {
		if got := httpRange(tt.offset, tt.length); got != tt.want {
			t.Errorf("httpRange(%d, %d) = %q, want %q", tt.offset, tt.length, got, tt.want)
		}
	}
	if got := suffixRange(64); got != "bytes=-64" {
		t.Errorf("suffixRange(64) = %q", got)
	}
}

func TestParseContentRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		header string
		want   contentRange
		ok     bool
	}{
		{"bytes 0-99/1000", contentRange{0, 99, 1000}, true},
		{"bytes 999-999/1000", contentRange{999, 999, 1000}, true},
		{"bytes 5-9/*", contentRange{5, 9, -1}, true},
		{"bytes 0-1000/1000", contentRange{}, false},
		{"bytes 10-5/100", contentRange{}, false},
		{"bytes */1000", contentRange{}, false},
		{"bytes -1-5/10", contentRange{}, false},
		{"bytes +1-5/10", contentRange{}, false},
		{"bytes 1-+5/10", contentRange{}, false},
		{"bytes 0-1/+2", contentRange{}, false},
		{"bytes 0-1", contentRange{}, false},
		{"0-1/2", contentRange{}, false},
		{"items 0-1/2", contentRange{}, false},
		{"bytes 0-9223372036854775808/9223372036854775809", contentRange{}, false},
		{"", contentRange{}, false},
	} {
		got, err := parseContentRange(tt.header)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseContentRange(%q) = %+v, %v; want %+v, ok %v", tt.header, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseContentRange: a server's Content-Range never panics the parser,
// and what it accepts is a sane, non-empty span that renders back to the
// same header.
func FuzzParseContentRange(f *testing.F) {
	for _, seed := range []string{"bytes 0-99/1000", "bytes 5-9/*", "bytes */10", "bytes 1-0/2"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		cr, err := parseContentRange(header)
		if err != nil {
			return
		}
		if cr.First < 0 || cr.Last < cr.First || cr.Len() < 1 || (cr.Size >= 0 && cr.Last >= cr.Size) || cr.Size < -1 {
			t.Fatalf("parseContentRange(%q) = %+v", header, cr)
		}
		size := "*"
		if cr.Size >= 0 {
			size = strconv.FormatInt(cr.Size, 10)
		}
		again, err := parseContentRange("bytes " + strconv.FormatInt(cr.First, 10) + "-" + strconv.FormatInt(cr.Last, 10) + "/" + size)
		if err != nil || again != cr {
			t.Fatalf("parseContentRange(%q) = %+v does not round-trip: %+v, %v", header, cr, again, err)
		}
	})
}

func TestResponseLength(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                  string
		offset, length        int64
		contentRange          string
		contentLength         int64
		want                  int64
		wantErr, invalidRange bool
	}{
		{"whole", 0, -1, "", 1000, 1000, false, false},
		{"whole without length", 0, -1, "", -1, 0, true, false},
		{"range", 10, 90, "bytes 10-99/1000", 90, 90, false, false},
		{"range, no Content-Length", 10, 90, "bytes 10-99/1000", -1, 90, false, false},
		{"to the end", 10, -1, "bytes 10-999/1000", 990, 990, false, false},
		{"to the end, size unknown", 10, -1, "bytes 10-999/*", -1, 990, false, false},
		{"cut at the end", 990, 20, "bytes 990-999/1000", 10, 0, true, true},
		{"range ignored", 10, 90, "", 1000, 0, true, false},
		{"other start", 10, 90, "bytes 0-89/1000", 90, 0, true, false},
		{"other length", 10, 90, "bytes 10-49/1000", 40, 0, true, false},
		{"other length, size unknown", 10, 90, "bytes 10-49/*", 40, 0, true, false},
		{"length disagrees", 10, 90, "bytes 10-99/1000", 91, 0, true, false},
		{"malformed", 10, 90, "bytes 10-99", 90, 0, true, false},
	} {
		got, err := responseLength("k", tt.offset, tt.length, tt.contentRange, tt.contentLength)
		if (err != nil) != tt.wantErr || errors.Is(err, ErrInvalidRange) != tt.invalidRange || (err == nil && got != tt.want) {
			t.Errorf("%s: responseLength = %d, %v; want %d, error %v, invalid range %v", tt.name, got, err, tt.want, tt.wantErr, tt.invalidRange)
		}
	}
}

func TestSuffixResponse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		n             int64
		contentRange  string
		contentLength int64
		size, want    int64
		wantErr       bool
	}{
		{"suffix", 100, "bytes 900-999/1000", 100, 1000, 100, false},
		{"all of a short object", 100, "bytes 0-49/50", 50, 50, 50, false},
		{"whole object, no range", 100, "", 50, 50, 50, false},
		{"whole object larger than asked", 100, "", 1000, 0, 0, true},
		{"no length, no range", 100, "", -1, 0, 0, true},
		{"not the end", 100, "bytes 800-899/1000", 100, 0, 0, true},
		{"too short", 100, "bytes 950-999/1000", 50, 0, 0, true},
		{"size unknown", 100, "bytes 900-999/*", 100, 0, 0, true},
		{"length disagrees", 100, "bytes 900-999/1000", 99, 0, 0, true},
	} {
		size, want, err := suffixResponse("k", tt.n, tt.contentRange, tt.contentLength)
		if (err != nil) != tt.wantErr || (err == nil && (size != tt.size || want != tt.want)) {
			t.Errorf("%s: suffixResponse = %d, %d, %v; want %d, %d, error %v", tt.name, size, want, err, tt.size, tt.want, tt.wantErr)
		}
	}
}
