// Package group is the consumer group coordinator: Kafka's classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets
// (OffsetCommit, OffsetFetch, OffsetDelete), group administration
// (DescribeGroups, ListGroups, DeleteGroups) and lag. The Kafka encoding is
// ingest's business (ingest/08_offset_commit.go … 47_offset_delete.go); this
// package takes plain requests and returns results whose errors ingest maps
// to Kafka codes in ingest/errors.go.
//
// # Which broker coordinates
//
// ChooseCoordinator picks among the live brokers by rendezvous hashing of
// the group id, so a broker joining or leaving moves only about 1/N of the
// groups; it is the only place the choice is made. ingest answers
// FindCoordinator with it and NOT_COORDINATOR to group requests for groups
// another broker coordinates. On a single node this broker coordinates
// every group.
//
// # Threading
//
// One goroutine, run, owns every group; New starts it and Close stops it.
// Requests are closures posted to it; each answers through a future (a
// buffered channel filled once), so a JoinGroup can wait for the rebalance
// without holding the loop. Timers (rebalance, session, pending member)
// post closures too, carry a token (generation or session sequence) so a
// timer that fired late does nothing, and post nothing once the loop has
// stopped. Committing offsets proposes to the metadata group outside the
// loop, after the loop has checked the member and generation.
//
// # States
//
//	           join                     all joined / rebalance timeout
//	Empty ─────────────▶ PreparingRebalance ─────────────────▶ CompletingRebalance
//	  ▲                    ▲        │ nobody left                   │ leader's SyncGroup
//	  └────────────────────┼────────┘                               ▼
//	                       └──── join (leader or new metadata), ── Stable
//	                             leave, session expiry
//
// Dead is what DescribeGroups reports for a group that does not exist
// (neither members nor committed offsets) and what a deleted group
// becomes; DeleteGroups removes the group from memory.
//
// A group stays in memory only while it has members, member ids handed
// out by MEMBER_ID_REQUIRED, or a rebalance under way. Once it is Empty
// without any of those, the loop forgets it, so that consumers with
// throwaway group ids (kcat -G, kafka-console-consumer) do not accumulate;
// a join that fails creates nothing, nor does a commit. A forgotten group
// answers DescribeGroups, ListGroups (on its coordinator: each broker
// lists the groups it coordinates, Deps.Coordinates) and OffsetFetch from
// its committed offsets, as after a restart: Empty with protocol type
// "consumer", or Dead without offsets (as Kafka reports it once its
// periodic cleanup removed the group). Its next join starts a fresh group
// at generation 1; member ids are never reused, so no old member can pass
// for a new one.
//
//   - Empty: no members. Committed offsets may exist. A first join starts
//     a rebalance that waits InitialRebalanceDelay
//     (group.initial.rebalance.delay.ms, 3 s by default, 0 in tests) for
//     more members.
//   - PreparingRebalance: members must (re)join. It completes when every
//     member is waiting in a JoinGroup, or when the longest rebalance
//     timeout of the members passes; members that did not rejoin are
//     removed. Completing increments the generation, chooses the protocol
//     every member supports that most members prefer, keeps the leader if
//     it rejoined (else the smallest member id), and answers every join:
//     the leader's with every member's metadata. SyncGroups in flight get
//     REBALANCE_IN_PROGRESS.
//   - CompletingRebalance: members wait in SyncGroup for the leader's
//     assignment. Heartbeats succeed; commits get REBALANCE_IN_PROGRESS.
//     A member that has not sent its SyncGroup a rebalance timeout after
//     the join phase ended (here or once Stable) is removed and the group
//     rebalances, as in Kafka since 3.2: a leader that heartbeats and
//     never syncs would otherwise hold its followers' syncs for ever.
//   - Stable: the leader's SyncGroup stored every member's assignment
//     (members it left out get an empty one) and answered all waiting
//     syncs. A join from the leader, or from a member whose protocols
//     changed (cooperative rebalancing rejoins this way after revoking),
//     starts a rebalance; a join from another member with unchanged
//     protocols is answered with the current generation.
//
// Cooperative rebalancing (KIP-429) needs nothing from the coordinator
// beyond running this protocol exactly: the client assignors compute
// incremental assignments and rejoin for the second round.
//
// # Timeouts
//
//   - Session timeout (per member, bounded by MinSessionTimeout and
//     MaxSessionTimeout, else INVALID_SESSION_TIMEOUT): restarted by every
//     heartbeat, join, sync and commit. When it fires, a member waiting in a
//     JoinGroup or a SyncGroup is alive by definition (it cannot heartbeat
//     meanwhile); any other member is removed and the group rebalances. A
//     leader that never syncs is such a member, which ends its followers'
//     wait.
//   - Rebalance timeout (per member; JoinGroup v0 uses the session
//     timeout): the longest bounds the join phase, and then each member's
//     wait before its SyncGroup.
//   - Member id required (JoinGroup v4+): a new member without an id gets
//     one with MEMBER_ID_REQUIRED; the id is forgotten unless it joins with
//     it within its session timeout.
//
// # Static membership (KIP-345)
//
// A member with a group.instance.id that joins without a member id while
// its instance is known takes the old member's place under a new member id;
// the old id is fenced (FENCED_INSTANCE_ID) from then on. If the group is
// Stable and the protocols are unchanged there is no rebalance: the member
// gets the current generation and, through SyncGroup, its old assignment;
// a static leader gets the member list with SkipAssignment (KIP-814).
// Otherwise the group rebalances as for any join. LeaveGroup may name a
// member by instance id.
//
// # What is persisted
//
// Committed offsets, with leader epoch, metadata and commit time, are in
// the metadata group (meta.CommitOffsets, meta.DeleteOffsets) and survive
// restarts; concurrent commits are coalesced into few Raft entries by the
// metadata node's batcher. A partition of a commit that does not exist,
// whose offset is negative (or leader epoch below -1), or whose metadata
// exceeds 4096 bytes, fails alone; the rest commit together. The
// coordinator checks every rule the metadata group applies before it
// proposes, because the metadata group refuses a whole command for one bad
// partition.
//
// # Offset retention
//
// Committed offsets expire as in Kafka since 2.1 (KIP-211): never while
// the group has members (except, in a Stable consumer group, those of
// topics no member subscribes to, a period after their commit), and once
// the group has been Empty for OffsetsRetention
// (offsets.retention.minutes, 7 days). Until then the group is listed
// Empty and DeleteGroups deletes it with its offsets; afterwards it is
// Dead. A pass every OffsetsRetentionCheckInterval
// (offsets.retention.check.interval.ms, 10 minutes) on the group's
// coordinator (Deps.Coordinates) proposes meta.ExpireOffsets, which keeps
// an offset committed after the pass looked. The clock starts when the
// last member leaves on this coordinator, or, for a group it never saw
// Empty (after a restart, after the group moved here, or one only admin
// tools commit to), at the first pass that finds it without members:
// Kafka persists that time, strata keeps membership in memory, so offsets
// may outlive Kafka's period, never fall short of it. A commit to an Empty
// group keeps that offset a full period from the commit. retention.go has
// the rules.
//
// Membership (members, generation, assignments, the stall tracking below)
// is memory only, as in Kafka's coordinator right after it loads a group:
// after a restart every group with committed offsets is Empty, and its
// consumers rejoin (their heartbeats get UNKNOWN_MEMBER_ID). A group that
// is forgotten once empty loses the same state.
//
// # Lag and stalled consumers
//
// Lag is computed on demand for the partitions a group committed: records
// (high watermark minus committed offset) and age (now minus the timestamp
// of the batch holding the committed offset, read from its header in the
// partition's hot log; unknown for offsets already tiered away). A
// partition assigned to a member but never committed is listed too, with
// committed offset -1 and lag from the log start, as kadm and rpk count it
// (Kafka's kafka-consumer-groups prints "-" for that lag); it is never
// stalled, and the Prometheus metrics leave it out, since a consumer that
// starts at the log end has nothing to commit until records arrive. A
// partition is stalled — a "ghost consumer": a member that heartbeats but
// does not consume — when the group is Stable with members, the partition
// has lag, and its committed offset has not moved for longer than
// StallThreshold. Collector exports lag, age and stalls to Prometheus at
// scrape time; ingest's Broker.GroupLag serves `strata group describe`.
package group
