package ingest

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the broker's Prometheus series, registered on the Registerer
// the caller injects (nil registers nowhere).
//
//	strata_ingest_requests_total{api}               requests answered
//	strata_ingest_request_duration_seconds{api}     receipt to reply written
//	strata_ingest_partition_errors_total{api,error}  per-partition error codes returned
//	strata_ingest_bytes_in_total                    request bytes read
//	strata_ingest_bytes_out_total                   response bytes written (records included)
//	strata_ingest_connections                       open client connections
//	strata_ingest_protocol_errors_total             connections closed for a protocol violation
//	strata_ingest_fetch_wakes_missed_total{fetcher} long polls that waited out their max wait with their min bytes readable
//	strata_ingest_unsupported_requests_total        requests for an API or version not in the table
//	strata_ingest_throttled_requests_total{api}     requests answered with a throttle time (client quotas)
//	strata_ingest_queued_requests                   requests read and not yet taken by a processor (queued.max.requests)
//	strata_ingest_queued_request_bytes              bytes of requests read and not yet answered (queued.max.request.bytes)
//	strata_ingest_readers_blocked{setting}          connection readers waiting for room under that bound
//	strata_ingest_read_blocked_seconds_total{setting} time readers spent waiting for room under that bound
//	strata_ingest_fsync_duration_seconds            each fsync of a partition log (partitionManager)
//	strata_ingest_partitions                        partitions this broker serves (collected)
//	strata_ingest_log_end_offset{topic,partition}   log end offset (collected)
//	strata_ingest_log_start_offset{topic,partition} log start offset (collected)
//	strata_ingest_high_watermark{topic,partition}   high watermark (collected)
//	strata_ingest_idempotent_producers{topic,partition} producers with state (collected)
type metrics struct {
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	partitionErrors *prometheus.CounterVec
	bytesIn         prometheus.Counter
	bytesOut        prometheus.Counter
	connections     prometheus.Gauge
	protocolErrors  prometheus.Counter
	// fetchWakesMissed counts long polls that timed out though their min
	// bytes had become readable: never expected.
	fetchWakesMissed *prometheus.CounterVec
	// authentications counts SASL logins by mechanism and result;
	// unauthenticated the connections closed for a request before
	// authentication; tlsHandshakeFailures the TLS handshakes that failed.
	authentications      *prometheus.CounterVec
	unauthenticated      prometheus.Counter
	tlsHandshakeFailures prometheus.Counter
	unsupported          prometheus.Counter
	throttled            *prometheus.CounterVec

	queuedRequests     prometheus.Gauge
	queuedRequestBytes prometheus.Gauge
	readersBlocked     *prometheus.GaugeVec
	readBlocked        *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_requests_total",
			Help: "Kafka requests answered, by API.",
		}, []string{"api"}),
		requestDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_ingest_request_duration_seconds",
			Help:    "Time from reading a request to writing its reply, by API (Fetch includes its long poll).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"api"}),
		partitionErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_partition_errors_total",
			Help: "Per-partition or per-resource Kafka error codes returned, by API and error name.",
		}, []string{"api", "error"}),
		bytesIn: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_bytes_in_total",
			Help: "Request bytes read from clients, frame sizes included.",
		}),
		bytesOut: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_bytes_out_total",
			Help: "Response bytes written to clients, records sent from files included.",
		}),
		connections: f.NewGauge(prometheus.GaugeOpts{
			Name: "strata_ingest_connections",
			Help: "Open client connections.",
		}),
		authentications: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_authentications_total",
			Help: "SASL logins, by mechanism and result (succeeded, failed).",
		}, []string{"mechanism", "result"}),
		unauthenticated: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_unauthenticated_requests_total",
			Help: "Connections closed for a request a SASL listener does not take before authentication, or after the session expired.",
		}),
		tlsHandshakeFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_tls_handshake_failures_total",
			Help: "TLS handshakes that failed (no common version, an untrusted or missing client certificate, a timeout).",
		}),
		fetchWakesMissed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_fetch_wakes_missed_total",
			Help: "Fetch long polls, by fetcher (consumer or follower), that waited out their max wait though their min bytes had become readable: a wake the broker missed, or data that arrived as the wait ended. Expected to stay at or near 0.",
		}, []string{"fetcher"}),
		protocolErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_protocol_errors_total",
			Help: "Connections closed because the peer broke the protocol (bad frame, bad header, oversize frame).",
		}),
		throttled: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_throttled_requests_total",
			Help: "Requests answered with a throttle time because their client was over a client quota, by API.",
		}, []string{"api"}),
		unsupported: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_ingest_unsupported_requests_total",
			Help: "Requests for an API key or version the broker does not answer (the connection is closed).",
		}),
		queuedRequests: f.NewGauge(prometheus.GaugeOpts{
			Name: "strata_ingest_queued_requests",
			Help: "Requests read from clients and not yet taken by their connection's processor (bounded by queued.max.requests).",
		}),
		queuedRequestBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "strata_ingest_queued_request_bytes",
			Help: "Bytes of requests read from clients and not yet answered (bounded by queued.max.request.bytes).",
		}),
		readersBlocked: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strata_ingest_readers_blocked",
			Help: "Connection readers not reading their socket because the bound named by setting is full (socket.request.max.bytes per connection, queued.max.requests, queued.max.request.bytes).",
		}, []string{"setting"}),
		readBlocked: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_read_blocked_seconds_total",
			Help: "Time connection readers spent not reading their socket because the bound named by setting was full.",
		}, []string{"setting"}),
	}
	// Both series from the start, so a rate over them is defined.
	for _, fetcher := range []string{"consumer", "follower"} {
		m.fetchWakesMissed.WithLabelValues(fetcher)
	}
	return m
}

// observe records one answered request.
func (m *metrics) observe(api string, received time.Time) {
	m.requests.WithLabelValues(api).Inc()
	m.requestDuration.WithLabelValues(api).Observe(time.Since(received).Seconds())
}
