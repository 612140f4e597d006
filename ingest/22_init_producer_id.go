package ingest

// InitProducerId: v0-5
//
// Behavior:
//   - Without a transactional id, answers a new producer id at epoch 0, unique
//     across brokers and restarts (see producerIDs), as Kafka does for an
//     idempotent producer: a producer that asks again (KIP-360, v3+, after
//     an OUT_OF_ORDER_SEQUENCE_NUMBER or a timeout) gets a fresh id.
//   - A transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
//     transactions are not implemented, and this is the error a client
//     reports as fatal and plainly instead of retrying.
//
// Version notes:
//   - v2: flexible. v3: ProducerID and ProducerEpoch in the request (ignored
//     without a transactional id, as Kafka ignores them). v4-5: error
//     handling changes for transactional producers only.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 5, handleInitProducerID) }

func handleInitProducerID(_ context.Context, b *Broker, r *request, req *kmsg.InitProducerIDRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = errorCode(ErrTransactionsUnsupported)
		if !b.authorize(r, acl.OpWrite, acl.TransactionalID, *req.TransactionalID) {
			resp.ErrorCode = errorCode(ErrTransactionalIDAuthorization)
		}
		return replyWith(resp), nil
	}
	// An idempotent producer needs IdempotentWrite on the cluster or Write
	// on some topic (KIP-679).
	if !b.authorizeCluster(r, acl.OpIdempotentWrite) && !b.authorizeAny(r, acl.OpWrite, acl.Topic) {
		resp.ErrorCode = errorCode(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	id, err := b.producerIDs.allocate()
	if errors.Is(err, errProducerIDsExhausted) {
		select {
		case b.reregister <- struct{}{}:
		default:
		}
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return replyWith(resp), nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return replyWith(resp), nil
}
