package ingest

// AlterClientQuotas: v0-1
//
// Behavior:
//   - Each entry sets (Remove false) and removes quota values of one
//     entity through the metadata group; every broker enforces them at
//     once (quotas.go). Entities are a user, a client id or both, a null
//     name meaning the default of that type.
//   - An entity type other than user and client-id, a type given twice, or
//     a key set twice is INVALID_REQUEST; an unknown key or a bad value
//     (byte rates are whole, positive bytes per second; request_percentage
//     a positive percentage) is INVALID_CONFIG. Each with a message; each
//     entry stands alone.
//   - ValidateOnly checks without changing anything.
//
// Version notes:
//   - v1: flexible.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(ctx context.Context, b *Broker, r *request, req *kmsg.AlterClientQuotasRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, entry := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, e := range entry.Entity {
			oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oe.Type, oe.Name = e.Type, e.Name
			out.Entity = append(out.Entity, oe)
		}
		cmd, err := quotaChange(entry)
		if err == nil && !b.authorizeCluster(r, acl.OpAlterConfigs) {
			err = ErrClusterAuthorization
		}
		if err == nil && req.ValidateOnly {
			err = b.meta.State().Check(cmd)
		} else if err == nil {
			if _, err = b.meta.Propose(ctx, cmd); err == nil {
				b.log.Info("altered client quota", "entity", cmd.Entity.String(), "set", cmd.Set, "removed", cmd.Remove)
			}
		}
		if err != nil {
			out.ErrorCode, out.ErrorMessage = errorCode(err), errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("AlterClientQuotas", kerr.ErrorForCode(out.ErrorCode).Error()).Inc()
		}
		resp.Entries = append(resp.Entries, out)
	}
	return replyWith(resp), nil
}

// quotaChange is the metadata command for one entry, or why there is none.
func quotaChange(entry kmsg.AlterClientQuotasRequestEntry) (*meta.AlterClientQuota, error) {
	cmd := &meta.AlterClientQuota{Set: map[string]float64{}}
	for _, e := range entry.Entity {
		name := &meta.QuotaName{Default: e.Name == nil}
		if e.Name != nil {
			name.Name = *e.Name
		}
		var part **meta.QuotaName
		switch e.Type {
		case quotaUser:
			part = &cmd.Entity.User
		case quotaClientID:
			part = &cmd.Entity.ClientID
		default:
			return nil, fmt.Errorf("%w: quota entity type %q: strata has user and client-id quotas", ErrInvalidRequest, e.Type)
		}
		if *part != nil {
			return nil, fmt.Errorf("%w: quota entity type %q given twice", ErrInvalidRequest, e.Type)
		}
		*part = name
	}
	named := map[string]bool{}
	for _, op := range entry.Ops {
		if named[op.Key] {
			return nil, fmt.Errorf("%w: quota key %q changed twice", ErrInvalidRequest, op.Key)
		}
		named[op.Key] = true
		if op.Remove {
			cmd.Remove = append(cmd.Remove, op.Key)
		} else {
			cmd.Set[op.Key] = op.Value
		}
	}
	return cmd, nil
}
