package ingest

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// partitionCollector reports the open partitions' offsets at scrape time,
// so nothing is updated on the produce path.
type partitionCollector struct {
	manager       *partitionManager
	partitions    *prometheus.Desc
	logEnd        *prometheus.Desc
	logStart      *prometheus.Desc
	highWatermark *prometheus.Desc
	producers     *prometheus.Desc
}

func newPartitionCollector(m *partitionManager) *partitionCollector {
	labels := []string{"topic", "partition"}
	return &partitionCollector{
		manager:       m,
		partitions:    prometheus.NewDesc("strata_ingest_partitions", "Partitions this broker serves.", nil, nil),
		logEnd:        prometheus.NewDesc("strata_ingest_log_end_offset", "Offset the next appended record gets.", labels, nil),
		logStart:      prometheus.NewDesc("strata_ingest_log_start_offset", "First readable offset.", labels, nil),
		highWatermark: prometheus.NewDesc("strata_ingest_high_watermark", "Offset below which records are durable and readable.", labels, nil),
		producers:     prometheus.NewDesc("strata_ingest_idempotent_producers", "Idempotent producers with state in the partition.", labels, nil),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.partitions
	ch <- c.logEnd
	ch <- c.logStart
	ch <- c.highWatermark
	ch <- c.producers
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	open := c.manager.all()
	ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(len(open)))
	for _, p := range open {
		labels := []string{p.topic, strconv.FormatInt(int64(p.index), 10)}
		ch <- prometheus.MustNewConstMetric(c.logEnd, prometheus.GaugeValue, float64(p.log.LogEndOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(c.logStart, prometheus.GaugeValue, float64(p.log.LogStartOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(c.highWatermark, prometheus.GaugeValue, float64(p.highWatermark.Load()), labels...)
		p.appendMu.Lock()
		producers := len(p.appendMu.producers.producers)
		p.appendMu.Unlock()
		ch <- prometheus.MustNewConstMetric(c.producers, prometheus.GaugeValue, float64(producers), labels...)
	}
}
