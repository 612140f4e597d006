package main

import (
	"bufio"
	"flag"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/remotefetch"
)

// serverConfig is everything `strata server` is configured with. Each
// setting is a flag and may also be given in the config file (--config) as
// `name = value` under the flag's name; a flag on the command line wins over
// the file. Kafka broker settings keep Kafka's names.
type serverConfig struct {
	configFile string

	listen         string
	advertise      string
	interBroker    string
	rack           string
	adminListen    string
	dataDir        string
	nodeID         int
	metaListen     string
	registryListen string
	metaAdvertise  string
	metaPeers      string
	logLevel       string
	logFormat      string

	maxRequestBytes   int
	connectionsIdleMs int64
	autoCreateTopics  bool
	numPartitions     int
	maxPartitions     int
	maxConnections    int
	fetchMaxBytes     int
	fetchCopy         string
	shutdownTimeout   time.Duration

	queuedMaxRequests     int
	queuedMaxRequestBytes int64

	groupInitialDelayMs int64
	groupMinSessionMs   int64
	groupMaxSessionMs   int64
	groupStallMs        int64

	offsetsRetentionMinutes int64
	offsetsRetentionCheckMs int64

	bucket               string
	remoteFetchMaxWaitMs int64
	remoteTaskIntervalMs int64
	remoteCopyMaxRate    int64
	diskJournalBytes     int64
	remoteUploadDrain    time.Duration
	remoteRetireDelay    time.Duration
	brokerSessionMs      int64
	remoteCacheBytes     int64
	replicationFactor    int
	replicaLagMs         int64
	uncleanElection      bool

	cleanerEnable      bool
	cleanerThreads     int
	cleanerDedupeBytes int64
	cleanerIORate      float64
	cleanerBackoffMs   int64

	autoLeaderRebalance     bool
	leaderImbalanceInterval int64
	leaderImbalancePercent  int

	security securityConfig
}

