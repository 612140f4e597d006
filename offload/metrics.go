package offload

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricNames lists every metric the Manager registers:
//
//	strata_offload_uploaded_segments_total        segments committed
//	strata_offload_uploaded_bytes_total           object bytes committed (remote bytes written)
//	strata_offload_upload_duration_seconds        start (or resumption) to commit of each upload, retries included
//	strata_offload_puts_per_segment               PUT attempts per committed segment (goal: 1)
//	strata_offload_failures_total{step}           failed attempts: read, begin, put, commit, manifest, delete, list;
//	                                              missing_object: a committed segment whose object is gone, left out of the bucket manifest
//	strata_offload_remote_deletes_total{reason}   segments marked deleting: retention_ms, retention_bytes, log_start, abandoned, recompacted
//	strata_offload_recompacted_bytes_total{kind}  remote recompaction: object bytes read, and written as replacements
//	strata_offload_recompacted_records_total      records remote recompaction removed
//	strata_offload_orphans_deleted_total          objects no manifest entry named, and those of deleted topics
//	strata_offload_local_deletes_total{reason}    hot segments deleted: retention, disk_pressure
//	strata_offload_awaiting_upload_bytes{topic,partition}       sealed bytes not yet tiered
//	strata_offload_awaiting_upload_segments{topic,partition}    sealed segments not yet tiered
//	strata_offload_upload_wait_seconds{topic,partition}         how long the next upload has been possible
//	strata_offload_last_upload_timestamp_seconds{topic,partition}  the last commit (0: none yet)
//	strata_offload_stalled_partitions             partitions whose upload is stalled (PartitionStatus.Stalled)
//	strata_offload_disk_used_ratio                the hot disk's used fraction at the last check
//	strata_offload_disk_full                      1 while Produce should be refused
//
// The per-partition gauges are computed when scraped, from the hot logs
// and meta's local state, so a removed partition leaves no stale series.
var MetricNames = []string{
	"strata_offload_uploaded_segments_total",
	"strata_offload_uploaded_bytes_total",
	"strata_offload_upload_duration_seconds",
	"strata_offload_puts_per_segment",
	"strata_offload_failures_total",
	"strata_offload_remote_deletes_total",
	"strata_offload_recompacted_bytes_total",
	"strata_offload_recompacted_records_total",
	"strata_offload_orphans_deleted_total",
	"strata_offload_local_deletes_total",
	"strata_offload_awaiting_upload_bytes",
	"strata_offload_awaiting_upload_segments",
	"strata_offload_upload_wait_seconds",
	"strata_offload_last_upload_timestamp_seconds",
	"strata_offload_stalled_partitions",
	"strata_offload_disk_used_ratio",
	"strata_offload_disk_full",
}

type metrics struct {
	uploadedSegments prometheus.Counter
	uploadedBytes    prometheus.Counter
	uploadDuration   prometheus.Histogram
	putsPerSegment   prometheus.Histogram
	failures         *prometheus.CounterVec
	remoteDeletes    *prometheus.CounterVec
	recompactBytes   *prometheus.CounterVec
	recompactRecords prometheus.Counter
	orphansDeleted   prometheus.Counter
	localDeletes     *prometheus.CounterVec
	gauges           *gaugeCollector

	reg        prometheus.Registerer
	registered []prometheus.Collector
}

func newMetrics(m *Manager) *metrics {
	mt := &metrics{
		uploadedSegments: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_offload_uploaded_segments_total",
			Help: "Segments uploaded and committed to the manifest.",
		}),
		uploadedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_offload_uploaded_bytes_total",
			Help: "Object bytes of the segments committed: remote bytes written.",
		}),
		uploadDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_offload_upload_duration_seconds",
			Help:    "Time from the start (or resumption) of a segment's upload to its commit, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		putsPerSegment: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_offload_puts_per_segment",
			Help:    "PUT attempts each committed segment took (1 when nothing failed).",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 32},
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_offload_failures_total",
			Help: "Failed attempts by step: read, begin, put, commit, manifest, delete, list; missing_object: a committed segment whose object is gone, counted at each publish.",
		}, []string{"step"}),
		remoteDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_offload_remote_deletes_total",
			Help: "Remote segments marked for deletion, by reason: retention_ms, retention_bytes, log_start, abandoned, recompacted.",
		}, []string{"reason"}),
		recompactBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_offload_recompacted_bytes_total",
			Help: "Remote recompaction of compacted topics: segment bytes read (kind=read) and replacement object bytes written (kind=written).",
		}, []string{"kind"}),
		recompactRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_offload_recompacted_records_total",
			Help: "Records remote recompaction removed from segments in the bucket.",
		}),
		orphansDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_offload_orphans_deleted_total",
			Help: "Segment objects deleted because no manifest entry named them.",
		}),
		localDeletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_offload_local_deletes_total",
			Help: "Hot log segments deleted after their upload, by reason: retention, disk_pressure.",
		}, []string{"reason"}),
		gauges: newGaugeCollector(m),
	}
	for _, kind := range []string{"read", "written"} {
		mt.recompactBytes.WithLabelValues(kind) // exported at 0 from the start
	}
	return mt
}

