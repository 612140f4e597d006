package registry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricNames lists every metric the registry registers:
//
//	strata_registry_registrations_total            schemas registered (new versions)
//	strata_registry_compatibility_failures_total   registrations and checks refused as incompatible
//	strata_registry_records_refused_total{reason}  produced records refused by schema validation (ingest counts them through Refused)
var MetricNames = []string{
	"strata_registry_registrations_total",
	"strata_registry_compatibility_failures_total",
	"strata_registry_records_refused_total",
}

type metrics struct {
	registered   prometheus.Counter
	incompatible prometheus.Counter
	refused      *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_registry_registrations_total",
			Help: "Schemas registered as new subject versions.",
		}),
		incompatible: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_registry_compatibility_failures_total",
			Help: "Registrations and compatibility checks that found the schema incompatible.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_registry_records_refused_total",
			Help: "Produced records refused by schema validation, by reason: no_magic_byte, unknown_schema, wrong_subject, undecodable.",
		}, []string{"reason"}),
	}
	for _, reason := range []string{reasonNoMagicByte, reasonUnknownSchema, reasonWrongSubject, reasonUndecodable} {
		m.refused.WithLabelValues(reason) // exported at 0 from the start
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{m.registered, m.incompatible, m.refused} {
		if err := reg.Register(c); err != nil {
			return errors.Join(errors.New("registry: metrics"), err)
		}
	}
	return nil
}
