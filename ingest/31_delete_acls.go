package ingest

// DeleteAcls: v0-3
//
// Behavior:
//   - Needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for
//     every filter). Each filter's matches (as DescribeAcls matches) are
//     removed and listed in its result; the removals of every valid filter
//     are one metadata command. An invalid filter is INVALID_REQUEST.
//
// Version notes:
//   - v0 has no pattern type: LITERAL. v2: flexible.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 3, handleDeleteACLs) }

func handleDeleteACLs(ctx context.Context, b *Broker, r *request, req *kmsg.DeleteACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	authorized := b.authorizeCluster(r, acl.OpAlter)
	all := b.meta.State().ACLs()
	var doomed []acl.Binding
	for i, f := range req.Filters {
		res := &resp.Results[i]
		*res = kmsg.NewDeleteACLsResponseResult()
		filter := aclFilter(req.Version, f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if !authorized {
			res.ErrorCode, res.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
			continue
		}
		if err := filter.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
			continue
		}
		for _, binding := range all {
			if !filter.Matches(binding) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(binding.ResourceType), binding.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(binding.PatternType)
			m.Principal, m.Host = binding.Principal, binding.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(binding.Operation), kmsg.ACLPermissionType(binding.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
			if !slices.Contains(doomed, binding) {
				doomed = append(doomed, binding)
			}
		}
	}
	if len(doomed) == 0 {
		return replyWith(resp), nil
	}
	if _, err := b.meta.Propose(ctx, &meta.DeleteACLs{Bindings: doomed}); err != nil {
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), errorMessage(err)
				resp.Results[i].MatchingACLs = nil
			}
		}
		return replyWith(resp), nil
	}
	for _, binding := range doomed {
		b.log.Info("ACL deleted", "acl", binding.String(), "by", principalOf(r))
	}
	return replyWith(resp), nil
}
