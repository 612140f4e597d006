package ingest

// OffsetFetch: v0-9
//
// Behavior:
//   - Returns a group's committed offsets from the metadata state this
//     broker has applied: of the partitions asked, or (null topics, v2+)
//     every partition the group committed. A partition without a commit is
//     offset -1.
//   - A group another broker coordinates is NOT_COORDINATOR (per group in
//     v8+, for the request in v2-7, on every partition asked in v0-1,
//     which have no top-level error: offset -1, no metadata, as Kafka's
//     OffsetFetchRequest.getErrorResponse answers).
//   - v8+ asks for several groups in one request, answered per group.
//   - RequireStable (v7+) needs nothing: there are no pending
//     transactional commits. The member id and epoch of v9 are for KIP-848
//     groups and not checked.
//
// Version notes:
//   - v2: null topics for all, top-level error. v3: throttle. v5: leader
//     epoch. v6: flexible. v7: require stable. v8: groups. v9: member id
//     and epoch. v10 (topic ids) is not answered.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 9, handleOffsetFetch) }

func handleOffsetFetch(_ context.Context, b *Broker, r *request, body *kmsg.OffsetFetchRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.OffsetFetchResponse)
	if body.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if body.Topics != nil {
			topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range body.Topics {
				topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		if err := b.groupAccess(r, acl.OpDescribe, body.Group); err != nil {
			if body.Version < 2 {
				// No top-level error before v2: every partition carries
				// it, so the client looks for the coordinator again
				// instead of taking "nothing committed" for an answer.
				resp.Topics = partitionErrors(body.Topics, errorCode(err))
				return replyWith(resp), nil
			}
			resp.ErrorCode = errorCode(err)
			return replyWith(resp), nil
		}
		for _, t := range fetchGroupOffsets(b, r, body.Group, topics) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return replyWith(resp), nil
	}
	for _, g := range body.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		if err := b.groupAccess(r, acl.OpDescribe, g.Group); err != nil {
			rg.ErrorCode = errorCode(err)
		} else {
			rg.Topics = fetchGroupOffsets(b, r, g.Group, g.Topics)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return replyWith(resp), nil
}

// fetchGroupOffsets answers one group: the partitions in topics, or all
// committed ones when topics is nil. Topics the principal may not
// describe are left out of all, and TOPIC_AUTHORIZATION_FAILED when asked
// for, as Kafka answers.
func fetchGroupOffsets(b *Broker, r *request, groupID string, topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	var asked []meta.TopicPartition
	if topics != nil {
		asked = []meta.TopicPartition{}
		for _, t := range topics {
			for _, p := range t.Partitions {
				asked = append(asked, meta.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	describable := map[string]bool{}
	for _, o := range b.groups.FetchOffsets(groupID, asked) {
		allowed, known := describable[o.Topic]
		if !known {
			allowed = b.authorize(r, acl.OpDescribe, acl.Topic, o.Topic)
			describable[o.Topic] = allowed
		}
		if !allowed && topics == nil {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Topic != o.Topic {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = o.Topic
			out = append(out, rt)
		}
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
		metadata := o.Metadata
		rp.Metadata = &metadata
		if !allowed {
			rp.Offset, rp.LeaderEpoch, rp.Metadata = -1, -1, kmsg.StringPtr("")
			rp.ErrorCode = errorCode(ErrTopicAuthorization)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
	}
	return out
}

// partitionErrors answers every partition asked with code and no offset.
func partitionErrors(topics []kmsg.OffsetFetchRequestTopic, code int16) []kmsg.OffsetFetchResponseTopic {
	out := make([]kmsg.OffsetFetchResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, kmsg.StringPtr(""), code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
