package meta

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Node is one member of the metadata group: a voter or a non-voting
// follower. It owns Raft, the state machine, the meta listener and the
// goroutines listed in doc.go; Close stops all of them.
type Node struct {
	cfg       Config
	logger    *slog.Logger
	metrics   *metrics
	advertise string

	fsm      *fsm
	raft     *raft.Raft
	store    *raftboltdb.BoltStore
	trans    *raft.NetworkTransport
	mux      *mux
	fwd      *forwardClient
	fwdSrv   *forwardServer
	batcher  *batcher
	liveness *liveness
	watches  *watchHub
	// observations receives Raft's leader observations (never blocking
	// Raft: a full channel drops them, which only delays a signal).
	observations chan raft.Observation

	// kicks queues commit kicks (see kickCommit); capacity 1.
	kicks chan struct{}

	// established is true while this node leads and has committed a barrier
	// in its term (see runLeadership).
	established atomic.Bool

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the node's goroutines
	closeOnce sync.Once
	closeErr  error

	mu struct {
		sync.Mutex
		leaderChange chan struct{} // closed and replaced on each leader change
		// rejoined are the non-voters that joined while this node led
		// (see removeUnregistered).
		rejoined map[raft.ServerID]bool
	}
}

// Open starts a node: it opens or creates DataDir, restores the latest
// snapshot and replays the log, starts listening, and bootstraps the group on
// a voter's first start. It returns before a leader is elected; see
// WaitReady. A corrupt latest snapshot makes Open fail with
// ErrCorruptSnapshot.
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = discardLogger()
	}
	logger = logger.With("component", "meta", "node", cfg.NodeID)
	n := &Node{cfg: cfg, logger: logger, fwd: newForwardClient(), watches: newWatchHub(),
		liveness: newLiveness(cfg.BrokerSessionTimeout, cfg.livenessClock)}
	n.mu.leaderChange = make(chan struct{})
	n.kicks = make(chan struct{}, 1)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.open(); err != nil {
		n.cancel()
		n.release()
		return nil, err
	}
	return n, nil
}

// open does Open's work; on error, release undoes what was done.
func (n *Node) open() error {
	cfg := n.cfg
	var err error
	if n.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("meta: creating data dir: %w", err)
	}
	raftLog := newHCLogAdapter(n.logger, "raft")
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, cfg.SnapshotRetain, raftLog.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("meta: opening snapshot store: %w", err)
	}
	if err := checkLatestSnapshot(snaps); err != nil {
		return err
	}
	n.store, err = raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(cfg.DataDir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return fmt.Errorf("meta: opening %s: %w", filepath.Join(cfg.DataDir, "raft.db"), err)
	}
	listener := cfg.Listener
	if listener == nil {
		if listener, err = net.Listen("tcp", cfg.BindAddr); err != nil {
			return fmt.Errorf("meta: listening: %w", err)
		}
	}
	n.advertise = advertiseAddr(cfg, listener)
	n.mux = newMux(listener, n.advertise, cfg.TLS, n.logger)
	n.fwd.dial = n.mux.dial
	if err := checkDialAddr(n.advertise); err != nil {
		return fmt.Errorf("%w: set AdvertiseAddr: %v", ErrInvalidNodeConfig, err)
	}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: raftLayer{n.mux.raft}, MaxPool: 3, Timeout: 10 * time.Second, Logger: raftLog.Named("transport"),
	})

	n.fsm = newFSM(n.logger, n.metrics)
	n.fsm.publish = n.watches.publish
	hasState, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return fmt.Errorf("meta: reading raft state: %w", err)
	}
	rc := raftConfig(cfg, raftLog)
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidNodeConfig, err)
	}
	logs, err := raft.NewLogCache(512, n.store)
	if err != nil {
		return fmt.Errorf("meta: log cache: %w", err)
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, n.store, snaps, n.trans)
	if err != nil {
		if ferr := n.fsm.err(); ferr != nil {
			return ferr
		}
		return fmt.Errorf("meta: starting raft: %w", err)
	}
	if err := n.fsm.err(); err != nil {
		return err
	}
	if !hasState && cfg.voter() {
		boot := bootstrapConfig(cfg, n.advertise)
		if err := n.raft.BootstrapCluster(boot).Error(); err != nil {
			return fmt.Errorf("meta: bootstrapping: %w", err)
		}
		n.logger.Info("bootstrapped the metadata group", "voters", len(boot.Servers))
	}
	if err := n.metrics.registerRaft(n.raft, n.fsm); err != nil {
		return err
	}
	n.observations = make(chan raft.Observation, 16)
	n.raft.RegisterObserver(raft.NewObserver(n.observations, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	}))

	n.batcher = newBatcher(n, cfg.MaxBatchBytes)
	n.fwdSrv = newForwardServer(n, n.mux.forward)
	n.wg.Add(3 + batchWorkers)
	for range batchWorkers {
		go func() { defer n.wg.Done(); n.batcher.run(n.ctx) }()
	}
	go n.runLeadership()
	go n.runEvents()
	go n.runKicks()
	if !cfg.voter() {
		n.wg.Add(1)
		go n.runJoin()
	}
	n.logger.Info("metadata node started", "address", n.advertise, "voter", cfg.voter(), "restored_index", n.fsm.current().index)
	return nil
}

