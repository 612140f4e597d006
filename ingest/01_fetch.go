package ingest

// Fetch: v4-17
//
// Behavior:
//   - Records come from the partition's segment files straight to the socket
//     (see fetchReply and responseWriter): whole batches, starting with the
//     one holding the fetch offset, never one at or above the high
//     watermark.
//   - Each partition gets at most its PartitionMaxBytes, the response at most
//     MaxBytes (v3+) and the broker's fetch.max.bytes, except that the first
//     partition with data returns at least one whole batch however large
//     (KIP-74).
//   - Long poll: when fewer than MinBytes are readable and MaxWaitMillis is
//     positive, the fetch registers a fetchWatch with each partition and
//     sleeps until enough bytes are appended and durable, the wait ends, a
//     partition changes (deleted, no longer led), or the connection stops
//     reading (the peer closed it, broke the protocol, or the broker is
//     shutting down); then it reads again. Nothing polls.
//   - Tiered storage: an offset below the partition's local log start is
//     read from the bucket (remotefetch), all such partitions of one fetch
//     in parallel and bounded by remote.fetch.max.wait.ms; their bytes are
//     written from memory, local ones keep the sendfile path. Below the
//     remote log start it is OFFSET_OUT_OF_RANGE; a remote read that does
//     not finish in time answers the partition empty (the client fetches
//     again); a bucket failure is KAFKA_STORAGE_ERROR. LogStartOffset is
//     the remote log start while the bucket holds data below the local
//     start and up to it (replica's LogStartOffset). A fetch that read
//     from the bucket is answered without a long poll.
//   - Fetch sessions (KIP-227) are declined: every response is a full one
//     with session id 0. As in Kafka's FetchManager, epoch 0 (new session)
//     and -1 (no session) are full fetches whatever session id they name
//     (Kafka would close that session); any other epoch continues a
//     session, which is FETCH_SESSION_ID_NOT_FOUND here, as none exists
//     (session id 0 included), answered at once with no partitions.
//     Clients then send full fetches.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id,
//     v13+), NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE below the log start
//     or above the high watermark, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH
//     when the CurrentLeaderEpoch (v9+) is older or newer than ours.
//   - read_committed reads up to the last stable offset, which is the high
//     watermark: there are no transactions, so no aborted ones to list.
//   - __consumer_offsets reads as an empty log on every broker
//     (internal_topic.go): no records, high watermark 0, OFFSET_OUT_OF_RANGE
//     past 0; a fetch of it alone still waits MaxWaitMillis.
//
// Version notes:
//   - v4: isolation level, last stable offset. v5: log start offset.
//   - v7: sessions (declined). v9: current leader epoch. v11: rack (no
//     preferred read replica is chosen). v12: flexible, diverging epoch tags
//     (for followers; not sent). v13: topic ids. v15-17: replica state and
//     directory ids, for followers only.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/replica"
)

func init() { register(4, 17, handleFetch) }

func handleFetch(ctx context.Context, b *Broker, r *request, req *kmsg.FetchRequest) (reply, error) {
	if err := checkFetchSession(req); err != nil {
		return &fetchReply{version: req.Version, errorCode: errorCode(err)}, nil
	}
	follower := fetchReplicaID(req) >= 0
	// Over consumer_byte_rate already: an empty answer, as Kafka gives (the
	// connection charges the bytes of the others, conn.chargeQuotas).
	if st := b.meta.State(); !follower && st.HasClientQuotas() {
		if owed := b.quotas.owed(st, meta.ConsumerByteRate, r.quotaUser(), r.header.clientID); owed > 0 {
			return &fetchReply{version: req.Version}, nil
		}
	}
	return b.longPollFetch(ctx, r, req, follower), nil
}

