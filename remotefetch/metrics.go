package remotefetch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/objstore"
)

// Metrics is a snapshot of a Reader's counters since New. The same numbers
// are exported to the Registerer in Config (see doc.go for the names).
type Metrics struct {
	// Reads and ReadBytes count successful reads and the verified batch
	// bytes they returned (FetchMany and BucketReader included).
	Reads     int64
	ReadBytes int64
	// Gets counts GET attempts to the bucket by what they fetched (retries
	// included); GetBytes the bytes they brought back.
	BlockGets     int64
	BlockGetBytes int64
	IndexGets     int64
	IndexGetBytes int64
	Retries       int64
	// Prefetches counts block loads started by read-ahead.
	Prefetches int64
	// CorruptRecovered counts reads that found bad bytes and read clean ones
	// on the second try; CorruptFailed those that returned ErrCorrupt.
	CorruptRecovered int64
	CorruptFailed    int64
	// FetchTimeouts counts partitions FetchMany answered with ErrTimeout.
	FetchTimeouts int64

	Blocks  CacheMetrics
	Indexes CacheMetrics
}

// GetsPerMiB is the bucket's request cost of reading: GETs of every kind per
// MiB of batches returned. 0 before anything was read.
func (m Metrics) GetsPerMiB() float64 {
	if m.ReadBytes == 0 {
		return 0
	}
	return float64(m.BlockGets+m.IndexGets) / (float64(m.ReadBytes) / (1 << 20))
}

// CacheMetrics describes one cache, the way pebble's shared cache does.
type CacheMetrics struct {
	// Hits were served from the cache; ReadAheadHits (blocks only) from a
	// consumer's read-ahead window, prefetched or still held.
	Hits          int64
	ReadAheadHits int64
	// Misses started a load; Merged found one running and waited for it
	// instead of making a request of their own.
	Misses int64
	Merged int64
	// Evictions left to make room; Rejections (blocks only) were refused
	// by the admission policy (TinyLFU).
	Evictions  int64
	Rejections int64
	// BuffersReused (blocks only) counts blocks loaded into the buffer of
	// one no longer held, rather than into a fresh one.
	BuffersReused int64
	// BufferBytes (blocks only) is the memory of the block buffers held:
	// by the cache, read-ahead windows, loads and reads in progress, and
	// Results not yet released (BlockSize each).
	BufferBytes int64
	// Size and Capacity are in bytes.
	Size     int64
	Capacity int64
}

// HitRatio is the share of lookups served without waiting for a request.
func (c CacheMetrics) HitRatio() float64 {
	hits := c.Hits + c.ReadAheadHits
	if all := hits + c.Misses + c.Merged; all > 0 {
		return float64(hits) / float64(all)
	}
	return 0
}

// cacheStats are the counters a cache keeps for CacheMetrics.
type cacheStats struct {
	hits, readAheadHits, misses, merged, evictions, rejections atomic.Int64
}

func (s *cacheStats) snapshot() CacheMetrics {
	return CacheMetrics{
		Hits: s.hits.Load(), ReadAheadHits: s.readAheadHits.Load(),
		Misses: s.misses.Load(), Merged: s.merged.Load(),
		Evictions: s.evictions.Load(), Rejections: s.rejections.Load(),
	}
}

// metrics are the Reader's own counters and its Prometheus instruments.
// Counters live in atomics, read by both Metrics() and the registered
// CounterFuncs, so the two never disagree.
type metrics struct {
	reads, readBytes                atomic.Int64
	bucketGets, bucketBytes         [kindCount]atomic.Int64
	retries                         [kindCount]atomic.Int64
	prefetches                      atomic.Int64
	corruptRecovered, corruptFailed atomic.Int64
	fetchTimeouts                   atomic.Int64

	readOutcomes    *prometheus.CounterVec
	readDuration    prometheus.Histogram
	bucketOutcomes  *prometheus.CounterVec
	bucketDurations *prometheus.HistogramVec
}

func newMetrics() *metrics {
	return &metrics{
		readOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_remotefetch_reads_total",
			Help: "Reads of tiered data by outcome: success, out_of_range, missing, corrupt, unavailable, timeout, canceled, error.",
		}, []string{"outcome"}),
		readDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_remotefetch_read_duration_seconds",
			Help:    "Latency of successful reads of tiered data, manifest lookup to verified bytes.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		bucketOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_remotefetch_bucket_requests_total",
			Help: "GET attempts to the bucket by kind (block, index) and outcome (success, not_found, timeout, canceled, error).",
		}, []string{"kind", "outcome"}),
		bucketDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_remotefetch_bucket_request_duration_seconds",
			Help:    "Latency of GET attempts to the bucket, body included, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"kind"}),
	}
}

// read records the end of one read.
func (m *metrics) read(elapsed time.Duration, n int, err error) {
	if err == nil {
		m.reads.Add(1)
		m.readBytes.Add(int64(n))
		m.readDuration.Observe(elapsed.Seconds())
	}
	m.readOutcomes.WithLabelValues(readOutcome(err)).Inc()
}

func readOutcome(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, ErrOffsetOutOfRange):
		return "out_of_range"
	case errors.Is(err, ErrSegmentMissing):
		return "missing"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

