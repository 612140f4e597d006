package meta

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Peer is one voter of the metadata group: its node id and the meta address
// (host:port) the other nodes reach it at.
type Peer struct {
	ID      string `json:"id"`
	Address string `json:"address"`
}

// Config configures a Node. Start from DefaultConfig, which is a working
// single-voter node, and override fields.
type Config struct {
	// NodeID names this node in the Raft group. It must stay the same for
	// the life of DataDir.
	NodeID string

	// BindAddr is the host:port the node listens on, for Raft and for the
	// forwarding RPC alike (the first byte of a connection tells them apart).
	BindAddr string

	// AdvertiseAddr is the host:port other nodes dial. Empty means the
	// address this node has in Peers, or else the bound address (which then
	// must not be a wildcard such as 0.0.0.0).
	AdvertiseAddr string

	// Listener, when set, is used instead of binding BindAddr. The node takes
	// ownership and closes it. Tests pass a listener on 127.0.0.1:0.
	Listener net.Listener
	// TLS, when set, secures the metadata port with mutual TLS: the
	// listener serves TLS.Server, which must require and verify client
	// certificates (and may check who they name), and this node dials its
	// peers with TLS.Client. Without it the port is open to anyone who
	// reaches it: keep it on a private network.
	TLS *PeerTLS

	// DataDir holds raft.db (Raft log and stable store) and snapshots/.
	DataDir string

	// Peers lists the voters. Empty means embedded mode: this node is the
	// one voter. When NodeID is in Peers the node is a voter and, on first
	// start, bootstraps the group with exactly this list (every voter must be
	// given the same list). When NodeID is not in Peers the node is a
	// non-voting member: it asks the voters to add it and follows the log.
	Peers []Peer

	// SnapshotThreshold is how many log entries since the last snapshot
	// trigger a new one; SnapshotInterval is how often that is checked.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is how many entries are kept after a snapshot, so that a
	// briefly lagging follower catches up from the log, not a snapshot.
	TrailingLogs uint64
	// SnapshotRetain is how many snapshots are kept on disk.
	SnapshotRetain int

	// Raft timing. LeaderLeaseTimeout must not exceed HeartbeatTimeout, and
	// ElectionTimeout must be at least HeartbeatTimeout. CommitTimeout bounds
	// how long followers take to learn a new commit index when no new
	// entries flow, and so how soon they see a change proposed on the leader;
	// proposals forwarded from followers do not wait for it (see the commit
	// kicks in leader.go). Lower costs idle traffic: one AppendEntries per
	// follower per CommitTimeout.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration

	// BrokerSessionTimeout is Kafka's broker.session.timeout.ms: the leader
	// fences a registered broker that has not heartbeated for this long.
	BrokerSessionTimeout time.Duration
	// UncleanLeaderElection is the broker-level
	// unclean.leader.election.enable: whether the controller elects a
	// replica outside the ISR for a partition left without a leader, for
	// topics that do not set it themselves (election.go).
	UncleanLeaderElection bool
	// LeaderImbalanceCheckInterval is Kafka's
	// leader.imbalance.check.interval.seconds: how often the leader moves
	// leadership back to preferred replicas (auto.leader.rebalance.enable);
	// zero turns that off. LeaderImbalancePerBroker is
	// leader.imbalance.per.broker.percentage: a broker's partitions move
	// back only when more than this percentage of those it prefers are led
	// elsewhere (elect.go).
	LeaderImbalanceCheckInterval time.Duration
	LeaderImbalancePerBroker     int
	// livenessClock times heartbeats and the leader's liveness checks; nil
	// is the wall clock. This package's tests set a manual one.
	livenessClock clock

	// MaxBatchBytes caps the encoded size of the commands coalesced into one
	// Raft entry.
	MaxBatchBytes int

	// Logger receives the node's and Raft's logs. Nil discards them.
	Logger *slog.Logger
	// Registerer receives the node's metrics. Nil registers none.
	Registerer prometheus.Registerer
}

// Defaults.
const (
	DefaultBindAddr = "127.0.0.1:9093"
	DefaultDataDir  = "strata-data/meta"
)

// DefaultConfig returns the embedded single-voter configuration that
// `strata server` runs with no flags.
func DefaultConfig() Config {
	return Config{
		NodeID:               "1",
		BindAddr:             DefaultBindAddr,
		DataDir:              DefaultDataDir,
		SnapshotThreshold:    8192,
		SnapshotInterval:     2 * time.Minute,
		TrailingLogs:         10240,
		SnapshotRetain:       2,
		HeartbeatTimeout:     time.Second,
		ElectionTimeout:      time.Second,
		LeaderLeaseTimeout:   500 * time.Millisecond,
		CommitTimeout:        50 * time.Millisecond,
		BrokerSessionTimeout: 9 * time.Second,
		MaxBatchBytes:        256 << 10,

		LeaderImbalanceCheckInterval: 300 * time.Second,
		LeaderImbalancePerBroker:     10,
	}
}

