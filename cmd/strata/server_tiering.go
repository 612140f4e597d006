package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/remotefetch"
)

// serverTiering is a running server's tiered storage: the bucket, the
// offload manager that fills it and the reader that serves old offsets
// from it.
type serverTiering struct {
	store   objstore.Store
	offload *offload.Manager
	remote  *remotefetch.Reader
}

// bucketURL is the --bucket URL: the flag, or by default a directory in
// the data directory (DESIGN §8).
func (c *serverConfig) bucketURL() (string, error) {
	if c.bucket != "" {
		return c.bucket, nil
	}
	dir, err := filepath.Abs(filepath.Join(c.dataDir, "bucket"))
	if err != nil {
		return "", fmt.Errorf("--data: %w", err)
	}
	return "file://" + filepath.ToSlash(dir), nil
}

// checkSharedBucket refuses a broker of a cluster without --bucket: the
// default bucket is a directory in this broker's data directory, and every
// replica of a tiered partition must read the segments its leaders
// uploaded, whichever broker led then. A single node (no --meta-peers, or
// only itself) keeps the default.
func (c *serverConfig) checkSharedBucket(peers []meta.Peer) error {
	if c.bucket != "" {
		return nil
	}
	if len(peers) == 0 || (len(peers) == 1 && peers[0].ID == strconv.Itoa(c.nodeID)) {
		return nil
	}
	return usageError("--bucket: a broker of a cluster needs the bucket every broker shares: give each the same --bucket (s3://…, minio://…, or file:///dir on one machine); the default, a directory under --data, would hold only this broker's uploads")
}

// tieringConfig is tiered storage's configuration, checked: the bucket's
// URL and store settings, the offload manager's and the remote reader's.
type tieringConfig struct {
	bucketURL string
	store     objstore.Config
	offload   offload.Config
	remote    remotefetch.Config
}

