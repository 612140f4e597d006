package offload

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// Clock is the Manager's source of time: retry backoff, attempt timeouts,
// task intervals, the stall alarm, remote retention.ms and the disk check
// all read it, so tests drive them without sleeping. It is hotlog's Clock,
// so a broker passes one clock to both.
type Clock = hotlog.Clock

// Rand draws the jitter of retry backoff: a number in [0, 1).
// *math/rand/v2.Rand satisfies it; the Manager serializes calls.
type Rand interface {
	Float64() float64
}

// DiskUsage is what a statfs of the hot disk says.
type DiskUsage struct {
	Total     uint64 // bytes in the file system
	Available uint64 // bytes an unprivileged writer may still use
}

// UsedRatio is the fraction of the disk that cannot be written: 1 -
// Available/Total.
func (u DiskUsage) UsedRatio() float64 {
	if u.Total == 0 {
		return 0
	}
	return 1 - float64(u.Available)/float64(u.Total)
}

// Config configures a Manager. Start from DefaultConfig.
type Config struct {
	// KeyPrefix, when set, goes before every key the Manager writes:
	// <KeyPrefix>/<topic>-<topic id>/<partition>/… (segmentobject/key.go).
	// The store URL's own prefix is usually the better place; this one
	// lets several clusters share one store. No leading, trailing or
	// doubled '/'; at most segmentobject.MaxKeyPrefix bytes, so that every
	// key fits S3's 1,024 bytes (an s3:// URL's own prefix counts against
	// the same limit).
	KeyPrefix string

	// UploadConcurrency bounds the segment uploads in flight at once,
	// across all partitions. Each upload holds the store's multipart
	// buffers (objstore.Config: UploadConcurrency × PartSize, 64 MiB by
	// default), so this also bounds upload memory.
	UploadConcurrency int
	// ExpiryConcurrency bounds the expiry tasks (local and remote
	// retention, deletes, orphan sweeps) running at once.
	ExpiryConcurrency int

	// CopyInterval is how often each partition is checked for sealed
	// segments to upload when nothing else prompts it (Notify does,
	// and so does an upload that leaves more to do).
	CopyInterval time.Duration
	// ExpiryInterval is how often each partition's retention is applied.
	ExpiryInterval time.Duration
	// OrphanSweepInterval is how often each partition's prefix is listed
	// for objects no manifest entry names. A partition is also swept once
	// when it is added.
	OrphanSweepInterval time.Duration

	// AttemptTimeout bounds one attempt of any call to the store or meta.
	// A PUT gets MinUploadRate's allowance on top, for its size.
	AttemptTimeout time.Duration
	// CopyMaxBytesPerSecond caps the bytes read for upload per second,
	// across all uploads (Kafka's
	// remote.log.manager.copy.max.bytes.per.second); 0 leaves uploads
	// unpaced, as Kafka's default does. At least MinUploadRate when set;
	// fewer uploads than UploadConcurrency then run at once where needed,
	// so each keeps MinUploadRate (uploadSlots).
	CopyMaxBytesPerSecond int64
	// CopyDrainTime paces uploads by what awaits them: they read at most
	// the bytes of sealed segments not yet uploaded divided by this, so a
	// burst of seals is spread over about this long rather than read at
	// the disk's full speed beside the produce path (pace.go). 0 turns it
	// off; CopyMaxBytesPerSecond, when set, caps it.
	CopyDrainTime time.Duration
	// MinUploadRate, in bytes per second, is the slowest a PUT may go
	// before it is abandoned and retried: a PUT of n bytes may take
	// AttemptTimeout + n/MinUploadRate.
	MinUploadRate int64
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff
	// between attempts, and between passes of a failing task: the n-th
	// retry waits about RetryBaseDelay × 2^(n-1), at most RetryMaxDelay,
	// half of it fixed and half random.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxAttempts is how many times one pass tries a PUT (or a delete)
	// before it gives up; the task then runs again after a backoff, so a
	// segment is retried until it is uploaded.
	MaxAttempts int
	// StallAlarm is how long a sealed segment may wait for its upload,
	// from when it could first be uploaded, before the partition counts as
	// stalled (logged once, in Status and in
	// strata_offload_stalled_partitions).
	StallAlarm time.Duration
	// StallAttempts is how many failed PUTs of one segment, across passes,
	// make the partition count as stalled sooner than StallAlarm. A PUT
	// the store refuses for good (objstore.ErrInvalidKey,
	// ErrBucketNotFound) stalls it at the first failure.
	StallAttempts int

	// RecompactMapKeys bounds the offset map of one remote recompaction
	// pass (recompact.go), in keys: log.cleaner.dedupe.buffer.size over
	// compact.MapEntryBytes, as the hot log's cleaner. A pass maps keys
	// until the map is full; the next pass goes on from there.
	RecompactMapKeys int
	// DecompressLimit caps one batch's decompressed records when
	// recompaction decodes them.
	DecompressLimit int
	// RetireDelay is how long the objects of recompacted segments stay in
	// the bucket after their replacement is committed, for readers that
	// found them before (a fetch under way, a batch job holding the older
	// bucket manifest).
	RetireDelay time.Duration
	// SpoolDir is where recompaction writes a replacement object before
	// its PUT (unlinked at once). Empty means os.TempDir.
	SpoolDir string

	// DataDir is the hot disk's data directory, watched for disk
	// pressure. Empty turns the watch off.
	DataDir string
	// DiskCheckInterval is how often the hot disk's usage is read.
	DiskCheckInterval time.Duration
	// DiskHighWaterMark is the used fraction of the hot disk at which
	// uploaded segments are deleted locally ahead of local retention,
	// oldest first, until usage falls below DiskLowWaterMark. If uploaded
	// segments run out first, the Manager reports disk pressure
	// (DiskPressure, OnDiskPressure) until usage falls below
	// DiskLowWaterMark.
	DiskHighWaterMark float64
	DiskLowWaterMark  float64
	// DiskUsage reads the disk usage of DataDir. Nil uses statfs(2).
	DiskUsage func(dir string) (DiskUsage, error)
	// OnDiskPressure, when set, is called with true when the hot disk stays
	// above the high-water mark with nothing uploaded left to delete (the
	// broker should answer Produce with KAFKA_STORAGE_ERROR), and with
	// false once usage is back under the low-water mark. It runs on the
	// Manager's disk watch goroutine and must not block.
	OnDiskPressure func(full bool)

	// Logger receives key/value logs. Nil discards them.
	Logger *slog.Logger
	// Registerer receives the metrics (metrics.go). Nil registers none.
	Registerer prometheus.Registerer
	// Clock tells time. Nil means the system clock.
	Clock Clock
	// Rand draws backoff jitter. Nil means math/rand/v2's global source.
	Rand Rand
}

