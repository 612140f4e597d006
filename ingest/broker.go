package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/interbroker"
	"github.com/stratalog/strata/internal/invariants"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/sasl"
)

// ErrBrokerClosed is returned by Serve after Shutdown.
var ErrBrokerClosed = errors.New("ingest: broker closed")

// Broker answers the Kafka protocol on one listener.
//
// Goroutines: Serve's caller runs the accept loop; each connection has a
// processor goroutine (owned by the broker, tracked in connections) and a
// reader goroutine (owned by its processor); the group coordinator runs one
// loop (started by New). Shutdown stops the accept loop, drains every
// connection and waits for all of them, then stops the coordinator.
type Broker struct {
	config     Config
	log        *slog.Logger
	metrics    *metrics
	meta       Metadata
	partitions *replica.Manager
	// cleans says this broker compacts (Deps.Cleaner): without it, it
	// refuses to make a topic compacted.
	cleans bool
	// schemas checks produce to topics with schema validation on
	// (Deps.Schemas).
	schemas SchemaValidator
	// descriptors is the broker's descriptor budget; maxPartitions is
	// max.broker.partitions in force (descriptors.go).
	descriptors   descriptorBudget
	maxPartitions int
	// tiering is Deps.Tiering: nil when partitions stay local.
	tiering *Tiering
	// groups coordinates consumer groups; stopped by Shutdown after the
	// connections are gone.
	groups *group.Coordinator
	// frames recycles produce requests' frames (framepool.go).
	frames framePool

	// incarnation is the epoch the metadata group gave this broker's
	// registration; producerIDs hands out ids under it.
	incarnation atomic.Int64
	// leaseStart is when the last heartbeat (or registration) the
	// metadata leader acknowledged was sent (nil: none yet), with its
	// monotonic clock reading: the leadership lease runs from then
	// (lease.go).
	leaseStart  atomic.Pointer[time.Time]
	producerIDs producerIDs
	// quotas meters clients against their client quotas (quotas.go).
	quotas clientQuotas
	// authorizer decides every request by the ACLs in the metadata;
	// failedLogins paces failed SASL logins.
	authorizer   acl.Authorizer
	failedLogins sasl.Failures
	// reregister asks the membership goroutine to register again.
	reregister chan struct{}
	// leaving is set once controlled shutdown fenced this broker, so the
	// membership goroutine does not register it again.
	leaving atomic.Bool
	// background counts the membership goroutine, stopped by cancelling
	// ctx; the partitions' goroutines stop with it too (started says Start
	// began them).
	background sync.WaitGroup
	started    atomic.Bool
	// connectionSlots bounds the open connections (max.connections): Serve
	// takes a slot before each accept, and a connection gives it back
	// when it ends.
	connectionSlots *connectionSlots

	// queuedRequests and queuedBytes are the budgets every connection's
	// reader reserves a frame from before reading it (queued.max.requests,
	// queued.max.request.bytes); see conn.reserve.
	queuedRequests *budget
	queuedBytes    *budget

	// draining is closed when Shutdown starts, which ends fetch long polls
	// early so in-flight requests finish.
	draining chan struct{}
	// ctx is cancelled when Shutdown gives up waiting; handlers use it for
	// everything that may block.
	ctx    context.Context
	cancel context.CancelFunc

	connections sync.WaitGroup
	mu          struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    bool
	}
}

// Deps are what the broker is built from besides its configuration.
type Deps struct {
	// Meta is the metadata group (a *meta.Node).
	Meta Metadata
	// Logger receives the broker's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the broker's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Tiering is the tiered storage (offload and remote reads); nil keeps
	// every partition local.
	Tiering *Tiering
	// InterBroker is how this broker's followers connect to leaders: TLS
	// and SASL for the inter-broker listener's security protocol, as this
	// broker's own principal.
	InterBroker interbroker.Dialer
	// Cleaner compacts the partitions of compacted topics (a
	// *compact.Cleaner); nil when log.cleaner.enable is false, and then
	// this broker refuses to make a topic compacted.
	Cleaner replica.Cleaner
	// Schemas checks the produced batches of topics with schema
	// validation on (a *registry.Registry); nil refuses them.
	Schemas SchemaValidator
}

