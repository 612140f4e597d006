package objstore

import (
	"errors"
	"net/url"
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
		{"s3://bkt?sse=AES256", location{Scheme: "s3", Bucket: "bkt", Encryption: encryption{Mode: sseS3}}},
		{"s3://bkt?sse=aes256", location{Scheme: "s3", Bucket: "bkt", Encryption: encryption{Mode: sseS3}}},
		{"s3://bkt?sse=aws:kms", location{Scheme: "s3", Bucket: "bkt", Encryption: encryption{Mode: sseKMS}}},
		{
			"s3://bkt/p?region=eu-west-1&sse=AWS%3AKMS&sse_kms_key_id=arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab&sse_bucket_key=true",
			location{Scheme: "s3", Bucket: "bkt", Prefix: "p", Region: "eu-west-1", Encryption: encryption{
				Mode: sseKMS, KMSKeyID: "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", BucketKey: "true",
			}},
		},
		{
			"s3://bkt?sse=aws:kms&sse_kms_context=%7B%22topic%22%3A%22t%22%2C%20%22app%22%3A%22strata%22%7D",
			location{Scheme: "s3", Bucket: "bkt", Encryption: encryption{Mode: sseKMS, KMSContext: `{"app":"strata","topic":"t"}`}},
		},
		{
			"minio://h:9000/bkt?sse=aws:kms&sse_kms_key_id=alias/strata&sse_bucket_key=0",
			location{Scheme: "minio", Host: "h:9000", Bucket: "bkt", Secure: true, Encryption: encryption{Mode: sseKMS, KMSKeyID: "alias/strata", BucketKey: "false"}},
		},
		{"minio://h:9000/bkt?sse=AES256", location{Scheme: "minio", Host: "h:9000", Bucket: "bkt", Secure: true, Encryption: encryption{Mode: sseS3}}},
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
		{"s3://key:secret@bucket", []string{"credentials never go in the URL", "Config.AccessKeyID", "AWS_ACCESS_KEY_ID", "web identity"}},
		{"s3://key@bucket", []string{"credentials never go in the URL"}},
		{"minio://key:secret@host:9000/bkt", []string{"credentials never go in the URL"}},
		{"s3://bucket?secret_access_key=x", []string{`parameter "secret_access_key" looks like a credential`, "credentials never go in the URL"}},
		{"s3://bucket?AWS_SESSION_TOKEN=x", []string{"looks like a credential"}},
		{"s3://bucket?endpoint=http://key:secret@127.0.0.1:9000", []string{"endpoint has credentials", "credentials never go in the URL"}},
		{"s3://bucket?sse=aws:kms:dsse", []string{`sse="aws:kms:dsse"`, "sse=AES256", "sse=aws:kms"}},
		{"s3://bucket?sse=", []string{`sse=""`, "sse=AES256 (SSE-S3) or sse=aws:kms (SSE-KMS)"}},
		{"minio://host:9000/bkt?sse=none", []string{`sse="none"`, "sse=AES256"}},
		{"s3://bucket?sse_kms_key_id=k", []string{"sse_kms_key_id applies to SSE-KMS only", "sse=aws:kms"}},
		{"s3://bucket?sse=AES256&sse_kms_key_id=k", []string{"sse_kms_key_id applies to SSE-KMS only"}},
		{"s3://bucket?sse=AES256&sse_kms_context=%7B%7D", []string{"sse_kms_context applies to SSE-KMS only"}},
		{"minio://host:9000/bkt?sse=AES256&sse_bucket_key=true", []string{"sse_bucket_key applies to SSE-KMS only"}},
		{"s3://bucket?sse=aws:kms&sse_kms_key_id=", []string{"not a KMS key"}},
		{"s3://bucket?sse=aws:kms&sse_kms_key_id=a%20b", []string{"not a KMS key"}},
		{"s3://bucket?sse=aws:kms&sse_kms_context=app=strata", []string{"not an encryption context", "JSON object of strings"}},
		{"s3://bucket?sse=aws:kms&sse_kms_context=%7B%7D", []string{"not an encryption context"}},
		{"s3://bucket?sse=aws:kms&sse_kms_context=%7B%22n%22%3A1%7D", []string{"not an encryption context"}},
		{"s3://bucket?sse=aws:kms&sse_bucket_key=yes", []string{"not a boolean", "sse_bucket_key=true"}},
		{"s3://bucket?sse=AES256&sse=aws:kms", []string{"given 2 times"}},
		{"file:///tmp?sse=AES256", []string{"takes no parameters", `"sse"`}},
		{"s3://bucket?ssekms=x", []string{`unknown parameter "ssekms"`, "sse, sse_bucket_key, sse_kms_context, sse_kms_key_id"}},
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

// An error about a URL never shows a credential in it, wherever it was put
// and even when the URL does not parse.
func TestParseURLErrorsHideCredentials(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"s3://AKIA:topsecret@bucket",
		"s3://topsecret@bucket",
		"s3://AKIA:topsecret@bucket/p?region=us-east-1",
		"s3:AKIA:topsecret@bucket",
		"s3://AKIA:topsecret@bucket\x7f",
		"s3://AKIA:top%zzsecret@bucket",
		"minio://AKIA:topsecret@host:9000/bkt",
		"minio://AKIA:topsecret@host:99999/bkt",
		"gs://AKIA:topsecret@bucket",
		"AKIA:topsecret@bucket",
		"file://AKIA:topsecret@/tmp",
		"s3://bucket?secret_access_key=topsecret",
		"s3://bucket?x=topsecret",
		"s3://bucket?region=us-east-1&x=topsecret&path_style=maybe",
		"s3://bucket?endpoint=http://AKIA:topsecret@127.0.0.1:9000",
		"s3://bucket?endpoint=http%3A%2F%2FAKIA%3Atopsecret%40127.0.0.1%3A9000",
		"s3://bucket?endpoint=AKIA:topsecret@127.0.0.1:9000",
		"s3://bucket?endpoint=http://AKIA:topsecret@host%zz",
		"s3://bucket?x=topsecret%zz",
		"file:///tmp?token=topsecret",
	} {
		_, err := parseURL(raw)
		if err == nil {
			t.Errorf("parseURL(%q) accepted it", raw)
			continue
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("parseURL(%q): %q shows the secret", raw, err)
		}
	}
}

func TestRedactedURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ raw, want string }{
		{"s3://bucket/p?region=us-east-1", "s3://bucket/p?region=us-east-1"},
		{"s3://AKIA:secret@bucket/p", "s3://xxxxx@bucket/p"},
		{"s3://a@b@bucket", "s3://xxxxx@bucket"},
		{"s3:AKIA:secret@bucket", "s3:xxxxx@bucket"},
		{"file:///a@b/c", "file:///a@b/c"},
		{"s3://bucket/a@b?x=1&region=r", "s3://bucket/a@b?x=xxxxx&region=r"},
		{"s3://bucket?endpoint=http://k:s@host:9000&path_style=true", "s3://bucket?endpoint=http%3A%2F%2Fxxxxx%40host%3A9000&path_style=true"},
		{"s3://bucket?endpoint=http://host:9000", "s3://bucket?endpoint=http://host:9000"},
		{"file:///d?x=1#frag", "file:///d?x=xxxxx#frag"},
		{"minio://host:9000/b?secure=false&sse=AES256", "minio://host:9000/b?secure=false&sse=AES256"},
	} {
		if got := redactedURL(tt.raw); got != tt.want {
			t.Errorf("redactedURL(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// FuzzParseURL: parseURL never panics, and what it accepts is a location
// whose canonical URL parses back to it and keeps its invariants.
func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{
		"file:///var/lib/strata",
		"s3://bucket/prefix?region=us-east-1&endpoint=http://127.0.0.1:9000&path_style=true",
		"minio://host:9000/bucket/prefix?secure=false",
		"minio://host:9000/bucket?sse=aws:kms&sse_kms_key_id=alias/k&sse_kms_context=%7B%22a%22%3A%22b%22%7D&sse_bucket_key=true",
		"s3://bucket?sse=AES256",
		"minio://[::1]:9000/b-1/a%20b/c",
		"s3://b.c-d/x/y/z/?region=eu",
		"file://host/x",
		"s3://a:b@bucket",
		"s3://AKIA:password@bucket/p?region=us-east-1",
		"s3://bucket?endpoint=http://k:password@host:9000",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := parseURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("parseURL(%q): error %v does not wrap ErrInvalidURL", raw, err)
			}
			// A password in the URL never shows (one that is also
			// written elsewhere in it may, legitimately, as that).
			if u, perr := url.Parse(raw); perr == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && len(pw) >= 4 && strings.Count(raw, pw) == 1 && strings.Contains(err.Error(), pw) {
					t.Fatalf("parseURL(%q): error %q shows the password", raw, err)
				}
			}
			return
		}
		if loc.String() != redactedURL(loc.String()) {
			t.Fatalf("parseURL(%q) = %+v: its String %q has something redactedURL masks", raw, loc, loc.String())
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
