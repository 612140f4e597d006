package ingest

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/meta"
)

// maxOpenSegmentFiles is the most open sealed-segment files shared by
// every partition log (active segments are always open); a low descriptor
// limit lowers it.
const maxOpenSegmentFiles = 1024

// The descriptor budget. A broker runs out of file descriptors long before
// it runs out of memory when it is asked for tens of thousands of
// partitions: the accept loop then fails with EMFILE, new partitions cannot
// open and requests to healthy ones fail too. So the process's descriptor
// limit (RLIMIT_NOFILE, which `strata server` raises to the hard limit at
// start) is split up front, and the partitions a broker may hold follow
// from their share:
//
//	reserved       descriptorsReserved: standard streams, listeners, the
//	               poller, the metadata store and its raft connections, the
//	               short-lived files checkpoints and snapshots write
//	sockets        a quarter of the limit: client connections
//	               (max.connections) and the bucket client's connections,
//	               a quarter of the share and at most
//	               maxBucketConnections (objstore.Config.MaxConnections)
//	segment cache  an eighth of the limit, at most maxOpenSegmentFiles:
//	               sealed segments opened on demand (hotlog.FileCache)
//	partitions     the rest, descriptorsPerPartition for each partition
//
// An open partition keeps its active segment's log file open (the indexes
// are mapped and their files closed) and, once that segment is half full,
// the prepared next segment's: two descriptors.
//
// max.broker.partitions (KIP-578's name) defaults to the partitions share,
// capped at defaultMaxBrokerPartitions; a larger explicit value than the
// share allows is refused at start, because it could not be honoured.
const (
	descriptorsReserved     = 128
	descriptorsPerPartition = 2
	// defaultMaxBrokerPartitions is the most partitions a broker holds by
	// default however many descriptors it has: the ceiling the design
	// supports per broker (4,000), which the tests exercise. An operator
	// may set max.broker.partitions higher, up to the descriptor budget.
	defaultMaxBrokerPartitions = 4000
	// maxBucketConnections caps the bucket client's share of the sockets:
	// uploads and parallel ranged reads use tens of connections, never
	// thousands, however large the descriptor limit.
	maxBucketConnections = 512
)

// descriptorBudget is how a descriptor limit is shared out.
type descriptorBudget struct {
	limit    int // RLIMIT_NOFILE soft limit
	reserved int
	sockets  int
	// bucketConnections is the bucket client's part of sockets.
	bucketConnections int
	segmentFiles      int // the sealed-segment FileCache's budget
	partitions        int // the most partitions the rest can hold
}

// newDescriptorBudget splits limit as the comment above describes.
func newDescriptorBudget(limit int) descriptorBudget {
	d := descriptorBudget{limit: limit, reserved: descriptorsReserved, sockets: limit / 4}
	d.bucketConnections = max(1, min(maxBucketConnections, d.sockets/4))
	d.segmentFiles = max(1, min(maxOpenSegmentFiles, limit/8))
	d.partitions = max(0, (limit-d.reserved-d.sockets-d.segmentFiles)/descriptorsPerPartition)
	return d
}

// minDescriptorLimit is the smallest descriptor limit the broker runs
// with: it leaves room for 16 partitions and 64 connections.
const minDescriptorLimit = 256

// descriptorBudget returns the budget of c's descriptor limit: the
// configured DescriptorLimit, or the process's soft RLIMIT_NOFILE when it
// is 0.
func (c Config) descriptorBudget() (descriptorBudget, error) {
	limit := c.DescriptorLimit
	if limit == 0 {
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			return descriptorBudget{}, fmt.Errorf("reading the descriptor limit (RLIMIT_NOFILE): %w", err)
		}
		limit = int(min(rl.Cur, 1<<30))
	}
	return newDescriptorBudget(limit), nil
}

// MaxBucketConnections is how many connections the bucket client may hold
// open (objstore.Config.MaxConnections): its part of the sockets' share of
// the descriptor budget.
func (c Config) MaxBucketConnections() (int, error) {
	d, err := c.descriptorBudget()
	if err != nil {
		return 0, err
	}
	return d.bucketConnections, nil
}

// maxBrokerPartitions is max.broker.partitions in force: MaxBrokerPartitions
// when set, else the descriptor budget's share capped at
// defaultMaxBrokerPartitions.
func (c Config) maxBrokerPartitions(d descriptorBudget) int {
	if c.MaxBrokerPartitions > 0 {
		return int(c.MaxBrokerPartitions)
	}
	return min(d.partitions, defaultMaxBrokerPartitions)
}

