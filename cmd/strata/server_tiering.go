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

// openTiering opens the bucket and builds, without starting, the offload
// manager and the remote reader. Credentials for s3:// and minio:// come
// from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, …; see
// objstore.Config).
func openTiering(ctx context.Context, c *serverConfig, node *meta.Node, brokerConfig ingest.Config, log *slog.Logger, reg prometheus.Registerer) (*serverTiering, error) {
	url, err := c.bucketURL()
	if err != nil {
		return nil, err
	}
	storeConfig := objstore.DefaultConfig()
	storeConfig.Logger = log.With("component", "objstore")
	if storeConfig.MaxConnections, err = brokerConfig.MaxBucketConnections(); err != nil {
		return nil, err
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := objstore.Open(openCtx, url, storeConfig)
	if err != nil {
		return nil, fmt.Errorf("--bucket: %w", err)
	}

	// The disk watch reads the partitions directory from the start; the
	// broker would create it only later.
	if err := os.MkdirAll(brokerConfig.DataDir, 0o755); err != nil {
		return nil, errors.Join(fmt.Errorf("data dir: %w", err), store.Close())
	}
	oc := offload.DefaultConfig()
	oc.DataDir = brokerConfig.DataDir
	oc.Logger = log.With("component", "offload")
	oc.Registerer = reg
	if c.remoteTaskIntervalMs <= 0 {
		return nil, errors.Join(usageError("--remote.log.manager.task.interval.ms %d: want a positive number of milliseconds", c.remoteTaskIntervalMs), store.Close())
	}
	oc.CopyInterval = time.Duration(min(c.remoteTaskIntervalMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	oc.ExpiryInterval = oc.CopyInterval
	if r := c.remoteCopyMaxRate; r < 0 || (r > 0 && r < oc.MinUploadRate) {
		return nil, errors.Join(usageError("--remote.log.manager.copy.max.bytes.per.second %d: want 0 (no cap) or at least %d, the slowest an upload may go before it is retried", r, oc.MinUploadRate), store.Close())
	}
	oc.CopyMaxBytesPerSecond = c.remoteCopyMaxRate
	if c.remoteUploadDrain < 0 {
		return nil, errors.Join(usageError("--remote-upload-drain %v: want 0 (off) or a positive duration", c.remoteUploadDrain), store.Close())
	}
	oc.CopyDrainTime = c.remoteUploadDrain
	oc.OnDiskPressure = func(full bool) {
		if full {
			log.Warn("hot disk full: produce refused with KAFKA_STORAGE_ERROR until offload frees space")
		} else {
			log.Info("hot disk has room again: produce accepted")
		}
	}
	mgr, err := offload.New(oc, node, store)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("offload: %w", err), store.Close())
	}

	rc := remotefetch.DefaultConfig()
	rc.FetchMaxWait = time.Duration(c.remoteFetchMaxWaitMs) * time.Millisecond
	rc.BlockCacheBytes = c.remoteCacheBytes
	rc.Logger = log.With("component", "remotefetch")
	rc.Registerer = reg
	reader, err := remotefetch.New(remotefetch.StoreBucket(store), remotefetch.MetaManifests(node.State), rc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("remote fetch: %w", err), mgr.Close(), store.Close())
	}
	log.Info("tiered storage", "bucket", url)
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
