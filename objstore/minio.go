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
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// minioStore is the minio:// backend, on minio-go's low-level Core API so
// that uploads, checksums and errors behave as on s3:// (the shared
// putMultipart drives the multipart calls). Like s3://, it makes one
// attempt per call: minio-go's own retries are turned off (MaxRetries 1).
type minioStore struct {
	core      *minio.Core
	transport *http.Transport
	bucket    string
	keyPrefix string // "" or the URL's prefix followed by "/"
	partSize  int64
	workers   int
	log       *slog.Logger
	sse       encryption
}

// S3 headers that minio-go has no option for: the checksums, and the
// bucket key of SSE-KMS.
const (
	headerChecksumCRC32     = "X-Amz-Checksum-Crc32"
	headerChecksumAlgorithm = "X-Amz-Checksum-Algorithm"
	headerMpuObjectSize     = "X-Amz-Mp-Object-Size"
	headerSSEBucketKey      = "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"
)

func openMinio(ctx context.Context, loc location, cfg Config) (Store, error) {
	creds := credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.EnvMinio{}})
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	}
	transport := newTransport(cfg.MaxConnections)
	client, err := minio.New(loc.Host, &minio.Options{
		Creds:      creds,
		Secure:     loc.Secure,
		Transport:  transport,
		Region:     loc.Region,
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidURL, loc.String(), err)
	}
	s := &minioStore{
		core:      &minio.Core{Client: client},
		transport: transport,
		bucket:    loc.Bucket,
		partSize:  cfg.PartSize,
		workers:   cfg.UploadConcurrency,
		log:       cfg.logger(),
		sse:       loc.Encryption,
	}
	if loc.Prefix != "" {
		s.keyPrefix = loc.Prefix + "/"
	}
	exists, err := client.BucketExists(ctx, s.bucket)
	if err == nil && !exists {
		err = fmt.Errorf("%w: %q (create it, or fix the bucket in the URL)", ErrBucketNotFound, s.bucket)
	} else if err != nil {
		err = fmt.Errorf("objstore: checking bucket %q: %w", s.bucket, err)
	}
	if err != nil {
		transport.CloseIdleConnections()
		return nil, err
	}
	return s, nil
}

// objectKey is the bucket key of a store key.
func (s *minioStore) objectKey(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if len(s.keyPrefix)+len(key) > MaxKeyLength {
		return "", fmt.Errorf("%w: %q is longer than %d bytes with the store's prefix", ErrInvalidKey, key, MaxKeyLength)
	}
	return s.keyPrefix + key, nil
}

func (s *minioStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
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
	_, err = s.core.PutObject(ctx, s.bucket, objectKey, bytes.NewReader(buf), size, "", "",
		s.writeOptions(map[string]string{headerChecksumCRC32: crc32Base64(buf)}))
	if err != nil {
		return s.error("put", key, err)
	}
	return nil
}

func (s *minioStore) createMultipart(ctx context.Context, key string) (string, error) {
	return s.core.NewMultipartUpload(ctx, s.bucket, key,
		s.writeOptions(map[string]string{headerChecksumAlgorithm: "CRC32"}))
}

// writeOptions are the options of a PutObject or NewMultipartUpload: the
// headers given (minio-go sends x-amz-* metadata as headers as they are)
// and the URL's server-side encryption.
func (s *minioStore) writeOptions(headers map[string]string) minio.PutObjectOptions {
	opts := minio.PutObjectOptions{UserMetadata: headers}
	if s.sse.Mode != "" {
		opts.ServerSideEncryption = minioEncryption(s.sse)
	}
	return opts
}

// minioEncryption is the URL's server-side encryption as an
// encrypt.ServerSide: the headers s3:// sends, bucket key included, which
// minio-go's own SSE-KMS type has no field for. minio-go puts them on
// PutObject and NewMultipartUpload only; parts and completions need none.
type minioEncryption encryption

func (e minioEncryption) Type() encrypt.Type {
	if e.Mode == sseKMS {
		return encrypt.KMS
	}
	return encrypt.S3
}

func (e minioEncryption) Marshal(h http.Header) {
	h.Set(encrypt.SseGenericHeader, e.Mode)
	if e.KMSKeyID != "" {
		h.Set(encrypt.SseKmsKeyID, e.KMSKeyID)
	}
	if c := encryption(e).kmsContextHeader(); c != "" {
		h.Set(encrypt.SseEncryptionContext, c)
	}
	if e.BucketKey != "" {
		h.Set(headerSSEBucketKey, e.BucketKey)
	}
}

