package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/meta"
)

// runServer is `strata server`: one node with an embedded metadata voter
// (or a member of a metadata group given by --meta-peers), the Kafka
// listener and the admin HTTP server. It runs until interrupted, then shuts
// down in order: stop taking requests and answer those in flight, close the
// partitions cleanly, stop the metadata node.
func runServer(ctx context.Context, e *env, args []string) error {
	var (
		c      serverConfig
		asJSON bool
	)
	fs := newFlagSet(e, "server", "[flags]")
	c.register(fs)
	fs.BoolVar(&asJSON, "json", false, "log as JSON (--log-format json), and print a failure to start as JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("server takes flags only, not %q", rest[0])
	}
	if err := applyFile(fs, c.configFile); err != nil {
		return err
	}
	if asJSON {
		if flagGiven(fs, "log-format") && c.logFormat != "json" {
			return usageError("--json logs as JSON, and --log-format %q says otherwise: give one of them", c.logFormat)
		}
		c.logFormat = "json"
	}
	log, err := c.logger(e)
	if err != nil {
		return err
	}
	brokerConfig := c.brokerConfig()
	brokerConfig.BrokerID = int32(c.nodeID)
	sec, err := c.security.build(fs, c.listen, c.advertise, log)
	if err != nil {
		return err
	}
	brokerConfig.Listeners, brokerConfig.InterBrokerListener, brokerConfig.Security = sec.listeners, sec.interBroker, sec.settings
	descriptors, err := raiseDescriptorLimit()
	if err != nil {
		return err
	}
	brokerConfig.DescriptorLimit = descriptors.brokerLimit()
	if !hotlog.SyncfsReportsErrors() {
		if before, after := raiseProcs(); after != before {
			log.Info("GOMAXPROCS raised, so partitions' fdatasyncs run side by side (GOMAXPROCS in the environment keeps a value)", "from", before, "to", after)
		}
	}
	if err := brokerConfig.Validate(); err != nil {
		return usageError("%v", err)
	}
	peers, err := meta.ParsePeers(c.metaPeers)
	if err != nil {
		return usageError("--meta-peers: %v", err)
	}
	if err := c.checkSharedBucket(peers); err != nil {
		return err
	}
	if c.brokerSessionMs < 4000 {
		return usageError("--broker.session.timeout.ms %d: want at least 4000 (twice the 2 s broker heartbeat interval)", c.brokerSessionMs)
	}
	if c.leaderImbalanceInterval < 1 || c.leaderImbalanceInterval > math.MaxInt64/int64(time.Second) {
		return usageError("--leader.imbalance.check.interval.seconds %d: want at least 1 (turn balancing off with --auto.leader.rebalance.enable=false)", c.leaderImbalanceInterval)
	}
	if c.leaderImbalancePercent < 0 || c.leaderImbalancePercent > 100 {
		return usageError("--leader.imbalance.per.broker.percentage %d: want 0 to 100", c.leaderImbalancePercent)
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	lock, err := lockDataDir(c.dataDir)
	if err != nil {
		return err
	}
	defer lock.release()
	if err := checkNodeID(c.dataDir, c.nodeID); err != nil {
		return err
	}
	kafkaListeners := make([]net.Listener, len(brokerConfig.Listeners))
	for i, l := range brokerConfig.Listeners {
		flagName := "listen"
		if c.security.listeners != "" {
			flagName = "listeners " + l.Name
		}
		ln, err := listen(flagName, l.Address)
		if err != nil {
			return err
		}
		defer ln.Close()
		kafkaListeners[i] = ln
		if l.Advertised == "" {
			// With port 0 the kernel chose; advertise what it chose.
			brokerConfig.Listeners[i].Advertised = ln.Addr().String()
		}
	}
	adminListener, err := listen("admin-listen", c.adminListen)
	if err != nil {
		return err
	}
	defer adminListener.Close()
	metaListener, err := listen("meta-listen", c.metaListen)
	if err != nil {
		return err
	}

	metaConfig := meta.DefaultConfig()
	metaConfig.NodeID = strconv.Itoa(c.nodeID)
	metaConfig.BindAddr = c.metaListen
	metaConfig.Listener = metaListener // the node closes it
	metaConfig.TLS = sec.meta
	metaConfig.AdvertiseAddr = c.metaAdvertise
	metaConfig.DataDir = filepath.Join(c.dataDir, "meta")
	metaConfig.Peers = peers
	metaConfig.BrokerSessionTimeout = time.Duration(c.brokerSessionMs) * time.Millisecond
	metaConfig.UncleanLeaderElection = c.uncleanElection
	metaConfig.LeaderImbalanceCheckInterval = 0
	if c.autoLeaderRebalance {
		metaConfig.LeaderImbalanceCheckInterval = time.Duration(c.leaderImbalanceInterval) * time.Second
	}
	metaConfig.LeaderImbalancePerBroker = c.leaderImbalancePercent
	metaConfig.Logger = log
	metaConfig.Registerer = registry
	node, err := meta.Open(metaConfig)
	if err != nil {
		metaListener.Close() // Open may fail before it owns it; a second Close is harmless
		return fmt.Errorf("metadata node: %w", err)
	}
	defer node.Close()

	tiering, err := openTiering(ctx, &c, node, brokerConfig, log, registry)
	if err != nil {
		return err
	}
	defer func() {
		if err := tiering.close(); err != nil {
			log.Error("closing tiered storage", "error", err)
		}
	}()

	broker, err := ingest.New(brokerConfig, ingest.Deps{Meta: node, Logger: log.With("component", "ingest"), Registerer: registry, Tiering: tiering.deps(), InterBrokerClient: sec.client})
	if err != nil {
		return err
	}

	var ready atomic.Bool
	admin := newAdminServer(adminHandlers{
		gatherer: registry,
		state:    node.State,
		drain: func(ctx context.Context, id int32, on bool) error {
			_, err := node.Propose(ctx, &meta.DrainBroker{ID: id, Draining: on})
			if err == nil {
				log.Info("broker drain changed", "broker", id, "draining", on)
			}
			return err
		},
		ready: func() error {
			if err := node.Err(); err != nil {
				return err
			}
			if !ready.Load() {
				return errors.New("starting: waiting for the metadata group and the partitions")
			}
			return broker.PartitionsReady()
		},
		status: func(context.Context) (any, error) {
			st := node.State()
			doc := clusterStatus{Status: node.Status()}
			for _, t := range st.Topics() {
				doc.Serving.Topics++
				doc.Serving.Partitions += int(t.Partitions)
			}
			doc.Serving.Led = broker.LedPartitions()
			return doc, nil
		},
		groupLag: func(ctx context.Context, groupID string) (any, error) {
			lags, err := broker.GroupLag(ctx, groupID)
			if err != nil {
				return nil, err
			}
			if len(lags) == 0 {
				if state, err := broker.GroupState(ctx, groupID); err != nil {
					return nil, err
				} else if state == group.Dead {
					return nil, fmt.Errorf("%w: group %q has no members on this broker's coordinator and no committed offsets (`strata group list` lists the groups)", errAdminNotFound, groupID)
				}
			}
			return lagDocument(lags), nil
		},
		tierStatus: func(_ context.Context, topic string) (any, error) {
			return tierStatusOf(tiering.offload.Status(), node.State(), topic)
		},
	}, log)
	if err := admin.secure(sec.admin); err != nil {
		return usageError("admin address: %v", err)
	}
	adminDone := make(chan error, 1)
	go func() { adminDone <- admin.serve(adminListener) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		admin.shutdown(shutdownCtx)
		<-adminDone
	}()
	log.Info("starting", "kafka", kafkaListeners[0].Addr().String(), "admin", adminListener.Addr().String(),
		"meta", c.metaListen, "data", c.dataDir, "node", c.nodeID,
		"descriptor_limit", descriptors.soft, "descriptor_hard_limit", descriptors.hard, "max_broker_partitions", broker.MaxBrokerPartitions(), "max_connections", broker.MaxConnections())

	if err := node.WaitReady(ctx); err != nil {
		return fmt.Errorf("metadata group: %w", err)
	}
	if err := sec.ensureBrokerCredential(ctx, node, log); err != nil {
		return err
	}
	if err := tiering.offload.Start(); err != nil {
		return fmt.Errorf("offload: %w", err)
	}
	if err := broker.Start(ctx); err != nil {
		// Shutdown stops what New and a partial Start began.
		return errors.Join(err, broker.Shutdown(context.Background()))
	}
	serveDone := make(chan error, len(kafkaListeners))
	for i, ln := range kafkaListeners {
		l := brokerConfig.Listeners[i]
		go func() { serveDone <- broker.ServeListener(ln, l.Name) }()
		log.Info("serving Kafka clients", "listener", l.Name, "protocol", l.Protocol, "address", ln.Addr().String(), "advertised", l.Advertised)
	}
	ready.Store(true)

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-serveDone:
	case serveErr = <-adminDone:
		adminDone <- nil
	case <-node.Failed():
		// Kafka's brokers exit on a metadata fault too: serving on from a
		// frozen view would answer with stale leaders, configs and offsets.
		serveErr = fmt.Errorf("metadata node stopped, so the broker stops too: %w (see the log above; a newer strata may have written a command this one does not know)", node.Err())
		log.Error("shutting down after a fatal metadata error", "error", node.Err())
	}
	ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), brokerConfig.ShutdownTimeout)
	defer cancel()
	shutdownErr := broker.Shutdown(shutdownCtx)
	if errors.Is(serveErr, ingest.ErrBrokerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, shutdownErr)
}
