package ingest

// ListGroups: v0-5
//
// Behavior:
//   - Every group this broker coordinates with members or committed
//     offsets, sorted by id, as Kafka's broker lists its own (admin
//     clients ask every broker): a group whose last member left is listed
//     Empty until its offsets expire (offsets.retention.minutes;
//     group/retention.go).
//   - v4+: a states filter (Kafka's state names, case-insensitive) keeps
//     groups in those states. v5+: a types filter keeps groups of the
//     listed types; every group here is "classic".
//
// Version notes:
//   - v1: throttle. v3: flexible. v4: states. v5: types.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
)

func init() { register(0, 5, handleListGroups) }

// classicGroupType is the group type of every group this broker runs.
const classicGroupType = "classic"

func handleListGroups(ctx context.Context, b *Broker, r *request, body *kmsg.ListGroupsRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.ListGroupsResponse)
	if len(body.TypesFilter) > 0 && !slices.ContainsFunc(body.TypesFilter, func(t string) bool { return strings.EqualFold(t, classicGroupType) }) {
		return replyWith(resp), nil
	}
	var states []group.State
	for _, s := range body.StatesFilter {
		for _, known := range []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable, group.Dead} {
			if strings.EqualFold(s, string(known)) {
				states = append(states, known)
			}
		}
	}
	if len(body.StatesFilter) > 0 && len(states) == 0 {
		return replyWith(resp), nil
	}
	listing, err := b.groups.List(ctx, states)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	// Describe on the cluster lists every group; otherwise only the groups
	// the principal may describe, as Kafka does.
	everyGroup := b.authorizeCluster(r, acl.OpDescribe)
	for _, l := range listing {
		if !everyGroup && !b.authorize(r, acl.OpDescribe, acl.Group, l.Group) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = l.Group, l.ProtocolType, string(l.State), classicGroupType
		resp.Groups = append(resp.Groups, rg)
	}
	return replyWith(resp), nil
}
