package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// s3Store is the s3:// backend, on aws-sdk-go-v2.
//
// The SDK's retryer is replaced by aws.NopRetryer: one call of the store is
// one attempt (one HTTP request, or one per part of a multipart upload).
// Callers (offload, remotefetch) retry with their own backoff, jitter and
// deadlines; retrying here as well would multiply attempts, spend the
// caller's deadline invisibly, and make the request metrics undercount.
//
// Checksums: every PUT and every part carries an explicit CRC-32 that the
// server verifies, the parts' CRCs are repeated on completion, and the
// completion states the object's total size. Whole-object GETs ask for the
// stored checksum and the SDK verifies it at the end of the body; ranged
// GETs rely on the callers' own CRCs (segment sections and batches).
type s3Store struct {
	client    *s3.Client
	http      *http.Client
	bucket    string
	keyPrefix string // "" or the URL's prefix followed by "/"
	partSize  int64
	workers   int
	log       *slog.Logger
	sse       s3Encryption
}

// s3Encryption is the URL's server-side encryption as the fields that
// PutObjectInput and CreateMultipartUploadInput share; nil and "" send no
// header.
type s3Encryption struct {
	mode      types.ServerSideEncryption
	kmsKeyID  *string
	context   *string
	bucketKey *bool
}

func newS3Encryption(e encryption) s3Encryption {
	se := s3Encryption{mode: types.ServerSideEncryption(e.Mode)}
	if e.KMSKeyID != "" {
		se.kmsKeyID = aws.String(e.KMSKeyID)
	}
	if c := e.kmsContextHeader(); c != "" {
		se.context = aws.String(c)
	}
	if e.BucketKey != "" {
		se.bucketKey = aws.Bool(e.BucketKey == "true")
	}
	return se
}

func openS3(ctx context.Context, loc location, cfg Config) (Store, error) {
	opts := []func(*config.LoadOptions) error{
		// A BuildableClient, so that the SDK can add what the environment
		// asks for (AWS_CA_BUNDLE).
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tuneTransport(tr, cfg.MaxConnections) })),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if loc.Region != "" {
		opts = append(opts, config.WithRegion(loc.Region))
	}
	// Without static credentials, LoadDefaultConfig resolves AWS's default
	// chain (doc.go lists it), and nothing here narrows it: no anonymous
	// credentials, no profile chosen, IMDS left as the environment has it.
	// The chain's own clients (STS, IMDS, the container endpoint) share the
	// HTTP client and the no-retry retryer; the credentials are cached and
	// refreshed before they expire.
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("%w %q: no region; add ?region=… to the URL (e.g. region=us-east-1) or set AWS_REGION", ErrInvalidURL, loc.String())
	}
	// Freezing the client keeps the S3 client from adding its own default
	// read timeout to it: the caller's context is the only timeout.
	buildable, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, fmt.Errorf("objstore: AWS configuration replaced the HTTP client with a %T", awsCfg.HTTPClient)
	}
	frozen := buildable.Freeze()
	httpClient, ok := frozen.(*http.Client)
	if !ok {
		return nil, fmt.Errorf("objstore: AWS SDK built an HTTP client of type %T", frozen)
	}
	awsCfg.HTTPClient = httpClient
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if loc.Endpoint != "" {
			o.BaseEndpoint = aws.String(loc.Endpoint)
		}
		o.UsePathStyle = loc.PathStyle
		// Checksums are asked for explicitly, per request (see s3Store).
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	s := &s3Store{
		client:   client,
		http:     httpClient,
		bucket:   loc.Bucket,
		partSize: cfg.PartSize,
		workers:  cfg.UploadConcurrency,
		log:      cfg.logger(),
		sse:      newS3Encryption(loc.Encryption),
	}
	if loc.Prefix != "" {
		s.keyPrefix = loc.Prefix + "/"
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err != nil {
		httpClient.CloseIdleConnections()
		if status, _ := s3Status(err); status == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %q (create it, or fix the bucket in the URL): %w", ErrBucketNotFound, s.bucket, err)
		}
		return nil, fmt.Errorf("objstore: checking bucket %q: %w", s.bucket, err)
	}
	return s, nil
}

// objectKey is the bucket key of a store key.
func (s *s3Store) objectKey(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if len(s.keyPrefix)+len(key) > MaxKeyLength {
		return "", fmt.Errorf("%w: %q is longer than %d bytes with the store's prefix", ErrInvalidKey, key, MaxKeyLength)
	}
	return s.keyPrefix + key, nil
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("%w: negative size %d", ErrSizeMismatch, size)
	}
	if size > s.partSize {
		if err := putMultipart(ctx, s, s.log, objectKey, r, size, s.partSize, s.workers); err != nil {
			return s.error("put", key, err)
		}
		return nil
	}
	buf := make([]byte, size)
	if err := readBody(r, buf, 0, size, true); err != nil {
		return fmt.Errorf("objstore: put %q: %w", key, err)
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:            &s.bucket,
		Key:               &objectKey,
		Body:              bytes.NewReader(buf),
		ContentLength:     aws.Int64(size),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		ChecksumCRC32:     aws.String(crc32Base64(buf)),

		ServerSideEncryption:    s.sse.mode,
		SSEKMSKeyId:             s.sse.kmsKeyID,
		SSEKMSEncryptionContext: s.sse.context,
		BucketKeyEnabled:        s.sse.bucketKey,
	})
	if err != nil {
		return s.error("put", key, err)
	}
	return nil
}

