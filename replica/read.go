package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
)

// ReadResult is a partition's answer to one fetch.
type ReadResult struct {
	// Section holds whole batches from the fetch offset; nil when there is
	// nothing to read.
	Section        *hotlog.Section
	HighWatermark  int64
	LogStartOffset int64
}

// Read returns, for a consumer, whole batches from offset, as many as fit
// in maxBytes but at least one, and never a batch at or above the high
// watermark. An offset between the high watermark and the log end reads
// nothing (a new leader's high watermark may trail its log for a moment);
// below the log start or past the log end it is OFFSET_OUT_OF_RANGE.
func (p *Partition) Read(offset int64, maxBytes int) (ReadResult, error) {
	hwm := p.highWatermark.Load()
	// Below the hot log's start is the bucket's to serve (or refuse); the
	// remote log start bounds both, for DeleteRecords moves it first.
	logStart := max(p.log.LogStartOffset(), p.remoteStart())
	r := ReadResult{HighWatermark: hwm, LogStartOffset: logStart}
	if offset < logStart || offset > max(hwm, p.log.LogEndOffset()) {
		return r, &hotlog.OffsetOutOfRangeError{Offset: offset, LogStartOffset: logStart, LogEndOffset: hwm}
	}
	if offset >= hwm {
		return r, nil
	}
	compacted := p.settings.Load().compacted
	for {
		s, err := p.log.Read(offset, maxBytes)
		if err != nil {
			return r, err
		}
		if s.NextOffset > hwm {
			if err := trimToOffset(s, hwm); err != nil {
				s.Release()
				return r, err
			}
		}
		if s.Length == 0 {
			s.Release()
			return r, nil
		}
		// A compacted log holds empty batches where the cleaner removed
		// every record, and a read of one segment may find nothing else.
		// Handed only those, librdkafka reports a message too large to
		// fetch; so, while records lie further on below the high
		// watermark, the read moves on to them, as a Kafka fetch skips
		// the gaps compaction leaves. Clients accept batches that start
		// past the offset asked.
		if compacted && s.NextOffset < hwm {
			empty, err := onlyEmptyBatches(s)
			if err != nil {
				s.Release()
				return r, err
			}
			if empty {
				offset = s.NextOffset
				s.Release()
				continue
			}
		}
		r.Section = s
		return r, nil
	}
}

// onlyEmptyBatches reports whether every batch of s holds no record,
// reading headers until one does.
func onlyEmptyBatches(s *hotlog.Section) (bool, error) {
	position, err := walkHeaders(s, func(h record.Header) bool { return h.NumRecords == 0 })
	return err == nil && position == s.Position+s.Length, err
}

// ReadForFollower answers a follower's fetch at offset: it first records
// that the follower holds everything below offset (which may move the high
// watermark and the ISR), then returns whole batches up to the log end, not
// only the high watermark. Past the log end it is OFFSET_OUT_OF_RANGE, and
// nothing is recorded. Below the local log start it is
// ErrOffsetMovedToTieredStorage when the bucket holds the offset (the
// follower starts at the local log start), else OFFSET_OUT_OF_RANGE. A
// follower out of the ISR whose replica
// leader.replication.throttled.replicas names shares this broker's
// leader.replication.throttled.rate (throttle.go).
func (p *Partition) ReadForFollower(follower int32, offset int64, maxBytes int) (ReadResult, error) {
	r := p.role.Load()
	if !p.leads(r) {
		return ReadResult{HighWatermark: -1, LogStartOffset: -1}, fmt.Errorf("%w: %s-%d is led by broker %d", ErrNotLeader, p.topic, p.index, r.leader)
	}
	logStart, logEnd := p.log.LogStartOffset(), p.log.LogEndOffset()
	if offset > logEnd {
		// A log that runs past the leader's diverges from it: the offset
		// is not the follower's log end, which would count records the
		// leader writes there later as held by the follower.
		return ReadResult{HighWatermark: p.highWatermark.Load(), LogStartOffset: logStart},
			&hotlog.OffsetOutOfRangeError{Offset: offset, LogStartOffset: logStart, LogEndOffset: logEnd}
	}
	p.followerFetched(r, follower, offset)
	res := ReadResult{HighWatermark: p.highWatermark.Load(), LogStartOffset: logStart}
	switch {
	case offset < logStart:
		if start, next, ok := p.RemoteRange(); ok && offset >= start && offset < next {
			return res, fmt.Errorf("%w: %s-%d offset %d is below the local log start %d", ErrOffsetMovedToTieredStorage, p.topic, p.index, offset, logStart)
		}
		return res, &hotlog.OffsetOutOfRangeError{Offset: offset, LogStartOffset: logStart, LogEndOffset: logEnd}
	case offset == logEnd:
		return res, nil
	}
	// A throttled replica out of the ISR gets nothing while the leader's
	// throttle is spent, and asks again.
	throttled := p.settings.Load().leaderThrottled && !r.isrMember(follower)
	if throttled && p.manager.leaderThrottle.Debt(time.Now()) > 0 {
		return res, nil
	}
	s, err := p.log.Read(offset, maxBytes)
	if err != nil {
		return res, err
	}
	if s.Length == 0 {
		s.Release()
		return res, nil
	}
	if throttled {
		p.manager.leaderThrottle.Record(float64(s.Length), time.Now())
		p.manager.metrics.throttledBytes.WithLabelValues("leader").Add(float64(s.Length))
	}
	res.Section = s
	return res, nil
}

