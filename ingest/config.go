package ingest

import (
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/stratalog/strata/group"
)

// FetchCopy names how record bytes move from a segment file to a socket.
type FetchCopy string

const (
	// FetchCopySendfile hands the file range to the kernel with sendfile(2):
	// no copy through user space.
	FetchCopySendfile FetchCopy = "sendfile"
	// FetchCopyPread reads the range into a pooled buffer with pread(2) and
	// writes it to the socket.
	FetchCopyPread FetchCopy = "pread"
)

// Config is the broker's configuration. Names in comments are Kafka's broker
// settings with the same meaning and unit.
type Config struct {
	// BrokerID is this broker's id (node.id), unique in the cluster.
	BrokerID int32
	// Rack is the broker's rack (broker.rack), reported in Metadata.
	Rack string

	// Listeners are the Kafka listeners (listeners, advertised.listeners,
	// listener.security.protocol.map): at least one, names unique. Serve
	// serves the first; ServeListener any of them.
	Listeners []Listener
	// InterBrokerListener names the listener other brokers' followers
	// fetch from (inter.broker.listener.name); "" is the first.
	InterBrokerListener string
	// Security is authentication and authorization (security.go).
	Security Security
	// InterBrokerAddress is the host:port other brokers fetch from this
	// broker at, as their followers: an advertised address that reaches the
	// inter-broker listener another way (a proxy, another network). Empty
	// means that listener's advertised address.
	InterBrokerAddress string
	// DataDir holds one directory per partition, <topic>-<partition>.
	DataDir string

	// MaxRequestBytes caps a request frame (socket.request.max.bytes). A
	// larger size prefix closes the connection before anything is allocated.
	// It also bounds the bytes one connection holds: its reader reads the
	// next frame only while the requests it has read and not yet answered
	// (the one being processed included) and that frame fit in
	// MaxRequestBytes, so a long poll at the head of a connection cannot
	// pin more than one frame's worth behind it.
	MaxRequestBytes int32
	// ReadAheadRequests is how many requests a connection may have read
	// ahead of the one being processed (pipelining depth), within the
	// bytes MaxRequestBytes allows it.
	ReadAheadRequests int
	// QueuedMaxRequests bounds the requests read on all connections and not
	// yet taken by their connection's processor (queued.max.requests).
	QueuedMaxRequests int
	// QueuedMaxRequestBytes bounds the bytes of requests read on all
	// connections and not yet answered (queued.max.request.bytes); -1 is
	// unbounded, as in Kafka. A reader reserves a frame's size before it
	// allocates the frame; past the budget it stops reading its socket, so
	// TCP pushes back on the client, until answered requests release
	// bytes. It must be at least MaxRequestBytes, so any frame the broker
	// accepts can be read.
	QueuedMaxRequestBytes int64
	// ConnectionsMaxIdle closes a connection that sends nothing for this long
	// (connections.max.idle.ms), and one that does not take a whole response
	// within it (a client that stopped reading; see conn.write).
	ConnectionsMaxIdle time.Duration

	// AutoCreateTopics creates a topic on first Metadata or Produce for it
	// (auto.create.topics.enable). Off by default, unlike Kafka.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of topics created without one
	// (num.partitions).
	DefaultPartitions int32
	// DescriptorLimit is the process's file descriptor limit
	// (RLIMIT_NOFILE), which the descriptor budget shares out
	// (descriptors.go); 0 reads the process's soft limit.
	DescriptorLimit int
	// MaxBrokerPartitions is the most partitions (replicas) a broker may
	// hold (max.broker.partitions, KIP-578): CreateTopics and
	// CreatePartitions that would take a broker past it are refused with
	// POLICY_VIOLATION. 0 derives it from the descriptor budget, at most
	// 4,000; a value the budget cannot hold is refused.
	MaxBrokerPartitions int32
	// MaxConnections is the most client connections open at once
	// (max.connections); past it the broker stops accepting until one
	// ends. An inter-broker listener apart from the clients' is not
	// counted (KIP-402, limitsConnections). 0 derives it from the
	// descriptor budget's socket share (connection_limit.go); a value the
	// share cannot hold is refused.
	MaxConnections int

	// FetchMaxBytes caps one Fetch response whatever the client asks
	// (fetch.max.bytes).
	FetchMaxBytes int32
	// FetchCopy chooses how record bytes reach the socket.
	FetchCopy FetchCopy

	// ProducerIDBlockSize is how many producer ids the broker reserves from
	// the metadata group at a time.
	ProducerIDBlockSize int64
	// ProducerStateScanBytes bounds how much of each partition's log tail is
	// read, batch header by batch header, to rebuild idempotent producer state
	// after a restart.
	ProducerStateScanBytes int64
	// DiskJournalBytes, above 0, has the partitions' durable rounds over
	// many partitions with little new data each go through a write-ahead
	// journal of files of this size in DataDir (hotlog's journal.go)
	// rather than a syncfs of every file; 0 is off.
	DiskJournalBytes int64

	// DefaultReplicationFactor is the replication factor of topics created
	// without one (default.replication.factor). 0 chooses by cluster size:
	// 3 once at least three brokers are registered, else 1 (topics.go).
	DefaultReplicationFactor int
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has not
	// caught up with its leader's log end for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// SessionTimeout is broker.session.timeout.ms as the metadata group
	// enforces it. It is the leadership lease: a leader whose last
	// successful heartbeat was sent longer ago takes no writes, since the
	// controller may have fenced it and elected a successor.
	SessionTimeout time.Duration

	// ShutdownTimeout bounds how long Shutdown waits for in-flight requests.
	ShutdownTimeout time.Duration

	// Groups configures the consumer group coordinator.
	Groups group.Config
}

