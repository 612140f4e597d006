package replica

import (
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratalog/strata/hotlog"
)

// Metrics. The per-partition offsets keep the strata_ingest_ names they had
// before partitions moved out of the broker package, so dashboards keep
// working; what replication adds is strata_replica_:
//
//	strata_ingest_fsync_duration_seconds              each fsync of a partition log (a round of the disk sync)
//	strata_disk_sync_calls_total{call}                 syncfs, fdatasync and fsync calls that made partition logs and producer snapshots durable (collected)
//	strata_disk_journal_bytes_total                    bytes the disk journal wrote (collected)
//	strata_disk_journal_retirements_total              disk journal retirement passes, each a syncfs (collected)
//	strata_disk_syncfs_failed                          1 once a syncfs (or disk journal write) of the data directory failed: every partition on it is failed until restart (collected)
//	strata_replica_failed_partitions                   partitions whose log failed after an I/O error, refusing work while the broker stops (collected)
//	strata_ingest_offline_partitions                  partitions that failed to open, retried
//	strata_ingest_partitions                          partitions this broker holds (collected)
//	strata_ingest_log_end_offset{topic,partition}     log end offset (collected)
//	strata_ingest_log_start_offset{topic,partition}   local log start offset (collected)
//	strata_ingest_high_watermark{topic,partition}     high watermark (collected)
//	strata_ingest_idempotent_producers{...}           producers with state (collected)
//	strata_replica_led_partitions                     partitions this broker leads (collected)
//	strata_replica_under_replicated_partitions        led partitions whose ISR lacks a replica, not counting those a reassignment adds (collected)
//	strata_replica_reassigning_partitions             led partitions whose reassignment is in progress (collected)
//	strata_replica_reassignment_bytes_left            bytes the replicas reassignments add still lack, estimated (collected)
//	strata_replica_under_min_isr_partitions           led partitions whose ISR is below min.insync.replicas (collected)
//	strata_replica_leaderless_partitions              held partitions with no leader: offline (collected)
//	strata_replica_follower_lag_records{topic,partition,follower}  records the follower lacks, as the leader last saw it (collected)
//	strata_replica_follower_lag_bytes{topic,partition,follower}    bytes of the leader's log after the follower's log end, estimated from segment sizes (collected)
//	strata_replica_follower_lag_seconds{topic,partition,follower}  time since the follower was last caught up (collected)
//	strata_replica_isr_shrinks_total, strata_replica_isr_expands_total   ISR changes this broker made as leader
//	strata_replica_truncations_below_high_watermark_total           refused truncations (never expected)
//	strata_replica_throttled_bytes_total{side}        replication bytes counted against the leader or follower throttle
type metrics struct {
	fsync                       prometheus.Histogram
	offline                     prometheus.Gauge
	isrShrinks, isrExpands      prometheus.Counter
	truncatedBelowHighWatermark prometheus.Counter
	throttledBytes              *prometheus.CounterVec
}

func newMetrics(m *Manager, reg prometheus.Registerer) *metrics {
	factory := promauto.With(reg)
	out := &metrics{
		fsync: factory.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_ingest_fsync_duration_seconds",
			Help:    "Time spent in each fsync of a partition's log file.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		offline: factory.NewGauge(prometheus.GaugeOpts{
			Name: "strata_ingest_offline_partitions",
			Help: "Partitions this broker holds that failed to open and are being retried.",
		}),
		isrShrinks: factory.NewCounter(prometheus.CounterOpts{
			Name: "strata_replica_isr_shrinks_total",
			Help: "Followers this broker, as leader, took out of an ISR for lagging.",
		}),
		isrExpands: factory.NewCounter(prometheus.CounterOpts{
			Name: "strata_replica_isr_expands_total",
			Help: "Followers this broker, as leader, added to an ISR once caught up.",
		}),
		truncatedBelowHighWatermark: factory.NewCounter(prometheus.CounterOpts{
			Name: "strata_replica_truncations_below_high_watermark_total",
			Help: "Truncations refused because they would take committed records back (never expected).",
		}),
		throttledBytes: factory.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_replica_throttled_bytes_total",
			Help: "Bytes of replication counted against a replication throttle: sent as leader, or fetched as follower, for throttled replicas out of the ISR.",
		}, []string{"side"}),
	}
	if reg != nil {
		reg.MustRegister(newCollector(m))
	}
	return out
}

