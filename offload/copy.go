package offload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// The copy task: steps 1 to 4 of the upload protocol (doc.go), then the
// bucket manifest. One pass at a time per partition, segments in offset
// order, so the committed segments stay contiguous.

// step names a point of the protocol after which a test may stop a pass,
// as a crash would (Manager.crashAt).
type step int

const (
	stepCopyBegun       step = iota + 1 // BeginSegmentCopy committed (2)
	stepObjectPut                       // the object is in the store (3)
	stepCopyCommitted                   // CommitSegmentCopy committed (4)
	stepCopyPublished                   // the bucket manifest names the segment
	stepDeleteBegun                     // BeginSegmentDelete committed (6)
	stepDeletePublished                 // the bucket manifest no longer names it
	stepObjectDeleted                   // the object is gone
	stepCount           = stepObjectDeleted
)

var stepNames = [...]string{
	stepCopyBegun: "copy begun", stepObjectPut: "object put", stepCopyCommitted: "copy committed",
	stepCopyPublished: "copy published", stepDeleteBegun: "delete begun",
	stepDeletePublished: "delete published", stepObjectDeleted: "object deleted",
	stepReplaceBegun: "replace begun", stepReplacePut: "replacement put", stepReplaceCommitted: "replace committed",
}

func (s step) String() string { return stepNames[s] }

// reached reports a step done, giving a test the chance to stop the pass.
func (m *Manager) reached(s step) error {
	if m.crashAt == nil {
		return nil
	}
	return m.crashAt(s)
}

// copyPass uploads up to limit segments of p (all that may be uploaded, if
// limit < 0) and returns how many it committed.
func (m *Manager) copyPass(ctx context.Context, p *partition, limit int) (int, error) {
	p.copyMu.Lock()
	defer p.copyMu.Unlock()
	uploaded := 0
	var err error
	for limit < 0 || uploaded < limit {
		var done bool
		done, err = m.copyNext(ctx, p)
		if done { // committed, even if publishing the manifest then failed
			uploaded++
		}
		if err != nil || !done {
			break
		}
	}
	p.recordError("copy", err, m.clock.Now())
	return uploaded, err
}

// tieringEnabled reports whether new segments of the topic go to the
// bucket (remote.storage.enable, and not remote.log.copy.disable).
func tieringEnabled(t meta.Topic) bool {
	enabled, _ := t.Config("remote.storage.enable")
	return enabled == "true" && !meta.CopyDisabled(t.Configs)
}

// copyNext uploads the next segment of p, if one may go, and reports
// whether it committed one: from the tiered end on, when the segment
// starts below it (segment.go). On its way it deals with copying entries
// left by earlier passes, crashed processes or former leaders: the one
// that spans exactly the offsets to upload next is resumed under its id
// and key, if its size and epochs match too (upload); any other can never
// be finished (this pass is the only one that creates copying entries for
// the partition, and a former leader's commands are fenced), so it is
// abandoned at once: marked deleting, for the expiry task to delete its
// object.
func (m *Manager) copyNext(ctx context.Context, p *partition) (bool, error) {
	// The hot log's start before meta's state: DeleteRecords moves meta's
	// first, so a start read here is never ahead of the state's.
	localStart := p.Log.LogStartOffset()
	st := m.meta.State()
	topic, ok := st.Topic(p.Topic)
	if !ok || topic.ID != p.TopicID || !tieringEnabled(topic) {
		m.noteWaiting(p, hotlog.SegmentInfo{}, false)
		return false, nil
	}
	man, _ := st.Manifest(p.Topic, p.Partition)
	start, atLogStart := uploadStart(man, localStart)
	next, found := nextToUpload(p.Log.Segments(), start)
	eligible := found && next.NextOffset <= p.HighWatermark() // step 1
	m.noteWaiting(p, next, eligible)
	from := max(next.BaseOffset, start)
	var resume *meta.RemoteSegment
	for _, s := range man.Segments {
		if s.State != meta.SegmentCopying || len(s.Replaces) > 0 { // recompaction's (recompact.go)
			continue
		}
		// The part's base is from, or below it when a log start inside a
		// batch keeps that batch; upload checks it against the segment.
		if eligible && resume == nil && s.BaseOffset >= next.BaseOffset && s.BaseOffset <= from && s.EndOffset == next.NextOffset-1 {
			resume = &s
			continue
		}
		if err := m.abandon(ctx, p, s); err != nil {
			return false, err
		}
	}
	if !eligible {
		return false, nil
	}
	if atLogStart && man.RemoteLogStartOffset < start {
		// The hot log deleted past the bucket's end (DeleteRecords on an
		// untiered topic, or local retention while tiering was off): the
		// bucket's data below is beyond a gap no reader may cross, so the
		// remote log start moves up first and retention deletes it.
		m.logger.Info("offload: moving the remote log start to the hot log's start, past a gap", "topic", p.Topic, "partition", p.Partition,
			"tiered_end", man.HighestTieredOffset()+1, "log_start", start)
		if err := m.moveRemoteLogStart(ctx, p, start); err != nil {
			return false, err
		}
	}
	return m.upload(ctx, p, next, from, atLogStart, max(man.RemoteLogStartOffset, start), topicLong(topic, "index.interval.bytes"), resume)
}