// SchemaValidator is the schema registry's check of produced records
// (package registry) on a topic with validation on: CheckBatch refuses a
// batch with a record.RecordError naming the record.
type SchemaValidator interface {
	CheckBatch(ctx context.Context, st *meta.State, t meta.Topic, b record.Batch, decompressLimit int) error
}

// New builds a broker. It does not listen: pass a listener to Serve.
func New(cfg Config, deps Deps) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: config: %w", err)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if deps.Meta == nil {
		return nil, errors.New("ingest: no metadata node")
	}
	b := &Broker{
		config:     cfg,
		log:        log,
		metrics:    newMetrics(deps.Registerer),
		meta:       deps.Meta,
		tiering:    deps.Tiering,
		cleans:     deps.Cleaner != nil,
		frames:     framePool{poison: invariants.Enabled},
		schemas:    deps.Schemas,
		reregister: make(chan struct{}, 1),
		draining:   make(chan struct{}),
		authorizer: acl.Authorizer{SuperUsers: cfg.Security.SuperUsers, AllowIfNoACL: cfg.Security.AllowEveryoneIfNoACL},

		queuedRequests: newBudget(int64(cfg.QueuedMaxRequests)),
		queuedBytes:    newBudget(cfg.QueuedMaxRequestBytes),
	}
	budget, err := cfg.descriptorBudget()
	if err != nil {
		return nil, fmt.Errorf("ingest: descriptor budget: %w", err)
	}
	b.descriptors, b.maxPartitions = budget, cfg.maxBrokerPartitions(budget)
	if deps.Registerer != nil {
		b.registerDescriptorGauges(deps.Registerer)
	}
	var offloader replica.Offloader
	if b.tiering != nil && b.tiering.Offload != nil {
		offloader = b.tiering.Offload
	}
	b.partitions, err = replica.NewManager(replica.Config{
		BrokerID:               cfg.BrokerID,
		DataDir:                cfg.DataDir,
		ProducerStateScanBytes: cfg.ProducerStateScanBytes,
		JournalBytes:           cfg.DiskJournalBytes,
		SegmentFiles:           budget.segmentFiles,
		ReplicaLagTimeMax:      cfg.ReplicaLagTimeMax,
		Listener:               cfg.interBrokerListener().Name,
		Dialer:                 deps.InterBroker,
	}, replica.Deps{
		Meta: deps.Meta, Logger: log.With("component", "replica"), Registerer: deps.Registerer,
		Offload: offloader, Tiered: b.tieringEnabled, Lease: b.lease, Incarnation: b.incarnation.Load, Cleaner: deps.Cleaner,
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	b.connectionSlots = newConnectionSlots(cfg.maxConnections(budget), deps.Registerer)
	groups, err := group.New(cfg.Groups, group.Deps{
		Offsets: deps.Meta, Logs: groupLogs{b.partitions, deps.Meta}, Logger: log.With("component", "group"),
		Coordinates: func(groupID string) bool { return coordinates(b, groupID) == nil },
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	b.groups = groups
	if deps.Registerer != nil {
		deps.Registerer.MustRegister(group.NewCollector(groups))
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.mu.listeners = map[net.Listener]struct{}{}
	b.mu.conns = map[*conn]struct{}{}
	return b, nil
}

// Start joins the cluster: it registers the broker with the metadata group,
// opens the partitions it leads (removing directories of topics deleted
// while it was down), and starts following the metadata and heartbeating.
// Call it once the metadata node is ready, before Serve.
func (b *Broker) Start(ctx context.Context) error {
	if err := b.register(ctx); err != nil {
		return fmt.Errorf("ingest: registering broker %d: %w", b.config.BrokerID, err)
	}
	st, err := b.meta.LinearizableState(ctx)
	if err != nil {
		return fmt.Errorf("ingest: reading the metadata: %w", err)
	}
	if held := partitionsPerBroker(st)[b.config.BrokerID]; held > b.maxPartitions {
		// They exist, so they are served; only new ones are refused.
		b.log.Warn("this broker holds more partitions than max.broker.partitions; creates that add to it are refused",
			"partitions", held, "max_broker_partitions", b.maxPartitions, "descriptor_limit", b.descriptors.limit)
	}
	if err := b.partitions.Start(b.ctx, st); err != nil {
		return err
	}
	b.started.Store(true)
	b.background.Add(1)
	go func() {
		defer b.background.Done()
		b.runMembership(b.ctx)
	}()
	return nil
}

// Serve accepts connections on ln as the first listener.
func (b *Broker) Serve(ln net.Listener) error {
	return b.ServeListener(ln, b.config.Listeners[0].Name)
}

// ServeListener accepts connections on ln, as the listener called name,
// until Shutdown, then returns ErrBrokerClosed. Any other error from
// Accept that is not temporary is returned as is.
func (b *Broker) ServeListener(ln net.Listener, name string) error {
	l, ok := b.config.listener(name)
	if !ok {
		ln.Close()
		return fmt.Errorf("ingest: no listener %q configured", name)
	}
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		ln.Close()
		return ErrBrokerClosed
	}
	b.mu.listeners[ln] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.mu.listeners, ln)
		b.mu.Unlock()
	}()

	slots := b.slotsFor(l)
	var backoff time.Duration
	for {
		if !slots.acquire(b.draining) {
			return ErrBrokerClosed
		}
		socket, err := ln.Accept()
		if err != nil {
			slots.release()
			if b.isClosed() {
				return ErrBrokerClosed
			}
			if !isTemporary(err) {
				return fmt.Errorf("ingest: accept: %w", err)
			}
			// Out of descriptors or similar: wait, then try again, unless
			// shutdown comes first.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			b.log.Warn("accept failed; retrying", "error", err, "backoff", backoff)
			timer := time.NewTimer(backoff)
			select {
			case <-timer.C:
			case <-b.draining:
				timer.Stop()
				return ErrBrokerClosed
			}
			continue
		}
		backoff = 0
		b.start(socket, l, slots)
	}
}

func isTemporary(err error) bool {
	var temporary interface{ Temporary() bool }
	return errors.As(err, &temporary) && temporary.Temporary()
}

// start runs a connection of listener l, which holds a slot of slots, on
// its own goroutine, unless shutdown has begun.
func (b *Broker) start(socket net.Conn, l Listener, slots *connectionSlots) {
	if l.TLS != nil {
		socket = tls.Server(socket, l.TLS)
	}
	c := newConn(b, socket, l)
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		socket.Close()
		slots.release()
		return
	}
	b.mu.conns[c] = struct{}{}
	b.connections.Add(1)
	b.mu.Unlock()
	b.metrics.connections.Inc()
	go func() {
		defer b.connections.Done()
		defer slots.release()
		defer b.metrics.connections.Dec()
		defer func() {
			b.mu.Lock()
			delete(b.mu.conns, c)
			b.mu.Unlock()
		}()
		c.serve(b.ctx)
	}()
}

