package objstore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"time"
)

// multipartAPI is the four calls of an S3 multipart upload, as each S3
// client library spells them. putMultipart drives them the same way for
// every backend.
type multipartAPI interface {
	createMultipart(ctx context.Context, key string) (uploadID string, err error)
	// uploadPart uploads one part with its CRC-32 (base64, as S3 wants it)
	// and returns the part's ETag.
	uploadPart(ctx context.Context, key, uploadID string, number int32, data []byte, crc string) (etag string, err error)
	completeMultipart(ctx context.Context, key, uploadID string, parts []uploadedPart, size int64) error
	abortMultipart(ctx context.Context, key, uploadID string) error
}

type uploadedPart struct {
	Number int32
	ETag   string
	CRC32  string // base64 of the big-endian CRC-32 (IEEE)
}

// abortTimeout bounds the abort of a failed upload, which runs even when
// the caller's context is what failed it.
const abortTimeout = 30 * time.Second

// putMultipart uploads size bytes from r as a multipart upload of parts of
// partSize (or more, to stay within MaxParts), at most concurrency at once.
// Parts are read in order while earlier ones upload; each holds a buffer,
// so memory is bounded by concurrency × partSize. Each part carries its
// CRC-32, which the completion repeats. If anything fails, or r is not
// exactly size bytes long, the upload is aborted and no object appears.
//
// When a part fails, no new part starts, but the parts in flight are left
// to finish before the abort: S3 may keep a part whose upload is still in
// progress when the abort arrives, and a part request the client cancels
// may still be in progress at the server. Only the caller's own
// cancellation stops parts mid-way.
func putMultipart(ctx context.Context, api multipartAPI, log *slog.Logger, key string, r io.Reader, size, partSize int64, concurrency int) (err error) {
	partSize = fitPartSize(size, partSize)
	count := (size + partSize - 1) / partSize
	uploadID, err := api.createMultipart(ctx, key)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if aerr := api.abortMultipart(actx, key, uploadID); aerr != nil {
			// The parts stay billed until a lifecycle rule
			// (AbortIncompleteMultipartUpload) removes them.
			log.Warn("objstore: cannot abort failed multipart upload", "key", key, "upload_id", uploadID, "err", aerr)
		}
	}()

	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   = make(chan struct{}) // closed on the first failure
		firstErr error                 // written once, before failed closes
	)
	fail := func(err error) {
		failOnce.Do(func() {
			firstErr = err
			close(failed)
		})
	}
	parts := make([]uploadedPart, count)
	free := make(chan []byte, concurrency) // buffers not in use; nil until first needed
	for range concurrency {
		free <- nil
	}
	for i := range count {
		var buf []byte
		select {
		case buf = <-free:
		case <-failed:
		case <-ctx.Done():
			fail(ctx.Err())
		}
		if isClosed(failed) { // also when a free buffer and a failure came together
			break
		}
		n := min(partSize, size-i*partSize)
		if int64(cap(buf)) < n {
			buf = make([]byte, partSize)
		}
		buf = buf[:n]
		if err := readBody(r, buf, i*partSize, size, i == count-1); err != nil {
			fail(err)
			break
		}
		number := int32(i + 1)
		wg.Go(func() {
			defer func() { free <- buf }()
			crc := crc32Base64(buf)
			etag, err := api.uploadPart(ctx, key, uploadID, number, buf, crc)
			if err != nil {
				fail(fmt.Errorf("part %d of %d: %w", number, count, err))
				return
			}
			parts[number-1] = uploadedPart{Number: number, ETag: etag, CRC32: crc}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		fail(err)
	}
	if isClosed(failed) {
		return firstErr
	}
	return api.completeMultipart(ctx, key, uploadID, parts, size)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fitPartSize returns the part size to upload size bytes with: partSize, or
// the smallest whole number of MiB that needs at most MaxParts parts.
func fitPartSize(size, partSize int64) int64 {
	if size <= partSize*MaxParts {
		return partSize
	}
	const mib = 1 << 20
	need := (size + MaxParts - 1) / MaxParts
	return (need + mib - 1) / mib * mib
}

// crc32Base64 is the CRC-32 (IEEE) of p as S3's checksum headers carry it.
func crc32Base64(p []byte) string {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(p))
	return base64.StdEncoding.EncodeToString(sum[:])
}
