package ingest

// Produce: v3-13
//
// Behavior:
//   - Each partition's records must be exactly one batch, as Kafka requires
//     of v3+ (ProduceRequest.validateRecords): a second whole batch is
//     INVALID_RECORD, even a corrupt one (checkOneBatch); a zstd batch
//     before v7 is UNSUPPORTED_COMPRESSION_TYPE, as in Kafka.
//   - The batch is validated in one pass before it is written, as Kafka's
//     LogValidator does (record.ValidateProduced): header, length and
//     CRC-32C (CORRUPT_MESSAGE when cut short or corrupt); then base offset
//     0, no control batch, a sequence with a producer id, the count against
//     the last offset delta, and every record's framing — lengths,
//     attributes, timestamp and offset deltas (offset delta = index), key,
//     value and headers, int32 varints of at most five bytes, exactly the
//     records counted and nothing after them (INVALID_RECORD; v8+ names
//     the record in the error message and in ErrorRecords). The
//     LogAppendTime bit from a producer is INVALID_TIMESTAMP. A compacted topic (cleanup.policy compact) refuses
//     a record without a key, as Kafka does; a CreateTime topic refuses a
//     record whose timestamp is further behind or ahead of the broker's
//     clock than message.timestamp.before.max.ms or .after.max.ms allow
//     (INVALID_TIMESTAMP, the record named); a topic with schema
//     validation on (confluent.value.schema.validation, .key., package
//     registry) refuses a record without the registry's wire format or
//     with a schema id not registered under its subject (INVALID_RECORD,
//     the record named). Compressed records are
//     decompressed streaming, through a 32 KiB window with pooled
//     decoders, and may come to at most 64 MiB (record.MaxDecompressedBytes)
//     or max.message.bytes when larger, else MESSAGE_TOO_LARGE; a zstd
//     frame may declare a window of at most 8 MiB (record.MaxZstdWindow;
//     Kafka's decoder allows 128 MiB). A batch above max.message.bytes is
//     MESSAGE_TOO_LARGE, one above segment.bytes RECORD_LIST_TOO_LARGE (as
//     Kafka's log answers). Nothing of a refused batch is written; other
//     partitions of the request are independent.
//   - Batches are stored byte for byte; only base offset and partition
//     leader epoch are stamped (LogAppendTime topics also get their max
//     timestamp and CRC rewritten, and so does a batch whose max timestamp
//     is not its records' largest, as Kafka's validator sets it).
//   - Idempotent batches are checked per producer id and epoch (see
//     producerStates): a retry is answered with its original offset,
//     OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH as Kafka.
//   - acks=1 answers once the batches are in the leader's log: durable
//     (fsync before ack, shared by concurrent appends) or, for topics with
//     periodic flushing, written. acks=-1 (all) answers once the high
//     watermark has passed them: every ISR member holds them, durably
//     under fsync before ack (each follower fetches again only once its
//     append is durable), in its page cache under periodic flushing.
//     acks=all is refused before anything is written with
//     NOT_ENOUGH_REPLICAS while the ISR is below min.insync.replicas, and
//     answered NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
//     it while the records replicated. A leader change before the ISR has
//     them is NOT_LEADER_OR_FOLLOWER (the records may be truncated; an
//     idempotent retry is answered with the original offset if they
//     survived). The wait is bounded by the request timeout
//     (REQUEST_TIMED_OUT).
//   - A leader takes writes only while it holds its leadership lease (its
//     heartbeats to the metadata leader acknowledged within
//     broker.session.timeout.ms, lease.go); without it, and on a broker that
//     follows the partition, it is NOT_LEADER_OR_FOLLOWER.
//   - acks=0 gets no response; if any partition failed, the connection is
//     closed instead, as Kafka does, so the producer learns of it.
//   - Other acks values are INVALID_REQUIRED_ACKS; a transactional id or
//     transactional batch is TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//     (transactions are not implemented).
//   - While offload reports disk pressure (the hot disk past its high-water
//     mark with nothing uploaded left to delete), every partition is
//     KAFKA_STORAGE_ERROR and nothing is written; writes resume by
//     themselves once usage is back under the low-water mark.
//   - An unknown topic is UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id,
//     v13+); a partition this broker does not lead is NOT_LEADER_OR_FOLLOWER.
//
// Version notes:
//   - v3: record batch v2 only, transactional id. v5: LogStartOffset.
//   - v8: per-partition error message. v9: flexible.
//   - v10-12: no behaviour change here (leader hints on NOT_LEADER are not
//     sent; clients refresh metadata). v13: topics by id.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

func init() { register(3, 13, handleProduce) }

// producePartition is one partition of a produce in progress.
type producePartition struct {
	response *kmsg.ProduceResponseTopicPartition
	target   *replica.Partition
	outcome  replica.AppendOutcome
	wait     replica.AckWait // once registered (waitForAcks)
}

