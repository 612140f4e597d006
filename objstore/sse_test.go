package objstore_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// S3's server-side encryption headers.
const (
	headerSSE          = "X-Amz-Server-Side-Encryption"
	headerSSEKMSKeyID  = "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"
	headerSSEContext   = "X-Amz-Server-Side-Encryption-Context"
	headerSSEBucketKey = "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"
)

var sseHeaders = []string{headerSSE, headerSSEKMSKeyID, headerSSEContext, headerSSEBucketKey}

// The sse parameters reach the server as S3's headers on every single PUT
// and every CreateMultipartUpload, on both S3 backends, and on nothing
// else: parts, completions and reads carry none (S3 refuses them on parts).
// A proxy in front of the versitygw records the requests; the versitygw
// accepts the headers, and the objects read back whole.
func TestServerSideEncryption(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	const keyARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tt := range []struct {
		name   string
		params url.Values
		want   map[string]string // on writes; the others absent
	}{
		{"None", nil, nil},
		{"SSE-S3", url.Values{"sse": {"AES256"}}, map[string]string{headerSSE: "AES256"}},
		{"SSE-KMS", url.Values{"sse": {"aws:kms"}}, map[string]string{headerSSE: "aws:kms"}},
		{
			"SSE-KMS-Key",
			url.Values{
				"sse":             {"aws:kms"},
				"sse_kms_key_id":  {keyARN},
				"sse_kms_context": {`{"topic":"orders","app":"strata"}`},
				"sse_bucket_key":  {"true"},
			},
			map[string]string{
				headerSSE:          "aws:kms",
				headerSSEKMSKeyID:  keyARN,
				headerSSEContext:   base64.StdEncoding.EncodeToString([]byte(`{"app":"strata","topic":"orders"}`)),
				headerSSEBucketKey: "true",
			},
		},
	} {
		for _, b := range s3Backends {
			t.Run(tt.name+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(proxy.Close)
				isPart := objstoretest.HasQuery("partNumber")
				writes := proxy.Add(func(r *http.Request) bool {
					return (r.Method == http.MethodPut && !isPart(r)) || (r.Method == http.MethodPost && r.URL.Query().Has("uploads"))
				}, objstoretest.Pass(), 0)
				others := proxy.Add(nil, objstoretest.Pass(), 0)

				prefix := "sse-" + strings.ToLower(tt.name) + "-" + b.name
				storeURL := b.url(t, proxy.URL(), prefix)
				if len(tt.params) > 0 {
					storeURL += "&" + tt.params.Encode()
				}
				s, err := objstore.Open(t.Context(), storeURL, gw.Config())
				if err != nil {
					t.Fatalf("Open %s: %v", storeURL, err)
				}
				t.Cleanup(func() { _ = s.Close() })

				small := objstoretest.Data("small", 1000)
				large := objstoretest.Data("large", objstore.MinPartSize+1) // two parts
				for key, data := range map[string][]byte{"small": small, "large": large} {
					if err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
						t.Fatalf("Put %s: %v", key, err)
					}
					got := make([]byte, len(data))
					if err := objstore.ReadAt(t.Context(), s, key, got, 0); err != nil || !bytes.Equal(got, data) {
						t.Fatalf("ReadAt %s: %v (equal: %t)", key, err, bytes.Equal(got, data))
					}
				}

				var puts, creates int
				for _, r := range writes.Requests() {
					if r.Method == http.MethodPut {
						puts++
					} else {
						creates++
					}
					for _, h := range sseHeaders {
						if got, want := r.Header.Get(h), tt.want[h]; got != want {
							t.Errorf("%s %s: %s %q, want %q", r.Method, r.URL, h, got, want)
						}
					}
				}
				if puts != 1 || creates != 1 {
					t.Errorf("recorded %d single PUTs and %d CreateMultipartUploads, want 1 and 1", puts, creates)
				}
				var parts int
				for _, r := range others.Requests() {
					if r.URL.Query().Has("partNumber") {
						parts++
					}
					for _, h := range sseHeaders {
						if got := r.Header.Get(h); got != "" {
							t.Errorf("%s %s carries %s %q, want none", r.Method, r.URL, h, got)
						}
					}
				}
				if parts != 2 {
					t.Errorf("recorded %d UploadParts, want 2", parts)
				}
			})
		}
	}
}
