package ingest

// UnregisterBroker: v0
//
// Behavior:
//   - Removes a broker that will not come back (meta.UnregisterBroker): it
//     must be fenced, so stop it first (after draining it); a live broker
//     is INVALID_REQUEST saying so, an unknown one BROKER_ID_NOT_REGISTERED.
//     Partitions that still list it show it as an offline replica until
//     they are reassigned; a non-voter leaves the metadata group. A broker
//     that starts again with that id registers again.
//
// Version notes:
//   - v0 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 0, handleUnregisterBroker) }

func handleUnregisterBroker(ctx context.Context, b *Broker, r *request, req *kmsg.UnregisterBrokerRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !b.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	if _, err := b.meta.Propose(ctx, &meta.UnregisterBroker{ID: req.BrokerID}); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return replyWith(resp), nil
	}
	b.log.Info("unregistered broker", "broker", req.BrokerID)
	return replyWith(resp), nil
}