func handleProduce(ctx context.Context, b *Broker, r *request, req *kmsg.ProduceRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	st := b.meta.State()
	var requestErr error
	switch {
	case req.TransactionID != nil:
		requestErr = ErrTransactionsUnsupported
	case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
		requestErr = fmt.Errorf("%w: acks %d", ErrInvalidRequiredAcks, req.Acks)
	}

	partitions := 0
	for _, rt := range req.Topics {
		partitions += len(rt.Partitions)
	}
	jobs := make([]produceJob, 0, partitions)
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		t.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, t)
		rtopic := &resp.Topics[len(resp.Topics)-1]

		name, topicErr := produceTopicName(st, req.Version, rt)
		// A topic named (before v13) is authorized before it is looked
		// up, as Kafka does: a principal that may not write it is told
		// TOPIC_AUTHORIZATION_FAILED whether it exists or not, so the
		// answers do not tell which topics exist.
		if byName := req.Version < 13; byName && !b.authorize(r, acl.OpWrite, acl.Topic, rt.Topic) ||
			!byName && topicErr == nil && !b.authorize(r, acl.OpWrite, acl.Topic, name) {
			topicErr = ErrTopicAuthorization
		}
		if requestErr != nil {
			topicErr = requestErr
		}
		for i, rp := range rt.Partitions {
			p := &rtopic.Partitions[i]
			*p = kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			err := topicErr
			if err == nil && req.Version < 7 {
				err = refuseZstd(rp.Records, req.Version)
			}
			jobs = append(jobs, produceJob{topic: name, err: err, records: rp, response: p})
		}
	}
	appended, failed := appendPartitions(ctx, b, st, jobs, replica.Acks(req.Acks))

	if req.Acks == 0 {
		for _, a := range appended {
			a.target.SyncInBackground()
		}
		if len(failed) > 0 {
			return nil, fmt.Errorf("acks=0 produce failed, closing the connection as Kafka does: %w", errors.Join(failed...))
		}
		return nil, nil
	}
	// The timeout runs from now; the connection's responder waits, so the
	// next produce request on this connection is appended meanwhile.
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	return awaitedReply{reply: replyWith(resp), wait: func() {
		defer cancel()
		waitForAcks(ctx, b, appended)
	}}, nil
}

// produceJob is one partition of a produce request: its records, where
// its answer goes, and the error its topic or the request already has.
type produceJob struct {
	topic    string
	err      error
	records  kmsg.ProduceRequestTopicPartition
	response *kmsg.ProduceResponseTopicPartition
}

// appendWorkerPartitions is the fewest partitions a request must have per
// goroutine that appends them: below it a request is appended on the
// connection's goroutine alone.
const appendWorkerPartitions = 64

