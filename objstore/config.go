package objstore

import (
	"fmt"
	"log/slog"
)

// Part-size limits of S3 multipart uploads.
const (
	// MinPartSize is the smallest part S3 accepts (all but the last part).
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize = 5 << 30
	// MaxParts is the most parts one multipart upload may have.
	MaxParts = 10000
)

// Config holds what a store needs beyond its URL: tuning and credentials.
// Credentials never go in the URL, so that URLs can be logged, and a Config
// never shows them either: it prints (with any fmt verb), logs (slog) and
// encodes to JSON with AccessKeyID, SecretAccessKey and SessionToken
// replaced by "xxxxx" (redact.go).
type Config struct {
	// PartSize is both the threshold above which Put switches from one PUT
	// to a multipart upload and the size of each part. A Put of an object
	// that would need more than MaxParts parts uses larger parts. Each
	// upload holds up to UploadConcurrency parts in memory. Unused by
	// file:// stores.
	PartSize int64

	// UploadConcurrency bounds how many parts of one multipart upload are
	// in flight at once.
	UploadConcurrency int

	// AccessKeyID, SecretAccessKey and SessionToken are static credentials
	// for s3:// and minio:// stores. Leave AccessKeyID and SecretAccessKey
	// empty to use the environment instead: AWS's default credential chain
	// for s3:// (environment variables, web identity, shared config files,
	// container and instance roles, in the order doc.go gives) and
	// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then
	// MINIO_ROOT_USER/MINIO_ROOT_PASSWORD, for minio://.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// MaxConnections bounds the connections an s3:// or minio:// store
	// holds open to its endpoint at once, in use or idle; a request past it
	// waits for one. 0 leaves them unbounded. The broker sets it from its
	// descriptor budget, so the bucket client cannot take the descriptors
	// partitions and clients need. Unused by file:// stores.
	MaxConnections int

	// Logger receives the few events a store cannot return as an error,
	// such as a multipart upload that could not be aborted. Nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the settings strata runs with: 16 MiB parts, four in
// flight per upload (64 MiB of buffers per upload at most).
func DefaultConfig() Config {
	return Config{
		PartSize:          16 << 20,
		UploadConcurrency: 4,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.PartSize < MinPartSize || c.PartSize > MaxPartSize {
		return fmt.Errorf("%w: PartSize %d is outside [%d, %d] (S3's part limits)", ErrInvalidConfig, c.PartSize, MinPartSize, MaxPartSize)
	}
	if c.UploadConcurrency < 1 {
		return fmt.Errorf("%w: UploadConcurrency %d must be at least 1", ErrInvalidConfig, c.UploadConcurrency)
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("%w: MaxConnections %d must be 0 (unbounded) or more", ErrInvalidConfig, c.MaxConnections)
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return fmt.Errorf("%w: set both AccessKeyID and SecretAccessKey, or neither to use the environment", ErrInvalidConfig)
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		return fmt.Errorf("%w: SessionToken needs AccessKeyID and SecretAccessKey", ErrInvalidConfig)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
