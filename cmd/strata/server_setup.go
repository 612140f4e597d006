package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/meta"
)

// serverSetup is `strata server`'s configuration once every setting has
// been read and checked: all a start needs before it binds a port, locks
// the data directory, opens the metadata node or reaches the bucket.
// settle builds it, for a start and for --check alike, so that a
// configuration --check accepts is one a start accepts. What only a start
// can find out is left to it: whether the ports are free and the
// addresses this machine's, whether the data directory is free and was
// first started with this --node-id, whether the bucket and the metadata
// peers answer.
type serverSetup struct {
	log *slog.Logger
	// broker is the broker's configuration, validated. A listener with
	// port 0 gets its advertised address when it is bound.
	broker ingest.Config
	// security holds what the security settings load: TLS files, the
	// inter-broker password, the admin token.
	security    *security
	descriptors descriptorLimit
	// meta is the metadata node's configuration, validated, less what a
	// start adds: its listener and its metrics registerer.
	meta    meta.Config
	tiering tieringConfig
	// cleaner is the log cleaner's configuration; cleans is false when it
	// is off.
	cleaner compact.Config
	cleans  bool
}

// settle reads the config file into the flags not given on the command
// line (fs has parsed those), then builds and checks everything the
// server is configured with, in the order a start has always checked
// it. asJSON is --json, which asks for JSON logs. The error is the one a
// start fails with: a usage error (exit 2) for a setting that cannot
// work.
func (c *serverConfig) settle(e *env, fs *flag.FlagSet, asJSON bool) (*serverSetup, error) {
	if err := applyFile(fs, c.configFile); err != nil {
		return nil, err
	}
	if asJSON {
		if flagGiven(fs, "log-format") && c.logFormat != "json" {
			return nil, usageError("--json logs as JSON, and --log-format %q says otherwise: give one of them", c.logFormat)
		}
		c.logFormat = "json"
	}
	log, err := c.logger(e)
	if err != nil {
		return nil, err
	}
	s := &serverSetup{log: log, broker: c.brokerConfig()}
	s.broker.BrokerID = int32(c.nodeID)
	sec, err := c.security.build(fs, c.listen, c.advertise, log)
	if err != nil {
		return nil, err
	}
	s.security = sec
	s.broker.Listeners, s.broker.InterBrokerListener, s.broker.Security = sec.listeners, sec.interBroker, sec.settings
	if sec.meta == nil && (ingest.Config{Listeners: sec.listeners}).Authenticates() && !loopbackAddress(c.metaListen) {
		log.Warn("the Kafka listeners authenticate, but the metadata (Raft) port takes plain TCP from anyone who reaches it: "+
			"a peer there can change the metadata (ACLs, credentials) unchecked. Mutual TLS there takes --ssl.keystore.location and "+
			"--ssl.truststore.location (with --meta.security.protocol SSL, its default then); else keep the port on a network only the brokers reach",
			"meta_listen", c.metaListen)
	}
	// The broker's limits derive from the descriptor limit the process
	// runs with, raised as a start raises it; a check run outside the
	// service's own limits (systemd's LimitNOFILE) judges them against
	// its own.
	if s.descriptors, err = raiseDescriptorLimit(); err != nil {
		return nil, err
	}
	s.broker.DescriptorLimit = s.descriptors.brokerLimit()
	if err := s.broker.Validate(); err != nil {
		return nil, usageError("%v", err)
	}
	peers, err := meta.ParsePeers(c.metaPeers)
	if err != nil {
		return nil, usageError("--meta-peers: %v", err)
	}
	if err := c.checkSharedBucket(peers); err != nil {
		return nil, err
	}
	if c.brokerSessionMs < 4000 {
		return nil, usageError("--broker.session.timeout.ms %d: want at least 4000 (twice the 2 s broker heartbeat interval)", c.brokerSessionMs)
	}
	if c.leaderImbalanceInterval < 1 || c.leaderImbalanceInterval > math.MaxInt64/int64(time.Second) {
		return nil, usageError("--leader.imbalance.check.interval.seconds %d: want at least 1 (turn balancing off with --auto.leader.rebalance.enable=false)", c.leaderImbalanceInterval)
	}
	if c.leaderImbalancePercent < 0 || c.leaderImbalancePercent > 100 {
		return nil, usageError("--leader.imbalance.per.broker.percentage %d: want 0 to 100", c.leaderImbalancePercent)
	}
	if c.dataDir == "" {
		return nil, usageError("--data is empty: give the directory for the partitions and the metadata")
	}
	if err := c.checkListenAddresses(s.broker.Listeners); err != nil {
		return nil, err
	}
	if s.meta, err = c.metaConfig(peers, sec.meta, log); err != nil {
		return nil, err
	}
	if s.tiering, err = c.settleTiering(s.broker, log); err != nil {
		return nil, err
	}
	if s.cleaner, s.cleans, err = c.cleanerConfig(); err != nil {
		return nil, err
	}
	if sec.admin.TokenFile != "" {
		if sec.admin.token, err = readAdminToken(sec.admin.TokenFile, log); err != nil {
			return nil, usageError("admin address: %v", err)
		}
	}
	return s, nil
}

