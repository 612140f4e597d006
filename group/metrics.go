package group

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the lag of every group this broker coordinates at
// scrape time (Coordinator.Groups; another broker exports the others):
//
//	strata_group_lag_records{group,topic,partition}
//	strata_group_lag_seconds{group,topic,partition}
//	strata_group_stalled{group,topic,partition,member}  1 while stalled
//	strata_group_members{group,state}
type Collector struct {
	c       *Coordinator
	records *prometheus.Desc
	seconds *prometheus.Desc
	stalled *prometheus.Desc
	members *prometheus.Desc
}

// NewCollector builds the collector; register it with a Registerer.
func NewCollector(c *Coordinator) *Collector {
	labels := []string{"group", "topic", "partition"}
	return &Collector{
		c:       c,
		records: prometheus.NewDesc("strata_group_lag_records", "Records between a group's committed offset and the high watermark.", labels, nil),
		seconds: prometheus.NewDesc("strata_group_lag_seconds", "Age of the record at a group's committed offset (0 without lag).", labels, nil),
		stalled: prometheus.NewDesc("strata_group_stalled", "1 while a partition of a group with live members has lag and its committed offset does not move (ghost consumer).", append(labels, "member"), nil),
		members: prometheus.NewDesc("strata_group_members", "Members of a group, with its state.", []string{"group", "state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (col *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- col.records
	ch <- col.seconds
	ch <- col.stalled
	ch <- col.members
}

// scrapeTimeout bounds one scrape's questions to the coordinator loop.
const scrapeTimeout = 5 * time.Second

// Collect implements prometheus.Collector.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ids, err := col.c.Groups(ctx)
	if err != nil {
		return
	}
	descriptions, err := col.c.Describe(ctx, ids)
	if err != nil {
		return
	}
	for _, d := range descriptions {
		ch <- prometheus.MustNewConstMetric(col.members, prometheus.GaugeValue, float64(len(d.Members)), d.Group, string(d.State))
		lags, err := col.c.Lag(ctx, d.Group)
		if err != nil {
			return
		}
		for _, l := range lags {
			// The metrics are about committed offsets: a partition
			// never committed (assigned, counted from the log start)
			// would alert on consumers that start at the log end.
			if l.Err != nil || l.CommittedOffset < 0 {
				continue
			}
			partition := strconv.Itoa(int(l.Partition))
			ch <- prometheus.MustNewConstMetric(col.records, prometheus.GaugeValue, float64(l.Records), d.Group, l.Topic, partition)
			ch <- prometheus.MustNewConstMetric(col.seconds, prometheus.GaugeValue, l.Age.Seconds(), d.Group, l.Topic, partition)
			stalled := 0.0
			if l.Stalled {
				stalled = 1
			}
			ch <- prometheus.MustNewConstMetric(col.stalled, prometheus.GaugeValue, stalled, d.Group, l.Topic, partition, l.Member)
		}
	}
}