// Limits on MaxBatchBytes: below the lower one batching stops paying, above
// the upper one a single entry would exceed the forwarding frame limit.
const (
	minBatchBytes = 4 << 10
	maxBatchBytes = maxFrameBytes / 2
)

// Validate reports the first problem with c, wrapping ErrInvalidNodeConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidNodeConfig, fmt.Sprintf(format, args...))
	}
	if c.NodeID == "" {
		return bad("NodeID is empty")
	}
	if len(c.NodeID) > 255 || strings.ContainsAny(c.NodeID, " \t\r\n,=") {
		return bad("NodeID %q must be at most 255 characters without spaces, ',' or '='", c.NodeID)
	}
	if c.Listener == nil {
		if _, _, err := net.SplitHostPort(c.BindAddr); err != nil {
			return bad("BindAddr %q: %v", c.BindAddr, err)
		}
	}
	if c.AdvertiseAddr != "" {
		if err := checkDialAddr(c.AdvertiseAddr); err != nil {
			return bad("AdvertiseAddr: %v", err)
		}
	}
	if c.DataDir == "" {
		return bad("DataDir is empty")
	}
	ids := make(map[string]bool, len(c.Peers))
	addrs := make(map[string]bool, len(c.Peers))
	for _, p := range c.Peers {
		if p.ID == "" {
			return bad("a peer has an empty id")
		}
		if ids[p.ID] {
			return bad("peer id %q listed twice", p.ID)
		}
		if err := checkDialAddr(p.Address); err != nil {
			return bad("peer %q: %v", p.ID, err)
		}
		if addrs[p.Address] {
			return bad("peer address %q listed twice", p.Address)
		}
		ids[p.ID], addrs[p.Address] = true, true
		if p.ID == c.NodeID && c.AdvertiseAddr != "" && c.AdvertiseAddr != p.Address {
			return bad("AdvertiseAddr %q differs from this node's peer address %q", c.AdvertiseAddr, p.Address)
		}
	}
	if c.SnapshotThreshold == 0 {
		return bad("SnapshotThreshold is 0")
	}
	if c.SnapshotInterval < 5*time.Millisecond {
		return bad("SnapshotInterval %v is below 5ms", c.SnapshotInterval)
	}
	if c.SnapshotRetain < 1 {
		return bad("SnapshotRetain %d is below 1", c.SnapshotRetain)
	}
	if c.HeartbeatTimeout < 5*time.Millisecond || c.ElectionTimeout < 5*time.Millisecond ||
		c.LeaderLeaseTimeout < 5*time.Millisecond || c.CommitTimeout < time.Millisecond {
		return bad("Raft timeouts too small (heartbeat, election, lease >= 5ms; commit >= 1ms)")
	}
	if c.ElectionTimeout < c.HeartbeatTimeout {
		return bad("ElectionTimeout %v is below HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return bad("LeaderLeaseTimeout %v exceeds HeartbeatTimeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.BrokerSessionTimeout <= 0 {
		return bad("BrokerSessionTimeout must be positive")
	}
	if c.LeaderImbalanceCheckInterval < 0 {
		return bad("LeaderImbalanceCheckInterval must not be negative")
	}
	if c.LeaderImbalancePerBroker < 0 || c.LeaderImbalancePerBroker > 100 {
		return bad("LeaderImbalancePerBroker %d outside [0, 100]", c.LeaderImbalancePerBroker)
	}
	if c.MaxBatchBytes < minBatchBytes || c.MaxBatchBytes > maxBatchBytes {
		return bad("MaxBatchBytes %d outside [%d, %d]", c.MaxBatchBytes, minBatchBytes, maxBatchBytes)
	}
	return nil
}

// voter reports whether this node is a voter: in embedded mode, or listed in
// Peers.
func (c Config) voter() bool {
	if len(c.Peers) == 0 {
		return true
	}
	for _, p := range c.Peers {
		if p.ID == c.NodeID {
			return true
		}
	}
	return false
}

// peerAddress returns this node's address in Peers, if listed.
func (c Config) peerAddress() string {
	for _, p := range c.Peers {
		if p.ID == c.NodeID {
			return p.Address
		}
	}
	return ""
}

// ParsePeers parses a voter list as given on the command line:
// "id=host:port,id=host:port".
func ParsePeers(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []Peer
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("%w: peer %q is not id=host:port", ErrInvalidNodeConfig, item)
		}
		peers = append(peers, Peer{ID: id, Address: addr})
	}
	return peers, nil
}

// checkDialAddr accepts a host:port that another machine can dial: a port,
// and a host that is not empty or a wildcard.
func checkDialAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %v", addr, err)
	}
	if port == "" || port == "0" {
		return fmt.Errorf("%q has no port", addr)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%q is a wildcard address, which cannot be dialled", addr)
	}
	return nil
}

// PeerTLS is the metadata port's mutual TLS: the configuration the
// listener serves and the one this node dials its peers with.
type PeerTLS struct {
	Server *tls.Config
	Client *tls.Config
}
