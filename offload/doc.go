// Package offload is strata's remote storage manager: it moves the sealed
// segments of the partitions a broker leads from the hot disk to the
// bucket, commits them to the metadata group, publishes each partition's
// manifest into the bucket, applies local and remote retention, sweeps
// orphaned objects and keeps the hot disk from filling up. It reads the hot
// log (hotlog) and writes the store (objstore) and meta; remotefetch and
// batch jobs read what it wrote.
//
// # Usage
//
//	mgr, err := offload.New(cfg, metaNode, store) // cfg from DefaultConfig
//	err = mgr.Start()
//	// for each tiered partition this broker leads, its hot log opened with
//	//   CanDelete = offload.LocalDeletionHook(metaNode.State, topic, partition, log.Retention)
//	//   RetentionMs, RetentionBytes = offload.LocalRetention(topicConfig)
//	//   Events.Sealed = func(hotlog.SegmentInfo) { mgr.Notify(topic, partition) }
//	err = mgr.Add(offload.Partition{Topic: …, TopicID: …, Partition: …, Log: log,
//		HighWatermark: hwm.Load, LeaderEpoch: epoch.Load})
//	…
//	if !mgr.AdmitWrite(n) { /* answer Produce with KAFKA_STORAGE_ERROR */ }
//	status := mgr.Status()                        // strata tier status
//	mgr.Remove(topic, partition)                  // leadership lost, or before log.Close
//	err = mgr.Close()
//
// Sync runs one whole pass over every partition in the caller's goroutine
// (tests); Start runs the same passes in the background.
//
// # The upload protocol
//
// The order is the invariant (DESIGN §4). For each partition, the copy task
// takes sealed segments in offset order, one at a time:
//
//  1. Only a sealed segment whose end is at or below the high watermark,
//     and whose files hotlog has finished sealing (trimmed indexes), is
//     uploaded; it is the first one holding offsets above the tiered end
//     (max(highest tiered offset + 1, remote log start offset)). One that
//     starts below the tiered end (a former leader's segments ended
//     elsewhere) is uploaded from the tiered end on: its log from the batch
//     at that offset, indexes rebuilt for the part (segment.go).
//  2. meta BeginSegmentCopy records the copy as started: a new segment id,
//     the key, base and end offsets, max timestamp, log size and the leader
//     epochs covering the segment. Readers do not see it.
//  3. The object (segmentobject format) is PUT under the key: the store
//     (which goes multipart for large objects) reads it from the segment
//     files through a segmentobject.Reader: the log is read once and never
//     held whole in memory. Failed attempts are retried, each under a
//     timeout, with backoff and jitter; a retry writes the same key.
//  4. meta CommitSegmentCopy makes the segment visible and advances the
//     highest tiered offset. Then the bucket manifest is published.
//  5. Local files go only after step 4: the hot log's CanDelete
//     (LocalDeletionHook) lets its retention (local.retention.ms and
//     .bytes, applied by the expiry task) delete a segment only once
//     committed segments hold all of its offsets; the disk watch deletes
//     such segments early under disk pressure. While the topic's
//     remote.log.copy.disable is true nothing more is uploaded, and its
//     hot log keeps, and deletes by, the topic-wide retention (KIP-950).
//  6. The expiry task applies remote retention (retention.ms by each
//     segment's newest record, retention.bytes over remote plus
//     not-yet-tiered local bytes, and segments wholly below the remote log
//     start offset), always to a prefix of the committed segments: meta
//     BeginSegmentDelete (readers stop seeing the segment; the remote log
//     start offset moves past it), the bucket manifest is republished
//     without it, the object is deleted, and meta FinishSegmentDelete drops
//     the entry.
//  7. The orphan sweep deletes segment objects under the partition's
//     prefix that no manifest entry names (sweep.go explains why listing
//     first and reading meta linearizably after makes this safe), when a
//     partition is added and every OrphanSweepInterval.
//  8. A deleted topic's objects (its segments and bucket manifests) are
//     deleted by each broker that held a replica of it, partition by
//     partition, when the deletion reaches it (Purge, purge.go), tried
//     again after a failure until it ends; the replica manager's marker
//     file starts a purge a stop cut short again at the next start.
//
// Copying entries that a pass finds (left by a failed pass, a crashed
// process or a former leader) are decided at once, without waiting for an
// age threshold: the entry that describes exactly the next segment to
// upload (same offsets, size and epochs, the part's for a segment
// uploaded from the tiered end) is resumed under its id and key
// (if the store already holds an object of the right size there, the PUT
// is skipped); any other can never be finished (only the current leader's
// copy task creates copying entries, one at a time, and meta fences a
// former leader's commands by leader epoch), so it is abandoned: marked
// deleting, and deleted as in step 6. A late PUT of an abandoned upload
// leaves an object no entry names, which the sweep removes. One exception:
// an entry whose commit (step 4, or CommitSegmentReplace) this Manager
// proposed without learning the outcome may yet be committed after the
// pass read it as copying, and a BeginSegmentDelete applied after that
// commit would delete a committed segment as retention does, moving the
// remote log start past it; such an entry, its object whole, is committed
// again instead (abandon), and abandoned only once meta refuses that.
//
// # Remote recompaction
//
// recompact.go: on a compacted topic the expiry task also rewrites runs of
// committed segments without what later records supersede and swaps each
// run for its new object in one meta command (BeginSegmentReplace, PUT,
// CommitSegmentReplace, publish); the replaced objects are deleted once
// RetireDelay has passed. The copy task leaves copying replacements alone;
// the next expiry pass abandons one a crash left.
//
// # Invariants
//
//   - No local file is deleted before a committed segment holds its
//     offsets. No object a committed entry names is deleted before the
//     entry is marked deleting.
//   - Committed segments never overlap (meta refuses it) and, uploaded in
//     offset order from the tiered end, are contiguous as long as the hot
//     log is.
//   - Every offset below the hot log's start offset and at or above the
//     remote log start offset is in a committed segment.
//   - The bucket manifest names only committed segments: it is republished
//     after a commit (never before) and before an object is deleted.
//   - An upload never blocks produce: it reads sealed files only, and
//     never takes the hot log's writer lock.
//
// # Crashes
//
// Every pass starts from meta's state and the files, so whatever a crash
// (or Close) interrupts, the next pass finishes or undoes:
//
//	between 2 and 3   a copying entry, no object: resumed (PUT, commit)
//	during 3          a copying entry, no object (puts are all or nothing;
//	                  the store aborts multipart uploads): resumed
//	between 3 and 4   a copying entry and its object: resumed (HEAD, commit)
//	between 4 and its manifest  the manifest in the bucket is behind: the
//	                  next expiry pass republishes it (tail sizes of
//	                  segments it does not know come from the old manifest
//	                  or a HEAD)
//	after 6 began     a deleting entry: publish, delete, finish again
//	late PUT of an abandoned upload   an orphan: swept
//
// # Bucket manifest
//
// <KeyPrefix>/<topic>-<topic id>/<partition>/manifest.json (keys are laid
// out by segmentobject/key.go, which cuts <topic> to 218 bytes so that no
// key component passes 255 for any legal name), written with a plain Put
// (atomic on every backend) after every change. Its format and type are
// segmentobject's (segmentobject/doc.go, "Manifest"): offload publishes
// meta's committed manifest (meta.Manifest.Committed: the committed
// segments at or above the remote log start offset, each with its leader
// epochs) under the partition's topic id, adding the one thing meta does
// not keep, each object's tail size: remembered from the upload, else
// taken from the manifest already in the bucket, else from a HEAD of the
// object. A batch job reads the manifest, picks segments by offset or by
// max_timestamp, and needs nothing but bucket credentials.
//
// # Stalls
//
// A segment's upload counts as stalled (Status, strata tier status, the
// strata_offload_stalled_partitions gauge, one log line) once it has
// waited StallAlarm since it could first go, or its PUT has failed
// StallAttempts times across passes, or at the first PUT the store refuses
// in a way no retry cures (objstore.ErrInvalidKey, ENAMETOOLONG,
// ErrBucketNotFound). Uploads are retried all the same; the alarm clears
// when one commits.
//
// # Disk pressure
//
// pressure.go: past DiskHighWaterMark uploaded segments leave the hot disk
// first, oldest first, down to DiskLowWaterMark; if that is not enough,
// DiskPressure is true (and OnDiskPressure called) until usage is under
// DiskLowWaterMark again. Between checks AdmitWrite counts the bytes the
// broker appends against the room under the high-water mark, so a fast
// producer is refused at the mark rather than filling the disk: the space
// above it is what the metadata log and the hot logs' index pages and
// checkpoints on the same disk need while writes are refused. A refused
// write wakes the watch at once.
//
// # Limits
//
// A local segment in which no batch starts at the tiered end (a batch
// holds offsets on both sides of it, and is not a run of emptied batches
// the cleaner joined: the local log diverges from the one the bucket's
// segments came from) can be uploaded neither from there nor
// whole without overlapping a committed segment; the copy task reports
// ErrStraddlesRemote and the stall alarm goes off rather than skip or
// repeat offsets. A committed segment with no timestamp (no
// batch carried one) has no known age, so retention.ms stops at it;
// retention.bytes still applies.
//
// DeleteRecords moves the remote log start offset in meta
// (MoveRemoteLogStart) before the hot log's, then asks for the expiry
// task at once (Manager.NotifyLogStart). The expiry task deletes the
// committed segments wholly below it, republishes the bucket manifest
// and moves a hot log that starts below it up to it (a leader that crashed between the two moves, or took
// over before following); the copy task, when the log start is above the
// tiered end, uploads from the batch that holds it (copy.go uploadStart),
// first moving the remote start up to a hot log start that lies past the
// bucket's end, so the bucket holds no offsets beyond a gap.
//
// # Metrics
//
// MetricNames lists them: uploads (segments, bytes, latency, PUTs per
// segment), failures by step, deletes by reason, orphans, per-partition
// backlog, wait and last upload time, stalled partitions, disk usage and
// pressure.
package offload
