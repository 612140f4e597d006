// Package replica is a partition as one of its replicas: this broker's
// copy of its log and what the copy is for. The Manager opens a Partition
// for every replica the metadata places here, gives each its role, leader
// or follower, and closes (and for deleted topics removes) the rest; the
// wire handlers in ingest ask it for the partition they serve
// (Manager.Leader) and append and read through it.
//
// # Roles
//
// A leader takes produces (Partition.Append; the produce handler wakes
// the followers' waiting fetches with WakeFollowers once a request's
// partitions are all appended) and answers its followers' fetches
// (Partition.ReadForFollower), which tell it each follower's log end. A
// follower's log is written only by the Manager's fetcher (fetcher.go):
// one session per leader broker sends Fetch requests with this broker's
// replica id and appends what comes back with the leader's offsets and
// leader epochs (hotlog.AppendReplicated), every partition of a response
// before waiting for any to be durable. Role changes come
// from the metadata only (setRole): a new leadership starts its leader
// epoch at the log end and forgets what it knew of followers; a broker
// that stops leading wakes every fetch and produce waiting on it.
//
// # The high watermark
//
// Below the high watermark a record is on every ISR member and may be read
// by consumers. On a leader it is the smallest log end over the ISR and the
// followers being added to it (progress.go), the leader's own counting
// once durable, and a follower's being the offset it fetches at, which it
// makes durable first (Partition.fetchOffset: a tail it wrote as leader and
// had not fsynced included); on a follower, the leader's as its last fetch
// was told, up to its own log end. It never moves back while the partition
// is open, but on a follower that truncates what an unclean election gave
// up (below). acks=all produces wait for it (Partition.waitAcks).
//
// # Truncation
//
// Before the first fetch of a leader epoch a follower asks the leader
// where the leader's log of its newest epoch ends (OffsetForLeaderEpoch)
// and truncates at the divergence (Partition.divergence, KIP-279; when its
// log never had the epoch the leader answers with, it truncates where its
// own epoch below that one ended and asks again, a lower epoch each
// round), never
// below its high watermark (a truncation that would take committed records
// back is refused and counted), unless the partition's newest unclean
// election came after every record it would drop (meta.Partition's
// UncleanLeaderEpoch): the election gave those up, and the high watermark
// goes back with the log, as Kafka's follower truncates below it then
// (Partition.truncateTo). A follower behind the
// leader's local log start restarts its log there (hotlog.ResetTo): what
// is below is in the bucket.
//
// # Leases
//
// A leader serves only while Deps.Lease says its heartbeats to the
// metadata leader succeed (ingest/lease.go): a broker cut off from the
// metadata group stops before the controller can have elected another.
//
// # Goroutines
//
// The Manager's run loop applies metadata changes and shrinks ISRs (a
// change to remote manifests alone, two per upload, only gives the
// partitions it names their remote range: a reconcile takes every
// partition's append lock in turn, and nothing it decides depends on a
// manifest); its advance loop moves high watermarks after fsyncs; each
// fetcher session is a goroutine; ISR changes are proposed on short-lived
// goroutines the Manager waits for when it stops. Partition methods are
// safe for concurrent use: appends, follower appends, truncations and role
// changes serialize on the partition's append lock; reads take none.
package replica
