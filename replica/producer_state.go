package replica

import (
	"fmt"
	"math"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// producerBatchesKept is how many recent batches per producer a partition
// remembers, as Kafka does: an idempotent producer has at most five requests
// in flight, so a retry is always one of the last five batches.
const producerBatchesKept = 5

// idempotent reports whether the batch with header h comes from an
// idempotent producer: a producer id of 0 or more, as Kafka's
// hasProducerId; -1 is none, and so is any other negative id, which no
// broker hands out.
func idempotent(h record.Header) bool { return h.ProducerID >= 0 }

// producerBatch is what a partition remembers of one appended idempotent
// batch: enough to recognise a retry and answer it with the original offset.
type producerBatch struct {
	firstSequence int32
	lastSequence  int32
	baseOffset    int64
	timestamp     int64 // the batch's max timestamp, returned for LogAppendTime retries
}

// producerEntry is one producer id's state in one partition.
type producerEntry struct {
	epoch int16
	// batches holds the last producerBatchesKept batches, oldest first.
	batches []producerBatch
	// lastAppendMillis is when the producer last appended, for expiry.
	lastAppendMillis int64
}

func (e *producerEntry) lastSequence() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSequence
}

// producerStates is one partition's idempotent producer state: for each
// producer id, its epoch and its last five batches. It follows Kafka's
// ProducerStateManager rules:
//
//   - an unknown producer id is accepted at any sequence (its state may have
//     expired or been removed with old segments);
//   - a batch whose epoch is older than the producer's is refused with
//     INVALID_PRODUCER_EPOCH;
//   - a batch at a newer epoch must start at sequence 0, and resets the
//     producer's batches;
//   - at the same epoch, a batch whose first and last sequence match one of
//     the last five is a retry, answered with its original base offset and
//     not appended again; any other batch must start right after the last
//     sequence (sequences wrap from MaxInt32 to 0), else
//     OUT_OF_ORDER_SEQUENCE_NUMBER.
//
// It is not safe for concurrent use: the partition's append lock guards it.
type producerStates struct {
	producers map[int64]*producerEntry
}

func newProducerStates() *producerStates {
	return &producerStates{producers: map[int64]*producerEntry{}}
}

// sequenceCheck is the outcome of checking one batch.
type sequenceCheck struct {
	// duplicate is the original batch when the batch is a retry.
	duplicate *producerBatch
}

// check decides whether the batch with header h may be appended. It does not
// change the state: record does that once the append succeeded.
func (s *producerStates) check(h record.Header) (sequenceCheck, error) {
	if !idempotent(h) {
		return sequenceCheck{}, nil
	}
	if h.BaseSequence < 0 {
		return sequenceCheck{}, fmt.Errorf("%w: producer %d sent sequence %d", ErrOutOfOrderSequence, h.ProducerID, h.BaseSequence)
	}
	e, ok := s.producers[h.ProducerID]
	if !ok {
		return sequenceCheck{}, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return sequenceCheck{}, fmt.Errorf("%w: producer %d epoch %d is older than %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return sequenceCheck{}, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, not %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return sequenceCheck{}, nil
	}
	last := h.LastSequence()
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSequence == h.BaseSequence && b.lastSequence == last {
			dup := *b
			return sequenceCheck{duplicate: &dup}, nil
		}
	}
	if !inSequence(e.lastSequence(), h.BaseSequence) {
		return sequenceCheck{}, fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, e.lastSequence())
	}
	return sequenceCheck{}, nil
}

// inSequence reports whether next follows last, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	if last == math.MaxInt32 {
		return next == 0
	}
	return next == last+1
}

// record remembers an appended batch; baseOffset is where it was written.
func (s *producerStates) record(h record.Header, baseOffset, nowMillis int64) {
	if !idempotent(h) {
		return
	}
	e, ok := s.producers[h.ProducerID]
	if !ok || h.ProducerEpoch != e.epoch {
		e = &producerEntry{epoch: h.ProducerEpoch}
		s.producers[h.ProducerID] = e
	}
	if len(e.batches) == producerBatchesKept {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchesKept-1]
	}
	e.batches = append(e.batches, producerBatch{
		firstSequence: h.BaseSequence,
		lastSequence:  h.LastSequence(),
		baseOffset:    baseOffset,
		timestamp:     h.MaxTimestamp,
	})
	e.lastAppendMillis = max(e.lastAppendMillis, nowMillis)
}

// expire forgets producers that have not appended since before cutoff
// (Kafka's producer.id.expiration.ms).
func (s *producerStates) expire(cutoffMillis int64) {
	for id, e := range s.producers {
		if e.lastAppendMillis < cutoffMillis {
			delete(s.producers, id)
		}
	}
}

// loadProducerStates is the producer state of a partition being opened: its
// snapshot and the batch headers after it, or, without a snapshot that
// fits the log, what rebuildProducerStates finds in the log's tail.
// A snapshot file whose newest snapshot is not used is replaced whole by
// the next snapshot, so that none of its slots outlives it.
func (p *Partition) loadProducerStates(log *hotlog.Log, scanBytes int64) (*producerStates, error) {
	valid, file, err := readProducerSnapshotFile(p.dir)
	switch {
	case err != nil:
		p.manager.log.Warn("ignoring the producer state snapshot", "topic", p.topic, "partition", p.index, "error", err)
	case len(valid) > 0 && (valid[0].offset > log.LogEndOffset() || valid[0].offset < log.LogStartOffset()):
		p.manager.log.Info("the producer state snapshot does not fit the log; scanning its tail instead", "topic", p.topic,
			"partition", p.index, "snapshot", valid[0].offset, "log_start", log.LogStartOffset(), "log_end", log.LogEndOffset())
		valid, file.inPlace = nil, false
	}
	p.appendMu.snapshotFile = file
	if len(valid) == 0 {
		return rebuildProducerStates(log, scanBytes)
	}
	return valid[0].states, scanProducerStates(log, valid[0].states, valid[0].offset)
}

// rebuildProducerStates recovers idempotent producer state from the tail of
// the log, for a partition without a usable snapshot: the batch headers of
// the newest segments, at least scanBytes of them when the log holds that
// much (so at most scanBytes plus one segment is read). Producers whose
// last batch is older than that are unknown, and Kafka's rule for unknown
// producers applies to them: their next batch is accepted at any sequence.
func rebuildProducerStates(log *hotlog.Log, scanBytes int64) (*producerStates, error) {
	states := newProducerStates()
	segments := log.Segments()
	start := log.LogEndOffset()
	var covered int64
	for i := len(segments) - 1; i >= 0 && covered < scanBytes; i-- {
		start = segments[i].BaseOffset
		covered += segments[i].Size
	}
	return states, scanProducerStates(log, states, max(start, log.LogStartOffset()))
}

// scanProducerStates records the idempotent batches from offset start to
// the log end into states.
func scanProducerStates(log *hotlog.Log, states *producerStates, start int64) error {
	for offset := start; offset < log.LogEndOffset(); {
		chunk, err := log.ReadBytes(offset, 1<<20)
		if err != nil {
			return fmt.Errorf("replica: rebuilding producer state at offset %d: %w", offset, err)
		}
		if len(chunk) == 0 {
			break
		}
		for len(chunk) > 0 {
			h, err := record.ParseHeader(chunk)
			if err != nil {
				return fmt.Errorf("replica: rebuilding producer state at offset %d: %w", offset, err)
			}
			if idempotent(h) && h.LastOffset() >= offset {
				states.record(h, h.BaseOffset, h.MaxTimestamp)
			}
			offset = h.NextOffset()
			chunk = chunk[h.Size():]
		}
	}
	return nil
}
