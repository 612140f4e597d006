package ingest

// CreateAcls: v0-3
//
// Behavior:
//   - Needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for
//     every creation). Each creation is checked as Kafka does
//     (acl.Binding.Validate: a concrete resource type, LITERAL or PREFIXED,
//     a Type:name principal, a host, a concrete operation, ALLOW or DENY;
//     the cluster is only kafka-cluster) and refused alone with
//     INVALID_REQUEST naming what is wrong; the valid ones are stored in
//     the metadata in one command, so every broker's authorizer sees them
//     together. A binding already present is left as it is.
//
// Version notes:
//   - v0 has no pattern type: LITERAL. v1: pattern types. v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 3, handleCreateACLs) }

func handleCreateACLs(ctx context.Context, b *Broker, r *request, req *kmsg.CreateACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	fail := func(i int, err error) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), errorMessage(err)
	}
	authorized := b.authorizeCluster(r, acl.OpAlter)
	var valid []acl.Binding
	var indexes []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		binding := acl.Binding{
			ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType),
		}
		if req.Version == 0 {
			binding.PatternType = acl.PatternLiteral
		}
		switch err := binding.Validate(); {
		case !authorized:
			fail(i, ErrClusterAuthorization)
		case err != nil:
			fail(i, err)
		default:
			valid = append(valid, binding)
			indexes = append(indexes, i)
		}
	}
	if len(valid) == 0 {
		return replyWith(resp), nil
	}
	if _, err := b.meta.Propose(ctx, &meta.CreateACLs{Bindings: valid}); err != nil {
		for _, i := range indexes {
			fail(i, err)
		}
		return replyWith(resp), nil
	}
	for _, binding := range valid {
		b.log.Info("ACL created", "acl", binding.String(), "by", principalOf(r))
	}
	return replyWith(resp), nil
}

// principalOf is who sent r, for logs.
func principalOf(r *request) string {
	p, _ := r.principal()
	return p
}
