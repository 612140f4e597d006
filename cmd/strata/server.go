package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/meta"
	schemareg "github.com/stratalog/strata/registry"
)

// errDataDirFailed is the server's error when a partition's log failed on
// the data directory's disk: the process exits with exitDataDirFailed.
var errDataDirFailed = errors.New("data directory failed")

// runServer is `strata server`: one node with an embedded metadata voter
// (or a member of a metadata group given by --meta-peers), the Kafka
// listener and the admin HTTP server. It runs until interrupted, then shuts
// down in order: stop taking requests and answer those in flight, close the
// partitions cleanly, stop the metadata node. With --check it only settles
// the configuration, as a start does first, and says whether it is valid.
func runServer(ctx context.Context, e *env, args []string) error {
	var (
		c      serverConfig
		asJSON bool
		check  bool
	)
	fs := newFlagSet(e, "server", "[flags]")
	c.register(fs)
	fs.BoolVar(&asJSON, "json", false, "log as JSON (--log-format json), and print a failure to start as JSON")
	fs.BoolVar(&check, "check", false, "check the flags and the --config file as a start does (TLS, password and token files read), say whether they are valid, and exit without binding a port, locking --data or reaching the bucket or the metadata peers")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("server takes flags only, not %q", rest[0])
	}
	setup, err := c.settle(e, fs, asJSON)
	if err != nil {
		return err
	}
	if check {
		return setup.reportValid(e, &c, asJSON)
	}
	return serve(ctx, &c, setup)
}

// serve runs the server setup describes until ctx ends or it fails.
func serve(ctx context.Context, c *serverConfig, setup *serverSetup) error {
	log, sec, descriptors, brokerConfig := setup.log, setup.security, setup.descriptors, setup.broker

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
	syncfsErrors, err := hotlog.SyncfsErrorsOn(c.dataDir)
	if err != nil {
		return fmt.Errorf("--data %s: %w", c.dataDir, err)
	}
	if syncfsErrors == hotlog.SyncfsMayMiss {
		if before, after := raiseProcs(); after != before {
			log.Info("GOMAXPROCS raised, so partitions' fdatasyncs run side by side (GOMAXPROCS in the environment keeps a value)", "from", before, "to", after)
		}
	}
	addresses := c.listenAddresses(brokerConfig.Listeners)
	kafkaListeners := make([]net.Listener, len(brokerConfig.Listeners))
	for i, l := range brokerConfig.Listeners {
		ln, err := listen(addresses[i].flag, l.Address)
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
	var registryListener net.Listener
	if c.registryListen != "" {
		if registryListener, err = listen("schema.registry.listen", c.registryListen); err != nil {
			return err
		}
		defer registryListener.Close()
	}
	metaListener, err := listen("meta-listen", c.metaListen)
	if err != nil {
		return err
	}

	metaConfig := setup.meta
	metaConfig.Listener = metaListener // the node closes it
	metaConfig.Registerer = registry
	node, err := meta.Open(metaConfig)
	if err != nil {
		metaListener.Close() // Open may fail before it owns it; a second Close is harmless
		return fmt.Errorf("metadata node: %w", err)
	}
	defer node.Close()

	tiering, err := openTiering(ctx, setup.tiering, node, log, registry)
	if err != nil {
		return err
	}
	defer func() {
		if err := tiering.close(); err != nil {
			log.Error("closing tiered storage", "error", err)
		}
	}()

	deps := ingest.Deps{Meta: node, Logger: log.With("component", "ingest"), Registerer: registry, Tiering: tiering.deps(), InterBroker: sec.interBrokerDialer}
	if setup.cleans {
		cleaner, err := compact.New(setup.cleaner, log.With("component", "cleaner"), registry)
		if err != nil {
			return err
		}
		cleaner.Start()
		// Closed when this function returns, after the broker's shutdown
		// has handed every partition's log back.
		defer cleaner.Close()
		deps.Cleaner = cleaner
	}
	schemas, err := schemareg.New(node, log.With("component", "registry"), registry)
	if err != nil {
		return err
	}
	deps.Schemas = schemas
	broker, err := ingest.New(brokerConfig, deps)
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
	sec.admin.Authorize = clusterAuthorizer(acl.Authorizer{SuperUsers: brokerConfig.Security.SuperUsers, AllowIfNoACL: brokerConfig.Security.AllowEveryoneIfNoACL}, node.State)
	if err := admin.secure(sec.admin); err != nil {
		return usageError("admin address: %v", err)
	}
	adminDone := make(chan error, 1)
	go func() { adminDone <- admin.serve(adminListener) }()
	if registryListener != nil {
		if sec.admin.Required && sec.admin.TLS == nil {
			log.Warn("the schema registry takes users' passwords by HTTP Basic over plain HTTP: give the listeners TLS (its certificate serves the registry too)", "address", registryListener.Addr().String())
		}
		srv := newRegistryServer(schemas.Handler(), sec.admin, admin.token, node.State, log.With("component", "registry"))
		registryDone := make(chan error, 1)
		go func() { registryDone <- srv.serve(registryListener) }()
		defer func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.shutdown(shutdownCtx)
			<-registryDone
		}()
		log.Info("serving the schema registry", "address", registryListener.Addr().String())
	}
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
	case <-broker.LogFailed():
		// Kafka's broker halts once its log directories are offline; this
		// broker has one. Its controlled shutdown moves the leadership of
		// what it leads to other ISR members; staying up would keep it the
		// leader of partitions that refuse every produce.
		serveErr = fmt.Errorf("%w: a partition's log failed after an I/O error on the data directory %s, so the broker stops (see the log above and dmesg); repair or replace the disk and start it again: it checks every log on open", errDataDirFailed, c.dataDir)
		log.Error("shutting down after a partition's log failed on the data directory", "data", c.dataDir)
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