func (s *s3Store) createMultipart(ctx context.Context, key string) (string, error) {
	out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            &s.bucket,
		Key:               &key,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,

		ServerSideEncryption:    s.sse.mode,
		SSEKMSKeyId:             s.sse.kmsKeyID,
		SSEKMSEncryptionContext: s.sse.context,
		BucketKeyEnabled:        s.sse.bucketKey,
	})
	if err != nil {
		return "", err
	}
	if out.UploadId == nil {
		return "", errors.New("CreateMultipartUpload returned no upload id")
	}
	return *out.UploadId, nil
}

func (s *s3Store) uploadPart(ctx context.Context, key, uploadID string, number int32, data []byte, crc string) (string, error) {
	out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:            &s.bucket,
		Key:               &key,
		UploadId:          &uploadID,
		PartNumber:        aws.Int32(number),
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		ChecksumCRC32:     &crc,
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (s *s3Store) completeMultipart(ctx context.Context, key, uploadID string, parts []uploadedPart, size int64) error {
	completed := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		completed[i] = types.CompletedPart{
			PartNumber:    aws.Int32(p.Number),
			ETag:          aws.String(p.ETag),
			ChecksumCRC32: aws.String(p.CRC32),
		}
	}
	_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &s.bucket,
		Key:             &key,
		UploadId:        &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
		MpuObjectSize:   aws.Int64(size),
	})
	return err
}

func (s *s3Store) abortMultipart(ctx context.Context, key, uploadID string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   &s.bucket,
		Key:      &key,
		UploadId: &uploadID,
	})
	return err
}

func (s *s3Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if err := checkRangeArgs(offset, length); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &objectKey}
	if r := httpRange(offset, length); r != "" {
		in.Range = &r
	} else {
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, s.error("get", key, err)
	}
	want, err := responseLength(key, offset, length, aws.ToString(out.ContentRange), lengthOf(out.ContentLength))
	if err != nil {
		_ = out.Body.Close()
		return nil, err
	}
	return newExactBody(ctx, out.Body, key, want), nil
}

func (s *s3Store) GetSuffix(ctx context.Context, key string, n int64) (io.ReadCloser, int64, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return nil, 0, err
	}
	if n <= 0 {
		return nil, 0, fmt.Errorf("%w: suffix length %d is not positive", ErrInvalidRange, n)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &objectKey, Range: aws.String(suffixRange(n))})
	if err != nil {
		err = s.error("get", key, err)
		if errors.Is(err, ErrInvalidRange) {
			return emptySuffix(ctx, s, key, err)
		}
		return nil, 0, err
	}
	size, want, err := suffixResponse(key, n, aws.ToString(out.ContentRange), lengthOf(out.ContentLength))
	if err != nil {
		_ = out.Body.Close()
		return nil, 0, err
	}
	return newExactBody(ctx, out.Body, key, want), size, nil
}

func (s *s3Store) Head(ctx context.Context, key string) (ObjectInfo, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &objectKey})
	if err != nil {
		return ObjectInfo{}, s.error("head", key, err)
	}
	if out.ContentLength == nil {
		return ObjectInfo{}, fmt.Errorf("objstore: head %q: response has no Content-Length", key)
	}
	return ObjectInfo{
		Key:          key,
		Size:         *out.ContentLength,
		ETag:         strings.Trim(aws.ToString(out.ETag), `"`),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := checkPrefix(prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
			Bucket: &s.bucket,
			Prefix: aws.String(s.keyPrefix + prefix),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(ObjectInfo{}, s.error("list", prefix, err))
				return
			}
			for _, obj := range page.Contents {
				info := ObjectInfo{
					Key:          strings.TrimPrefix(aws.ToString(obj.Key), s.keyPrefix),
					Size:         aws.ToInt64(obj.Size),
					ETag:         strings.Trim(aws.ToString(obj.ETag), `"`),
					LastModified: aws.ToTime(obj.LastModified),
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &objectKey})
	if err != nil {
		if err = s.error("delete", key, err); errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

func (s *s3Store) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// error maps an SDK error to the package's errors, keeping it wrapped.
func (s *s3Store) error(op, key string, err error) error {
	status, code := s3Status(err)
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%w: %s %q in bucket %q: %w", ErrBucketNotFound, op, key, s.bucket, err)
	case code == "NoSuchKey" || code == "NotFound" || (status == http.StatusNotFound && code == ""):
		return fmt.Errorf("%w: %s %q: %w", ErrNotFound, op, key, err)
	case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: %s %q: %w", ErrInvalidRange, op, key, err)
	}
	return fmt.Errorf("objstore: %s %q: %w", op, key, err)
}

// s3Status returns the HTTP status and S3 error code of an SDK error, when
// it carries them. A HEAD response has no body, so its code is the SDK's
// rendering of the status ("NotFound"), and a missing bucket looks like a
// missing object there.
func s3Status(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

func lengthOf(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}
