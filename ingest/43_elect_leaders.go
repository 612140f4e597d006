package ingest

// ElectLeaders: v0-2
//
// Behavior:
//   - Each partition's election runs in the metadata group, which picks
//     the leader from the state it applies to. Preferred (type 0): the
//     first replica leads if it is alive and in the ISR; already leading
//     is ELECTION_NOT_NEEDED, not eligible is
//     PREFERRED_LEADER_NOT_AVAILABLE. Unclean (type 1): a partition
//     without a leader gets a live ISR member, or else the first live
//     replica with an ISR of itself (what only the old ISR held is lost,
//     and the broker logs it); a partition with a leader is
//     ELECTION_NOT_NEEDED, one without a live replica
//     ELIGIBLE_LEADERS_NOT_AVAILABLE.
//   - Null topics elect every partition and answer only those where an
//     election was needed, as kafka-leader-election.sh
//     --all-topic-partitions expects. Unknown topics and partitions are
//     UNKNOWN_TOPIC_OR_PARTITION per partition.
//   - An election type other than 0 and 1 is INVALID_REQUEST.
//
// Version notes:
//   - v0: preferred only, no top-level error. v1: ElectionType, ErrorCode.
//     v2: flexible.

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 2, handleElectLeaders) }

func handleElectLeaders(ctx context.Context, b *Broker, r *request, req *kmsg.ElectLeadersRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !b.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode = errorCode(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	kind := meta.ElectionType(req.ElectionType)
	if req.Version == 0 {
		kind = meta.ElectPreferred
	}
	if kind != meta.ElectPreferred && kind != meta.ElectUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return replyWith(resp), nil
	}
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	st, err := b.meta.LinearizableState(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	all := req.Topics == nil
	topics := req.Topics
	if all {
		for _, t := range st.Topics() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = t.Name
			for i := range t.Partitions {
				rt.Partitions = append(rt.Partitions, i)
			}
			topics = append(topics, rt)
		}
	}
	var wg sync.WaitGroup
	resp.Topics = make([]kmsg.ElectLeadersResponseTopic, len(topics))
	for i, rt := range topics {
		t := &resp.Topics[i]
		*t = kmsg.NewElectLeadersResponseTopic()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.ElectLeadersResponseTopicPartition, len(rt.Partitions))
		topic, topicErr := topicByName(st, rt.Topic)
		for j, index := range rt.Partitions {
			p := &t.Partitions[j]
			*p = kmsg.NewElectLeadersResponseTopicPartition()
			p.Partition = index
			if topicErr != nil {
				b.electionAnswer(p, topicErr)
				continue
			}
			cmd := &meta.ElectLeader{Topic: rt.Topic, TopicID: topic.ID, Partition: index, Type: kind}
			wg.Add(1)
			go func() {
				defer wg.Done()
				unclean := st.Unclean(*cmd)
				res, err := b.meta.Propose(ctx, cmd)
				b.electionAnswer(p, err)
				switch {
				case err == nil && unclean:
					b.log.Error("unclean leader election asked by a client: a replica outside the ISR leads; records only the old ISR held are lost",
						"topic", cmd.Topic, "partition", cmd.Partition, "leader_epoch", res.Epoch)
				case err == nil:
					b.log.Info("leader elected on request", "topic", cmd.Topic, "partition", cmd.Partition, "type", kind, "leader_epoch", res.Epoch)
				}
			}()
		}
	}
	wg.Wait()
	if all {
		resp.Topics = electionsNeeded(resp.Topics)
	}
	return replyWith(resp), nil
}

func (b *Broker) electionAnswer(p *kmsg.ElectLeadersResponseTopicPartition, err error) {
	if err == nil {
		return
	}
	p.ErrorCode, p.ErrorMessage = errorCode(err), errorMessage(err)
	if !errors.Is(err, meta.ErrElectionNotNeeded) {
		b.metrics.partitionErrors.WithLabelValues("ElectLeaders", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
	}
}

// electionsNeeded drops the partitions answered ELECTION_NOT_NEEDED, and
// the topics left with none.
func electionsNeeded(topics []kmsg.ElectLeadersResponseTopic) []kmsg.ElectLeadersResponseTopic {
	var out []kmsg.ElectLeadersResponseTopic
	for _, t := range topics {
		var kept []kmsg.ElectLeadersResponseTopicPartition
		for _, p := range t.Partitions {
			if p.ErrorCode != kerr.ElectionNotNeeded.Code {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			t.Partitions = kept
			out = append(out, t)
		}
	}
	return out
}
