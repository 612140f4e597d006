package ingest

// DescribeAcls: v0-3
//
// Behavior:
//   - Needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
//     Returns the bindings the filter matches (acl.Filter: ANY matches
//     every value, MATCH a resource name's literal, wildcard and prefixed
//     patterns), grouped by resource pattern. An invalid filter (an
//     UNKNOWN value) is INVALID_REQUEST.
//
// Version notes:
//   - v0 has no pattern type: LITERAL. v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 3, handleDescribeACLs) }

func handleDescribeACLs(_ context.Context, b *Broker, r *request, req *kmsg.DescribeACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	filter := acl.Filter{
		ResourceType: acl.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: acl.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType),
	}
	if req.Version == 0 {
		filter.PatternType = acl.PatternLiteral
	}
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	if err := filter.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return replyWith(resp), nil
	}
	for _, binding := range b.meta.State().ACLs() {
		if !filter.Matches(binding) {
			continue
		}
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(binding.ResourceType) ||
			resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(binding.PatternType) ||
			resp.Resources[n-1].ResourceName != binding.ResourceName {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(binding.ResourceType), binding.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(binding.PatternType)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		entry := kmsg.NewDescribeACLsResponseResourceACL()
		entry.Principal, entry.Host = binding.Principal, binding.Host
		entry.Operation, entry.PermissionType = kmsg.ACLOperation(binding.Operation), kmsg.ACLPermissionType(binding.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, entry)
	}
	return replyWith(resp), nil
}