// register defines the server's flags on fs with the embedded defaults.
func (c *serverConfig) register(fs *flag.FlagSet) {
	d := ingest.DefaultConfig()
	c.security.register(fs)
	fs.StringVar(&c.configFile, "config", "", "read settings from `FILE` (name = value lines, names as the flags)")
	fs.StringVar(&c.listen, "listen", d.Listeners[0].Address, "Kafka PLAINTEXT listener `host:port` (--listeners names several, with security)")
	fs.StringVar(&c.advertise, "advertise", "", "Kafka `host:port` clients are told to use (default: the listener's)")
	fs.StringVar(&c.interBroker, "inter-broker-advertise", "", "`host:port` other brokers' followers fetch from this broker at, reaching its Kafka listener (default: --advertise)")
	fs.StringVar(&c.rack, "broker.rack", "", "this broker's rack or availability zone: each partition's replicas are spread over racks")
	fs.StringVar(&c.adminListen, "admin-listen", "127.0.0.1:9644", "HTTP `host:port` for /metrics, /healthz, /readyz, cluster status and /debug/pprof")
	fs.StringVar(&c.dataDir, "data", "strata-data", "data `directory`: partitions, metadata")
	fs.IntVar(&c.nodeID, "node-id", 1, "this node's broker and metadata id")
	fs.StringVar(&c.metaListen, "meta-listen", "127.0.0.1:9093", "metadata (Raft) `host:port`")
	fs.StringVar(&c.registryListen, "schema.registry.listen", "127.0.0.1:8081", "HTTP `host:port` of the built-in schema registry (Confluent's REST API), secured as the admin address; empty: no listener (produce validation still works)")
	fs.StringVar(&c.metaAdvertise, "meta-advertise", "", "metadata `host:port` other nodes dial (default: this node's --meta-peers entry)")
	fs.StringVar(&c.metaPeers, "meta-peers", "", "metadata voters as `id=host:port,...` (default: this node alone)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&c.maxRequestBytes, "socket.request.max.bytes", int(d.MaxRequestBytes), "largest request frame accepted, in bytes; also the most one connection holds of requests read and not yet answered")
	fs.IntVar(&c.queuedMaxRequests, "queued.max.requests", d.QueuedMaxRequests, "requests read on all connections and not yet being processed; past it the broker stops reading sockets")
	fs.Int64Var(&c.queuedMaxRequestBytes, "queued.max.request.bytes", d.QueuedMaxRequestBytes, "bytes of requests read on all connections and not yet answered; past it the broker stops reading sockets; at least socket.request.max.bytes, or -1 for unbounded (Kafka's default)")
	fs.Int64Var(&c.connectionsIdleMs, "connections.max.idle.ms", d.ConnectionsMaxIdle.Milliseconds(), "close connections idle this long, in ms")
	fs.BoolVar(&c.autoCreateTopics, "auto.create.topics.enable", d.AutoCreateTopics, "create unknown topics on Metadata and Produce")
	fs.IntVar(&c.numPartitions, "num.partitions", int(d.DefaultPartitions), "partitions of topics created without a count")
	fs.IntVar(&c.replicationFactor, "default.replication.factor", d.DefaultReplicationFactor, "replication factor of topics created without one (0: 3 once three brokers are registered, with min.insync.replicas 2; else 1)")
	fs.BoolVar(&c.uncleanElection, "unclean.leader.election.enable", false, "let the controller elect a replica outside the ISR when none is alive, losing what only the ISR held; topics may set it themselves")
	fs.BoolVar(&c.autoLeaderRebalance, "auto.leader.rebalance.enable", true, "move leadership back to each partition's preferred replica when a broker's share led elsewhere passes leader.imbalance.per.broker.percentage")
	fs.Int64Var(&c.leaderImbalanceInterval, "leader.imbalance.check.interval.seconds", int64(meta.DefaultConfig().LeaderImbalanceCheckInterval/time.Second), "how often leadership balance is checked, in seconds (at least 1)")
	fs.IntVar(&c.leaderImbalancePercent, "leader.imbalance.per.broker.percentage", meta.DefaultConfig().LeaderImbalancePerBroker, "percentage of a broker's preferred partitions that may be led elsewhere before leadership moves back (0 to 100)")
	fs.Int64Var(&c.replicaLagMs, "replica.lag.time.max.ms", d.ReplicaLagTimeMax.Milliseconds(), "take a follower out of the ISR when it has not caught up with its leader for this long, in ms")
	fs.IntVar(&c.maxPartitions, "max.broker.partitions", 0, "most partitions this broker may hold; creates past it are refused (0: derived from the descriptor limit, at most 4000)")
	fs.IntVar(&c.maxConnections, "max.connections", 0, "most client connections open at once; past it new ones wait to be accepted (0: derived from the descriptor limit); an inter-broker listener apart from the clients' is not counted")
	fs.IntVar(&c.fetchMaxBytes, "fetch.max.bytes", int(d.FetchMaxBytes), "largest Fetch response, in bytes")
	fs.Int64Var(&c.diskJournalBytes, "disk-journal-bytes", 0, "with fsync before ack, make a round over many partitions with little new data each durable with one write and fdatasync of a journal in the data directory, in files of this many `bytes`, instead of one syncfs of every partition's files: for hundreds of partitions and more (0: off; at least 1048576)")
	fs.StringVar(&c.fetchCopy, "fetch-copy", string(d.FetchCopy), "how fetched records reach the socket: sendfile or pread")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long shutdown waits for requests in flight")
	fs.Int64Var(&c.groupInitialDelayMs, "group.initial.rebalance.delay.ms", d.Groups.InitialRebalanceDelay.Milliseconds(), "how long the first rebalance of an empty group waits for more members, in ms")
	fs.Int64Var(&c.groupMinSessionMs, "group.min.session.timeout.ms", d.Groups.MinSessionTimeout.Milliseconds(), "smallest session timeout a group member may ask for, in ms")
	fs.Int64Var(&c.groupMaxSessionMs, "group.max.session.timeout.ms", d.Groups.MaxSessionTimeout.Milliseconds(), "largest session timeout a group member may ask for, in ms")
	cd := compact.DefaultConfig()
	fs.BoolVar(&c.cleanerEnable, "log.cleaner.enable", true, "compact the partitions of topics whose cleanup.policy includes compact (false: such topics are refused)")
	fs.IntVar(&c.cleanerThreads, "log.cleaner.threads", cd.Threads, "partitions compacted at once")
	fs.Int64Var(&c.cleanerDedupeBytes, "log.cleaner.dedupe.buffer.size", cd.DedupeBufferBytes, "memory for the cleaner's key maps, shared by its threads, in bytes: a pass maps as many keys as fit and the next one goes on; the bucket's recompaction passes share a second buffer of this size")
	fs.Float64Var(&c.cleanerIORate, "log.cleaner.io.max.bytes.per.second", 0, "most bytes per second the cleaner reads and writes, all threads together; 0: no cap")
	fs.Int64Var(&c.cleanerBackoffMs, "log.cleaner.backoff.ms", cd.Backoff.Milliseconds(), "how long the cleaner waits when no partition needs cleaning, in ms")
	rd := remotefetch.DefaultConfig()
	fs.StringVar(&c.bucket, "bucket", "", "tiered storage `URL`: file:///abs/dir, s3://bucket/prefix?region=…&endpoint=… or minio://host:port/bucket/prefix; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (default: file://<data>/bucket)")
	fs.Int64Var(&c.remoteFetchMaxWaitMs, "remote.fetch.max.wait.ms", rd.FetchMaxWait.Milliseconds(), "longest a Fetch waits for its partitions read from the bucket, in ms")
	fs.Int64Var(&c.remoteTaskIntervalMs, "remote.log.manager.task.interval.ms", offload.DefaultConfig().CopyInterval.Milliseconds(), "how often each tiered partition is checked for uploads and retention, in ms (sealing a segment prompts an upload at once)")
	fs.Int64Var(&c.remoteCopyMaxRate, "remote.log.manager.copy.max.bytes.per.second", 0, "most bytes per second read for segment uploads, across all partitions; 0: no cap (at least 1048576 when set)")
	fs.DurationVar(&c.remoteRetireDelay, "remote-retire-delay", offload.DefaultConfig().RetireDelay, "how long the objects of segments that remote recompaction replaced stay in the bucket, for readers that found them before the swap")
	fs.DurationVar(&c.remoteUploadDrain, "remote-upload-drain", offload.DefaultConfig().CopyDrainTime, "pace uploads to read what awaits upload over about this long, not at the disk's full speed; 0: off")
	fs.Int64Var(&c.remoteCacheBytes, "remote-cache-bytes", rd.BlockCacheBytes, "memory for blocks read from the bucket, in bytes")
	fs.Int64Var(&c.brokerSessionMs, "broker.session.timeout.ms", meta.DefaultConfig().BrokerSessionTimeout.Milliseconds(), "fence a broker whose heartbeats (every 2 s) stop for this long, moving its partitions' leadership, in ms; at least 4000")
	fs.Int64Var(&c.groupStallMs, "group.stall.threshold.ms", d.Groups.StallThreshold.Milliseconds(), "report a partition stalled (ghost consumer) when its committed offset has not moved for this long while it has lag and the group has members, in ms")
	fs.Int64Var(&c.offsetsRetentionMinutes, "offsets.retention.minutes", int64(d.Groups.OffsetsRetention/time.Minute), "expire a group's committed offsets once it has had no members for this long, in minutes (at least 1)")
	fs.Int64Var(&c.offsetsRetentionCheckMs, "offsets.retention.check.interval.ms", d.Groups.OffsetsRetentionCheckInterval.Milliseconds(), "how often expired committed offsets are looked for, in ms")
}

// cleanerConfig is the log cleaner's configuration, checked; ok is false
// when the cleaner is off (log.cleaner.enable=false).
func (c *serverConfig) cleanerConfig() (cfg compact.Config, ok bool, err error) {
	if !c.cleanerEnable {
		return compact.Config{}, false, nil
	}
	cfg = compact.DefaultConfig()
	cfg.Threads = c.cleanerThreads
	cfg.DedupeBufferBytes = c.cleanerDedupeBytes
	cfg.IOMaxBytesPerSecond = c.cleanerIORate
	cfg.Backoff = time.Duration(min(c.cleanerBackoffMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	if c.cleanerIORate < 0 {
		return compact.Config{}, false, usageError("--log.cleaner.io.max.bytes.per.second %g: want 0 (no cap) or a positive rate", c.cleanerIORate)
	}
	if err := cfg.Validate(); err != nil {
		return compact.Config{}, false, usageError("--%v", err)
	}
	return cfg, true, nil
}

// applyFile sets, from the config file, every flag not given on the command
// line. Unknown names are refused, naming the line; a file that cannot be
// read or parsed is a usage error, as a bad flag is.
func applyFile(fs *flag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	f, err := os.Open(path)
	if err != nil {
		return usageError("config file: %v", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, ok := strings.Cut(text, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return usageError("%s:%d: %q is not name = value", path, line, text)
		}
		if name == "config" || name == "check" {
			return usageError("%s:%d: %s is a command-line flag, not a setting", path, line, name)
		}
		if fs.Lookup(name) == nil {
			return usageError("%s:%d: unknown setting %q", path, line, name)
		}
		if explicit[name] {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return usageError("%s:%d: %s: %v", path, line, name, err)
		}
	}
	if err := scanner.Err(); err != nil {
		return usageError("config file %s: %v", path, err)
	}
	return nil
}

// brokerConfig is the ingest configuration these settings describe.
func (c *serverConfig) brokerConfig() ingest.Config {
	cfg := ingest.DefaultConfig()
	cfg.InterBrokerAddress = c.interBroker
	cfg.Rack = c.rack
	cfg.DataDir = filepath.Join(c.dataDir, "partitions")
	cfg.MaxRequestBytes = int32(min(c.maxRequestBytes, 1<<31-1))
	cfg.QueuedMaxRequests = c.queuedMaxRequests
	cfg.QueuedMaxRequestBytes = c.queuedMaxRequestBytes
	cfg.ConnectionsMaxIdle = time.Duration(c.connectionsIdleMs) * time.Millisecond
	cfg.AutoCreateTopics = c.autoCreateTopics
	cfg.DefaultPartitions = int32(c.numPartitions)
	cfg.DefaultReplicationFactor = c.replicationFactor
	cfg.ReplicaLagTimeMax = time.Duration(min(c.replicaLagMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	cfg.SessionTimeout = time.Duration(min(c.brokerSessionMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	cfg.MaxBrokerPartitions = int32(max(min(c.maxPartitions, 1<<31-1), -1))
	cfg.MaxConnections = c.maxConnections
	cfg.FetchMaxBytes = int32(min(c.fetchMaxBytes, 1<<31-1))
	cfg.FetchCopy = ingest.FetchCopy(c.fetchCopy)
	cfg.DiskJournalBytes = c.diskJournalBytes
	cfg.ShutdownTimeout = c.shutdownTimeout
	cfg.Groups.InitialRebalanceDelay = time.Duration(c.groupInitialDelayMs) * time.Millisecond
	cfg.Groups.MinSessionTimeout = time.Duration(c.groupMinSessionMs) * time.Millisecond
	cfg.Groups.MaxSessionTimeout = time.Duration(c.groupMaxSessionMs) * time.Millisecond
	cfg.Groups.StallThreshold = time.Duration(c.groupStallMs) * time.Millisecond
	// Clamped to what a Duration holds (292 years), so a huge value cannot
	// wrap around.
	cfg.Groups.OffsetsRetention = time.Duration(min(c.offsetsRetentionMinutes, int64(math.MaxInt64/time.Minute))) * time.Minute
	cfg.Groups.OffsetsRetentionCheckInterval = time.Duration(min(c.offsetsRetentionCheckMs, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	return cfg
}

// logger builds the process logger on stderr.
func (c *serverConfig) logger(e *env) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usageError("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return nil, usageError("--log-format %q: want text or json", c.logFormat)
}