// moveRemoteLogStart proposes MoveRemoteLogStart to offset for p.
func (m *Manager) moveRemoteLogStart(ctx context.Context, p *partition, offset int64) error {
	err := m.propose(ctx, meta.MoveRemoteLogStart{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(), Offset: offset,
	})
	if err != nil {
		return fmt.Errorf("move the remote log start to %d: %w", offset, err)
	}
	return nil
}

// uploadStart returns the offset the next upload starts at: the tiered
// end (the last committed segment's end, which the log has a batch
// boundary at, or the inside of a run the cleaner emptied); or, when the
// log start is above it (meta's, which DeleteRecords moves, or the hot
// log's), that log start, which may be inside a batch: atLogStart says
// so, and the part then starts at the batch that holds it. A start that
// remote retention set (every committed segment expired) is a former
// leader's batch boundary, and from a log that diverged from that
// leader's, the part then starts at the batch across it: harmless, as
// nothing below the start is read and no committed segment remains to
// overlap.
func uploadStart(man meta.Manifest, localStart int64) (start int64, atLogStart bool) {
	end := man.HighestTieredOffset() + 1
	if logStart := max(man.RemoteLogStartOffset, localStart); logStart > end {
		return logStart, true
	}
	return end, false
}

// nextToUpload returns the first sealed segment holding offsets at or
// above end.
func nextToUpload(segments []hotlog.SegmentInfo, end int64) (hotlog.SegmentInfo, bool) {
	for _, s := range segments {
		if s.Sealed && s.NextOffset > end {
			return s, true
		}
	}
	return hotlog.SegmentInfo{}, false
}

