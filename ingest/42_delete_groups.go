package ingest

// DeleteGroups: v0-2
//
// Behavior:
//   - Deletes each group and its committed offsets. A group with members
//     is NON_EMPTY_GROUP; one with neither members nor offsets
//     GROUP_ID_NOT_FOUND. A group whose last member left is Empty and
//     deletable until its offsets expire (offsets.retention.minutes after
//     it emptied; group/retention.go).
//   - A group another broker coordinates is NOT_COORDINATOR.
//
// Version notes:
//   - v1: no change. v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 2, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, b *Broker, r *request, body *kmsg.DeleteGroupsRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range body.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		err := b.groupAccess(r, acl.OpDelete, id)
		if err == nil {
			err = b.groups.DeleteGroup(ctx, id)
		}
		rg.ErrorCode = errorCode(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return replyWith(resp), nil
}
