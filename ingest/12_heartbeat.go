package ingest

// Heartbeat: v0-4
//
// Behavior:
//   - Keeps a member's session alive. REBALANCE_IN_PROGRESS tells it to
//     rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID
//     as Kafka (see group/doc.go).
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v1: throttle. v3: instance id. v4: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 4, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, b *Broker, r *request, body *kmsg.HeartbeatRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.HeartbeatResponse)
	err := b.groupAccess(r, acl.OpRead, body.Group)
	if err == nil {
		err = b.groups.Heartbeat(ctx, body.Group, body.Generation, body.MemberID, deref(body.InstanceID))
	}
	resp.ErrorCode = errorCode(err)
	return replyWith(resp), nil
}
