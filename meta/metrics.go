package meta

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// MetricNames lists the metrics a node registers, for docs and dashboards.
var MetricNames = []string{
	"strata_meta_apply_duration_seconds",
	"strata_meta_snapshot_persist_duration_seconds",
	"strata_meta_commands_applied_total",
	"strata_meta_fsm_fatal_errors_total",
	"strata_meta_proposals_total",
	"strata_meta_commit_latency_seconds",
	"strata_meta_batch_commands",
	"strata_meta_forwarded_batches_total",
	"strata_meta_brokers_fenced_total",
	"strata_meta_unclean_leader_elections_total",
	"strata_meta_clean_leader_elections_total",
	"strata_meta_is_leader",
	"strata_meta_term",
	"strata_meta_commit_index",
	"strata_meta_applied_index",
}

// metrics are a node's Prometheus metrics. They are registered with the
// Config's Registerer, if any, and unregistered by Close, so a node can be
// reopened against the same registry.
type metrics struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector

	applyDuration    prometheus.Histogram
	snapshotDuration prometheus.Histogram
	commandsApplied  *prometheus.CounterVec
	fsmFatal         prometheus.Counter
	proposals        *prometheus.CounterVec

	// The labelled counters, looked up once: they are on the hot path.
	appliedOK, appliedRejected, appliedIgnored      prometheus.Counter
	proposalsOK, proposalsRejected, proposalsFailed prometheus.Counter

	commitLatency prometheus.Histogram
	batchCommands prometheus.Histogram
	forwarded     prometheus.Counter
	brokersFenced prometheus.Counter
	// uncleanElections counts leaders this node, as controller, elected
	// from outside the ISR.
	uncleanElections prometheus.Counter
	// cleanElections counts partitions whose leadership moved to another
	// ISR member when this node, as controller, fenced their leader.
	cleanElections prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reg: reg,
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_meta_apply_duration_seconds",
			Help:    "Time to apply one committed Raft entry (one command or one batch) to the state machine.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
		}),
		snapshotDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_meta_snapshot_persist_duration_seconds",
			Help:    "Time to write one state machine snapshot.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 4, 10),
		}),
		commandsApplied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_meta_commands_applied_total",
			Help: "Commands applied by the state machine, by result: ok, rejected (a precondition failed) or ignored (an unknown optional command).",
		}, []string{"result"}),
		fsmFatal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_meta_fsm_fatal_errors_total",
			Help: "Fatal state machine errors (an undecodable or unknown command, a bad snapshot); each stops the node.",
		}),
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_meta_proposals_total",
			Help: "Proposals made on this node, by outcome: ok, rejected (a precondition failed) or failed (not committed, or outcome unknown).",
		}, []string{"outcome"}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_meta_commit_latency_seconds",
			Help:    "Time from Propose to the command being applied on this node.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16),
		}),
		batchCommands: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_meta_batch_commands",
			Help:    "Commands coalesced into one Raft entry (or one forwarded batch) by this node's batcher.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_meta_forwarded_batches_total",
			Help: "Batches of proposals this node forwarded to the leader.",
		}),
		brokersFenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_meta_brokers_fenced_total",
			Help: "Brokers this node fenced, as leader, for missing their session timeout.",
		}),
		uncleanElections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_meta_unclean_leader_elections_total",
			Help: "Leaders this node, as controller, elected from outside the ISR (unclean.leader.election.enable): each may have lost acknowledged records.",
		}),
		cleanElections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_meta_clean_leader_elections_total",
			Help: "Partitions whose leadership moved to another ISR member when this node, as controller, fenced their leader.",
		}),
	}
	m.appliedOK = m.commandsApplied.WithLabelValues("ok")
	m.appliedRejected = m.commandsApplied.WithLabelValues("rejected")
	m.appliedIgnored = m.commandsApplied.WithLabelValues("ignored")
	m.proposalsOK = m.proposals.WithLabelValues("ok")
	m.proposalsRejected = m.proposals.WithLabelValues("rejected")
	m.proposalsFailed = m.proposals.WithLabelValues("failed")
	err := m.register(m.applyDuration, m.snapshotDuration, m.commandsApplied, m.fsmFatal, m.proposals,
		m.commitLatency, m.batchCommands, m.forwarded, m.brokersFenced, m.uncleanElections, m.cleanElections)
	if err != nil {
		m.unregister()
		return nil, err
	}
	return m, nil
}

// registerRaft adds gauges read from Raft and the state machine.
func (m *metrics) registerRaft(r *raft.Raft, f *fsm) error {
	gauge := func(name, help string, value func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value)
	}
	return m.register(
		gauge("strata_meta_is_leader", "1 while this node is the Raft leader.", func() float64 {
			if r.State() == raft.Leader {
				return 1
			}
			return 0
		}),
		gauge("strata_meta_term", "The current Raft term.", func() float64 { return float64(r.CurrentTerm()) }),
		gauge("strata_meta_commit_index", "The Raft commit index.", func() float64 { return float64(r.CommitIndex()) }),
		gauge("strata_meta_applied_index", "The Raft index of the last command applied to the state machine.",
			func() float64 { return float64(f.current().index) }),
	)
}

func (m *metrics) register(cs ...prometheus.Collector) error {
	if m.reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if errors.As(err, &dup) {
				return fmt.Errorf("meta: metrics already registered (one node per registry): %w", err)
			}
			return fmt.Errorf("meta: registering metrics: %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return nil
}

// unregister removes every metric this node registered.
func (m *metrics) unregister() {
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}