// metaConfig is the metadata node's configuration, checked as meta.Open
// checks it, less the listener and the registerer a start adds.
func (c *serverConfig) metaConfig(peers []meta.Peer, tls *meta.PeerTLS, log *slog.Logger) (meta.Config, error) {
	mc := meta.DefaultConfig()
	mc.NodeID = strconv.Itoa(c.nodeID)
	mc.BindAddr = c.metaListen
	mc.TLS = tls
	mc.AdvertiseAddr = c.metaAdvertise
	mc.DataDir = filepath.Join(c.dataDir, "meta")
	mc.Peers = peers
	mc.BrokerSessionTimeout = time.Duration(c.brokerSessionMs) * time.Millisecond
	mc.UncleanLeaderElection = c.uncleanElection
	mc.LeaderImbalanceCheckInterval = 0
	if c.autoLeaderRebalance {
		mc.LeaderImbalanceCheckInterval = time.Duration(c.leaderImbalanceInterval) * time.Second
	}
	mc.LeaderImbalancePerBroker = c.leaderImbalancePercent
	mc.Logger = log
	if err := mc.Validate(); err != nil {
		return meta.Config{}, usageError("--meta-listen, --meta-advertise, --meta-peers: %v", err)
	}
	// Without --meta-advertise or an entry in --meta-peers, the node
	// advertises the address it binds (meta.Open), which peers cannot
	// dial when it is every interface's.
	ownEntry := false
	for _, p := range peers {
		ownEntry = ownEntry || p.ID == mc.NodeID
	}
	if host, port, _ := net.SplitHostPort(c.metaListen); c.metaAdvertise == "" && !ownEntry && port != "0" && isWildcardHost(host) {
		return meta.Config{}, usageError("--meta-listen %s binds every interface, so the metadata node has no address to advertise: give --meta-advertise host:port (or this node's entry in --meta-peers)", c.metaListen)
	}
	return mc, nil
}

// serverAddress is one address the server binds, and the flag that gives
// it.
type serverAddress struct {
	flag, address string
}

// listenAddresses are the addresses the server binds: each Kafka
// listener's, the admin address, the metadata port and the schema
// registry's.
func (c *serverConfig) listenAddresses(listeners []ingest.Listener) []serverAddress {
	var out []serverAddress
	for _, l := range listeners {
		name := "listen"
		if c.security.listeners != "" {
			name = "listeners " + l.Name
		}
		out = append(out, serverAddress{name, l.Address})
	}
	out = append(out, serverAddress{"admin-listen", c.adminListen}, serverAddress{"meta-listen", c.metaListen})
	if c.registryListen != "" {
		out = append(out, serverAddress{"schema.registry.listen", c.registryListen})
	}
	return out
}

// checkListenAddresses refuses an address the server could not bind for
// its form alone, and two of its own addresses on one port: the second
// bind would fail as if another process held the port.
func (c *serverConfig) checkListenAddresses(listeners []ingest.Listener) error {
	addresses := c.listenAddresses(listeners)
	for i, a := range addresses {
		if err := checkListenAddress(a.flag, a.address); err != nil {
			return err
		}
		for _, b := range addresses[:i] {
			if sameListenAddress(a.address, b.address) {
				return usageError("--%s %s and --%s %s: both on one port, so the second could not be bound: give each its own port", b.flag, b.address, a.flag, a.address)
			}
		}
	}
	return nil
}

// sameListenAddress reports whether binding both a and b (checked by
// checkListenAddress) must fail: the same port, not 0 (the kernel picks
// a free one), on the same host or with either every interface's. Host
// names are compared as written, not resolved.
func sameListenAddress(a, b string) bool {
	hostA, portA, _ := net.SplitHostPort(a)
	hostB, portB, _ := net.SplitHostPort(b)
	numA, _ := net.LookupPort("tcp", portA)
	numB, _ := net.LookupPort("tcp", portB)
	if numA == 0 || numA != numB {
		return false
	}
	return isWildcardHost(hostA) || isWildcardHost(hostB) || strings.EqualFold(hostA, hostB)
}

// isWildcardHost reports whether a listen address's host is every
// interface: empty, 0.0.0.0 or ::.
func isWildcardHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// checkResult is what `strata server --check --json` prints.
type checkResult struct {
	Valid      bool     `json:"valid"`
	ConfigFile string   `json:"config_file,omitempty"`
	NodeID     int      `json:"node_id"`
	Listeners  []string `json:"listeners"`
	Admin      string   `json:"admin"`
	Meta       string   `json:"meta"`
	MetaPeers  []string `json:"meta_peers,omitempty"`
	Data       string   `json:"data"`
	Bucket     string   `json:"bucket"`
}

// reportValid is `strata server --check` once the configuration has
// settled: one line on standard output saying it is valid and what it
// describes.
func (s *serverSetup) reportValid(e *env, c *serverConfig, asJSON bool) error {
	r := checkResult{Valid: true, ConfigFile: c.configFile, NodeID: c.nodeID, Admin: c.adminListen, Meta: c.metaListen, Data: c.dataDir, Bucket: s.tiering.bucketURL}
	for _, l := range s.broker.Listeners {
		r.Listeners = append(r.Listeners, l.Name+"://"+l.Address)
	}
	for _, p := range s.meta.Peers {
		r.MetaPeers = append(r.MetaPeers, p.ID+"="+p.Address)
	}
	if asJSON {
		return printJSON(e.stdout, r)
	}
	voters := "this node alone"
	if len(r.MetaPeers) > 0 {
		voters = strings.Join(r.MetaPeers, ",")
	}
	from := "the flags"
	if r.ConfigFile != "" {
		from = r.ConfigFile + " and the flags"
	}
	fmt.Fprintf(e.stdout, "strata server: %s make a valid configuration: node %d, listeners %s, admin %s, metadata %s (voters %s), data %s, bucket %s; nothing was bound, locked or started\n",
		from, r.NodeID, strings.Join(r.Listeners, ","), r.Admin, r.Meta, voters, r.Data, r.Bucket)
	return nil
}

// loopbackAddress reports whether a host:port listens on loopback only
// ("localhost" included); an unspecified or other host, or one that does
// not parse, does not.
func loopbackAddress(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