// register registers every metric with reg (nil: none).
func (mt *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	mt.reg = reg
	for _, c := range []prometheus.Collector{
		mt.uploadedSegments, mt.uploadedBytes, mt.uploadDuration, mt.putsPerSegment,
		mt.failures, mt.remoteDeletes, mt.recompactBytes, mt.recompactRecords, mt.orphansDeleted, mt.localDeletes, mt.gauges,
	} {
		if err := reg.Register(c); err != nil {
			mt.unregister()
			return errors.Join(ErrInvalidConfig, err)
		}
		mt.registered = append(mt.registered, c)
	}
	return nil
}

func (mt *metrics) unregister() {
	for _, c := range mt.registered {
		mt.reg.Unregister(c)
	}
	mt.registered = nil
}

// gaugeCollector computes the gauges when scraped.
type gaugeCollector struct {
	m                                                 *Manager
	awaitingBytes, awaitingSegments, wait, lastUpload *prometheus.Desc
	stalled, diskUsed, diskFull                       *prometheus.Desc
}

func newGaugeCollector(m *Manager) *gaugeCollector {
	labels := []string{"topic", "partition"}
	return &gaugeCollector{
		m:                m,
		awaitingBytes:    prometheus.NewDesc("strata_offload_awaiting_upload_bytes", "Bytes of sealed segments not yet tiered.", labels, nil),
		awaitingSegments: prometheus.NewDesc("strata_offload_awaiting_upload_segments", "Sealed segments not yet tiered.", labels, nil),
		wait:             prometheus.NewDesc("strata_offload_upload_wait_seconds", "How long the partition's next upload has been possible but not done (0: none waits).", labels, nil),
		lastUpload:       prometheus.NewDesc("strata_offload_last_upload_timestamp_seconds", "Unix time of the partition's last committed upload (0: none yet).", labels, nil),
		stalled:          prometheus.NewDesc("strata_offload_stalled_partitions", "Partitions whose next upload is stalled: waiting past the stall alarm, failed too often, or refused by the store.", nil, nil),
		diskUsed:         prometheus.NewDesc("strata_offload_disk_used_ratio", "Used fraction of the hot disk at the last check.", nil, nil),
		diskFull:         prometheus.NewDesc("strata_offload_disk_full", "1 while the hot disk is full and Produce should be refused.", nil, nil),
	}
}

func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.awaitingBytes, c.awaitingSegments, c.wait, c.lastUpload, c.stalled, c.diskUsed, c.diskFull} {
		ch <- d
	}
}

func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	status := c.m.Status()
	stalled := 0
	for _, p := range status.Partitions {
		labels := []string{p.Topic, strconv.Itoa(int(p.Partition))}
		ch <- prometheus.MustNewConstMetric(c.awaitingBytes, prometheus.GaugeValue, float64(p.BytesAwaitingUpload), labels...)
		ch <- prometheus.MustNewConstMetric(c.awaitingSegments, prometheus.GaugeValue, float64(p.SegmentsAwaitingUpload), labels...)
		ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, p.UploadWait.Seconds(), labels...)
		last := 0.0
		if !p.LastUpload.IsZero() {
			last = float64(p.LastUpload.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(c.lastUpload, prometheus.GaugeValue, last, labels...)
		if p.Stalled {
			stalled++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.stalled, prometheus.GaugeValue, float64(stalled))
	ch <- prometheus.MustNewConstMetric(c.diskUsed, prometheus.GaugeValue, status.DiskUsedRatio)
	full := 0.0
	if status.DiskFull {
		full = 1
	}
	ch <- prometheus.MustNewConstMetric(c.diskFull, prometheus.GaugeValue, full)
}