// upload takes one sealed segment, from offset from on (openSegment),
// through steps 2 to 4 and publishes the bucket manifest. resume, when
// set, is a copying entry of the same offsets to finish instead of
// starting a new one. logStart is the remote log start the part must not
// end below.
func (m *Manager) upload(ctx context.Context, p *partition, info hotlog.SegmentInfo, from int64, atLogStart bool, logStart, indexInterval int64, resume *meta.RemoteSegment) (bool, error) {
	seg, err := openSegment(p.Log.Dir(), info, p.Log.Epochs(), from, atLogStart, indexInterval)
	if errors.Is(err, errNotReady) {
		// Normally a matter of milliseconds after the roll; past the stall
		// alarm the files are damaged, and the pass says so.
		if p.waited(m.clock.Now()) < m.cfg.StallAlarm {
			m.logger.Debug("offload: segment not sealed on disk yet", "topic", p.Topic, "partition", p.Partition, "segment", info.BaseOffset, "err", err)
			return false, nil
		}
		return false, err
	}
	if err != nil {
		m.metrics.failures.WithLabelValues("read").Inc()
		return false, fmt.Errorf("open segment %d: %w", info.BaseOffset, err)
	}
	defer seg.close()
	src := seg.source()
	if resume != nil && (resume.BaseOffset != src.BaseOffset || resume.SizeBytes != src.LogSize || !slices.Equal(resume.LeaderEpochs, src.Epochs)) {
		if err := m.abandon(ctx, p, *resume); err != nil {
			return false, err
		}
		resume = nil
	}
	switch {
	case src.BaseOffset != info.BaseOffset && atLogStart:
		m.logger.Info("offload: uploading a segment from the log start", "topic", p.Topic,
			"partition", p.Partition, "segment", info.BaseOffset, "log_start", from, "from", src.BaseOffset, "bytes_skipped", info.Size-src.LogSize)
	case src.BaseOffset != info.BaseOffset:
		m.logger.Info("offload: uploading a segment from the tiered end, where the former leader's ended", "topic", p.Topic,
			"partition", p.Partition, "segment", info.BaseOffset, "from", src.BaseOffset, "bytes_skipped", info.Size-src.LogSize)
	}
	start := m.clock.Now()
	id, key := uuid.New(), ""
	if resume != nil {
		id, key = resume.ID, resume.ObjectKey
		m.logger.Info("offload: resuming upload", "topic", p.Topic, "partition", p.Partition, "segment", src.BaseOffset, "key", key)
	} else {
		if src.BaseOffset < logStart {
			// The part keeps a batch across the log start. A metadata node
			// on a release before MoveRemoteLogStart refuses a segment
			// that starts below it, where this release takes it: it
			// stops at this command instead (it does not know it), which
			// changes nothing here, rather than disagree with the others.
			if err := m.moveRemoteLogStart(ctx, p, logStart); err != nil {
				return false, err
			}
		}
		key = segmentobject.SegmentKey(p.prefix, src.BaseOffset, id)
		err := m.propose(ctx, meta.BeginSegmentCopy{
			Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(),
			SegmentID: id, BaseOffset: src.BaseOffset, EndOffset: src.NextOffset - 1,
			MaxTimestamp: src.MaxTimestamp, SizeBytes: src.LogSize, LeaderEpochs: src.Epochs, ObjectKey: key,
		})
		if err != nil {
			m.metrics.failures.WithLabelValues("begin").Inc()
			return false, fmt.Errorf("begin copy of segment %d: %w", src.BaseOffset, err)
		}
		if err := m.reached(stepCopyBegun); err != nil {
			return false, err
		}
	}
	size := src.ObjectSize()
	if err := m.putSegment(ctx, p, key, seg, resume != nil); err != nil {
		return false, fmt.Errorf("put segment %d as %s: %w", src.BaseOffset, key, err)
	}
	if err := m.reached(stepObjectPut); err != nil {
		return false, err
	}
	err = m.commit(ctx, p, id, meta.CommitSegmentCopy{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch(), SegmentID: id,
	})
	if err != nil {
		m.metrics.failures.WithLabelValues("commit").Inc()
		return false, fmt.Errorf("commit copy of segment %d: %w", src.BaseOffset, err)
	}
	now := m.clock.Now()
	m.metrics.uploadedSegments.Inc()
	m.metrics.uploadedBytes.Add(float64(size))
	m.metrics.uploadDuration.Observe(now.Sub(start).Seconds())
	if puts := p.committed(now); puts > 0 { // 0: an earlier process stored it
		m.metrics.putsPerSegment.Observe(float64(puts))
	}
	p.publisher.noteTail(id, size-src.LogSize)
	m.logger.Info("offload: segment uploaded", "topic", p.Topic, "partition", p.Partition,
		"base_offset", src.BaseOffset, "end_offset", src.NextOffset-1, "bytes", size, "key", key, "duration", now.Sub(start))
	if err := m.reached(stepCopyCommitted); err != nil {
		return true, err
	}
	if err := m.publish(ctx, p, false); err != nil {
		// The segment is committed: the uploads go on, and the expiry
		// pass, asked to run now, publishes again.
		m.logger.Warn("offload: publishing the bucket manifest after an upload failed; the expiry pass retries it",
			"topic", p.Topic, "partition", p.Partition, "base_offset", src.BaseOffset, "err", err)
		m.requestExpiry(p)
	}
	return true, m.reached(stepCopyPublished)
}