// DefaultQueuedMaxRequestBytes is the default queued.max.request.bytes:
// 512 MiB. Kafka's default is -1, unbounded; strata bounds it, because
// without a bound a few connections pipelining large produce requests can
// take the broker's memory (three connections took its RSS from 123 MB
// to 2.75 GB). The figure is fixed rather than derived from the machine's
// memory, so a broker behaves the same wherever it runs. It is five frames
// of the default socket.request.max.bytes (100 MiB), and about
// queued.max.requests (500) requests of a Kafka producer's default
// max.request.size (1 MiB), so for ordinary producers the two bounds bind
// at about the same point.
const DefaultQueuedMaxRequestBytes = 512 << 20

// DefaultConfig returns the embedded single-node defaults (DESIGN §8).
func DefaultConfig() Config {
	return Config{
		BrokerID:               1,
		Listeners:              []Listener{{Name: "PLAINTEXT", Protocol: Plaintext, Address: "127.0.0.1:9092"}},
		Security:               DefaultSecurity(),
		DataDir:                "strata-data",
		MaxRequestBytes:        100 << 20,
		ReadAheadRequests:      8,
		QueuedMaxRequests:      500,
		QueuedMaxRequestBytes:  DefaultQueuedMaxRequestBytes,
		ConnectionsMaxIdle:     10 * time.Minute,
		DefaultPartitions:      1,
		FetchMaxBytes:          55 << 20,
		FetchCopy:              FetchCopySendfile,
		ProducerIDBlockSize:    1000,
		ProducerStateScanBytes: 64 << 20,
		ShutdownTimeout:        30 * time.Second,
		ReplicaLagTimeMax:      30 * time.Second,
		SessionTimeout:         9 * time.Second,
		Groups:                 group.DefaultConfig(),
	}
}