// longPollFetch reads req and, when there is less than MinBytes and the
// request may wait, waits for data up to MaxWaitMillis and reads again.
//
// As Kafka's, the wait is for at most MinBytes or the response's byte
// budget, whichever is less (a budget below MinBytes would otherwise wait
// every time). A read that left readable data behind (the next segment, a
// batch past the budget) is answered at once: Kafka's DelayedFetch does so
// for a read in an older segment than the high watermark's, and counts
// the rest of what is readable; here no append would announce that data,
// and a consumer catching up stalled a whole max wait at every segment
// boundary. A response is then sent below MinBytes with more readable,
// where Kafka's might wait for it.
func (b *Broker) longPollFetch(ctx context.Context, r *request, req *kmsg.FetchRequest, follower bool) *fetchReply {
	first := b.readFetch(ctx, r, req)
	minBytes := min(int64(req.MinBytes), first.maxBytes)
	if first.bytes >= minBytes || first.more || req.MaxWaitMillis <= 0 || first.failed || (len(first.watched) == 0 && !first.internal) {
		return first.reply
	}
	first.reply.release()

	watch := replica.NewWatch(minBytes - first.bytes)
	for p := range first.watched {
		p.Watch(watch, follower)
	}
	// Data that arrived between the read and the registration would not
	// wake the watch; look before sleeping.
	moved := false
	for p, end := range first.watched {
		if watchedEnd(p, follower) != end {
			moved = true
		}
	}
	timedOut := false
	if !moved {
		waitStart := time.Now()
		timer := time.NewTimer(msDuration(req.MaxWaitMillis))
		select {
		case <-watch.Ready:
		case <-timer.C:
			timedOut = true
		case <-r.readerDone:
		case <-ctx.Done():
		}
		timer.Stop()
		r.waited = time.Since(waitStart)
	}
	for p := range first.watched {
		p.Unwatch(watch, follower)
	}
	second := b.readFetch(ctx, r, req)
	if timedOut && second.bytes >= minBytes {
		fetcher := "consumer"
		if follower {
			fetcher = "follower"
		}
		b.metrics.fetchWakesMissed.WithLabelValues(fetcher).Inc()
	}
	return second.reply
}

// fetchReplicaID is the broker id of a follower's fetch, or -1 for a
// consumer's: ReplicaID before v15, ReplicaState from v15 (KIP-903).
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// watchedEnd is what a waiting fetch reads up to: the log end for a
// follower, the high watermark for a consumer.
func watchedEnd(p *replica.Partition, follower bool) int64 {
	if follower {
		return p.Log().LogEndOffset()
	}
	return p.HighWatermark()
}

// Fetch session epochs (KIP-227) with a meaning of their own: a request
// at either is a full fetch.
const (
	// fetchSessionInitialEpoch asks for a new session.
	fetchSessionInitialEpoch = 0
	// fetchSessionFinalEpoch asks for no session (and closes one it names).
	fetchSessionFinalEpoch = -1
)

// checkFetchSession answers the session part of a fetch the way Kafka's
// FetchManager.newContext does, for a broker that holds no sessions. The
// initial and final epochs make a full fetch: Kafka closes the session
// they name, if any, and answers every partition, creating a new session
// for the initial epoch, which a broker may decline by answering session
// id 0 (Kafka does so when its session cache is full). Any other epoch
// continues a session, and there are none here, so the session is not
// found whatever its id, 0 included. Before v7 there are no sessions.
func checkFetchSession(req *kmsg.FetchRequest) error {
	if req.Version < 7 || req.SessionEpoch == fetchSessionInitialEpoch || req.SessionEpoch == fetchSessionFinalEpoch {
		return nil
	}
	return fmt.Errorf("%w: session %d at epoch %d", ErrFetchSessionNotFound, req.SessionID, req.SessionEpoch)
}

// fetchRead is one pass over a fetch's partitions.
type fetchRead struct {
	reply *fetchReply
	bytes int64
	// maxBytes is the response's budget: fetch.max.bytes, or the
	// request's max bytes when lower.
	maxBytes int64
	// more is set when a partition's read left readable data behind (a
	// batch past the budget, or the rest of the log past a segment's end).
	more bool
	// failed is set when some partition has an error, which is answered at
	// once rather than after a long poll; so is a fetch that read from the
	// bucket, whose consumer is catching up.
	failed bool
	// watched maps each readable partition to the offset read up to
	// (watchedEnd).
	watched map[*replica.Partition]int64
	// internal is set when the fetch reads the internal topic, which never
	// gets records but is waited on as a quiet partition is.
	internal bool
}

// laterRead is a partition of a consumer's fetch read after the local
// partitions before it (readLater): one whose offset is below its local
// log start, read from the bucket (remote), or a local one that comes
// after such a partition in the request, read in its turn once the
// bucket's reads are in, so that it does not spend their share of the
// response's budget first (which starved a lagging tiered partition
// behind busy local ones; clients rotate the order in which they ask).
type laterRead struct {
	topic, partition int
	target           *replica.Partition
	remote           bool
	// request is the bucket read of a remote partition, and the offset and
	// partition max bytes of a local one.
	request remotefetch.Request
}

