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
	filter := aclFilter(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
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

// aclFilter is the acl.Filter of a DescribeAcls request or a DeleteAcls
// filter at version; v0 has no pattern type, and means LITERAL.
func aclFilter(version int16, t kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, permission kmsg.ACLPermissionType) acl.Filter {
	f := acl.Filter{
		ResourceType: acl.ResourceType(t), ResourceName: name, PatternType: acl.PatternType(pattern),
		Principal: principal, Host: host, Operation: acl.Operation(op), Permission: acl.Permission(permission),
	}
	if version == 0 {
		f.PatternType = acl.PatternLiteral
	}
	return f
}
