package ingest

// DescribeGroups: v0-5
//
// Behavior:
//   - Each group's state, protocol and members with their metadata and
//     assignment. A group without members or committed offsets is Dead
//     with no error, as Kafka reports unknown groups; one with only
//     committed offsets is Empty.
//   - A group another broker coordinates is NOT_COORDINATOR.
//   - Authorized operations (v3+) are not computed (ACLs are not
//     implemented): reported as Kafka does when not asked, the minimum int32.
//
// Version notes:
//   - v1: throttle. v3: authorized operations. v4: instance id. v5:
//     flexible.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 5, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, b *Broker, r *request, body *kmsg.DescribeGroupsRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.DescribeGroupsResponse)
	descriptions, err := b.groups.Describe(ctx, body.Groups)
	for i, id := range body.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = math.MinInt32
		groupErr := err
		if groupErr == nil {
			groupErr = b.groupAccess(r, acl.OpDescribe, id)
		}
		if groupErr != nil {
			rg.ErrorCode = errorCode(groupErr)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d := descriptions[i]
		rg.State, rg.ProtocolType, rg.Protocol = string(d.State), d.ProtocolType, d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost = m.ID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			if m.InstanceID != "" {
				rm.InstanceID = &m.InstanceID
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return replyWith(resp), nil
}
