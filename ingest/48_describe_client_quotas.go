package ingest

// DescribeClientQuotas: v0-1
//
// Behavior:
//   - Lists the client quotas set in the metadata whose entity matches
//     every component: MatchType 0 a name of that type, 1 the default of
//     that type, 2 any entity with that type. Strict keeps only entities
//     with no other types. Entity types are user and client-id; another
//     type (ip) is INVALID_REQUEST naming it, as is a type given twice.
//   - Quota keys are producer_byte_rate, consumer_byte_rate and
//     request_percentage (quotas.go says how each is enforced).
//
// Version notes:
//   - v1: flexible.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 1, handleDescribeClientQuotas) }

// Quota entity types.
const (
	quotaUser     = "user"
	quotaClientID = "client-id"
)

func handleDescribeClientQuotas(_ context.Context, b *Broker, r *request, req *kmsg.DescribeClientQuotasRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.authorizeCluster(r, acl.OpDescribeConfigs) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	seen := map[string]bool{}
	for _, c := range req.Components {
		var err error
		switch {
		case c.EntityType != quotaUser && c.EntityType != quotaClientID:
			err = fmt.Errorf("%w: quota entity type %q: strata has user and client-id quotas", ErrInvalidRequest, c.EntityType)
		case seen[c.EntityType]:
			err = fmt.Errorf("%w: quota entity type %q given twice", ErrInvalidRequest, c.EntityType)
		case c.MatchType == kmsg.QuotasMatchTypeExact && c.Match == nil:
			err = fmt.Errorf("%w: an exact match on %s needs a name", ErrInvalidRequest, c.EntityType)
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
			return replyWith(resp), nil
		}
		seen[c.EntityType] = true
	}
	for _, q := range b.meta.State().ClientQuotas() {
		if !quotaMatches(q.Entity, req.Components, req.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, part := range []struct {
			kind string
			name *meta.QuotaName
		}{{quotaUser, q.Entity.User}, {quotaClientID, q.Entity.ClientID}} {
			if part.name == nil {
				continue
			}
			entity := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			entity.Type = part.kind
			if !part.name.Default {
				entity.Name = kmsg.StringPtr(part.name.Name)
			}
			e.Entity = append(e.Entity, entity)
		}
		for _, key := range meta.QuotaKeys {
			if v, ok := q.Values[key]; ok {
				e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: key, Value: v})
			}
		}
		resp.Entries = append(resp.Entries, e)
	}
	return replyWith(resp), nil
}

// quotaMatches reports whether entity matches every component and, when
// strict, has no part the components do not name.
func quotaMatches(entity meta.QuotaEntity, components []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	named := map[string]bool{}
	for _, c := range components {
		named[c.EntityType] = true
		part := entity.User
		if c.EntityType == quotaClientID {
			part = entity.ClientID
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if part == nil || part.Default || part.Name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if part == nil || !part.Default {
				return false
			}
		default: // any
			if part == nil {
				return false
			}
		}
	}
	if strict && ((entity.User != nil && !named[quotaUser]) || (entity.ClientID != nil && !named[quotaClientID])) {
		return false
	}
	return true
}
