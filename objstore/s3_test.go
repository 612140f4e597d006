package objstore_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// What the S3 backends store, seen through a plain S3 client: a single PUT
// with its CRC-32, a large object as a multipart upload of MinPartSize parts
// with a composite CRC-32, and no upload left pending.
func TestS3Checksums(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	for _, b := range s3Backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			prefix := "checksums-" + b.name
			s := b.open(t, gw.Endpoint, prefix)
			raw := gw.Client()

			small := objstoretest.Data("small", 1000)
			if err := s.Put(t.Context(), "small", bytes.NewReader(small), int64(len(small))); err != nil {
				t.Fatal(err)
			}
			head := headWithChecksum(t, raw, prefix+"/small")
			var sum [4]byte
			binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(small))
			if got, want := aws.ToString(head.ChecksumCRC32), base64.StdEncoding.EncodeToString(sum[:]); got != want {
				t.Errorf("single PUT: stored CRC-32 %q, want %q", got, want)
			}

			const size = 2*objstore.MinPartSize + 1
			large := objstoretest.Data("large", size)
			if err := s.Put(t.Context(), "large", bytes.NewReader(large), size); err != nil {
				t.Fatal(err)
			}
			head = headWithChecksum(t, raw, prefix+"/large")
			if etag := aws.ToString(head.ETag); !strings.HasSuffix(strings.Trim(etag, `"`), "-3") {
				t.Errorf("multipart ETag %s, want a 3-part ETag (…-3)", etag)
			}
			if crc := aws.ToString(head.ChecksumCRC32); crc == "" {
				t.Errorf("multipart object has no CRC-32")
			}
			if uploads := pendingUploads(t, raw, prefix); len(uploads) != 0 {
				t.Errorf("pending multipart uploads after success: %v", uploads)
			}
		})
	}
}

func headWithChecksum(t *testing.T, raw *s3.Client, key string) *s3.HeadObjectOutput {
	t.Helper()
	out, err := raw.HeadObject(t.Context(), &s3.HeadObjectInput{
		Bucket:       aws.String(testBucket),
		Key:          &key,
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		t.Fatalf("HeadObject(%q): %v", key, err)
	}
	return out
}

// pendingUploads lists the multipart uploads begun and neither completed
// nor aborted under prefix.
func pendingUploads(t *testing.T, raw *s3.Client, prefix string) []string {
	t.Helper()
	out, err := raw.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(testBucket),
		Prefix: aws.String(prefix + "/"),
	})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

func TestOpenS3Errors(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	for _, b := range s3Backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := strings.Replace(b.url(t, gw.Endpoint, "x"), testBucket, "no-such-bucket", 1)
			_, err := objstore.Open(t.Context(), url, gw.Config())
			if !errors.Is(err, objstore.ErrBucketNotFound) || !strings.Contains(err.Error(), "no-such-bucket") {
				t.Errorf("Open of a missing bucket: %v, want ErrBucketNotFound naming it", err)
			}

			cfg := gw.Config()
			cfg.SecretAccessKey = "wrong"
			_, err = objstore.Open(t.Context(), b.url(t, gw.Endpoint, "x"), cfg)
			if err == nil || errors.Is(err, objstore.ErrBucketNotFound) {
				t.Errorf("Open with a wrong secret: %v, want an access error", err)
			}
		})
	}
}

// Credentials left out of Config come from the environment.
func TestS3CredentialsFromEnvironment(t *testing.T) {
	gw := versityGW(t)
	cfg := gw.Config()
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretAccessKey)
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	for _, b := range s3Backends {
		s, err := objstore.Open(t.Context(), b.url(t, gw.Endpoint, "env-"+b.name), cfg)
		if err != nil {
			t.Fatalf("%s: Open with credentials from the environment: %v", b.name, err)
		}
		if err := s.Put(t.Context(), "k", strings.NewReader("v"), 1); err != nil {
			t.Errorf("%s: Put: %v", b.name, err)
		}
		_ = s.Close()
	}
}

func TestOpenS3WithoutRegion(t *testing.T) {
	gw := versityGW(t)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_PROFILE", "")
	url := "s3://" + testBucket + "?endpoint=" + gw.Endpoint + "&path_style=true"
	_, err := objstore.Open(t.Context(), url, gw.Config())
	if !errors.Is(err, objstore.ErrInvalidURL) || !strings.Contains(err.Error(), "region=") {
		t.Fatalf("Open without a region: %v, want ErrInvalidURL saying to add region=", err)
	}
}