// putSegment stores the segment's object under key (step 3), retrying
// failed attempts. A resumed upload first asks whether an earlier attempt
// already stored the whole object (a crash between steps 3 and 4): puts are
// all or nothing, and the key names this segment alone, so an object of
// the right size there is this segment's.
func (m *Manager) putSegment(ctx context.Context, p *partition, key string, seg *localSegment, resumed bool) error {
	size := seg.source().ObjectSize()
	if resumed {
		var stored int64 = -1
		err := m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
			info, err := m.store.Head(ctx, key)
			stored = info.Size
			return err
		})
		if err == nil && stored == size {
			return nil
		}
	}
	timeout := m.cfg.AttemptTimeout + time.Duration(float64(size)/float64(m.cfg.MinUploadRate)*float64(time.Second))
	_, err := m.retry(ctx, timeout, func(ctx context.Context) error {
		p.putAttempted()
		return m.putObject(ctx, key, seg.source())
	}, func(attempt int, err error) {
		p.putFailed(err)
		m.metrics.failures.WithLabelValues("put").Inc()
		m.logger.Warn("offload: segment put failed", "topic", p.Topic, "partition", p.Partition,
			"segment", seg.info.BaseOffset, "key", key, "attempt", attempt, "err", err)
		m.checkStall(p)
	})
	return err
}

// putObject streams one segment object into one PUT: the store reads
// segmentobject's Reader, which reads the log (at the pace, pace.go)
// straight into the store's buffer, hashing it on the way, so the log is
// read once and never held whole in memory (the store holds at most its
// multipart buffers).
func (m *Manager) putObject(ctx context.Context, key string, src segmentobject.Source) error {
	if m.pace != nil {
		src.Log = pacedReader{ctx: ctx, r: src.Log, pace: m.pace, repace: m.repace}
	}
	r, err := segmentobject.NewReader(src)
	if err != nil {
		return err
	}
	return m.store.Put(ctx, key, r, src.ObjectSize())
}

// propose sends one manifest command with the attempt timeout. Propose
// itself retries while no leader is known; a refused precondition or an
// unknown outcome ends the pass, and the next pass reads the state to see
// where things stand.
func (m *Manager) propose(ctx context.Context, cmd meta.Command) error {
	return m.attempt(ctx, m.cfg.AttemptTimeout, func(ctx context.Context) error {
		_, err := m.meta.Propose(ctx, cmd)
		return err
	})
}

// unsettledCommit is a commit of a segment whose object is whole, proposed
// without learning whether it was applied.
type unsettledCommit struct {
	tp  topicPartition
	cmd meta.Command
}

// commit proposes cmd, the commit of segment id of p, whose object is
// whole. Where the pass does not learn the outcome (a timeout, the
// metadata leader lost: the command may still be applied, after a later
// pass read the state), the segment is remembered as unsettled, and
// abandon commits it again rather than abandon it.
func (m *Manager) commit(ctx context.Context, p *partition, id uuid.UUID, cmd meta.Command) error {
	err := m.propose(ctx, cmd)
	m.mu.Lock()
	if err != nil && !refused(err) {
		m.mu.unsettled[id] = unsettledCommit{tp: p.tp, cmd: cmd}
	} else {
		delete(m.mu.unsettled, id)
	}
	m.mu.Unlock()
	return err
}

