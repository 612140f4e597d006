package remotefetch

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/segmentobject"
)

// Defaults. doc.go says how the block size was chosen, by measurement.
const (
	DefaultBlockSize       = 8 << 20
	DefaultBlockCacheBytes = 512 << 20
	// DefaultIndexCacheBytes holds the indexes of about 200 segments of
	// hotlog's default 128 MiB (some 600 KiB of offset and time index each).
	DefaultIndexCacheBytes = 128 << 20
	// DefaultIndexTailGuess covers the whole tail of a 128 MiB segment with
	// the default 4 KiB index interval, so the index costs one GET even when
	// the manifest does not record the tail's size.
	DefaultIndexTailGuess = 1 << 20
	// DefaultReadAheadBlocks keeps a sequential consumer 16 MiB ahead.
	DefaultReadAheadBlocks = 2
	// DefaultReadAheadBytes lets about 20 consumers read ahead at once
	// (3 blocks each: the current one and 2 ahead). Blocks in windows are
	// mostly in the block cache too, so the two budgets overlap.
	DefaultReadAheadBytes    = 512 << 20
	DefaultMaxStreams        = 1024
	DefaultMaxConcurrentGets = 32
	DefaultAttemptTimeout    = 5 * time.Second
	DefaultMaxAttempts       = 4
	DefaultRetryBackoff      = 25 * time.Millisecond
	DefaultRetryBackoffMax   = time.Second
	// DefaultFetchMaxWait is Kafka's remote.fetch.max.wait.ms default.
	DefaultFetchMaxWait        = 500 * time.Millisecond
	DefaultFetchConcurrency    = 8
	DefaultMaxUncompressedSize = 64 << 20
)

