package ingest

// OffsetCommit: v0-9
//
// Behavior:
//   - A member commits with its generation and member id, checked by the
//     group coordinator: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
//     FENCED_INSTANCE_ID (v7+), REBALANCE_IN_PROGRESS while the group waits
//     for the leader's assignment. Generation -1 without a member id (and
//     v0) commits from outside the group, allowed while it has no members.
//   - Offsets, leader epochs (v6+) and metadata go to the metadata group,
//     where concurrent commits share Raft entries; they survive restarts.
//   - Per partition: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION,
//     metadata above 4096 bytes OFFSET_METADATA_TOO_LARGE, a negative
//     offset (or a leader epoch below -1) INVALID_COMMIT_OFFSET_SIZE; the
//     others are committed together.
//   - A negative offset departs from Kafka, which stores it and answers
//     NONE (clients then read it back as "no commit"). The metadata group
//     stores only real offsets, so that partition fails with the code
//     Kafka gives a commit it cannot store, which clients report to the
//     caller without retrying.
//   - The retention time (v2-4) and commit timestamp (v1) are ignored:
//     offsets are kept until the group is deleted.
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v1: generation, member id, timestamp. v2-4: retention time. v3:
//     throttle. v6: leader epoch. v7: instance id. v8: flexible. v9: no
//     change for classic groups. v10 (topic ids) is not answered.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 9, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, b *Broker, r *request, body *kmsg.OffsetCommitRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := group.CommitRequest{Group: body.Group, Generation: body.Generation, MemberID: body.MemberID, InstanceID: deref(body.InstanceID)}
	if body.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	// Committing needs Read on the group and on each topic; a topic not
	// allowed is answered TOPIC_AUTHORIZATION_FAILED and not committed.
	denied := map[string]bool{}
	for _, t := range body.Topics {
		if !b.authorize(r, acl.OpRead, acl.Topic, t.Topic) {
			denied[t.Topic] = true
			continue
		}
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if body.Version < 6 {
				epoch = -1
			}
			cr.Offsets = append(cr.Offsets, meta.OffsetCommit{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata)})
		}
	}
	err := error(ErrGroupAuthorization)
	if b.authorize(r, acl.OpRead, acl.Group, body.Group) {
		err = coordinates(b, body.Group)
	}
	var errs []error
	if err == nil && len(cr.Offsets) > 0 {
		errs, err = b.groups.Commit(ctx, cr)
	}
	i := 0
	for _, t := range body.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case err != nil:
				rp.ErrorCode = errorCode(err)
			case denied[t.Topic]:
				rp.ErrorCode = errorCode(ErrTopicAuthorization)
			default:
				rp.ErrorCode = errorCode(errs[i])
				i++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return replyWith(resp), nil
}
