package ingest

// FindCoordinator: v0-5
//
// Behavior:
//   - A group's coordinator is group.ChooseCoordinator over the live
//     brokers: on a single node, this broker for every group.
//   - Transaction coordinators (key type 1) are
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are not
//     implemented. Other key types are INVALID_REQUEST.
//   - An empty group id is INVALID_REQUEST; no live broker with a Kafka
//     listener is COORDINATOR_NOT_AVAILABLE.
//
// Version notes:
//   - v1: key type, error message. v3: flexible. v4: several keys per
//     request (batched), answered per key in Coordinators.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/group"
)

func init() { register(0, 5, handleFindCoordinator) }

func handleFindCoordinator(_ context.Context, b *Broker, r *request, req *kmsg.FindCoordinatorRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		id, host, port, err := findCoordinator(b, req.CoordinatorType, key, r.listenerName())
		if err == nil && !b.authorize(r, acl.OpDescribe, acl.Group, key) {
			err = ErrGroupAuthorization
		}
		if err != nil {
			c.NodeID, c.Port = -1, -1
			c.ErrorCode = errorCode(err)
			c.ErrorMessage = errorMessage(err)
		} else {
			c.NodeID, c.Host, c.Port = id, host, port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return replyWith(resp), nil
}

// findCoordinator returns the coordinator of a key and its address on
// listener; with listener "" only its id.
func findCoordinator(b *Broker, keyType int8, key, listener string) (int32, string, int32, error) {
	switch {
	case keyType == 1:
		return 0, "", 0, ErrTransactionsUnsupported
	case keyType != 0:
		return 0, "", 0, fmt.Errorf("%w: coordinator key type %d", ErrInvalidRequest, keyType)
	case key == "":
		return 0, "", 0, fmt.Errorf("%w: empty group id", ErrInvalidRequest)
	}
	brokers := liveBrokers(b.meta.State())
	ids := make([]int32, len(brokers))
	for i, br := range brokers {
		ids[i] = br.ID
	}
	if len(ids) == 0 {
		return 0, "", 0, ErrCoordinatorNotAvailable
	}
	id := group.ChooseCoordinator(key, ids)
	if listener == "" {
		return id, "", 0, nil
	}
	for _, br := range brokers {
		if br.ID == id {
			if host, port, ok := brokerEndpoint(br, listener); ok {
				return id, host, port, nil
			}
		}
	}
	return 0, "", 0, ErrCoordinatorNotAvailable
}

// coordinates returns ErrNotCoordinator unless this broker coordinates
// groupID. Every group request checks it first, so a client that found an
// old coordinator looks again. An empty group id is left to the
// coordinator, which answers INVALID_GROUP_ID. A broker whose leadership
// lease lapsed coordinates nothing, as it leads nothing: cut off from the
// metadata group, it would go on answering its members' heartbeats from
// a view in which it still coordinates their group, while the controller
// fences it and the members that reach another broker form the group
// again there, with the same partitions.
func coordinates(b *Broker, groupID string) error {
	if groupID == "" {
		return nil
	}
	if err := b.lease(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotCoordinator, err)
	}
	id, _, _, err := findCoordinator(b, 0, groupID, "")
	if err != nil {
		return err
	}
	if id != b.config.BrokerID {
		return fmt.Errorf("%w: broker %d coordinates group %q", ErrNotCoordinator, id, groupID)
	}
	return nil
}

// groupAccess checks that r's principal may perform op on the group
// (GROUP_AUTHORIZATION_FAILED), then that this broker coordinates it.
func (b *Broker) groupAccess(r *request, op acl.Operation, groupID string) error {
	if !b.authorize(r, op, acl.Group, groupID) {
		return ErrGroupAuthorization
	}
	return coordinates(b, groupID)
}
