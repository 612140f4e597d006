package compact

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MetricNames lists every metric a Cleaner registers:
//
//	strata_cleaner_passes_total{result}        passes over a partition: ok, error
//	strata_cleaner_bytes_read_total            log bytes read (mapping keys and rewriting)
//	strata_cleaner_bytes_written_total         log bytes written into cleaned segments
//	strata_cleaner_records_removed_total       superseded records, expired tombstones, keyless records
//	strata_cleaner_max_dirty_ratio             the highest dirty ratio of a compacted partition, at the last look
//	strata_cleaner_dirty_bytes                 cleanable bytes not yet cleaned, over every partition (the cleaner's lag)
var MetricNames = []string{
	"strata_cleaner_passes_total",
	"strata_cleaner_bytes_read_total",
	"strata_cleaner_bytes_written_total",
	"strata_cleaner_records_removed_total",
	"strata_cleaner_max_dirty_ratio",
	"strata_cleaner_dirty_bytes",
}

type metrics struct {
	passes         *prometheus.CounterVec
	bytesRead      prometheus.Counter
	bytesWritten   prometheus.Counter
	recordsRemoved prometheus.Counter
	maxDirtyRatio  prometheus.Gauge
	dirtyBytes     prometheus.Gauge

	reg        prometheus.Registerer
	registered []prometheus.Collector
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_cleaner_passes_total",
			Help: "Cleaning passes over a compacted partition, by result: ok, error.",
		}, []string{"result"}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cleaner_bytes_read_total",
			Help: "Log bytes the cleaner read, mapping keys and rewriting segments.",
		}),
		bytesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cleaner_bytes_written_total",
			Help: "Log bytes the cleaner wrote into cleaned segments.",
		}),
		recordsRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_cleaner_records_removed_total",
			Help: "Records the cleaner removed: superseded versions, expired tombstones, records without a key.",
		}),
		maxDirtyRatio: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_cleaner_max_dirty_ratio",
			Help: "The highest dirty ratio (dirty bytes over cleanable bytes) of a compacted partition at the cleaner's last look.",
		}),
		dirtyBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_cleaner_dirty_bytes",
			Help: "Cleanable bytes not yet cleaned, over every compacted partition, at the cleaner's last look: its lag.",
		}),
	}
	m.passes.WithLabelValues("ok")
	m.passes.WithLabelValues("error")
	if reg == nil {
		return m, nil
	}
	m.reg = reg
	for _, c := range []prometheus.Collector{m.passes, m.bytesRead, m.bytesWritten, m.recordsRemoved, m.maxDirtyRatio, m.dirtyBytes} {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, err
		}
		m.registered = append(m.registered, c)
	}
	return m, nil
}

func (m *metrics) unregister() {
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}
