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
//   - Fetch sessions (KIP-227) are declined: every response is a full one
//     with session id 0. A request naming a session id gets
//     FETCH_SESSION_ID_NOT_FOUND, one asking for an impossible epoch
//     INVALID_FETCH_SESSION_EPOCH; clients then send full fetches.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id,
//     v13+), NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE below the log start
//     or above the high watermark, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH
//     when the CurrentLeaderEpoch (v9+) is older or newer than ours.
//   - read_committed reads up to the last stable offset, which is the high
//     watermark: there are no transactions, so no aborted ones to list.
//
// Version notes:
//   - v4: isolation level, last stable offset. v5: log start offset.
//   - v7: sessions (declined). v9: current leader epoch. v11: rack (no
//     preferred read replica is chosen). v12: flexible, diverging epoch tags
//     (for followers; not sent). v13: topic ids. v15-17: replica state and
//     directory ids, for followers only.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

func init() { register(4, 17, handleFetch) }

func handleFetch(ctx context.Context, b *Broker, r *request, req *kmsg.FetchRequest) (reply, error) {
	if req.Version >= 7 {
		switch {
		case req.SessionID != 0:
			return &fetchReply{version: req.Version, errorCode: kerr.FetchSessionIDNotFound.Code}, nil
		case req.SessionEpoch != -1 && req.SessionEpoch != 0:
			return &fetchReply{version: req.Version, errorCode: kerr.InvalidFetchSessionEpoch.Code}, nil
		}
	}
	first := b.readFetch(req)
	if first.bytes >= int64(req.MinBytes) || req.MaxWaitMillis <= 0 || first.failed || len(first.watched) == 0 {
		return first.reply, nil
	}
	first.reply.release()

	watch := newFetchWatch(int64(req.MinBytes) - first.bytes)
	for p := range first.watched {
		p.watchers.add(watch)
	}
	// Data that arrived between the read and the registration would not
	// wake the watch; look before sleeping.
	moved := false
	for p, hwm := range first.watched {
		if p.highWatermark.Load() != hwm {
			moved = true
		}
	}
	if !moved {
		timer := time.NewTimer(msDuration(req.MaxWaitMillis))
		select {
		case <-watch.ready:
		case <-timer.C:
		case <-r.readerDone:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	for p := range first.watched {
		p.watchers.remove(watch)
	}
	return b.readFetch(req).reply, nil
}

// fetchRead is one pass over a fetch's partitions.
type fetchRead struct {
	reply *fetchReply
	bytes int64
	// failed is set when some partition has an error, which is answered at
	// once rather than after a long poll.
	failed bool
	// watched maps each readable partition to the high watermark read.
	watched map[*partition]int64
}

// readFetch reads every partition of req once.
func (b *Broker) readFetch(req *kmsg.FetchRequest) fetchRead {
	st := b.meta.State()
	out := fetchRead{reply: &fetchReply{version: req.Version}, watched: map[*partition]int64{}}
	budget := int64(b.config.FetchMaxBytes)
	if req.Version >= 3 && req.MaxBytes >= 0 {
		budget = min(budget, int64(req.MaxBytes))
	}
	for _, rt := range req.Topics {
		t := fetchReplyTopic{name: rt.Topic, id: rt.TopicID}
		name, topicErr := fetchTopicName(st, req.Version, rt)
		for _, rp := range rt.Partitions {
			p := fetchReplyPartition{FetchResponseTopicPartition: kmsg.NewFetchResponseTopicPartition()}
			p.Partition = rp.Partition
			p.HighWatermark = -1
			err := topicErr
			var target *partition
			if err == nil {
				target, err = b.partitions.get(st, name, rp.Partition)
			}
			if err == nil {
				err = checkLeaderEpoch(rp.CurrentLeaderEpoch, target.leaderEpoch.Load())
			}
			if err == nil {
				// Only the first partition with data may exceed the budget.
				maxBytes := min(int64(rp.PartitionMaxBytes), budget)
				err = readFetchPartition(&p, target, rp.FetchOffset, maxBytes, out.bytes == 0)
				out.watched[target] = p.HighWatermark
			}
			if err != nil {
				p.ErrorCode = errorCode(err)
				out.failed = true
				b.metrics.partitionErrors.WithLabelValues("Fetch", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
			}
			for _, s := range p.records {
				out.bytes += s.length
				budget -= s.length
			}
			t.partitions = append(t.partitions, p)
		}
		out.reply.topics = append(out.reply.topics, t)
	}
	return out
}

// readFetchPartition fills p from one partition. A batch larger than
// maxBytes is returned only when mayExceed (the first partition with data).
func readFetchPartition(p *fetchReplyPartition, target *partition, offset, maxBytes int64, mayExceed bool) error {
	r, err := target.read(offset, int(max(maxBytes, 0)))
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.highWatermark, r.highWatermark, r.logStartOffset
	if err != nil {
		return err
	}
	var length int64
	for _, s := range r.records {
		length += s.length
	}
	if length > maxBytes && !mayExceed {
		for _, s := range r.records {
			s.release()
		}
		return nil
	}
	p.records = r.records
	return nil
}

// fetchTopicName resolves a fetched topic by name or (v13+) by id.
func fetchTopicName(st *meta.State, version int16, rt kmsg.FetchRequestTopic) (string, error) {
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
		return fmt.Errorf("%w: %d is older than %d", ErrFencedLeaderEpoch, client, current)
	default:
		return fmt.Errorf("%w: %d is newer than %d", ErrUnknownLeaderEpoch, client, current)
	}
}
