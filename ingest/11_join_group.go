package ingest

// JoinGroup: v0-9
//
// Behavior:
//   - Runs the join phase of the classic group protocol in the group
//     coordinator (see group/doc.go): the answer comes once the rebalance
//     completes, the leader's with every member's metadata.
//   - v4+: a member without an id gets MEMBER_ID_REQUIRED and an id, and
//     must join again with it within the session timeout.
//   - v5+: group.instance.id makes a static member; rejoining with the same
//     instance id takes the old member's place (which is then
//     FENCED_INSTANCE_ID) without a rebalance when the group is stable and
//     the subscription unchanged.
//   - A session timeout outside the coordinator's bounds is
//     INVALID_SESSION_TIMEOUT; protocols the group does not share are
//     INCONSISTENT_GROUP_PROTOCOL.
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v0: the rebalance timeout is the session timeout. v1: rebalance
//     timeout. v2: throttle. v4: member id required. v5: instance id.
//     v6: flexible. v7: protocol type and nullable protocol in the
//     response. v8: reason. v9: skip assignment for a static leader.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
)

func init() { register(0, 9, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, b *Broker, req *request, body *kmsg.JoinGroupRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.JoinGroupResponse)
	if err := b.groupAccess(req, acl.OpRead, body.Group); err != nil {
		resp.ErrorCode, resp.Generation, resp.MemberID = errorCode(err), -1, body.MemberID
		if body.Version < 7 {
			resp.Protocol = new(string)
		}
		return replyWith(resp), nil
	}
	jr := group.JoinRequest{
		Group:                body.Group,
		MemberID:             body.MemberID,
		InstanceID:           deref(body.InstanceID),
		ClientID:             req.header.clientID,
		ClientHost:           clientHost(req.remote),
		ProtocolType:         body.ProtocolType,
		SessionTimeout:       msDuration(body.SessionTimeoutMillis),
		RebalanceTimeout:     msDuration(body.RebalanceTimeoutMillis),
		RequireKnownMemberID: body.Version >= 4,
	}
	if body.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range body.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	ctx, cancel := groupWait(ctx, b)
	defer cancel()
	result, err := b.groups.Join(ctx, jr)
	if err != nil {
		result = group.JoinResult{Err: waitError(ctx, err), MemberID: body.MemberID, Generation: -1}
	}
	resp.ErrorCode = errorCode(result.Err)
	resp.Generation = result.Generation
	resp.MemberID = result.MemberID
	resp.LeaderID = result.Leader
	resp.SkipAssignment = result.SkipAssignment
	if result.Err == nil {
		resp.ProtocolType = &result.ProtocolType
		resp.Protocol = &result.Protocol
	} else if body.Version < 7 {
		// Before v7 the protocol name is not nullable.
		empty := ""
		resp.Protocol = &empty
	}
	for _, m := range result.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.ID
		rm.ProtocolMetadata = m.Metadata
		if m.InstanceID != "" {
			rm.InstanceID = &m.InstanceID
		}
		resp.Members = append(resp.Members, rm)
	}
	return replyWith(resp), nil
}

// deref is a nullable string's value, "" for null.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// clientHost is a client's host as Kafka reports it in DescribeGroups.
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return "/" + host
}