func (s *minioStore) uploadPart(ctx context.Context, key, uploadID string, number int32, data []byte, crc string) (string, error) {
	part, err := s.core.PutObjectPart(ctx, s.bucket, key, uploadID, int(number), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectPartOptions{CustomHeader: http.Header{headerChecksumCRC32: {crc}}})
	if err != nil {
		return "", err
	}
	return part.ETag, nil
}

func (s *minioStore) completeMultipart(ctx context.Context, key, uploadID string, parts []uploadedPart, size int64) error {
	completed := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		completed[i] = minio.CompletePart{PartNumber: int(p.Number), ETag: p.ETag, ChecksumCRC32: p.CRC32}
	}
	_, err := s.core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, completed, minio.PutObjectOptions{
		UserMetadata: map[string]string{headerMpuObjectSize: strconv.FormatInt(size, 10)},
	})
	return err
}

func (s *minioStore) abortMultipart(ctx context.Context, key, uploadID string) error {
	return s.core.AbortMultipartUpload(ctx, s.bucket, key, uploadID)
}

func (s *minioStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if err := checkRangeArgs(offset, length); err != nil {
		return nil, err
	}
	var opts minio.GetObjectOptions
	if r := httpRange(offset, length); r != "" {
		opts.Set("Range", r)
	} else {
		opts.Checksum = true
	}
	body, _, header, err := s.core.GetObject(ctx, s.bucket, objectKey, opts)
	if err != nil {
		return nil, s.error("get", key, err)
	}
	want, err := responseLength(key, offset, length, header.Get("Content-Range"), headerLength(header))
	if err != nil {
		_ = body.Close()
		return nil, err
	}
	return newExactBody(ctx, body, key, want), nil
}

func (s *minioStore) GetSuffix(ctx context.Context, key string, n int64) (io.ReadCloser, int64, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return nil, 0, err
	}
	if n <= 0 {
		return nil, 0, fmt.Errorf("%w: suffix length %d is not positive", ErrInvalidRange, n)
	}
	var opts minio.GetObjectOptions
	opts.Set("Range", suffixRange(n))
	body, _, header, err := s.core.GetObject(ctx, s.bucket, objectKey, opts)
	if err != nil {
		err = s.error("get", key, err)
		if errors.Is(err, ErrInvalidRange) {
			return emptySuffix(ctx, s, key, err)
		}
		return nil, 0, err
	}
	size, want, err := suffixResponse(key, n, header.Get("Content-Range"), headerLength(header))
	if err != nil {
		_ = body.Close()
		return nil, 0, err
	}
	return newExactBody(ctx, body, key, want), size, nil
}

func (s *minioStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.core.StatObject(ctx, s.bucket, objectKey, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, s.error("head", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ETag: strings.Trim(info.ETag, `"`), LastModified: info.LastModified}, nil
}

func (s *minioStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := checkPrefix(prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		// Cancelling stops minio-go's listing goroutine when the caller
		// stops early.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for obj := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.keyPrefix + prefix, Recursive: true}) {
			if obj.Err != nil {
				yield(ObjectInfo{}, s.error("list", prefix, obj.Err))
				return
			}
			info := ObjectInfo{
				Key:          strings.TrimPrefix(obj.Key, s.keyPrefix),
				Size:         obj.Size,
				ETag:         strings.Trim(obj.ETag, `"`),
				LastModified: obj.LastModified,
			}
			if !yield(info, nil) {
				return
			}
		}
		// minio-go ends the channel without an error when ctx ends.
		if err := ctx.Err(); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("objstore: list %q: %w", prefix, err))
		}
	}
}

func (s *minioStore) Delete(ctx context.Context, key string) error {
	objectKey, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := s.core.RemoveObject(ctx, s.bucket, objectKey, minio.RemoveObjectOptions{}); err != nil {
		if err = s.error("delete", key, err); errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

func (s *minioStore) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// error maps a minio-go error to the package's errors, keeping it wrapped.
func (s *minioStore) error(op, key string, err error) error {
	var resp minio.ErrorResponse
	errors.As(err, &resp)
	switch {
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("%w: %s %q in bucket %q: %w", ErrBucketNotFound, op, key, s.bucket, err)
	case resp.Code == "NoSuchKey" || resp.Code == "NotFound" || (resp.StatusCode == http.StatusNotFound && resp.Code == ""):
		return fmt.Errorf("%w: %s %q: %w", ErrNotFound, op, key, err)
	case resp.Code == "InvalidRange" || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: %s %q: %w", ErrInvalidRange, op, key, err)
	}
	return fmt.Errorf("objstore: %s %q: %w", op, key, err)
}

func headerLength(h http.Header) int64 {
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
