// Package ingest is the broker front: it answers the Kafka wire protocol on
// a TCP listener, appends produced batches to each partition's hot log
// (hotlog), serves fetches from the segment files with sendfile (and, below
// the local log start, from the bucket), and keeps topics and configs in
// the metadata group (meta).
//
// # Wire format
//
// Every request and response is a frame: a 4-byte big-endian size, then the
// message. A request starts with header v1 (api key, api version,
// correlation id, nullable client id) or, for flexible versions, v2 (the
// same plus tagged fields); kmsg decodes and encodes the bodies. Responses
// start with the correlation id and, for flexible versions except
// ApiVersions, an empty tagged-field section.
//
// # Dispatch
//
// Each API lives in a file named after its key (00_produce.go,
// 01_fetch.go, …, 60_describe_cluster.go) that starts with the versions it
// answers and how it behaves, and registers its handler with those versions
// in init. The registrations are the dispatch table and the ApiVersions
// answer at once: an API or version is advertised exactly when it is
// dispatched.
//
// Answered: Produce v3-13, Fetch v4-17, ListOffsets v1-10, Metadata v0-12,
// ApiVersions v0-4, CreateTopics v2-7, DeleteTopics v1-6, DeleteRecords
// v0-2, InitProducerId v0-5, DescribeConfigs v1-4, AlterConfigs v0-2,
// CreatePartitions v0-3, IncrementalAlterConfigs v0-1, DescribeCluster v0-2,
// and the consumer group APIs, which the group coordinator (package group)
// runs: OffsetCommit v0-9, OffsetFetch v0-9, FindCoordinator v0-5,
// JoinGroup v0-9, Heartbeat v0-4, LeaveGroup v0-5, SyncGroup v0-5,
// DescribeGroups v0-5, ListGroups v0-5, DeleteGroups v0-2, OffsetDelete v0.
//
// # Connections
//
// A connection has a reader goroutine and a processor goroutine. The reader
// checks each frame's size against socket.request.max.bytes before
// allocating it, decodes it, and queues it, up to ReadAheadRequests ahead;
// the processor answers one request at a time, so answers leave in request
// order. A produce's reply alone is left to a third goroutine, the
// responder, which waits for its acknowledgements and writes it while the
// processor appends the next produce request; the processor waits for the
// responder before handling any other request (conn.go). A produce of
// many partitions is appended on up to GOMAXPROCS goroutines, a partition
// always on the same one (00_produce.go, appendPartitions).
//
// Request memory is bounded before it is allocated. Having read a frame's
// size, the reader reserves it from three bounds (budget.go, conn.reserve):
// the connection's own, socket.request.max.bytes for all its requests read
// and not yet answered, so a long poll at the head of a connection pins at
// most one frame behind it; the broker's queued.max.requests (500, as in
// Kafka) for requests read and not yet taken by a processor; and the
// broker's queued.max.request.bytes for the bytes of requests read and not
// yet answered. Kafka leaves the last unbounded by default (-1); strata
// defaults to 512 MiB (DefaultQueuedMaxRequestBytes says why) and refuses a
// value below socket.request.max.bytes, so every frame accepted can be
// read. While a bound is full the reader does not read its socket: the
// client is held back by TCP flow control, not buffered for. A request's
// slot is given back when the processor dequeues it, its bytes once its
// reply is written. Room goes to the oldest waiter that fits, so small
// requests (the produce that ends the long polls filling the budget) pass
// a large frame that does not fit yet. The strata_ingest_queued_* gauges,
// strata_ingest_readers_blocked and
// strata_ingest_read_blocked_seconds_total show the bounds at work. A protocol violation (a bad size, an undecodable header or body, an
// unknown API key, an unanswered version other than ApiVersions') stops the
// reader: queued requests are answered, then the connection is closed.
// Business failures are Kafka error codes in the response, mapped from Go
// errors in one table (errors.go). A connection that sends nothing for
// connections.max.idle.ms is closed, and so is one that does not take a
// response within it (each reply is written under a write deadline, the
// sendfile path included), so a client that stops reading cannot hold
// the processor, and the log sections its replies carry, for ever.
//
// # Invariants
//
//   - Records at or above a partition's high watermark are never returned.
//     With one replica the high watermark is the durable log end: the hot
//     log's flushed offset (fsync before ack, the default) or, for a topic
//     that sets flush.ms or flush.messages, the log end.
//   - A produce is acknowledged (acks 1 or -1) only once its batches are
//     durable under the topic's policy; each partition's records are one
//     batch, as Kafka requires, validated before it is written down to
//     every record's framing, decompressing it if need be
//     (record.ValidateProduced): nothing a consumer cannot read is
//     acknowledged.
//   - Batches are stored as the producer sent them; only base offset and
//     partition leader epoch are stamped, outside the CRC (LogAppendTime
//     topics also rewrite the max timestamp and CRC).
//   - Fetch responses are written as framing bytes from memory and record
//     bytes straight from the segment files (sendfile(2) at explicit
//     offsets, or pread(2); see FetchCopy), or, for remote reads, from the
//     verified bytes remotefetch returned. fetchReply encodes exactly what
//     kmsg.FetchResponse.AppendTo would; its test checks this byte for byte.
//   - Idempotent producer state (the last five batches per producer id and
//     epoch) lives with each partition. It is snapshotted (at close, and
//     every 30 s while idempotent producers write; producer_snapshot.go) at
//     an offset the log has made durable, and on open it is the snapshot
//     plus the batch headers after it; without a snapshot that fits the
//     log, it is rebuilt from the headers of the log's newest segments, at
//     least ProducerStateScanBytes of them.
//
// # The internal topic
//
// __consumer_offsets is answered by every broker, not stored
// (internal_topic.go): Metadata lists it as internal with 50 partitions,
// it reads as an empty log, and Produce, CreateTopics and DeleteTopics
// refuse it as Kafka does. Committed offsets live in the metadata group.
//
// # Goroutines
//
// The broker owns: the accept loop (run by Serve's caller), one processor
// per connection (which owns that connection's reader), the membership loop
// (registration, heartbeats, the leadership lease), and the replica
// Manager, whose goroutines (package replica's doc) stop with the broker's
// context. Shutdown first moves leadership away (controlled_shutdown.go),
// then stops accepting, drains every connection (long polls answer at
// once), then cancels the rest and waits for the partitions to close.
//
// # Tiered storage
//
// With Deps.Tiering (tiering.go: offload's Manager, remotefetch's Reader),
// a partition of a topic with remote.storage.enable (the default) is
// tiered: its hot log is opened with local retention (local.retention.ms
// and .bytes, offload.LocalRetention), may delete a segment only once
// committed segments in meta hold all of it (offload.LocalDeletionHook;
// with remote.log.copy.disable, by the topic-wide retention, any segment),
// and tells offload when a segment seals (Events.Sealed → Notify); the
// partition is handed to offload (Add) while this broker leads it and
// taken back (Remove) when it stops leading or closes (replica.Manager).
// Total retention is then remote, offload's.
// Without Deps.Tiering, or for an untiered topic, the hot log keeps the
// total retention and is the only copy.
//
// Reads follow: a fetch offset below the local log start goes to the
// bucket (all such partitions of one Fetch in parallel, bounded by
// remote.fetch.max.wait.ms; their bytes written from memory), as do
// ListOffsets by timestamp below the local start. The log start offset
// clients see (Fetch, Produce, ListOffsets -2) is the remote log start while
// the bucket holds data below the local start and up to it; -4 is the hot log's start;
// -5 the highest committed tiered offset. While offload reports disk
// pressure, Produce answers KAFKA_STORAGE_ERROR.
//
// Because the local read is tried first and the remote one after it, a
// segment that local retention deletes between the two is still found in
// the bucket: offload commits a segment before its local files may go.
//
// DeleteRecords on a tiered partition, or one whose bucket holds data,
// moves the remote log start in meta before the local one (replica's
// DeleteBefore); on a tiered one, offload deletes the segments wholly
// below it and uploads the rest of the one that holds it from the batch
// at it. Offload does not run for a topic that turned tiering off, so its
// bucket's objects stay, unserved below the start.
//
// Limits: a topic that turns remote.storage.enable off is reopened
// untiered: offload no longer applies remote retention to its data in the
// bucket, and once local retention (now the total one) deletes past the
// bucket's end, clients are told the local log start (replica's
// LogStartOffset), though a fetch below it still reads the bucket.
//
// # Descriptors, partition limits, offline partitions
//
// The process's descriptor limit (Config.DescriptorLimit; `strata server`
// raises the soft limit to the hard one) is shared out in descriptors.go:
// a fixed reserve, a quarter for sockets (clients and the bucket), an
// eighth (at most 1,024) for the sealed-segment FileCache, and the rest for
// partitions at two descriptors each (the active segment's log file, and
// the prepared next one's). max.broker.partitions (KIP-578's name;
// Config.MaxBrokerPartitions) defaults to that share, at most 4,000, and
// a larger setting than the share holds is refused at start. CreateTopics,
// CreatePartitions and auto-creation that would give any broker more
// partitions than the limit answer POLICY_VIOLATION with a message naming
// the broker, the count and the limit, validate-only requests too. The
// check is made by the broker handling the request, against its limit, on
// its copy of the metadata: the brokers of a cluster are meant to be
// alike, and two creates racing past it can overshoot by the smaller one.
// max.connections (Config.MaxConnections) bounds the sockets likewise, at
// their share less the bucket client's part (Config.MaxBucketConnections,
// which the server gives objstore): at the bound the accept loop
// waits for a connection to end (connection_limit.go), so clients wait in
// the listen backlog instead of the broker failing with EMFILE.
//
// A partition this broker holds that fails to open is retried by the
// replica Manager's reconcile loop (replica/offline.go), after 0.5 s and
// then twice as long each time, up to 30 s, until it opens or is no
// longer held here. Meanwhile requests for it answer KAFKA_STORAGE_ERROR,
// other partitions are served, and Broker.PartitionsReady, which
// `/readyz` reports, names it.
//
// Partitions, their roles and replication live in package replica; the
// handlers here ask its Manager for the partition they serve
// (Manager.Leader) and read and append through it.
//
// # Partition directories
//
// A partition held here lives in <DataDir>/<topic>-<partition>/ with the
// hot log's files and partition.metadata (Kafka's format: the topic id), so
// a directory of a deleted topic is never mistaken for a new topic's of
// the same name (replica/dir.go).
package ingest
