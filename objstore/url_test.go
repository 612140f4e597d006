package objstore

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url  string
		want location
	}{
		{"file:///var/lib/strata/bucket", location{Scheme: "file", Dir: "/var/lib/strata/bucket"}},
		{"file:///var/lib//strata/./bucket/", location{Scheme: "file", Dir: "/var/lib/strata/bucket"}},
		{"file:///tmp/with%20space", location{Scheme: "file", Dir: "/tmp/with space"}},
		{"s3://my-bucket", location{Scheme: "s3", Bucket: "my-bucket"}},
		{"s3://my-bucket/", location{Scheme: "s3", Bucket: "my-bucket"}},
		{"s3://my.bucket/a/b/", location{Scheme: "s3", Bucket: "my.bucket", Prefix: "a/b"}},
		{"s3://b01/p?region=eu-west-1", location{Scheme: "s3", Bucket: "b01", Prefix: "p", Region: "eu-west-1"}},
		{
			"s3://bkt/strata?region=us-east-1&endpoint=http://127.0.0.1:7070&path_style=true",
			location{Scheme: "s3", Bucket: "bkt", Prefix: "strata", Region: "us-east-1", Endpoint: "http://127.0.0.1:7070", PathStyle: true},
		},
		{"s3://bkt?path_style=0", location{Scheme: "s3", Bucket: "bkt"}},
		{"minio://localhost:9000/bkt", location{Scheme: "minio", Host: "localhost:9000", Bucket: "bkt", Secure: true}},
		{"minio://localhost:9000/bkt/", location{Scheme: "minio", Host: "localhost:9000", Bucket: "bkt", Secure: true}},
		{
			"minio://10.0.0.1:9000/bkt/a/b?secure=false&region=r1",
			location{Scheme: "minio", Host: "10.0.0.1:9000", Bucket: "bkt", Prefix: "a/b", Region: "r1"},
		},
		{"minio://[::1]:9000/bkt", location{Scheme: "minio", Host: "[::1]:9000", Bucket: "bkt", Secure: true}},
		{"minio://minio.example.com/bkt", location{Scheme: "minio", Host: "minio.example.com", Bucket: "bkt", Secure: true}},
	} {
		got, err := parseURL(tt.url)
		if err != nil {
			t.Errorf("parseURL(%q): %v", tt.url, err)
			continue
		}
		if got != tt.want {
			t.Errorf("parseURL(%q) = %+v, want %+v", tt.url, got, tt.want)
		}
		again, err := parseURL(got.String())
		if err != nil || again != got {
			t.Errorf("parseURL(%q).String() = %q parses to %+v, %v", tt.url, got.String(), again, err)
		}
	}
}

// Every bad URL is refused with ErrInvalidURL and a message that says what
// is wrong and what to write instead.
func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url  string
		want []string // in the message
	}{
		{"", []string{"no scheme", "file:///abs/dir"}},
		{"/var/lib/strata", []string{"no scheme", "s3://bucket/prefix"}},
		{"gs://bucket", []string{`unknown scheme "gs"`, "minio://host:port/bucket/prefix"}},
		{"s3:bucket", []string{"no '//'", "s3://"}},
		{"file://relative/dir", []string{"empty host", "file:///abs/dir"}},
		{"file:relative", []string{"no '//'"}},
		{"file:///", []string{"root", "name a directory"}},
		{"file:///tmp?x=1", []string{"takes no parameters", `"x"`}},
		{"s3://", []string{"names no bucket", "s3://bucket/prefix"}},
		{"s3://Bucket", []string{`bucket "Bucket"`, "lowercase"}},
		{"s3://ab", []string{"naming rules"}},
		{"s3://-bucket", []string{"naming rules"}},
		{"s3://a..b", []string{"naming rules"}},
		{"s3://bucket:9000", []string{"naming rules"}},
		{"s3://bucket//double", []string{"prefix", "empty"}},
		{"s3://bucket/a/../b", []string{"prefix", `".."`}},
		{"s3://bucket?regoin=us-east-1", []string{`unknown parameter "regoin"`, "region"}},
		{"s3://bucket?region=a&region=b", []string{"given 2 times"}},
		{"s3://bucket?region=", []string{"not a region", "region=us-east-1"}},
		{"s3://bucket?region=us%20east", []string{"not a region"}},
		{"s3://bucket?path_style=yes", []string{"not a boolean", "path_style=true"}},
		{"s3://bucket?endpoint=127.0.0.1:9000", []string{"endpoint", "http://127.0.0.1:9000"}},
		{"s3://bucket?endpoint=ftp://host", []string{"endpoint", "http(s)"}},
		{"s3://bucket?endpoint=%zz", []string{"cannot parse its query"}},
		{"s3://key:secret@bucket", []string{"credentials do not belong", "AWS_ACCESS_KEY_ID"}},
		{"s3://bucket#frag", []string{"fragment"}},
		{"s3://bucket/p#", []string{"fragment"}},
		{"minio:///bucket", []string{"names the server", "minio://host:port/bucket/prefix"}},
		{"minio://host:9000", []string{"names no bucket"}},
		{"minio://host:9000/", []string{"names no bucket"}},
		{"minio://host:99999/bkt", []string{"port", "65535"}},
		{"minio://host:9000/bkt?secure=maybe", []string{"secure=false"}},
		{"minio://host:9000/bkt?path_style=true", []string{`unknown parameter "path_style"`}},
		{"s3://bucket\x7f", []string{"cannot parse"}},
	} {
		_, err := parseURL(tt.url)
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("parseURL(%q): %v, want ErrInvalidURL", tt.url, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseURL(%q): %q does not mention %q", tt.url, err, w)
			}
		}
	}
}

// The URL names no secret, even in an error.
func TestParseURLRedactsPassword(t *testing.T) {
	t.Parallel()
	_, err := parseURL("s3://AKIA:topsecret@bucket")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error %v shows the password", err)
	}
}

// FuzzParseURL: parseURL never panics, and what it accepts is a location
// whose canonical URL parses back to it and keeps its invariants.
func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{
		"file:///var/lib/strata",
		"s3://bucket/prefix?region=us-east-1&endpoint=http://127.0.0.1:9000&path_style=true",
		"minio://host:9000/bucket/prefix?secure=false",
		"minio://[::1]:9000/b-1/a%20b/c",
		"s3://b.c-d/x/y/z/?region=eu",
		"file://host/x",
		"s3://a:b@bucket",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := parseURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("parseURL(%q): error %v does not wrap ErrInvalidURL", raw, err)
			}
			return
		}
		again, err := parseURL(loc.String())
		if err != nil || again != loc {
			t.Fatalf("parseURL(%q) = %+v; its String %q parses to %+v, %v", raw, loc, loc.String(), again, err)
		}
		switch loc.Scheme {
		case schemeFile:
			if !strings.HasPrefix(loc.Dir, "/") || loc.Dir == "/" || loc.Bucket != "" {
				t.Fatalf("parseURL(%q) = %+v: bad file location", raw, loc)
			}
		case schemeS3, schemeMinio:
			if checkBucket("", loc.Bucket, "") != nil {
				t.Fatalf("parseURL(%q) accepted bucket %q", raw, loc.Bucket)
			}
			if loc.Prefix != "" && checkKey(loc.Prefix) != nil {
				t.Fatalf("parseURL(%q) accepted prefix %q", raw, loc.Prefix)
			}
			if loc.Scheme == schemeMinio && loc.Host == "" {
				t.Fatalf("parseURL(%q) accepted no host", raw)
			}
		default:
			t.Fatalf("parseURL(%q) accepted scheme %q", raw, loc.Scheme)
		}
	})
}