// Validate reports the first setting that cannot work, naming it and what it
// needs to be.
func (c Config) Validate() error {
	var errs []error
	if c.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("node.id %d: want 0 or more", c.BrokerID))
	}
	if err := c.validateListeners(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Security.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.InterBrokerAddress != "" {
		if _, _, err := net.SplitHostPort(c.InterBrokerAddress); err != nil {
			errs = append(errs, fmt.Errorf("inter-broker address %q: want host:port", c.InterBrokerAddress))
		}
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir: must be set"))
	}
	if c.MaxRequestBytes < 1<<10 {
		errs = append(errs, fmt.Errorf("socket.request.max.bytes %d: want at least 1024", c.MaxRequestBytes))
	}
	if c.ReadAheadRequests < 0 {
		errs = append(errs, fmt.Errorf("read-ahead requests %d: want 0 or more", c.ReadAheadRequests))
	}
	if c.QueuedMaxRequests < 1 {
		errs = append(errs, fmt.Errorf("queued.max.requests %d: want at least 1", c.QueuedMaxRequests))
	}
	switch {
	case c.QueuedMaxRequestBytes == -1:
	case c.QueuedMaxRequestBytes < 1:
		errs = append(errs, fmt.Errorf("queued.max.request.bytes %d: want -1 (unbounded) or at least socket.request.max.bytes (%d)",
			c.QueuedMaxRequestBytes, c.MaxRequestBytes))
	case c.QueuedMaxRequestBytes < int64(c.MaxRequestBytes):
		errs = append(errs, fmt.Errorf("queued.max.request.bytes %d is below socket.request.max.bytes %d, so a frame of the largest size accepted could never be read: raise queued.max.request.bytes or lower socket.request.max.bytes",
			c.QueuedMaxRequestBytes, c.MaxRequestBytes))
	}
	if c.ConnectionsMaxIdle <= 0 {
		errs = append(errs, fmt.Errorf("connections.max.idle.ms %v: want a positive duration", c.ConnectionsMaxIdle))
	}
	if c.DefaultPartitions < 1 {
		errs = append(errs, fmt.Errorf("num.partitions %d: want at least 1", c.DefaultPartitions))
	}
	if c.DefaultReplicationFactor < 0 || c.DefaultReplicationFactor > math.MaxInt16 {
		errs = append(errs, fmt.Errorf("default.replication.factor %d: want 0 (3 in clusters of three brokers or more, else 1) or 1 to %d", c.DefaultReplicationFactor, math.MaxInt16))
	}
	if c.ReplicaLagTimeMax < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("replica.lag.time.max.ms %d: want at least 100", c.ReplicaLagTimeMax.Milliseconds()))
	}
	if c.SessionTimeout <= brokerHeartbeatInterval {
		errs = append(errs, fmt.Errorf("broker.session.timeout.ms %d: want more than the %v heartbeat interval", c.SessionTimeout.Milliseconds(), brokerHeartbeatInterval))
	}
	if err := c.validateDescriptors(); err != nil {
		errs = append(errs, err)
	}
	if c.FetchMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("fetch.max.bytes %d: want at least 1", c.FetchMaxBytes))
	}
	if c.FetchCopy != FetchCopySendfile && c.FetchCopy != FetchCopyPread {
		errs = append(errs, fmt.Errorf("fetch copy %q: want %q or %q", c.FetchCopy, FetchCopySendfile, FetchCopyPread))
	}
	if c.ProducerIDBlockSize < 1 {
		errs = append(errs, fmt.Errorf("producer id block size %d: want at least 1", c.ProducerIDBlockSize))
	}
	if c.DiskJournalBytes != 0 && c.DiskJournalBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("disk-journal-bytes %d: want 0 (off) or at least 1048576 (1 MiB)", c.DiskJournalBytes))
	}
	if c.ProducerStateScanBytes < 0 {
		errs = append(errs, fmt.Errorf("producer state scan bytes %d: want 0 or more", c.ProducerStateScanBytes))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown timeout %v: want a positive duration", c.ShutdownTimeout))
	}
	if err := c.Groups.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("groups: %w", err))
	}
	return errors.Join(errs...)
}