// appendPartitions checks and appends every job and fills in its answer.
// A request of many partitions is spread over up to GOMAXPROCS goroutines:
// at 4,000 partitions and fifty thousand batches a second a request's
// appends (a pwrite each) kept the connection's goroutine busy most of the
// time, and its queue was the latency (docs/bench.md). A partition goes to
// one goroutine by its number, so one named twice is appended in the
// request's order.
func appendPartitions(ctx context.Context, b *Broker, st *meta.State, jobs []produceJob, acks replica.Acks) (appended []producePartition, failed []error) {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(jobs)/appendWorkerPartitions))
	// Each job's place is its own, whichever goroutine fills it: one
	// allocation a request, where a slice per goroutine grew and was then
	// copied into one.
	results := make([]producePartition, len(jobs))
	failedBy := make([][]error, workers)
	run := func(w int) {
		for i, job := range jobs {
			if int(uint32(job.records.Partition))%workers != w {
				continue
			}
			err := job.err
			var target *replica.Partition
			var outcome replica.AppendOutcome
			if err == nil {
				target, outcome, err = producePartitionRecords(ctx, b, st, job.topic, job.records, acks)
			}
			p := job.response
			if err != nil {
				setProduceError(b, p, err)
				failedBy[w] = append(failedBy[w], err)
				continue
			}
			p.BaseOffset, p.LogAppendTime = outcome.BaseOffset, outcome.LogAppendTime
			p.LogStartOffset = target.LogStartOffset()
			results[i] = producePartition{response: p, target: target, outcome: outcome}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
	appended = slices.DeleteFunc(results, func(a producePartition) bool { return a.target == nil })
	for _, a := range appended {
		a.target.WakeFollowers()
	}
	return appended, slices.Concat(failedBy...)
}

// produceTopicName resolves a produce topic, by name or (v13+) by id. The
// internal topic is refused as Kafka refuses it.
func produceTopicName(st *meta.State, version int16, rt kmsg.ProduceRequestTopic) (string, error) {
	if isInternalTopic(rt.Topic) || (version >= 13 && rt.TopicID == consumerOffsetsTopicID(st.ClusterID())) {
		return "", fmt.Errorf("%w: Cannot append to internal topic %s", ErrInternalTopic, meta.ConsumerOffsetsTopic)
	}
	if version >= 13 {
		t, err := topicByID(st, rt.TopicID)
		return t.Name, err
	}
	t, err := topicByName(st, rt.Topic)
	return t.Name, err
}

// producePartitionRecords checks and appends one partition's records.
func producePartitionRecords(ctx context.Context, b *Broker, st *meta.State, topic string, rp kmsg.ProduceRequestTopicPartition, acks replica.Acks) (*replica.Partition, replica.AppendOutcome, error) {
	target, err := b.partitions.Leader(st, topic, rp.Partition)
	if err != nil {
		return nil, replica.AppendOutcome{}, err
	}
	if len(rp.Records) == 0 {
		return nil, replica.AppendOutcome{}, fmt.Errorf("%w: no record batches", record.ErrInvalid)
	}
	if err := checkOneBatch(rp.Records); err != nil {
		return nil, replica.AppendOutcome{}, err
	}
	if !b.admitWrite(len(rp.Records)) {
		return nil, replica.AppendOutcome{}, ErrDiskFull
	}
	opts := target.ProduceOptions()
	batch, err := record.ValidateProduced(rp.Records, opts)
	if err != nil {
		return nil, replica.AppendOutcome{}, err
	}
	if err := b.checkSchemas(ctx, st, target, topic, batch, opts.MaxDecompressedBytes); err != nil {
		return nil, replica.AppendOutcome{}, err
	}
	outcome, err := target.Append([]record.Batch{batch}, acks)
	return target, outcome, err
}

// checkSchemas applies the topic's schema validation (confluent.*.schema.validation)
// to a batch that passed ValidateProduced, when the partition has it on.
func (b *Broker) checkSchemas(ctx context.Context, st *meta.State, target *replica.Partition, topic string, batch record.Batch, decompressLimit int) error {
	if !target.SchemaValidated() {
		return nil
	}
	if b.schemas == nil {
		return record.NewRecordError(0, "schema validation is on for the topic but this broker has no schema registry")
	}
	t, ok := st.Topic(topic)
	if !ok {
		return nil
	}
	return b.schemas.CheckBatch(ctx, st, t, batch, decompressLimit)
}

// refuseZstd refuses a zstd batch in a Produce request of version
// (before v7), as Kafka's ProduceRequest.validateRecords does: the
// client negotiated a version whose consumers need not read zstd.
func refuseZstd(records []byte, version int16) error {
	if h, err := record.ParseHeader(records); err == nil && h.Attributes.Compression() == record.CodecZstd {
		return fmt.Errorf("%w (this request is v%d)", ErrZstdBeforeV7, version)
	}
	return nil
}

// checkOneBatch refuses records in which a second whole batch follows the
// first, as Kafka's ProduceRequest.validateRecords does before anything
// else looks at them: its batch iterator finds the second batch by its
// length and magic alone, so two batches are INVALID_RECORD even when the
// second is corrupt, and no CRC is computed for records that are refused.
// Anything else is left to record.ValidateProduced, which says what is
// wrong: a first batch that is unreadable or cut short, or trailing bytes
// that are not a whole batch (CORRUPT_MESSAGE; Kafka's log would drop those
// silently).
func checkOneBatch(records []byte) error {
	first, err := record.ParseHeader(records)
	if err != nil || first.Size() >= len(records) {
		return nil
	}
	rest := records[first.Size():]
	if second, err := record.ParseHeader(rest); err != nil || second.Size() > len(rest) {
		return nil
	}
	return fmt.Errorf("%w: a batch of %d bytes follows the first", ErrMultipleBatches, len(rest))
}

// waitForAcks waits until every appended partition may be acknowledged or
// ctx (the request's timeout) ends. Every partition's wait is registered
// first, which starts its flush round, and then they are waited for in
// turn on this goroutine: the request is answered when the last is done
// either way, and a goroutine per partition, at 512 partitions a request,
// made the end of every disk round wake 512 goroutines (docs/bench.md).
func waitForAcks(ctx context.Context, b *Broker, appended []producePartition) {
	for i := range appended {
		appended[i].wait = appended[i].outcome.Expect()
	}
	for _, a := range appended {
		if err := a.wait.Wait(ctx); err != nil {
			setProduceError(b, a.response, err)
		}
	}
}

func setProduceError(b *Broker, p *kmsg.ProduceResponseTopicPartition, err error) {
	p.ErrorCode = errorCode(err)
	p.ErrorMessage = errorMessage(err)
	var bad *record.RecordError
	if errors.As(err, &bad) {
		p.ErrorRecords = []kmsg.ProduceResponseTopicPartitionErrorRecord{{RelativeOffset: int32(bad.Index), ErrorMessage: &bad.Reason}}
	}
	p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
	b.metrics.partitionErrors.WithLabelValues("Produce", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
}