// readFetch reads every partition of req once: local partitions from their
// segment files, partitions below their local log start from the bucket,
// all of those in parallel (remotefetch's FetchMany, bounded by
// remote.fetch.max.wait.ms). A follower's fetch reads up to the log end,
// never from the bucket (replica.Partition.ReadForFollower).
func (b *Broker) readFetch(ctx context.Context, r *request, req *kmsg.FetchRequest) fetchRead {
	st := b.meta.State()
	replicaID := fetchReplicaID(req)
	follower := replicaID >= 0
	// A follower's fetch needs ClusterAction on the cluster, a consumer's
	// Read on each topic; either's refusal is TOPIC_AUTHORIZATION_FAILED.
	allowed := func(topic string) bool { return b.authorize(r, acl.OpRead, acl.Topic, topic) }
	if follower {
		cluster := b.authorizeCluster(r, acl.OpClusterAction)
		allowed = func(string) bool { return cluster }
	}
	out := fetchRead{reply: &fetchReply{version: req.Version}, watched: map[*replica.Partition]int64{}}
	budget := int64(b.config.FetchMaxBytes)
	if req.Version >= 3 && req.MaxBytes >= 0 {
		budget = min(budget, int64(req.MaxBytes))
	}
	out.maxBytes = budget
	var later []laterRead
	// A partition a consumer names again is answered once, in its first
	// mention's place with its last mention's offset, epoch and max bytes,
	// as Kafka's insertion-ordered map collapses the request's partitions:
	// each answer costs a read and a few hundred bytes of memory, and a
	// request of a million copies of one partition took gigabytes. A
	// follower (ClusterAction, a broker) is not asked: its fetches of
	// thousands of partitions are the replication path, and a map per
	// fetch is its cost.
	type named struct {
		topic     string
		id        uuid.UUID
		partition int32
	}
	type mention struct {
		topic, partition int // the first's place
		last             kmsg.FetchRequestTopicPartition
	}
	var mentions map[named]mention
	if !follower {
		mentions = make(map[named]mention)
		for ti, rt := range req.Topics {
			for pi, rp := range rt.Partitions {
				key := named{rt.Topic, rt.TopicID, rp.Partition}
				m, ok := mentions[key]
				if !ok {
					m.topic, m.partition = ti, pi
				}
				m.last = rp
				mentions[key] = m
			}
		}
	}
	for ti, rt := range req.Topics {
		t := fetchReplyTopic{name: rt.Topic, id: rt.TopicID}
		name, topicErr := fetchTopicName(st, req.Version, rt)
		// By name (before v13), authorized before looked up: see
		// handleProduce.
		if byName := req.Version < 13; byName && !allowed(rt.Topic) || !byName && topicErr == nil && !allowed(name) {
			topicErr = ErrTopicAuthorization
		}
		for pi, rp := range rt.Partitions {
			if mentions != nil {
				m := mentions[named{rt.Topic, rt.TopicID, rp.Partition}]
				if m.topic != ti || m.partition != pi {
					continue
				}
				rp = m.last
			}
			p := fetchReplyPartition{FetchResponseTopicPartition: kmsg.NewFetchResponseTopicPartition()}
			p.Partition = rp.Partition
			p.HighWatermark = -1
			err := topicErr
			var target *replica.Partition
			if err == nil && isInternalTopic(name) {
				out.internal = true
				err = fetchInternal(&p, rp.Partition, rp.FetchOffset)
				if err == nil {
					t.partitions = append(t.partitions, p)
					continue
				}
			} else if err == nil {
				target, err = b.partitions.Leader(st, name, rp.Partition)
			}
			if err == nil {
				err = checkLeaderEpoch(rp.CurrentLeaderEpoch, target.LeaderEpoch())
			}
			if err == nil && follower {
				maxBytes := min(int64(rp.PartitionMaxBytes), budget)
				// The log end before the read: one taken after it could
				// include an append that came between, whose wake no
				// watch was registered for yet, and the long poll would
				// not see that it moved.
				out.watched[target] = watchedEnd(target, true)
				var left bool
				left, err = readFollowerPartition(&p, target, replicaID, rp.FetchOffset, maxBytes, out.bytes == 0)
				out.more = out.more || left
			} else if err == nil && len(later) > 0 && rp.FetchOffset >= target.Log().LogStartOffset() {
				later = append(later, laterRead{topic: ti, partition: len(t.partitions), target: target,
					request: remotefetch.Request{Offset: rp.FetchOffset, MaxBytes: int(rp.PartitionMaxBytes)}})
			} else if err == nil && b.readLocal(&out, &p, target, rp.FetchOffset, int64(rp.PartitionMaxBytes), budget) {
				later = append(later, laterRead{topic: ti, partition: len(t.partitions), target: target, remote: true, request: remotefetch.Request{
					Partition: target.RemotePartition(), Offset: rp.FetchOffset, MaxBytes: int(max(min(int64(rp.PartitionMaxBytes), budget), 0)),
					SkipEmpty: target.Compacted(),
				}})
			}
			if err != nil {
				b.fetchFailed(&out, &p, err)
			}
			for _, s := range p.records {
				out.bytes += s.length
				budget -= s.length
			}
			t.partitions = append(t.partitions, p)
		}
		out.reply.topics = append(out.reply.topics, t)
	}
	if len(later) > 0 {
		b.readLater(ctx, &out, later, budget)
	}
	return out
}