func (b *Broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.closed
}

// Shutdown stops accepting, lets every connection answer the requests it
// has already read, and waits for them until ctx ends; then it cancels what is
// left and closes the sockets. It is safe to call more than once.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		b.connections.Wait()
		return nil
	}
	b.mu.closed = true
	b.mu.Unlock()
	if b.started.Load() {
		b.moveLeadershipAway(ctx)
	}
	b.mu.Lock()
	close(b.draining)
	for ln := range b.mu.listeners {
		ln.Close()
	}
	for c := range b.mu.conns {
		c.drain()
	}
	b.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		b.connections.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("ingest: shutdown: %w; closing connections with requests in flight", ctx.Err())
		b.cancel()
		b.mu.Lock()
		for c := range b.mu.conns {
			c.socket.Close()
		}
		b.mu.Unlock()
		<-drained
	}
	// Connections are gone: stop the group coordinator, stop following the
	// metadata and close every partition cleanly.
	b.groups.Close()
	b.cancel()
	b.background.Wait()
	if b.started.Load() {
		b.partitions.Wait()
	}
	return err
}

// LogFailed is closed once a partition's log has failed after an I/O error
// on the data directory: the server then shuts the broker down, its
// controlled shutdown moving leadership to other replicas, and exits with
// an error, as Kafka's broker halts when its log directories are offline.
// Until then the failed partitions answer KAFKA_STORAGE_ERROR.
func (b *Broker) LogFailed() <-chan struct{} { return b.partitions.LogFailed() }

// LedPartitions is the number of partitions this broker leads.
func (b *Broker) LedPartitions() int { return b.partitions.Led() }

// PartitionsReady returns nil when every partition this broker holds is
// open, else an error naming those that failed to open and are retried.
func (b *Broker) PartitionsReady() error { return b.partitions.Ready() }
