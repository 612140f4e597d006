package ingest

// LeaveGroup: v0-5
//
// Behavior:
//   - Removes members and rebalances the rest. v3+ leaves several members
//     at once, each by member id or static instance id, answered per member
//     (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID when both are given and do not
//     match).
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v1: throttle. v3: batched members with instance ids. v4: flexible.
//     v5: reason.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
)

func init() { register(0, 5, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, b *Broker, r *request, body *kmsg.LeaveGroupRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.LeaveGroupResponse)
	leavers := []group.Leaver{{MemberID: body.MemberID}}
	if body.Version >= 3 {
		leavers = leavers[:0]
		for _, m := range body.Members {
			leavers = append(leavers, group.Leaver{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	err := b.groupAccess(r, acl.OpRead, body.Group)
	var errs []error
	if err == nil {
		errs, err = b.groups.Leave(ctx, body.Group, leavers)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	if body.Version < 3 {
		resp.ErrorCode = errorCode(errs[0])
		return replyWith(resp), nil
	}
	for i, m := range body.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		rm.ErrorCode = errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return replyWith(resp), nil
}
