package ingest

// SyncGroup: v0-5
//
// Behavior:
//   - The leader sends every member's assignment; each member's sync waits
//     for it and gets its own (see group/doc.go). A sync during a rebalance
//     is REBALANCE_IN_PROGRESS; from another generation ILLEGAL_GENERATION;
//     from a replaced static member FENCED_INSTANCE_ID.
//   - v5+: a protocol type or name that is not the group's is
//     INCONSISTENT_GROUP_PROTOCOL.
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v1: throttle. v3: instance id. v4: flexible. v5: protocol type and
//     name in request and response.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
)

func init() { register(0, 5, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, b *Broker, r *request, body *kmsg.SyncGroupRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.SyncGroupResponse)
	if err := b.groupAccess(r, acl.OpRead, body.Group); err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	sr := group.SyncRequest{
		Group:        body.Group,
		Generation:   body.Generation,
		MemberID:     body.MemberID,
		InstanceID:   deref(body.InstanceID),
		ProtocolType: deref(body.ProtocolType),
		Protocol:     deref(body.Protocol),
	}
	if len(body.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(body.GroupAssignment))
		for _, a := range body.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	ctx, cancel := groupWait(ctx, b)
	defer cancel()
	result, err := b.groups.Sync(ctx, sr)
	if err != nil {
		result = group.SyncResult{Err: waitError(ctx, err)}
	}
	resp.ErrorCode = errorCode(result.Err)
	if result.Err == nil {
		resp.ProtocolType = &result.ProtocolType
		resp.Protocol = &result.Protocol
		resp.MemberAssignment = result.Assignment
	}
	return replyWith(resp), nil
}