// refused reports whether err is meta's refusal of a manifest command
// for the state it met: the command was not applied and, the states it
// checks never coming back, never will be.
func refused(err error) bool {
	for _, r := range []error{meta.ErrSegmentState, meta.ErrSegmentOverlap, meta.ErrInvalidSegment, meta.ErrUnknownSegment,
		meta.ErrFencedLeaderEpoch, meta.ErrUnknownTopic, meta.ErrTopicIDMismatch, meta.ErrUnknownPartition} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// errCommittedMeanwhile ends a pass that found a segment it was to abandon
// committed by a commit that had not settled: the pass's state is older
// than meta's, and the next pass reads it again.
var errCommittedMeanwhile = errors.New("offload: an unsettled commit of a segment being abandoned was applied; the next pass reads the state again")

// settle forgets p's unsettled commits whose segments man, p's manifest,
// shows settled: committed, deleting or gone.
func (m *Manager) settle(p *partition, man meta.Manifest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, u := range m.mu.unsettled {
		if u.tp != p.tp {
			continue
		}
		if i := slices.IndexFunc(man.Segments, func(s meta.RemoteSegment) bool { return s.ID == id }); i < 0 || man.Segments[i].State != meta.SegmentCopying {
			delete(m.mu.unsettled, id)
		}
	}
}

// abandon marks a copying entry that cannot be finished as deleting; the
// expiry task deletes its object and drops it. An entry whose commit a
// pass proposed without learning the outcome is committed again instead
// (its object is whole): that commit could still be applied after this
// pass's state read, and BeginSegmentDelete of a committed segment is
// retention's, which moves the remote log start past it, giving up every
// offset up to its end. A commit refused for good lets it be abandoned.
func (m *Manager) abandon(ctx context.Context, p *partition, s meta.RemoteSegment) error {
	m.mu.Lock()
	u, ok := m.mu.unsettled[s.ID]
	m.mu.Unlock()
	if ok {
		err := m.commit(ctx, p, s.ID, u.cmd)
		if err == nil {
			m.logger.Info("offload: an upload thought unfinished was committed", "topic", p.Topic, "partition", p.Partition,
				"base_offset", s.BaseOffset, "end_offset", s.EndOffset, "key", s.ObjectKey)
			return errCommittedMeanwhile
		}
		if !refused(err) {
			return fmt.Errorf("committing again the upload of segment %d (%s), whose commit did not settle: %w", s.BaseOffset, s.ID, err)
		}
	}
	m.logger.Info("offload: abandoning unfinished upload", "topic", p.Topic, "partition", p.Partition,
		"base_offset", s.BaseOffset, "end_offset", s.EndOffset, "key", s.ObjectKey)
	if err := m.beginDelete(ctx, p, s, "abandoned"); err != nil {
		return err
	}
	m.requestExpiry(p)
	return nil
}

// requestExpiry asks for p's expiry pass to run soon.
func (m *Manager) requestExpiry(p *partition) {
	m.mu.Lock()
	p.expiry.requestLocked(m.clock.Now())
	m.mu.Unlock()
	m.signal()
}

// noteWaiting records the segment that waits for upload next (eligible),
// or that none does, and raises the stall alarm when one waits too long.
func (m *Manager) noteWaiting(p *partition, next hotlog.SegmentInfo, eligible bool) {
	now := m.clock.Now()
	p.status.mu.Lock()
	switch {
	case !eligible:
		p.status.waitingSince = time.Time{}
		p.status.resetAttemptsLocked()
	case p.status.waitingSince.IsZero() || p.status.waitingBase != next.BaseOffset:
		p.status.waitingBase, p.status.waitingSince = next.BaseOffset, now
		p.status.resetAttemptsLocked()
	}
	p.status.mu.Unlock()
	m.checkStall(p)
}

// checkStall logs, once per segment, an upload that counts as stalled
// (partitionStatus.stallLocked).
func (m *Manager) checkStall(p *partition) {
	now := m.clock.Now()
	p.status.mu.Lock()
	stalled, reason := p.status.stallLocked(now, &m.cfg)
	alarm := stalled && !p.status.alarmed
	if alarm {
		p.status.alarmed = true
	}
	base, since, lastErr := p.status.waitingBase, p.status.waitingSince, p.status.lastError
	p.status.mu.Unlock()
	if alarm {
		m.logger.Warn("offload: upload stalled", "topic", p.Topic, "partition", p.Partition,
			"segment", base, "reason", reason, "waiting", now.Sub(since), "last_error", lastErr)
	}
}

// waited is how long the segment waiting for upload has waited.
func (p *partition) waited(now time.Time) time.Duration {
	p.status.mu.Lock()
	defer p.status.mu.Unlock()
	if p.status.waitingSince.IsZero() {
		return 0
	}
	return now.Sub(p.status.waitingSince)
}

// putAttempted counts a PUT attempt of the segment waiting for upload.
func (p *partition) putAttempted() {
	p.status.mu.Lock()
	p.status.puts++
	p.status.mu.Unlock()
}

// putFailed counts a failed PUT attempt of the segment waiting for upload,
// and whether a retry could cure it.
func (p *partition) putFailed(err error) {
	p.status.mu.Lock()
	p.status.failedPuts++
	p.status.refused = permanent(err)
	p.status.mu.Unlock()
}

// resetAttemptsLocked starts counting attempts afresh, for a new waiting
// segment or none. Lock should be held.
func (s *partitionStatus) resetAttemptsLocked() {
	s.alarmed, s.puts, s.failedPuts, s.refused = false, 0, 0, false
}

// committed records an upload committed at now and returns the PUT
// attempts it took, across passes.
func (p *partition) committed(now time.Time) int {
	p.status.mu.Lock()
	defer p.status.mu.Unlock()
	puts := p.status.puts
	p.status.lastUpload = now
	p.status.waitingSince = time.Time{}
	p.status.resetAttemptsLocked()
	return puts
}
