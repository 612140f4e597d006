package ingest

// OffsetForLeaderEpoch: v0-4
//
// Behavior:
//   - For each partition this broker leads, the end offset of the
//     requested leader epoch in its log (replica's EndOffsetForEpoch, Kafka's
//     LeaderEpochFileCache.endOffsetFor; a tiered partition's epochs below
//     its local log start from its bucket's segments): the log end offset for the current
//     epoch; for an older one, the start of the next epoch, with the largest
//     epoch at or below the one asked; UNDEFINED (-1, -1) for an epoch past
//     every entry. Followers ask it after a leader change to find where
//     their log diverges (KIP-101, KIP-279); consumers ask it to detect
//     truncation after a leader change (KIP-320).
//   - CurrentLeaderEpoch (v2+) is checked as Fetch checks it:
//     FENCED_LEADER_EPOCH when older than the partition's,
//     UNKNOWN_LEADER_EPOCH when newer; -1 skips the check.
//   - Unknown topics or partitions are UNKNOWN_TOPIC_OR_PARTITION; a
//     partition led elsewhere, or only followed here, is
//     NOT_LEADER_OR_FOLLOWER. The internal topic is an empty log: UNDEFINED.
//
// Version notes:
//   - v1: the leader epoch in the answer. v2: current leader epoch. v3:
//     replica id. v4: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/hotlog"
)

func init() { register(0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, b *Broker, r *request, req *kmsg.OffsetForLeaderEpochRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	st := b.meta.State()
	// A follower needs ClusterAction on the cluster, a client Describe on
	// each topic.
	cluster := req.ReplicaID >= 0 && b.authorizeCluster(r, acl.OpClusterAction)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetForLeaderEpochResponseTopic()
		t.Topic = rt.Topic
		allowed := cluster || req.ReplicaID < 0 && b.authorize(r, acl.OpDescribe, acl.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			p.Partition = rp.Partition
			p.LeaderEpoch, p.EndOffset = hotlog.UndefinedEpoch, hotlog.UndefinedOffset
			var err error
			switch {
			case !allowed:
				err = ErrTopicAuthorization
			case isInternalTopic(rt.Topic):
				err = internalPartition(rp.Partition)
			default:
				target, lookupErr := b.partitions.Leader(st, rt.Topic, rp.Partition)
				err = lookupErr
				if err == nil && req.Version >= 2 {
					err = checkLeaderEpoch(rp.CurrentLeaderEpoch, target.LeaderEpoch())
				}
				if err == nil {
					p.LeaderEpoch, p.EndOffset = target.EndOffsetForEpoch(rp.LeaderEpoch)
				}
			}
			if err != nil {
				p.ErrorCode = errorCode(err)
				b.metrics.partitionErrors.WithLabelValues("OffsetForLeaderEpoch", kerr.ErrorForCode(p.ErrorCode).Error()).Inc()
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}