// DefaultConfig returns strata's defaults. The intervals follow Kafka's
// remote.log.manager.task.interval.ms (30 s), and sealing prompts an upload
// at once (Notify): with segment.ms at ten minutes, data reaches the bucket
// within minutes. Four uploads at once, each a multipart upload with the
// store's four parts in flight, bound upload memory to 256 MiB; in
// bench_test.go they reach the plain-PUT limit of the same server. Uploads
// drain what awaits them over about 10 s rather than at once (pace.go). A PUT
// slower than 1 MiB/s is treated as stalled. A segment counts as stalled
// after ten minutes, or after 15 failed PUTs (three passes of five
// attempts, about a minute and a half of backoff: longer than a store's
// usual blips). The disk marks keep 10% of the hot disk free and delete
// down to 15% free.
func DefaultConfig() Config {
	return Config{
		UploadConcurrency:   4,
		ExpiryConcurrency:   2,
		CopyInterval:        30 * time.Second,
		ExpiryInterval:      30 * time.Second,
		OrphanSweepInterval: time.Hour,
		AttemptTimeout:      30 * time.Second,
		MinUploadRate:       1 << 20,
		CopyDrainTime:       10 * time.Second,
		RetryBaseDelay:      250 * time.Millisecond,
		RetryMaxDelay:       time.Minute,
		MaxAttempts:         5,
		StallAlarm:          10 * time.Minute,
		StallAttempts:       15,
		RecompactMapKeys:    int(compact.DefaultConfig().DedupeBufferBytes / compact.MapEntryBytes),
		DecompressLimit:     record.MaxDecompressedBytes,
		RetireDelay:         5 * time.Minute,
		DiskCheckInterval:   5 * time.Second,
		DiskHighWaterMark:   0.90,
		DiskLowWaterMark:    0.85,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	bad := func(name string, value any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, name, value, want)
	}
	if err := segmentobject.CheckKeyPrefix(c.KeyPrefix); err != nil {
		return fmt.Errorf("%w: KeyPrefix: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.UploadConcurrency < 1:
		return bad("UploadConcurrency", c.UploadConcurrency, ">= 1")
	case c.ExpiryConcurrency < 1:
		return bad("ExpiryConcurrency", c.ExpiryConcurrency, ">= 1")
	case c.CopyInterval <= 0:
		return bad("CopyInterval", c.CopyInterval, "> 0")
	case c.ExpiryInterval <= 0:
		return bad("ExpiryInterval", c.ExpiryInterval, "> 0")
	case c.OrphanSweepInterval <= 0:
		return bad("OrphanSweepInterval", c.OrphanSweepInterval, "> 0")
	case c.AttemptTimeout <= 0:
		return bad("AttemptTimeout", c.AttemptTimeout, "> 0")
	case c.RecompactMapKeys < 1:
		return bad("RecompactMapKeys", c.RecompactMapKeys, ">= 1")
	case c.DecompressLimit < 1:
		return bad("DecompressLimit", c.DecompressLimit, ">= 1")
	case c.RetireDelay < 0:
		return bad("RetireDelay", c.RetireDelay, ">= 0")
	case c.MinUploadRate < 1:
		return bad("MinUploadRate", c.MinUploadRate, ">= 1")
	case c.CopyMaxBytesPerSecond < 0 || (c.CopyMaxBytesPerSecond > 0 && c.CopyMaxBytesPerSecond < c.MinUploadRate):
		return bad("CopyMaxBytesPerSecond", c.CopyMaxBytesPerSecond, fmt.Sprintf("0 (no cap) or at least MinUploadRate (%d), the slowest a PUT may go before it is retried", c.MinUploadRate))
	case c.CopyDrainTime < 0:
		return bad("CopyDrainTime", c.CopyDrainTime, ">= 0 (0: uploads not paced by their backlog)")
	case c.RetryBaseDelay <= 0:
		return bad("RetryBaseDelay", c.RetryBaseDelay, "> 0")
	case c.RetryMaxDelay < c.RetryBaseDelay:
		return bad("RetryMaxDelay", c.RetryMaxDelay, ">= RetryBaseDelay")
	case c.MaxAttempts < 1:
		return bad("MaxAttempts", c.MaxAttempts, ">= 1")
	case c.StallAlarm <= 0:
		return bad("StallAlarm", c.StallAlarm, "> 0")
	case c.StallAttempts < 1:
		return bad("StallAttempts", c.StallAttempts, ">= 1")
	case c.DataDir != "" && c.DiskCheckInterval <= 0:
		return bad("DiskCheckInterval", c.DiskCheckInterval, "> 0")
	case c.DataDir != "" && (c.DiskHighWaterMark <= 0 || c.DiskHighWaterMark > 1):
		return bad("DiskHighWaterMark", c.DiskHighWaterMark, "in (0, 1]")
	case c.DataDir != "" && (c.DiskLowWaterMark <= 0 || c.DiskLowWaterMark > c.DiskHighWaterMark):
		return bad("DiskLowWaterMark", c.DiskLowWaterMark, "in (0, DiskHighWaterMark]")
	}
	return nil
}