// singleVoterTimeout caps the raft timeouts of an embedded, one-voter group.
const singleVoterTimeout = 100 * time.Millisecond

func raftConfig(cfg Config, logger *hclogAdapter) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	if len(cfg.Peers) == 0 {
		// A group of one hears from nobody: its timeouts only delay the
		// first election after each start, which every client of an
		// embedded node waits for.
		rc.HeartbeatTimeout = min(rc.HeartbeatTimeout, singleVoterTimeout)
		rc.ElectionTimeout = min(rc.ElectionTimeout, singleVoterTimeout)
		rc.LeaderLeaseTimeout = min(rc.LeaderLeaseTimeout, singleVoterTimeout)
	}
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.NoLegacyTelemetry = true
	rc.Logger = logger
	return rc
}

// advertiseAddr picks the address other nodes dial: AdvertiseAddr, else
// this node's address in Peers, else the bound address.
func advertiseAddr(cfg Config, listener net.Listener) string {
	switch {
	case cfg.AdvertiseAddr != "":
		return cfg.AdvertiseAddr
	case cfg.peerAddress() != "":
		return cfg.peerAddress()
	default:
		return listener.Addr().String()
	}
}

// bootstrapConfig is the first configuration: the peers, or this node alone.
func bootstrapConfig(cfg Config, advertise string) raft.Configuration {
	if len(cfg.Peers) == 0 {
		return raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.NodeID), Address: raft.ServerAddress(advertise)}}}
	}
	var c raft.Configuration
	for _, p := range cfg.Peers {
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Address)})
	}
	return c
}

// checkLatestSnapshot reads the newest snapshot in full before Raft does.
// Raft, finding the newest snapshot unreadable, would quietly fall back to an
// older one and then fail on log entries compacted away; a node with a bad
// snapshot must instead refuse to start and say which file is bad.
func checkLatestSnapshot(snaps *raft.FileSnapshotStore) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("meta: listing snapshots: %w", err)
	}
	if len(list) == 0 {
		return nil
	}
	id := list[0].ID
	_, rc, err := snaps.Open(id)
	if err != nil {
		return fmt.Errorf("%w: snapshot %s: %v", ErrCorruptSnapshot, id, err)
	}
	defer rc.Close()
	if _, err := readSnapshot(bufio.NewReader(rc)); err != nil {
		return fmt.Errorf("snapshot %s: %w", id, err)
	}
	return nil
}

// runEvents is one goroutine owned by the Node: it turns Raft's leader
// observations into leader-change signals, and stops Raft when the state
// machine records a fatal error. It ends when the node's context does.
func (n *Node) runEvents() {
	defer n.wg.Done()
	fatal := n.fsm.fatalCh
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.observations:
			n.signalLeaderChange()
		case <-fatal:
			fatal = nil
			err := n.Err()
			n.watches.close(err)
			if serr := n.raft.Shutdown().Error(); serr != nil {
				n.logger.Error("stopping raft after a fatal error", "error", serr)
			}
			n.signalLeaderChange()
		}
	}
}

