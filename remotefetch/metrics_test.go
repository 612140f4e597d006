package remotefetch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics reach the injected registry and agree with Metrics().
func TestMetricsRegistered(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "metrics", 0, []int{30}, segmentSpec{})
	p.put(t, s)
	reg := prometheus.NewPedanticRegistry()
	cfg := testConfig()
	cfg.Registerer = reg
	r := newReader(t, StoreBucket(s), p, cfg)
	readAll(t, r, p, 0, 2000)
	m := r.Metrics()

	checks := map[string]float64{
		"strata_remotefetch_read_bytes_total":                                      float64(m.ReadBytes),
		"strata_remotefetch_gets_per_mib":                                          m.GetsPerMiB(),
		`strata_remotefetch_cache_hit_ratio{cache="block"}`:                        m.Blocks.HitRatio(),
		`strata_remotefetch_bucket_requests_total{kind="index",outcome="success"}`: 1,
		`strata_remotefetch_reads_total{outcome="success"}`:                        float64(m.Reads),
	}
	values, err := gatherSeries(reg)
	if err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := make(map[string]bool)
	for _, f := range families {
		registered[f.GetName()] = true
	}
	for _, name := range documentedMetrics {
		if !registered[name] {
			t.Errorf("%s is not registered", name)
		}
	}
	if len(registered) != len(documentedMetrics) {
		t.Errorf("%d metrics registered, doc.go lists %d", len(registered), len(documentedMetrics))
	}
	if m.ReadBytes != int64(len(p.allBatches())) || m.GetsPerMiB() == 0 || m.Blocks.HitRatio() == 0 {
		t.Fatalf("metrics %+v do not describe a scan of the partition", m)
	}
	for series, want := range checks {
		if got, ok := values[series]; !ok || got != want {
			t.Errorf("%s = %v (present: %v), want %v", series, got, ok, want)
		}
	}
}

// documentedMetrics are the metrics doc.go lists.
var documentedMetrics = []string{
	"strata_remotefetch_reads_total",
	"strata_remotefetch_read_bytes_total",
	"strata_remotefetch_read_duration_seconds",
	"strata_remotefetch_bucket_requests_total",
	"strata_remotefetch_bucket_request_duration_seconds",
	"strata_remotefetch_bucket_read_bytes_total",
	"strata_remotefetch_bucket_retries_total",
	"strata_remotefetch_gets_per_mib",
	"strata_remotefetch_cache_lookups_total",
	"strata_remotefetch_cache_hit_ratio",
	"strata_remotefetch_cache_bytes",
	"strata_remotefetch_cache_capacity_bytes",
	"strata_remotefetch_cache_evictions_total",
	"strata_remotefetch_cache_rejections_total",
	"strata_remotefetch_block_buffers_reused_total",
	"strata_remotefetch_block_buffer_bytes",
	"strata_remotefetch_prefetches_total",
	"strata_remotefetch_corrupt_reads_total",
	"strata_remotefetch_fetch_timeouts_total",
}

// gatherSeries is every counter and gauge in reg by series, written as in the
// exposition format: name{label="value",…}, labels sorted.
func gatherSeries(reg prometheus.Gatherer) (map[string]float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	values := make(map[string]float64)
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := f.GetName()
			if len(labels) > 0 {
				series += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case metric.Counter != nil:
				values[series] = metric.Counter.GetValue()
			case metric.Gauge != nil:
				values[series] = metric.Gauge.GetValue()
			}
		}
	}
	return values, nil
}