// fetchFailed answers p with err's code: the fetch is answered at once.
func (b *Broker) fetchFailed(out *fetchRead, p *fetchReplyPartition, err error) {
	p.ErrorCode = errorCode(err)
	out.failed = true
	b.metrics.partitionErrors.WithLabelValues("Fetch", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
}

// readsRemote reports whether a fetch of offset, which the local log
// answered with err, is the bucket's to serve: the offset is below the
// local log start (read after the local read, so a segment that local
// retention deleted meanwhile is found in the bucket too), at or above the
// remote log start, the bucket reaches the local log start (a topic that
// turned tiering off may have deleted past its end: the log start clients
// are told is then the local one, and nothing below it is served, as
// replica.Partition.LogStartOffset says), and the broker has a remote
// reader.
func (b *Broker) readsRemote(p *replica.Partition, offset int64, err error) bool {
	if b.tiering == nil || b.tiering.Remote == nil || !errors.Is(err, hotlog.ErrOffsetOutOfRange) {
		return false
	}
	local := p.Log().LogStartOffset()
	if offset >= local {
		return false
	}
	start, next, ok := p.RemoteRange()
	return ok && offset >= start && next >= local
}

// readLater reads the remote partitions of a fetch in parallel, then, in
// request order, puts their batches, from memory, into the reply and reads
// the local partitions after them, while they fit in budget (the
// response's bytes left; the first partition with data may exceed it,
// KIP-74). A remote partition whose read did not finish within
// remote.fetch.max.wait.ms, or that no longer fits, comes back empty
// without an error: its blocks stay cached (or keep loading), and the
// client's next fetch finds them.
func (b *Broker) readLater(ctx context.Context, out *fetchRead, later []laterRead, budget int64) {
	var reqs []remotefetch.Request
	for _, r := range later {
		if r.remote {
			reqs = append(reqs, r.request)
		}
	}
	results := b.tiering.Remote.FetchMany(ctx, reqs)
	out.failed = true // answer at once: a catching-up consumer wants no long poll
	for _, r := range later {
		p := &out.reply.topics[r.topic].partitions[r.partition]
		if !r.remote {
			b.readLaterLocal(out, p, r, &budget)
			continue
		}
		res := results[0]
		results = results[1:]
		switch {
		case errors.Is(res.Err, remotefetch.ErrTimeout):
		case res.Err != nil:
			b.fetchFailed(out, p, res.Err)
			b.log.Warn("remote fetch failed", "topic", r.target.Topic(), "partition", r.target.Index(), "offset", r.request.Offset, "error", res.Err)
		case out.bytes == 0 || int64(len(res.Records)) <= min(int64(r.request.MaxBytes), budget):
			p.records = []section{memorySection(res.Records, res.Release)}
			out.bytes += int64(len(res.Records))
			budget -= int64(len(res.Records))
			if res.OnlyEmpty {
				b.readPastEmpty(out, p, r, res, &budget)
			}
		default:
			res.Release()
		}
	}
}

// readPastEmpty puts beside the emptied batches res holds, which end
// where the tiered data does, the hot log's batches from there on, as much
// as the partition's and the response's budget leave (all of the first if
// no other partition has data, KIP-74). A read that fails leaves the
// empty batches alone: the client's next fetch reads on from their end.
func (b *Broker) readPastEmpty(out *fetchRead, p *fetchReplyPartition, r laterRead, res remotefetch.FetchResult, budget *int64) {
	used := int64(len(res.Records))
	maxBytes := min(int64(r.request.MaxBytes)-used, *budget)
	_, err := readFetchPartition(p, r.target, res.NextOffset, maxBytes, out.bytes == used)
	p.LogStartOffset = r.target.LogStartOffset() // the bucket's, not the hot log's read's
	if err != nil {
		return
	}
	for _, s := range p.records[1:] {
		out.bytes += s.length
		*budget -= s.length
	}
}

// readLaterLocal reads a local partition of readLater's in its turn. Its
// log start may have passed the offset since the first look (local
// retention): it is then empty, and the client's next fetch reads it from
// the bucket.
func (b *Broker) readLaterLocal(out *fetchRead, p *fetchReplyPartition, r laterRead, budget *int64) {
	b.readLocal(out, p, r.target, r.request.Offset, int64(r.request.MaxBytes), *budget)
	for _, s := range p.records {
		out.bytes += s.length
		*budget -= s.length
	}
}

// readLocal reads target's hot log from offset into p, for a consumer, up
// to partitionMax and the budget left (only the first partition with data
// may exceed it), and reports whether the offset is below the hot log and
// the bucket's to read (readsRemote): p then has no records and no error.
// Any other error is p's. The caller counts p's bytes.
func (b *Broker) readLocal(out *fetchRead, p *fetchReplyPartition, target *replica.Partition, offset, partitionMax, budget int64) (remote bool) {
	left, err := readFetchPartition(p, target, offset, min(partitionMax, budget), out.bytes == 0)
	out.more = out.more || left
	p.LogStartOffset = target.LogStartOffset()
	if b.readsRemote(target, offset, err) {
		return true
	}
	out.watched[target] = p.HighWatermark
	if err != nil {
		b.fetchFailed(out, p, err)
	}
	return false
}

// readFetchPartition fills p from one partition. A batch larger than
// maxBytes is returned only when mayExceed (the first partition with data).
// left reports readable data below the high watermark that p did not take
// (takeSection).
func readFetchPartition(p *fetchReplyPartition, target *replica.Partition, offset, maxBytes int64, mayExceed bool) (left bool, _ error) {
	r, err := target.Read(offset, int(max(maxBytes, 0)))
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
	if err != nil {
		return false, err
	}
	return takeSection(p, r.Section, maxBytes, mayExceed, r.HighWatermark), nil
}

// readFollowerPartition fills p from one partition for follower replicaID,
// up to the log end; the log start is the leader's local one. left is as
// readFetchPartition's, below the log end.
func readFollowerPartition(p *fetchReplyPartition, target *replica.Partition, replicaID int32, offset, maxBytes int64, mayExceed bool) (left bool, _ error) {
	r, err := target.ReadForFollower(replicaID, offset, int(max(maxBytes, 0)))
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
	if err != nil {
		return false, err
	}
	return takeSection(p, r.Section, maxBytes, mayExceed, target.Log().LogEndOffset()), nil
}

// takeSection puts s, if any, after p's records, unless it is larger than
// maxBytes and may not exceed it. It reports whether readable data is left
// behind: s not taken, or ending before end, the offset the fetch may
// read to (a read stops at a segment's end, and at its byte limit).
func takeSection(p *fetchReplyPartition, s *hotlog.Section, maxBytes int64, mayExceed bool, end int64) (left bool) {
	if s == nil {
		return false
	}
	if s.Length > maxBytes && !mayExceed {
		s.Release()
		return true
	}
	p.records = append(p.records, section{file: s.File, position: s.Position, length: s.Length, release: s.Release})
	return s.NextOffset < end
}

// fetchTopicName resolves a fetched topic by name or (v13+) by id; the
// internal topic resolves to its name.
func fetchTopicName(st *meta.State, version int16, rt kmsg.FetchRequestTopic) (string, error) {
	if (version < 13 && isInternalTopic(rt.Topic)) || (version >= 13 && rt.TopicID == consumerOffsetsTopicID(st.ClusterID())) {
		return meta.ConsumerOffsetsTopic, nil
	}
	if version >= 13 {
		t, err := topicByID(st, rt.TopicID)
		return t.Name, err
	}
	t, err := topicByName(st, rt.Topic)
	return t.Name, err
}

// checkLeaderEpoch compares a client's idea of the leader epoch (-1: none)
// with the partition's.
func checkLeaderEpoch(client, current int32) error {
	switch {
	case client == -1 || client == current:
		return nil
	case client < current:
		return fmt.Errorf("%w: %d is older than %d", replica.ErrFencedLeaderEpoch, client, current)
	default:
		return fmt.Errorf("%w: %d is newer than %d", replica.ErrUnknownLeaderEpoch, client, current)
	}
}