// bucketRequest records one GET attempt.
func (m *metrics) bucketRequest(kind requestKind, elapsed time.Duration, err error) {
	m.bucketGets[kind].Add(1)
	m.bucketDurations.WithLabelValues(kind.String()).Observe(elapsed.Seconds())
	outcome := "error"
	switch {
	case err == nil:
		outcome = "success"
	case errors.Is(err, objstore.ErrNotFound):
		outcome = "not_found"
	case errors.Is(err, errAttemptTimeout):
		outcome = "timeout"
	case errors.Is(err, context.Canceled):
		outcome = "canceled"
	}
	m.bucketOutcomes.WithLabelValues(kind.String(), outcome).Inc()
}

const corruptHelp = "Reads that met bytes failing verification, by outcome: recovered (clean when fetched again) or failed (ErrCorrupt)."

// register exports the metrics to reg; snapshot supplies the cache figures.
func (m *metrics) register(reg prometheus.Registerer, snapshot func() Metrics) {
	if reg == nil {
		return
	}
	counter := func(name, help string, labels prometheus.Labels, f func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f()) })
	}
	gauge := func(name, help string, labels prometheus.Labels, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f)
	}
	cs := []prometheus.Collector{
		m.readOutcomes, m.readDuration, m.bucketOutcomes, m.bucketDurations,
		counter("strata_remotefetch_read_bytes_total", "Verified batch bytes returned by reads of tiered data.", nil, m.readBytes.Load),
		counter("strata_remotefetch_prefetches_total", "Block loads started by read-ahead for sequential consumers.", nil, m.prefetches.Load),
		counter("strata_remotefetch_fetch_timeouts_total", "Partitions a remote fetch answered with a timeout at remote.fetch.max.wait.ms.", nil, m.fetchTimeouts.Load),
		counter("strata_remotefetch_corrupt_reads_total", corruptHelp, prometheus.Labels{"outcome": "recovered"}, m.corruptRecovered.Load),
		counter("strata_remotefetch_corrupt_reads_total", corruptHelp, prometheus.Labels{"outcome": "failed"}, m.corruptFailed.Load),
		gauge("strata_remotefetch_gets_per_mib", "GETs to the bucket per MiB of batches returned, since start. Per interval: rate(strata_remotefetch_bucket_requests_total) / (rate(strata_remotefetch_read_bytes_total) / 2^20).", nil,
			func() float64 { return snapshot().GetsPerMiB() }),
	}
	for kind := range kindCount {
		labels := prometheus.Labels{"kind": kind.String()}
		cs = append(cs,
			counter("strata_remotefetch_bucket_read_bytes_total", "Bytes fetched from the bucket by successful GETs, by kind.", labels, m.bucketBytes[kind].Load),
			counter("strata_remotefetch_bucket_retries_total", "GETs retried after a transient failure, by kind.", labels, m.retries[kind].Load))
	}
	caches := []struct {
		name string
		get  func(Metrics) CacheMetrics
	}{{"block", func(m Metrics) CacheMetrics { return m.Blocks }}, {"index", func(m Metrics) CacheMetrics { return m.Indexes }}}
	for _, c := range caches {
		lookup := func(result string, f func(CacheMetrics) int64) prometheus.Collector {
			return counter("strata_remotefetch_cache_lookups_total", "Cache lookups by cache and result: hit, readahead (a consumer's read-ahead window), miss (a request), merged (joined a request already in flight).",
				prometheus.Labels{"cache": c.name, "result": result}, func() int64 { return f(c.get(snapshot())) })
		}
		labels := prometheus.Labels{"cache": c.name}
		cs = append(cs,
			lookup("hit", func(m CacheMetrics) int64 { return m.Hits }),
			lookup("miss", func(m CacheMetrics) int64 { return m.Misses }),
			lookup("merged", func(m CacheMetrics) int64 { return m.Merged }),
			counter("strata_remotefetch_cache_evictions_total", "Entries evicted to make room, by cache.", labels, func() int64 { return c.get(snapshot()).Evictions }),
			gauge("strata_remotefetch_cache_hit_ratio", "Share of cache lookups served without waiting for a request, since start, by cache.", labels, func() float64 { return c.get(snapshot()).HitRatio() }),
			gauge("strata_remotefetch_cache_bytes", "Bytes held by the cache.", labels, func() float64 { return float64(c.get(snapshot()).Size) }),
			gauge("strata_remotefetch_cache_capacity_bytes", "The cache's byte budget.", labels, func() float64 { return float64(c.get(snapshot()).Capacity) }))
		if c.name == "block" {
			cs = append(cs,
				lookup("readahead", func(m CacheMetrics) int64 { return m.ReadAheadHits }),
				counter("strata_remotefetch_cache_rejections_total", "Entries the admission policy refused, by cache.", labels, func() int64 { return c.get(snapshot()).Rejections }),
				counter("strata_remotefetch_block_buffers_reused_total", "Blocks loaded into the buffer of a block no longer held (cache, read-ahead windows, reads and fetch responses all done with it) rather than a fresh one.", nil, func() int64 { return c.get(snapshot()).BuffersReused }),
				gauge("strata_remotefetch_block_buffer_bytes", "Bytes of block buffers held: by the block cache, read-ahead windows, loads and reads in progress, and fetch responses not yet written.", nil, func() float64 { return float64(c.get(snapshot()).BufferBytes) }))
		}
	}
	for _, c := range cs {
		reg.MustRegister(c)
	}
}