// settleTiering reads and checks the tiering settings for a broker
// configured with brokerConfig, without reaching the bucket.
func (c *serverConfig) settleTiering(brokerConfig ingest.Config, log *slog.Logger) (tieringConfig, error) {
	var t tieringConfig
	var err error
	if t.bucketURL, err = c.bucketURL(); err != nil {
		return tieringConfig{}, err
	}
	if err := objstore.CheckURL(t.bucketURL); err != nil {
		return tieringConfig{}, usageError("--bucket: %v", err)
	}
	t.store = objstore.DefaultConfig()
	t.store.Logger = log.With("component", "objstore")
	if t.store.MaxConnections, err = brokerConfig.MaxBucketConnections(); err != nil {
		return tieringConfig{}, err
	}
	if err := t.store.Validate(); err != nil {
		return tieringConfig{}, usageError("--bucket: %v", err)
	}

	oc := offload.DefaultConfig()
	oc.DataDir = brokerConfig.DataDir
	oc.Logger = log.With("component", "offload")
	if c.remoteTaskIntervalMs <= 0 {
		return tieringConfig{}, usageError("--remote.log.manager.task.interval.ms %d: want a positive number of milliseconds", c.remoteTaskIntervalMs)
	}
	oc.CopyInterval = time.Duration(min(c.remoteTaskIntervalMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	oc.ExpiryInterval = oc.CopyInterval
	if r := c.remoteCopyMaxRate; r < 0 || (r > 0 && r < oc.MinUploadRate) {
		return tieringConfig{}, usageError("--remote.log.manager.copy.max.bytes.per.second %d: want 0 (no cap) or at least %d, the slowest an upload may go before it is retried", r, oc.MinUploadRate)
	}
	oc.CopyMaxBytesPerSecond = c.remoteCopyMaxRate
	if c.remoteUploadDrain < 0 {
		return tieringConfig{}, usageError("--remote-upload-drain %v: want 0 (off) or a positive duration", c.remoteUploadDrain)
	}
	oc.CopyDrainTime = c.remoteUploadDrain
	if c.remoteRetireDelay < 0 {
		return tieringConfig{}, usageError("--remote-retire-delay %v: want 0 or a positive duration", c.remoteRetireDelay)
	}
	oc.RetireDelay = c.remoteRetireDelay
	// Remote recompaction's passes (as many at once as expiry tasks)
	// share a buffer of the cleaner's size; the data directory is on the
	// disk meant for segments.
	oc.RecompactMapKeys = int(max(c.cleanerDedupeBytes/compact.MapEntryBytes/int64(oc.ExpiryConcurrency), 1))
	oc.SpoolDir = brokerConfig.DataDir
	oc.OnDiskPressure = func(full bool) {
		if full {
			log.Warn("hot disk full: produce refused with KAFKA_STORAGE_ERROR until offload frees space")
		} else {
			log.Info("hot disk has room again: produce accepted")
		}
	}
	if err := oc.Validate(); err != nil {
		return tieringConfig{}, fmt.Errorf("offload: %w", err)
	}
	t.offload = oc

	rc := remotefetch.DefaultConfig()
	if c.remoteFetchMaxWaitMs <= 0 {
		return tieringConfig{}, usageError("--remote.fetch.max.wait.ms %d: want a positive number of milliseconds", c.remoteFetchMaxWaitMs)
	}
	rc.FetchMaxWait = time.Duration(min(c.remoteFetchMaxWaitMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	if c.remoteCacheBytes < rc.BlockSize {
		return tieringConfig{}, usageError("--remote-cache-bytes %d: want at least %d, one block read from the bucket", c.remoteCacheBytes, rc.BlockSize)
	}
	rc.BlockCacheBytes = c.remoteCacheBytes
	rc.Logger = log.With("component", "remotefetch")
	if err := rc.Validate(); err != nil {
		return tieringConfig{}, fmt.Errorf("remote fetch: %w", err)
	}
	t.remote = rc
	return t, nil
}

// openTiering opens the bucket and builds, without starting, the offload
// manager and the remote reader, as cfg (checked by settleTiering) has
// them. Credentials for s3:// and minio:// come from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, …; see objstore.Config).
func openTiering(ctx context.Context, cfg tieringConfig, node *meta.Node, log *slog.Logger, reg prometheus.Registerer) (*serverTiering, error) {
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := objstore.Open(openCtx, cfg.bucketURL, cfg.store)
	if err != nil {
		return nil, fmt.Errorf("--bucket: %w", err)
	}
	// strata_objstore_*: every bucket call counted by operation and
	// outcome, with its latency and bytes.
	store = objstore.Instrument(store, reg)

	// The disk watch reads the partitions directory from the start; the
	// broker would create it only later.
	if err := os.MkdirAll(cfg.offload.DataDir, 0o755); err != nil {
		return nil, errors.Join(fmt.Errorf("data dir: %w", err), store.Close())
	}
	oc := cfg.offload
	oc.Registerer = reg
	mgr, err := offload.New(oc, node, store)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("offload: %w", err), store.Close())
	}

	rc := cfg.remote
	rc.Registerer = reg
	reader, err := remotefetch.New(remotefetch.StoreBucket(store), remotefetch.MetaManifests(node.State), rc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("remote fetch: %w", err), mgr.Close(), store.Close())
	}
	log.Info("tiered storage", "bucket", cfg.bucketURL)
	return &serverTiering{store: store, offload: mgr, remote: reader}, nil
}

// deps is what the broker is given of tiering.
func (t *serverTiering) deps() *ingest.Tiering {
	return &ingest.Tiering{Offload: t.offload, Remote: t.remote}
}

// close stops the manager and the reader and closes the bucket; call it
// after the broker has shut down (which removes its partitions).
func (t *serverTiering) close() error {
	return errors.Join(t.offload.Close(), t.remote.Close(), t.store.Close())
}