// Config configures a Reader. Start from DefaultConfig.
type Config struct {
	// BlockSize is the unit of ranged reads and of the block cache: log
	// bytes are fetched in BlockSize-aligned blocks (the last block of a
	// segment is shorter).
	BlockSize int64
	// BlockCacheBytes bounds the block cache (ristretto, cost = bytes).
	BlockCacheBytes int64
	// IndexCacheBytes bounds the index cache (LRU, cost = tail bytes).
	IndexCacheBytes int64
	// IndexTailGuess is how many bytes the first suffix GET of a segment
	// asks for when the manifest does not record its tail size. A short
	// guess costs a second GET of the exact size.
	IndexTailGuess int64

	// ReadAheadBlocks is how many blocks past the current one are fetched
	// in the background for a sequential consumer. 0 turns read-ahead off.
	ReadAheadBlocks int
	// ReadAheadBytes bounds, across all consumers, the bytes of blocks held
	// for read-ahead: prefetched and not yet consumed, or being consumed.
	ReadAheadBytes int64
	// MaxStreams bounds the consumers (position in a partition) whose
	// sequential progress is tracked.
	MaxStreams int

	// MaxConcurrentGets bounds the GETs in flight to the bucket, and with
	// BlockSize the memory they hold.
	MaxConcurrentGets int
	// AttemptTimeout bounds one GET, body included.
	AttemptTimeout time.Duration
	// MaxAttempts is how many times a failed GET is tried in all.
	MaxAttempts int
	// RetryBackoff is the wait before the second attempt; it doubles per
	// attempt up to RetryBackoffMax, with jitter.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration

	// FetchMaxWait is remote.fetch.max.wait.ms: how long FetchMany waits
	// for remote partitions, apart from the client's fetch.max.wait.ms.
	FetchMaxWait time.Duration
	// FetchConcurrency bounds the partitions one FetchMany reads at once.
	FetchConcurrency int

	// MaxUncompressedSize caps the decompressed size of a batch that a
	// timestamp lookup looks inside.
	MaxUncompressedSize int

	// Clock tells time. Nil means the system clock.
	Clock Clock
	// Logger receives key/value logs. Nil discards them.
	Logger *slog.Logger
	// Registerer receives the metrics (metrics.go). Nil registers nothing.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the settings a broker runs with.
func DefaultConfig() Config {
	return Config{
		BlockSize:           DefaultBlockSize,
		BlockCacheBytes:     DefaultBlockCacheBytes,
		IndexCacheBytes:     DefaultIndexCacheBytes,
		IndexTailGuess:      DefaultIndexTailGuess,
		ReadAheadBlocks:     DefaultReadAheadBlocks,
		ReadAheadBytes:      DefaultReadAheadBytes,
		MaxStreams:          DefaultMaxStreams,
		MaxConcurrentGets:   DefaultMaxConcurrentGets,
		AttemptTimeout:      DefaultAttemptTimeout,
		MaxAttempts:         DefaultMaxAttempts,
		RetryBackoff:        DefaultRetryBackoff,
		RetryBackoffMax:     DefaultRetryBackoffMax,
		FetchMaxWait:        DefaultFetchMaxWait,
		FetchConcurrency:    DefaultFetchConcurrency,
		MaxUncompressedSize: DefaultMaxUncompressedSize,
	}
}

// ScanConfig is DefaultConfig for one pass over a partition (`strata
// export`), which reads each block and each segment's index once: a block
// cache of the block in hand and the blocks read ahead of it, and an index
// cache of 16 MiB (the indexes of about 25 segments of 128 MiB; an index
// past it is loaded again at each read of its segment), not a broker's 512
// MiB and 128 MiB for many consumers' re-reads. A one-pass read filled
// those with what it never read again, so its memory grew with the
// partition up to those bounds (an export of 537 MB peaked at 564-567 MB
// of RSS, and at 141-150 MB with this; docs/bench.md).
func ScanConfig() Config {
	cfg := DefaultConfig()
	cfg.BlockCacheBytes = int64(cfg.ReadAheadBlocks+1) * cfg.BlockSize
	cfg.IndexCacheBytes = 16 << 20
	return cfg
}

// Block sizes Validate accepts. Below 1 KiB a block is mostly request
// overhead; above 64 MiB one GET holds too much memory.
const (
	minBlockSize = 1 << 10
	maxBlockSize = 64 << 20
)

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	bad := func(name string, value any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, name, value, want)
	}
	switch {
	case c.BlockSize < minBlockSize || c.BlockSize > maxBlockSize:
		return bad("BlockSize", c.BlockSize, fmt.Sprintf("%d..%d", minBlockSize, maxBlockSize))
	case c.BlockCacheBytes < c.BlockSize:
		return bad("BlockCacheBytes", c.BlockCacheBytes, fmt.Sprintf(">= BlockSize (%d)", c.BlockSize))
	case c.IndexCacheBytes < 0:
		return bad("IndexCacheBytes", c.IndexCacheBytes, ">= 0")
	case c.IndexTailGuess < segmentobject.FooterSize:
		return bad("IndexTailGuess", c.IndexTailGuess, fmt.Sprintf(">= %d (a footer)", segmentobject.FooterSize))
	case c.ReadAheadBlocks < 0:
		return bad("ReadAheadBlocks", c.ReadAheadBlocks, ">= 0")
	case c.ReadAheadBytes < 0:
		return bad("ReadAheadBytes", c.ReadAheadBytes, ">= 0")
	case c.MaxStreams < 1:
		return bad("MaxStreams", c.MaxStreams, ">= 1")
	case c.MaxConcurrentGets < 1:
		return bad("MaxConcurrentGets", c.MaxConcurrentGets, ">= 1")
	case c.AttemptTimeout <= 0:
		return bad("AttemptTimeout", c.AttemptTimeout, "> 0")
	case c.MaxAttempts < 1:
		return bad("MaxAttempts", c.MaxAttempts, ">= 1")
	case c.RetryBackoff < 0 || c.RetryBackoffMax < c.RetryBackoff:
		return bad("RetryBackoff", c.RetryBackoff, fmt.Sprintf("0..RetryBackoffMax (%v)", c.RetryBackoffMax))
	case c.FetchMaxWait <= 0:
		return bad("FetchMaxWait (remote.fetch.max.wait.ms)", c.FetchMaxWait, "> 0")
	case c.FetchConcurrency < 1:
		return bad("FetchConcurrency", c.FetchConcurrency, ">= 1")
	case c.MaxUncompressedSize < 1:
		return bad("MaxUncompressedSize", c.MaxUncompressedSize, ">= 1")
	}
	return nil
}

func (c Config) clock() Clock {
	if c.Clock == nil {
		return SystemClock()
	}
	return c.Clock
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
