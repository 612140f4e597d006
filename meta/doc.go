// Package meta is strata's metadata group: a small Raft group
// (hashicorp/raft, raft-boltdb/v2 for the log and stable store, Raft's file
// snapshot store) that holds the cluster id, the brokers, the topics and
// their partitions, the remote segment manifests and the consumer groups'
// committed offsets, and the client brokers use to change and read them.
// It imports no broker package; of ours, only segmentobject, whose manifest
// and leader-epoch entry types the remote segment manifests share.
//
// # Use
//
//	cfg := meta.DefaultConfig()       // one voter, 127.0.0.1:9093, ./strata-data/meta
//	cfg.Logger, cfg.Registerer = logger, registry
//	node, err := meta.Open(cfg)
//	defer node.Close()
//	err = node.WaitReady(ctx)         // a leader, and the cluster id applied here
//	res, err := node.Propose(ctx, meta.RegisterBroker{ID: 1, Listeners: ...})
//	epoch := res.Epoch                // the broker's incarnation epoch
//	err = node.Heartbeat(ctx, 1, epoch) // every ~2s, within BrokerSessionTimeout
//	_, err = node.Propose(ctx, meta.CreateTopic{ID: uuid.New(), Name: "orders", Replicas: [][]int32{{1}}})
//	topic, ok := node.State().Topic("orders") // local, lock-free, may lag the leader
//	m, ok := node.State().Manifest("orders", 0) // remote segments, with upload states
//	tiered := m.Committed()                     // segmentobject.Manifest: what the bucket serves
//	epochs := tiered.EpochsBelow(localStart)    // leader-epoch history below an offset
//	st, err := node.LinearizableState(ctx)    // everything committed before the call
//	w := node.Watch(meta.WatchOptions{Kinds: []meta.ChangeKind{meta.ChangeTopic}})
//	for up := range w.C { ... up.State, up.Changes ... }
//	status := node.Status()           // for `strata cluster status` (JSON tags)
//
// Propose takes a command struct (CreateTopic, DeleteTopic,
// AlterTopicConfigs, AlterPartition, CreatePartitions, RegisterBroker,
// FenceBroker, InitCluster, BeginSegmentCopy, CommitSegmentCopy,
// BeginSegmentDelete, FinishSegmentDelete, CommitOffsets, DeleteOffsets,
// ExpireOffsets) and returns once the command is committed and applied on
// this node, so the caller reads its own write. State.Check answers,
// without proposing, what Propose would if the command came next
// (validate-only requests); State.CheckNewTopicName applies CreateTopic's
// name rules alone (Kafka's legal names, __consumer_offsets refused as
// existing, no collision once '.' reads as '_'). A failed
// precondition comes back as a sentinel error (errors.go) with nothing
// applied; the broker maps each to a Kafka code in one table:
//
//	ErrTopicExists              TOPIC_ALREADY_EXISTS
//	ErrUnknownTopic, ErrUnknownPartition  UNKNOWN_TOPIC_OR_PARTITION
//	ErrTopicIDMismatch          INCONSISTENT_TOPIC_ID
//	ErrInvalidTopicName         INVALID_TOPIC_EXCEPTION
//	ErrInvalidConfig            INVALID_CONFIG
//	ErrInvalidPartitions        INVALID_PARTITIONS
//	ErrInvalidReplicaAssignment INVALID_REPLICA_ASSIGNMENT
//	ErrStalePartitionEpoch      INVALID_UPDATE_VERSION
//	ErrIneligibleReplica        INELIGIBLE_REPLICA
//	ErrFencedLeaderEpoch        FENCED_LEADER_EPOCH
//	ErrUnknownBroker            BROKER_ID_NOT_REGISTERED
//	ErrStaleBrokerEpoch         STALE_BROKER_EPOCH
//	ErrOffsetMetadataTooLarge   OFFSET_METADATA_TOO_LARGE
//	ErrUnknownGroup             GROUP_ID_NOT_FOUND
//	ErrNoReassignment           NO_REASSIGNMENT_IN_PROGRESS
//	ErrElectionNotNeeded        ELECTION_NOT_NEEDED
//	ErrPreferredLeaderDown      PREFERRED_LEADER_NOT_AVAILABLE
//	ErrNoEligibleLeader         ELIGIBLE_LEADERS_NOT_AVAILABLE
//	ErrBrokerAlive              INVALID_REQUEST
//	ErrNoLeader, ErrOutcomeUnknown, ErrClosed  NOT_CONTROLLER / REQUEST_TIMED_OUT
//	ErrInvalidCommand, segment errors          INVALID_REQUEST
//
// Topic configs use Kafka's names; the registry in topicconfig.go (types,
// ranges, defaults, docs) refuses unknown names and is meant for
// DescribeConfigs too.
//
// # Modes and membership
//
// Embedded: no Peers. The node is the one voter; on first start it
// bootstraps a configuration of itself, afterwards it restarts from its own
// data. Cluster: Peers lists the voters (--meta-peers id=host:port,...);
// every voter gets the same list and bootstraps with it on first start
// (bootstrapping the same configuration everywhere is safe in Raft).
//
// A node whose NodeID is not in Peers is a non-voting member: it asks the
// voters (in turn, until the leader accepts) to add it with AddNonvoter, and
// then receives the log like a voter without counting toward quorum. We
// chose Raft non-voters over reading through the leader because a broker
// then reads all metadata locally and lock-free, sees changes through Watch
// as they apply, catches up by Raft's own snapshot install, and needs no
// second replication protocol — the same shape as KRaft's observers. The
// cost is one AppendEntries stream per broker on the leader, fine for tens
// of brokers. Removing a non-voter for good is not automated yet.
//
// # Invariants
//
//   - Every applied command is all-or-nothing. The state is immutable
//     (persistent radix trees, hashicorp/go-immutable-radix): a command
//     applies to a copy of the state's root (a few pointers) and the copy is
//     kept only if every precondition held. A panic in apply is a fatal
//     error, and the state it was applied to is untouched.
//   - Apply is deterministic: no clock (commit times come in the command),
//     no randomness (ids are chosen by the proposer), no map iteration.
//     Replaying a log gives byte-identical snapshots.
//   - A command this binary cannot decode, or whose type or version it does
//     not know, stops the node (Node.Err, Status.Error, the log, every Watch)
//     instead of running on wrong state — unless the command is marked
//     optional, when it is skipped. The whole entry is decoded before any of
//     it is applied. After a fatal error nothing is applied and no snapshot
//     is taken (it would claim entries that were never applied), and Raft is
//     shut down. The leader checks forwarded commands before proposing them,
//     so a faulty peer cannot put an undecodable command in the log.
//   - A corrupt or truncated snapshot stops the node too: Open reads the
//     newest snapshot in full before Raft starts and refuses to start with
//     ErrCorruptSnapshot naming it (Raft would otherwise fall back to an
//     older snapshot and then miss compacted entries). To recover, remove
//     that snapshot directory if the log still covers it, or restore data.
//   - Committed remote segments never overlap; the remote log start offset
//     never moves back; a broker's incarnation epoch only grows; a
//     partition's leader and partition epochs only grow.
//
// # Proposals, batching, forwarding
//
// Proposals go to a queue served by two batch workers (batcher.go). A free
// worker takes everything queued, up to MaxBatchBytes, and sends it as one
// Raft entry if this node leads, or as one forwarding RPC to the leader if
// not; every proposer gets its own result. Under a storm of small commits
// batches grow by themselves (1,000 concurrent proposals commit in about ten
// entries); a lone proposer pays no linger. A proposal that certainly did
// not reach a leader (no leader, not the leader, connection refused) is
// retried when the leader changes; one whose outcome is unknown is not
// (ErrOutcomeUnknown), since retrying could apply it twice.
//
// Forwarding shares the Raft port: one TCP listener per node, the first
// byte of each connection choosing Raft (0x01) or the forwarding RPC (0x02),
// so every node has a single meta address (transport.go, forward.go).
//
// Read-your-writes on a follower needs the follower to learn the new commit
// index, which hashicorp/raft only sends with the next AppendEntries — up
// to twice CommitTimeout later when nothing else is being appended. After
// answering a forwarded request the leader therefore "kicks": it appends a
// Barrier (an entry the state machine never sees) whose AppendEntries
// carries the commit index at once; at most one kick is in flight, so the
// cost is bounded by one entry per round trip and is nothing when idle
// (leader.go).
//
// Reads: State is the latest local state, one atomic load. A State never
// changes, so everything read from one is consistent. LinearizableState asks
// the leader for a read index (the leader commits a barrier, proving it
// still leads, and reports its last applied command) and waits until this
// node has applied it.
//
// # Brokers and liveness
//
// RegisterBroker hands out an incarnation epoch from a cluster-wide counter,
// unfences the broker and makes it leader of the leaderless partitions
// whose ISR lists it; a previous incarnation still unfenced is fenced first,
// so a new incarnation never leads at an old leader epoch. Heartbeats are
// not log entries: the leader keeps the last heartbeat time of each broker
// incarnation in memory (liveness.go) and proposes FenceBroker, leader-only,
// for one silent longer than BrokerSessionTimeout (Kafka's
// broker.session.timeout.ms, 9s). A new leader knows no heartbeat times,
// so every broker gets a fresh grace period. Fencing removes the broker
// from every ISR (keeping a last member) and moves each partition it led to
// the next live ISR replica, or to no leader, bumping the epochs. Moving
// leadership for other reasons comes with replication.
//
// # Formats
//
// On disk, in DataDir: raft.db (bbolt: the Raft log and stable store;
// freelist not synced, rebuilt on open — the log is compacted, so the file
// stays small) and snapshots/<term>-<index>-<ms>/{meta.json,state.bin}
// (Raft's file snapshot store; state.bin is this package's snapshot format,
// snapshot.go).
//
// Log entries: a 3-byte envelope (type, version, flags) and a canonical
// JSON body, or a batch of such envelopes (commands.go). JSON of structs is
// deterministic (fields in declaration order, map keys sorted); bodies are
// decoded strictly (unknown fields refused), so a newer binary must bump a
// command's version to add a field, and an older one then refuses it by
// version. Snapshots: magic, version, then one length-prefixed JSON record
// per broker, topic, partition, manifest and committed offset in key order,
// and a trailer with the record count and a CRC-32C (snapshot.go).
// Forwarding RPC: length-prefixed frames (forward.go). Wire codes of errors
// and command types are append-only.
//
// # Goroutines and locks
//
// A Node owns: the mux's accept loop and its short-lived per-connection
// sniffers; the forwarding server's accept loop and one goroutine per
// connection; two batch workers; the leadership loop (runLeadership); the
// event loop (runEvents: leader-change signals, stop on a fatal error); the
// kick loop (runKicks); on a non-voter, the join loop (runJoin). Raft's own
// goroutines belong to Raft. Close cancels the node's context, shuts Raft
// down (which releases every call waiting on it), closes the forwarding
// server, waits for all of the above, then closes the transport, listener
// and stores. No goroutine outlives Close.
//
// Locks are leaves: none is held while taking another or while blocking.
// They are watchHub.mu (publish and subscriptions), liveness.mu (heartbeat
// times), Node.mu (the leader-change channel, the rejoined non-voters),
// forwardServer.mu and forwardClient.mu (connection sets), mux.mu
// (connections being sniffed).
//
// # Metrics
//
// See MetricNames: apply latency, snapshot time, commands applied by result,
// fatal errors, proposals by outcome, commit latency, batch sizes,
// forwarded batches, fenced brokers, and gauges for leadership, term, commit
// and applied index. They are registered with Config.Registerer, if any,
// and unregistered by Close.
package meta