// collector reports the open partitions' offsets and replication state at
// scrape time, so nothing is updated on the produce path.
type collector struct {
	manager                                *Manager
	partitions, led                        *prometheus.Desc
	logEnd, logStart, highWatermark        *prometheus.Desc
	producers                              *prometheus.Desc
	underReplicated, underMinISR, noLeader *prometheus.Desc
	lagRecords, lagBytes, lagSeconds       *prometheus.Desc
	diskSyncCalls, syncfsFailed, failed    *prometheus.Desc
	journalBytes, journalRetired           *prometheus.Desc
	reassigning, toMove                    *prometheus.Desc
}

func newCollector(m *Manager) *collector {
	labels := []string{"topic", "partition"}
	followerLabels := []string{"topic", "partition", "follower"}
	return &collector{
		manager:         m,
		partitions:      prometheus.NewDesc("strata_ingest_partitions", "Partitions this broker holds a replica of.", nil, nil),
		led:             prometheus.NewDesc("strata_replica_led_partitions", "Partitions this broker leads.", nil, nil),
		logEnd:          prometheus.NewDesc("strata_ingest_log_end_offset", "Offset the next appended record gets.", labels, nil),
		logStart:        prometheus.NewDesc("strata_ingest_log_start_offset", "First offset in the hot log.", labels, nil),
		highWatermark:   prometheus.NewDesc("strata_ingest_high_watermark", "Offset below which records are committed and readable.", labels, nil),
		producers:       prometheus.NewDesc("strata_ingest_idempotent_producers", "Idempotent producers with state in the partition.", labels, nil),
		underReplicated: prometheus.NewDesc("strata_replica_under_replicated_partitions", "Partitions this broker leads whose ISR lacks some replica.", nil, nil),
		underMinISR:     prometheus.NewDesc("strata_replica_under_min_isr_partitions", "Partitions this broker leads whose ISR is below min.insync.replicas: acks=all produces are refused.", nil, nil),
		noLeader:        prometheus.NewDesc("strata_replica_leaderless_partitions", "Partitions this broker holds a replica of that have no leader (offline).", nil, nil),
		lagRecords:      prometheus.NewDesc("strata_replica_follower_lag_records", "Records the follower lacks of the leader's log, as the leader last saw it.", followerLabels, nil),
		lagBytes:        prometheus.NewDesc("strata_replica_follower_lag_bytes", "Bytes of the leader's log after the follower's log end, estimated from segment sizes (exact at segment boundaries).", followerLabels, nil),
		lagSeconds:      prometheus.NewDesc("strata_replica_follower_lag_seconds", "Time since the follower last caught up with the leader's log end.", followerLabels, nil),
		reassigning:     prometheus.NewDesc("strata_replica_reassigning_partitions", "Partitions this broker leads whose reassignment is in progress.", nil, nil),
		toMove:          prometheus.NewDesc("strata_replica_reassignment_bytes_left", "Bytes the replicas that reassignments add still lack of the partitions this broker leads, estimated from segment sizes.", nil, nil),
		failed:          prometheus.NewDesc("strata_replica_failed_partitions", "Partitions on this broker whose log failed after an I/O error (a write or an fsync): they answer KAFKA_STORAGE_ERROR, and the broker stops, moving the leadership of what it leads away.", nil, nil),
		syncfsFailed:    prometheus.NewDesc("strata_disk_syncfs_failed", "1 once a syncfs of the data directory's file system, or a write or fdatasync of its disk journal, has failed (an I/O error): every partition on it then answers KAFKA_STORAGE_ERROR until the broker restarts, as Kafka takes a log directory offline; 0 otherwise.", nil, nil),
		diskSyncCalls:   prometheus.NewDesc("strata_disk_sync_calls_total", "System calls that made partition logs and producer snapshots durable: one syncfs covers every partition that asked while the previous call ran, and every snapshot of a pass.", []string{"call"}, nil),
		journalBytes:    prometheus.NewDesc("strata_disk_journal_bytes_total", "Bytes the disk journal (--disk-journal-bytes) wrote: the new bytes of partition logs (produced or replicated) that disk rounds with little new per file copied into it, and producer snapshots, with their entry headers; 0 without a journal. Each copied byte is written again to its segment file: beside the rate the logs grow, it is what the journal adds to the disk's writes.", nil, nil),
		journalRetired:  prometheus.NewDesc("strata_disk_journal_retirements_total", "Retirement passes of the disk journal: each a syncfs of the data directory's file system, then every journal file but the current one deleted (the full ones, or, before a truncation that needs it, the one in use, started afresh); 0 without a journal.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.partitions, c.led, c.logEnd, c.logStart, c.highWatermark, c.producers,
		c.underReplicated, c.underMinISR, c.noLeader, c.lagRecords, c.lagBytes, c.lagSeconds, c.diskSyncCalls, c.journalBytes, c.journalRetired, c.syncfsFailed, c.failed, c.reassigning, c.toMove} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	open := c.manager.All()
	now := time.Now()
	var led, underReplicated, underMinISR, noLeader, reassigning, failed int
	var toMove int64
	for _, p := range open {
		labels := []string{p.topic, strconv.FormatInt(int64(p.index), 10)}
		if p.log.Failure() != nil {
			failed++
		}
		logEnd := p.log.LogEndOffset()
		ch <- prometheus.MustNewConstMetric(c.logEnd, prometheus.GaugeValue, float64(logEnd), labels...)
		ch <- prometheus.MustNewConstMetric(c.logStart, prometheus.GaugeValue, float64(p.log.LogStartOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(c.highWatermark, prometheus.GaugeValue, float64(p.highWatermark.Load()), labels...)
		p.appendMu.Lock()
		producers := len(p.appendMu.producers.producers)
		p.appendMu.Unlock()
		ch <- prometheus.MustNewConstMetric(c.producers, prometheus.GaugeValue, float64(producers), labels...)
		r := p.role.Load()
		if r.leader < 0 {
			noLeader++
		}
		if !p.leads(r) {
			continue
		}
		led++
		// As Kafka counts it: against the replicas before a reassignment
		// in progress, so the replicas it adds do not alarm.
		if len(r.isr) < len(r.replicas)-len(r.adding) {
			underReplicated++
		}
		if len(r.adding) > 0 {
			reassigning++
		}
		if len(r.isr) < p.settings.Load().minInsyncReplicas {
			underMinISR++
		}
		segments := p.log.Segments()
		for _, id := range r.replicas {
			if id == c.manager.config.BrokerID {
				continue
			}
			follower := append(slices.Clone(labels), strconv.FormatInt(int64(id), 10))
			end := max(p.followers.logEnd(id), p.log.LogStartOffset())
			ch <- prometheus.MustNewConstMetric(c.lagRecords, prometheus.GaugeValue, float64(max(logEnd-end, 0)), follower...)
			lagBytes := bytesAfter(segments, end)
			ch <- prometheus.MustNewConstMetric(c.lagBytes, prometheus.GaugeValue, float64(lagBytes), follower...)
			if slices.Contains(r.adding, id) {
				toMove += lagBytes
			}
			if caughtUp, ok := p.followers.lastCaughtUp(id); ok {
				ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, now.Sub(caughtUp).Seconds(), follower...)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(len(open)))
	ch <- prometheus.MustNewConstMetric(c.led, prometheus.GaugeValue, float64(led))
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(underReplicated))
	ch <- prometheus.MustNewConstMetric(c.underMinISR, prometheus.GaugeValue, float64(underMinISR))
	ch <- prometheus.MustNewConstMetric(c.noLeader, prometheus.GaugeValue, float64(noLeader))
	ch <- prometheus.MustNewConstMetric(c.reassigning, prometheus.GaugeValue, float64(reassigning))
	ch <- prometheus.MustNewConstMetric(c.toMove, prometheus.GaugeValue, float64(toMove))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(failed))
	if disk := c.manager.disk.Load(); disk != nil {
		syncfs, fdatasync, fsync := disk.Calls()
		ch <- prometheus.MustNewConstMetric(c.diskSyncCalls, prometheus.CounterValue, float64(syncfs), "syncfs")
		ch <- prometheus.MustNewConstMetric(c.diskSyncCalls, prometheus.CounterValue, float64(fdatasync), "fdatasync")
		ch <- prometheus.MustNewConstMetric(c.diskSyncCalls, prometheus.CounterValue, float64(fsync), "fsync")
		journaled, retirements := disk.JournalWork()
		ch <- prometheus.MustNewConstMetric(c.journalBytes, prometheus.CounterValue, float64(journaled))
		ch <- prometheus.MustNewConstMetric(c.journalRetired, prometheus.CounterValue, float64(retirements))
		syncfsFailed := 0.0
		if disk.SyncfsFailed() {
			syncfsFailed = 1
		}
		ch <- prometheus.MustNewConstMetric(c.syncfsFailed, prometheus.GaugeValue, syncfsFailed)
	}
}

// bytesAfter estimates the bytes of segments after offset: whole segments
// at or above it, and of the one holding it the share its offsets after
// offset have (records are taken to be of one size).
func bytesAfter(segments []hotlog.SegmentInfo, offset int64) int64 {
	var total int64
	for _, s := range segments {
		switch {
		case s.BaseOffset >= offset:
			total += s.Size
		case s.NextOffset > offset:
			total += s.Size * (s.NextOffset - offset) / (s.NextOffset - s.BaseOffset)
		}
	}
	return total
}