// runJoin asks the voters, in turn, to add this node as a non-voter, until
// one (the leader) accepts; then, for as long as the node runs, it joins
// again whenever no leader has been heard from for lostContactAfter: a
// node taken out of the configuration (a leader that saw its broker
// unregistered before it registered again, removeUnregistered) hears from
// nobody and asks nobody, and would never catch up otherwise.
func (n *Node) runJoin() {
	defer n.wg.Done()
	for n.join() {
		lost := n.lostContactAfter()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(lost / 4):
			}
			if last := n.raft.LastContact(); !last.IsZero() && time.Since(last) > lost {
				n.logger.Warn("no word from a leader; joining the metadata group again", "last_contact", last)
				break
			}
		}
	}
}

// lostContactAfter is how long a non-voter goes without hearing from a
// leader before it joins again: several heartbeat timeouts, so that an
// election does not set it off.
func (n *Node) lostContactAfter() time.Duration {
	return max(10*n.cfg.HeartbeatTimeout, time.Second)
}

// join asks the voters in turn until one adds this node, backing off
// between rounds; it reports false when the node's context ends first.
func (n *Node) join() bool {
	backoff := 50 * time.Millisecond
	for {
		for _, p := range n.cfg.Peers {
			ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			err := n.fwd.join(ctx, p.Address, n.cfg.NodeID, n.advertise)
			cancel()
			if err == nil {
				n.logger.Info("joined the metadata group as a non-voter", "via", p.ID)
				return true
			}
			n.logger.Debug("join attempt failed", "peer", p.ID, "error", err)
		}
		select {
		case <-n.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (n *Node) signalLeaderChange() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.mu.leaderChange)
	n.mu.leaderChange = make(chan struct{})
}

// leaderChanged returns a channel closed at the next leader change.
func (n *Node) leaderChanged() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.leaderChange
}

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Addr returns the address other nodes reach this node at.
func (n *Node) Addr() string { return n.advertise }

// Err returns the fatal state machine error that stopped the node, or nil.
func (n *Node) Err() error {
	if err := n.fsm.err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return nil
}

// Failed is closed when a fatal state machine error (Err) stops the node:
// the broker should stop too rather than serve from metadata it can no
// longer follow.
func (n *Node) Failed() <-chan struct{} { return n.fsm.fatalCh }

// usable returns why the node cannot take calls, or nil.
func (n *Node) usable() error {
	if err := n.Err(); err != nil {
		return err
	}
	if n.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// WaitReady waits until this node is caught up and the group usable: a
// leader answers, this node has applied every command committed before the
// call (a linearizable read), and the cluster id is set.
func (n *Node) WaitReady(ctx context.Context) error {
	for {
		st, err := n.LinearizableState(ctx)
		if err != nil {
			return fmt.Errorf("meta: waiting until ready: %w", err)
		}
		if st.ClusterID() != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("meta: waiting for the cluster id: %w", ctx.Err())
		case <-n.ctx.Done():
			return ErrClosed
		case <-st.superseded:
		}
	}
}

// Close stops the node: it stops taking calls, fails queued proposals with
// ErrClosed, shuts Raft down (leaving its data for the next Open), stops
// every goroutine and closes every watch. It is safe to call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		n.watches.close(ErrClosed)
		// Raft first: every call blocked on it (a barrier, an apply, a
		// membership change) returns, so the forwarding handlers and the
		// node's goroutines can finish.
		if err := n.raft.Shutdown().Error(); err != nil {
			n.closeErr = fmt.Errorf("meta: stopping raft: %w", err)
		}
		n.fwdSrv.close()
		n.wg.Wait()
		n.release()
		n.logger.Info("metadata node stopped")
	})
	return n.closeErr
}

// release closes what open opened, in reverse order; each part may be nil.
func (n *Node) release() {
	if n.raft != nil {
		if err := n.raft.Shutdown().Error(); err != nil && n.closeErr == nil {
			n.closeErr = fmt.Errorf("meta: stopping raft: %w", err)
		}
	}
	if n.trans != nil {
		if err := n.trans.Close(); err != nil && n.closeErr == nil {
			n.closeErr = fmt.Errorf("meta: closing transport: %w", err)
		}
	}
	if n.mux != nil {
		n.mux.close()
	} else if n.cfg.Listener != nil {
		n.cfg.Listener.Close()
	}
	n.fwd.close()
	if n.store != nil {
		if err := n.store.Close(); err != nil && n.closeErr == nil {
			n.closeErr = fmt.Errorf("meta: closing raft.db: %w", err)
		}
	}
	if n.metrics != nil {
		n.metrics.unregister()
	}
}