// trimToOffset shortens s to the batches below limit, reading only their
// headers. Sections from the log hold whole batches, and the high watermark
// falls between batches, so the cut is at a batch boundary.
func trimToOffset(s *hotlog.Section, limit int64) error {
	position, err := walkHeaders(s, func(h record.Header) bool { return h.BaseOffset < limit })
	if err != nil {
		return err
	}
	s.Length = position - s.Position
	s.NextOffset = limit
	return nil
}

// walkHeaders reads the headers of s's batches in order while more says
// to go on, and returns the position of the batch it stopped at (the
// section's end if none).
func walkHeaders(s *hotlog.Section, more func(record.Header) bool) (int64, error) {
	var header [record.HeaderSize]byte
	position, end := s.Position, s.Position+s.Length
	for position < end {
		if _, err := s.File.ReadAt(header[:], position); err != nil {
			return 0, fmt.Errorf("replica: reading a batch header of %s at %d: %w", s.File.Name(), position, err)
		}
		h, err := record.ParseHeader(header[:])
		if err != nil {
			return 0, fmt.Errorf("replica: batch header of %s at %d: %w", s.File.Name(), position, err)
		}
		if !more(h) {
			break
		}
		position += int64(h.Size())
	}
	return position, nil
}

// LatestEpoch is the leader epoch of the newest entry in the log's epoch
// cache, or -1.
func (p *Partition) LatestEpoch() int32 {
	epochs := p.log.Epochs()
	if len(epochs) == 0 {
		return -1
	}
	return epochs[len(epochs)-1].Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for the partition: the
// largest epoch at or below epoch that it knows, and where that epoch
// ended (hotlog's EndOffsetForEpoch). A tiered partition's epoch cache
// starts at its local log start; the epochs of the offsets below it are
// in its bucket's segments, and answered from those: from the cache
// alone, an epoch older than its first would end at the local start, and
// a returning replica whose log diverged below that start would truncate
// no further than it.
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if _, _, ok := p.RemoteRange(); !ok {
		return p.log.EndOffsetForEpoch(epoch)
	}
	m, _ := p.manager.deps.Meta.State().Manifest(p.topic, p.index)
	var below []hotlog.EpochEntry
	for _, e := range m.Committed().EpochsBelow(p.log.LogStartOffset()) {
		below = append(below, hotlog.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return p.log.EndOffsetForEpochBelow(below, epoch)
}

// EpochAt is the leader epoch that wrote offset, or -1: from the hot log's
// epoch cache, or below its start from the bucket's segments (ListOffsets
// answers the epoch of the earliest offset, which a tiered partition
// serves from there, and a client keeps it to detect truncation, KIP-320).
func (p *Partition) EpochAt(offset int64) int32 {
	if epoch, ok := p.log.EpochForOffset(offset); ok {
		return epoch
	}
	if _, next, ok := p.RemoteRange(); ok && offset < next {
		m, _ := p.manager.deps.Meta.State().Manifest(p.topic, p.index)
		if s, found := m.Find(offset); found {
			epoch := int32(-1)
			for _, e := range s.LeaderEpochs { // growing in offset
				if e.StartOffset <= offset {
					epoch = e.Epoch
				}
			}
			return epoch
		}
	}
	return -1
}

// remoteRange is the part of the log the bucket serves: [start, next), as
// the metadata state at index says. It is replaced whole when the
// partition's committed manifest changes (noteManifest), so requests read
// two offsets, not the manifest.
type remoteRange struct {
	start, next int64
	index       uint64
}

// noteManifest takes the partition's committed remote segments from st,
// unless a newer state's are taken already: the Manager's run loop notes
// each metadata update in turn while a retention pass (CanDelete) notes
// the newest state from offload's goroutine, and an update older than
// that, noted after it, would move the range back (a read between the two
// ends would then find its offset in neither the bucket nor the log).
func (p *Partition) noteManifest(st *meta.State) {
	r := &remoteRange{index: st.Index()}
	if m, found := st.Manifest(p.topic, p.index); found {
		committed := m.Committed()
		r.start, r.next = committed.LogStartOffset, committed.NextOffset()
	}
	for {
		old := p.remote.Load()
		if old != nil && old.index >= r.index {
			return
		}
		if p.remote.CompareAndSwap(old, r) {
			return
		}
	}
}

// RemoteRange is the part of the partition's log the bucket serves:
// [start, next), ok false when it holds none.
func (p *Partition) RemoteRange() (start, next int64, ok bool) {
	r := p.remote.Load()
	if r == nil {
		return 0, 0, false
	}
	return r.start, r.next, r.next > r.start
}

// LogStartOffset is the log start offset clients are told: the remote log
// start while the bucket holds data below the local log start and up to
// it, else the local one, or the remote start if that is higher. A tiered
// partition deletes locally only what the bucket holds, so its bucket
// reaches its local start; one whose topic turned remote.storage.enable
// off (or remote.log.copy.disable on) deletes by total retention, past
// what its bucket holds, and the
// offsets between are in neither: told the remote start, a consumer that
// reset to the earliest offset would fetch into that gap, be told
// OFFSET_OUT_OF_RANGE, and reset to it again. DeleteRecords moves the
// remote start first, and the local one follows it.
func (p *Partition) LogStartOffset() int64 {
	local := p.log.LogStartOffset()
	if start, next, ok := p.RemoteRange(); ok && start < local && next >= local {
		return start
	}
	return max(local, p.remoteStart())
}

// remoteStart is the remote log start offset as the partition last noted
// it: no offset below it is served from anywhere.
func (p *Partition) remoteStart() int64 {
	if r := p.remote.Load(); r != nil {
		return r.start
	}
	return 0
}

// Compacted reports whether the partition's topic is compacted: a read may
// meet batches the cleaner emptied.
func (p *Partition) Compacted() bool { return p.settings.Load().compacted }

// RemotePartition names the partition for remotefetch.
func (p *Partition) RemotePartition() remotefetch.Partition {
	return remotefetch.Partition{Topic: p.topic, TopicID: p.topicID, Index: p.index}
}

// SchemaValidated reports whether produce to the partition is checked
// against the schema registry (confluent.key.schema.validation or
// .value.schema.validation): read from the settings the partition keeps,
// so the produce path looks nothing up when it is not.
func (p *Partition) SchemaValidated() bool { return p.settings.Load().schemaValidated }

// ProduceOptions are the checks a batch produced now gets from the
// topic's settings, with the broker's clock read now if they check
// timestamps.
func (p *Partition) ProduceOptions() record.ProduceOptions {
	return p.settings.Load().produceOptions()
}

// DeleteBefore moves the log start offset up to offset (-1: the high
// watermark) and returns the new log start. Where the bucket may hold the
// partition's data (a tiered partition, or one that was), the remote log
// start moves first, in meta: the bucket's readers stop below it at once,
// remote retention deletes the segments wholly below it, and the local log
// start moves next. A tiered leader that finds its local start below the
// remote one (it crashed between the two, or led later) moves it there
// itself (offload), and followers follow the leader's; an untiered one's
// stays until DeleteRecords is retried, its reads bounded by the remote
// start meanwhile (Read).
func (p *Partition) DeleteBefore(ctx context.Context, offset int64) (int64, error) {
	hwm := p.highWatermark.Load()
	if offset == -1 {
		offset = hwm
	}
	if offset < 0 || offset > hwm {
		return -1, fmt.Errorf("%w: delete before %d, high watermark %d", hotlog.ErrOffsetOutOfRange, offset, hwm)
	}
	// Each start moves on its own: a bucket may end below the hot log's
	// start (a topic that turned tiering off), and a retry after a crash
	// between the two finds the remote one moved already.
	if _, _, remote := p.RemoteRange(); (remote || p.tiered) && offset > p.remoteStart() {
		_, err := p.manager.deps.Meta.Propose(ctx, &meta.MoveRemoteLogStart{
			Topic: p.topic, TopicID: p.topicID, Partition: p.index, LeaderEpoch: p.ledEpoch(), Offset: offset,
		})
		if errors.Is(err, meta.ErrFencedLeaderEpoch) {
			err = fmt.Errorf("%w: %s-%d's leadership moved: %v", ErrNotLeader, p.topic, p.index, err)
		}
		if err != nil {
			return -1, fmt.Errorf("moving the remote log start of %s-%d to %d: %w", p.topic, p.index, offset, err)
		}
		p.noteManifest(p.manager.deps.Meta.State())
		if off := p.manager.deps.Offload; off != nil {
			// Remote retention, and the bucket's manifest, follow now.
			off.NotifyLogStart(p.topic, p.index)
		}
	}
	if offset > p.log.LogStartOffset() {
		deleted, err := p.log.DeleteBefore(offset)
		if err != nil {
			return -1, err
		}
		p.manager.log.Info("deleted records", "topic", p.topic, "partition", p.index, "before", offset, "segments", len(deleted))
	}
	return p.LogStartOffset(), nil
}