// validateDescriptors refuses a descriptor limit too small to hold a
// partition, and a max.broker.partitions the limit cannot honour.
func (c Config) validateDescriptors() error {
	if c.DescriptorLimit < 0 {
		return fmt.Errorf("descriptor limit %d: want 0 (the process's) or more", c.DescriptorLimit)
	}
	if c.MaxBrokerPartitions < 0 {
		return fmt.Errorf("max.broker.partitions %d: want 0 (derived from the descriptor limit) or more", c.MaxBrokerPartitions)
	}
	d, err := c.descriptorBudget()
	if err != nil {
		return err
	}
	if d.limit < minDescriptorLimit {
		return fmt.Errorf("descriptor limit %d is too low to run a broker: want at least %d (raise `ulimit -n`, or the hard limit, LimitNOFILE under systemd)", d.limit, minDescriptorLimit)
	}
	if err := c.validateConnections(d); err != nil {
		return err
	}
	if int(c.MaxBrokerPartitions) > d.partitions {
		return fmt.Errorf("max.broker.partitions %d: the descriptor limit %d holds at most %d partitions (%d descriptors each, after sockets and the segment cache); raise the hard limit (`ulimit -Hn`, LimitNOFILE under systemd) or lower max.broker.partitions",
			c.MaxBrokerPartitions, d.limit, d.partitions, descriptorsPerPartition)
	}
	return nil
}

// ErrPartitionLimit means a topic creation or partition increase that would
// give a broker more partitions than max.broker.partitions.
var ErrPartitionLimit = errors.New("ingest: broker partition limit reached")

// checkPartitionLimit refuses adding the partitions of assignment (one
// replica list per new partition) when any broker would then hold more
// than max.broker.partitions. The limit is this broker's setting, applied
// to every broker: as in KIP-578, the brokers of a cluster are meant to be
// alike. The check reads st; two creates racing past it can overshoot the
// limit by the smaller of them.
func (b *Broker) checkPartitionLimit(st *meta.State, assignment [][]int32) error {
	adding := map[int32]int{}
	for _, replicas := range assignment {
		for _, r := range replicas {
			adding[r]++
		}
	}
	if len(adding) == 0 {
		return nil
	}
	held := partitionsPerBroker(st)
	for broker, n := range adding {
		if held[broker]+n > b.maxPartitions {
			return b.partitionLimitError(len(assignment), broker, held[broker], n)
		}
	}
	return nil
}

// partitionLimitError says that partitions new partitions would put adding
// replicas on broker, which holds held, past max.broker.partitions.
func (b *Broker) partitionLimitError(partitions int, broker int32, held, adding int) error {
	return fmt.Errorf("%w: %d new partitions would give broker %d %d partitions, past max.broker.partitions %d (it holds %d; unless set, the limit follows from the descriptor limit, %d here): create fewer partitions, add brokers, or raise the descriptor limit",
		ErrPartitionLimit, partitions, broker, held+adding, b.maxPartitions, held, b.descriptors.limit)
}

// partitionsPerBroker counts the partitions (replicas) st places on each
// broker.
func partitionsPerBroker(st *meta.State) map[int32]int {
	held, _ := brokerLoad(st)
	return held
}

// brokerLoad counts, per broker, the replicas st places on it and the
// partitions it is the preferred leader of (the first replica).
func brokerLoad(st *meta.State) (replicas, preferred map[int32]int) {
	replicas, preferred = map[int32]int{}, map[int32]int{}
	for _, t := range st.Topics() {
		for _, p := range st.Partitions(t.Name) {
			for _, r := range p.Replicas {
				replicas[r]++
			}
			preferred[p.Replicas[0]]++
		}
	}
	return replicas, preferred
}

// MaxBrokerPartitions is max.broker.partitions in force.
func (b *Broker) MaxBrokerPartitions() int { return b.maxPartitions }

// registerDescriptorGauges reports the descriptor budget and the
// partition limit that follows from it.
func (b *Broker) registerDescriptorGauges(reg prometheus.Registerer) {
	factory := promauto.With(reg)
	factory.NewGauge(prometheus.GaugeOpts{
		Name: "strata_ingest_max_broker_partitions",
		Help: "max.broker.partitions in force: the most partitions this broker may hold.",
	}).Set(float64(b.maxPartitions))
	gauge := factory.NewGaugeVec(prometheus.GaugeOpts{
		Name: "strata_ingest_descriptor_budget",
		Help: "The descriptor limit (use=\"limit\") and its shares: reserved, sockets, segment_cache, partitions (descriptors for max.broker.partitions).",
	}, []string{"use"})
	d := b.descriptors
	gauge.WithLabelValues("limit").Set(float64(d.limit))
	gauge.WithLabelValues("reserved").Set(float64(d.reserved))
	gauge.WithLabelValues("sockets").Set(float64(d.sockets))
	gauge.WithLabelValues("segment_cache").Set(float64(d.segmentFiles))
	gauge.WithLabelValues("partitions").Set(float64(d.partitions * descriptorsPerPartition))
}
