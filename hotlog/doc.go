// Package hotlog is one partition's local log: the hot tail of a Kafka
// partition on the broker's disk, before sealed segments move to the
// bucket. It stores record batches (package record) byte for byte, gives
// them dense offsets, makes them durable with group commit, serves reads
// as file sections for sendfile, finds offsets by timestamp, keeps the
// leader epoch history, truncates, applies local retention, and recovers
// after a crash in time proportional to what was not yet flushed. A leader
// appends with Append, a follower with AppendReplicated and ResetTo (see
// "Leaders and followers").
//
// # Usage
//
//	cache := hotlog.NewFileCache(1024)          // shared by every partition
//	cfg := hotlog.DefaultConfig()
//	disk, err := hotlog.OpenDiskSync("/data", 0)    // shared by every partition
//	cfg.FileCache, cfg.DiskSync = cache, disk
//	log, err := hotlog.Open("/data/orders-3", cfg)
//	...
//	batch, err := record.Check(b)                // or record.ValidateProduced
//	res, err := log.Append(batch)                // stamps, writes (a leader)
//	res, err = log.AppendReplicated(fetched...)  // keeps the leader's offsets and epochs (a follower)
//	err = res.WaitAck(ctx)                       // the shared fsync (SyncBeforeAck)
//	section, err := log.Read(offset, 1<<20)      // whole batches as a file range
//	... sendfile(conn, section.File, section.Position, section.Length) ...
//	section.Release()
//	err = log.Close()                            // every log, then disk.Close()
//
// # Files
//
// A partition directory holds segments (<base>.log, .index, .timeindex),
// leader-epoch-checkpoint, log-checkpoint, between Close and Open
// clean-shutdown, and while ResetTo runs reset-intent. While a sealed
// segment is rewritten (RewriteSegment, for the log cleaner) its new files
// are <base>.log.cleaned, .index.cleaned and .timeindex.cleaned, and
// <base>.log.swap once the rewrite is committed (rewrite.go). format.go
// draws every format.
//
// # Invariants
//
//   - Offsets are dense: each batch's base offset is the previous batch's
//     last offset plus one, across segments; a segment's base offset is the
//     offset of its first batch.
//   - A reader sees a batch only after all of its bytes and its index
//     entries are written: the writer publishes a segment's committed end
//     (its tail) with an atomic store after the write.
//   - Bytes a reader holds in a Section never change and its file stays
//     open until Release: deletion only unlinks files, file descriptors are
//     reference counted, and TruncateTo waits for older readers before it
//     cuts bytes.
//   - Nothing of an invalid batch is written: Append takes record.Batch,
//     which only record's checks make, so every batch was checked once,
//     before the call, and is not hashed again; a call with a batch larger
//     than segment.bytes writes none of them, nor does an AppendReplicated
//     call with a batch that does not continue the log or goes back in
//     leader epoch.
//   - The epoch history covers every batch: an epoch a replicated batch
//     starts is persisted before the batch is written.
//   - When WaitAck or Sync returns, an fsync covering the batches has
//     completed. Every batch appended before a flush round starts is
//     covered by that round.
//   - Everything below the persisted recovery point (log-checkpoint) is
//     fsynced, and so are the index entries it counts; everything after it
//     is checked on Open after a crash.
//   - After an fsync error the log refuses further work (ErrFailed): the
//     kernel may have dropped the dirty pages, so only a reopen, which
//     checks the files, can say what survived.
//   - A full file system is not such an error: the write that found no
//     room is cut off again and Append returns ErrNoSpace; the log takes
//     appends once there is room. The index files are sparse; the active
//     segment's entries are written into private mappings and copied into
//     the files when a checkpoint or a seal vouches for them (so a syncfs
//     round never writes index pages out one entry at a time), and that
//     copy must find room, so the writer allocates the files ahead in
//     64 KiB chunks (fallocate) and refuses with ErrNoSpace when that
//     fails, before anything of the batch is written. A checkpoint is
//     overwritten in place and needs no room, except where it replaces
//     log-checkpoint whole (a new log's first, an older release's file,
//     the first after a failed write). One that finds no room waits for
//     it: the flusher's recovery point, and a log start that retention
//     or DeleteBefore moved on, whose segments are deleted all the same
//     (that is how a full disk gets room).
//
// # Threading
//
// Writes (Append, AppendReplicated, Roll, TruncateTo, ResetTo,
// DeleteBefore, ApplyRetention, AssignEpoch, a rewrite's swap, Close) are
// serialized by the writer lock, Log.mu. A rewrite writes its new files
// outside it, and DeleteBefore and ApplyRetention persist the new log
// start and retire the deleted segments' files after it, under the
// flusher's round lock alone (retention.go). Readers (Read,
// OffsetForTimestamp, the offset and segment accessors) take no lock:
// they acquire an immutable, reference-counted snapshot of the segment
// list (state.go), then read each segment's committed tail atomically.
// Sealed segments' files are opened on demand and closed under a shared
// budget (FileCache, CLOCK eviction; hits are lock-free).
//
// Goroutines, each with one owner and one stop path:
//   - the flusher (flush.go), one per Log, started by Open and stopped by
//     Close. It runs flush rounds, seals rolled segments on disk and
//     persists the recovery point, outside the writer lock, so appends
//     continue during an fsync. TruncateTo and ResetTo pause it by taking
//     its round and syncing locks; DeleteBefore and ApplyRetention take
//     both to move the log start, then keep round alone while they
//     persist it.
//   - the disk rounds' goroutine (disksync.go), one per DiskSync, started
//     by OpenDiskSync and stopped by Close: under SyncBeforeAck it runs the
//     rounds that release waiting appenders, for every Log at once, under
//     each Log's syncing lock. With a disk journal (journal.go) a write
//     that fills a journal file (a disk round's, a flusher's own round's,
//     SyncWrites') also starts one goroutine that retires
//     the full files (a syncfs, then deletion, one kept as the spare the
//     next file is written over); Close waits for it.
//   - the preparer (prepare.go): one short-lived goroutine per segment,
//     started by an append once the active segment is between half and
//     three quarters full (by the Log's phase), creating the next
//     segment's files; Close waits for it.
//   - the reclaimer (reclaim.go): one short-lived goroutine per
//     DeleteBefore or ApplyRetention that deleted segments, freeing their
//     retired .log files a chunk at a time once no older reader holds
//     them, taking turns with the other reclaimers on the disk and
//     pausing between cuts; Close stops it and waits, and Open reclaims
//     what is left.
//
// Lock order: Log.mu, flusher.round, flusher.mu, segment.openMu,
// FileCache.mu, retirees.mu. Callbacks of EventListener run with some of
// these held and must not call back into the Log. In a DiskSync:
// journal.retireMu, the journal's commit turn (journal.group.turn),
// journal.mu, the call turn (acquireCall, takeTurn), DiskSync.mu. The
// reclaims' turn (reclaimTurn, reclaim.go) is taken with no other lock
// held.
//
// # Leaders and followers
//
// Two appends write batches, and differ in who gives them their offsets
// and leader epochs:
//
//   - Append is the leader's (and a single replica's): it gives the batches
//     dense offsets from the log end and stamps each with the latest epoch
//     of the history, which AssignEpoch moves on when this replica becomes
//     leader.
//   - AppendReplicated is the follower's: the batches come from the leader
//     with their offsets and epochs already assigned, and keep them. They
//     must continue the log exactly (ErrNotContiguous otherwise) and must
//     not go back in epoch (ErrStaleEpoch); a batch with a higher epoch
//     starts that epoch in the history at its base offset.
//
// Both share one write path (append.go), so limits, rolling, indexes,
// ErrNoSpace and WaitAck behave the same. A follower whose log diverged
// calls TruncateTo (to the offset OffsetForLeaderEpoch gave it); one whose
// log end the leader no longer holds locally, or a new replica, calls
// ResetTo(the leader's local log start, its epochs), which replaces the
// whole log with an empty one at that offset, crash safely (reset.go).
//
// # Durability
//
// Config.Durability picks what an acknowledgement means. SyncBeforeAck
// (the default, for one replica) makes WaitAck wait for a flush round:
// appenders register on the next round's ticket, wake the flusher, and
// every appender that registered before the round began shares its one
// fdatasync. With Config.DiskSync the round is a disk round instead: the
// DiskSync's one goroutine runs the rounds of every log with waiting
// appenders together, one syncfs covering them all (see DiskSync.want), or
// with a disk journal one write and fdatasync of the journal file, where
// the round has little new data in each file (journal.go).
// AppendResult.Expect registers a wait without blocking, so a caller
// waiting for many logs registers them all, then waits in turn.
// Appenders released by a flusher's round come back within microseconds;
// the flusher lets them (it waits until every appender at work during the
// last round is registered again, or one fsync's time, whichever is
// first), so concurrent appenders share one fsync instead of splitting into
// two alternating groups. SyncPeriodically acknowledges at once and leaves
// fsync to flush.messages and flush.ms, for topics whose durability comes
// from replicas; it also asks the kernel to start writeback of every 2 MiB
// appended (sync_file_range, no durability claimed), so that a flush.ms
// fsync does not find gigabytes dirty and stall appends while it writes
// them. Either way, Sync forces a flush, rolling seals the old
// segment durably, and a recovery point is persisted at the new segment's
// start after each seal and at the flushed point at least every
// log.flush.offset.checkpoint.interval.ms.
//
// # Recovery
//
// Open trusts every segment below the recovery point's segment (it reads
// only their sizes and last time index entry) and, in that segment, the
// bytes and index entries the recovery point counts. From there on it reads
// every batch and checks its header, CRC-32C and offset continuity; the
// first torn or corrupt batch and everything after it, later segments
// included, are cut off, the indexes of what remains are rebuilt, and the
// result is fsynced before a new recovery point is written. Restart cost
// therefore grows with the data appended since the last persisted recovery
// point (bounded by one segment plus log.flush.offset.checkpoint.interval.ms
// of traffic), never with the length of the log. The clean-shutdown marker
// only records that Close completed: because Close persists the recovery
// point at the log end, a clean restart has nothing to check, and a stale
// marker cannot make Open skip a check the recovery point calls for. A
// reset-intent file means a crash interrupted ResetTo after it committed to
// the reset: Open finishes it (removes every segment, rewrites both
// checkpoints, then the intent) and opens the empty log at its offset.
package hotlog
