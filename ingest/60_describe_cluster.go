package ingest

// DescribeCluster: v0-2
//
// Behavior:
//   - The cluster id, this broker as controller (it forwards metadata changes
//     to the Raft leader) and the registered brokers with their Kafka
//     listener. Fenced brokers are listed only when asked (v2+), marked;
//     unregistered ones never.
//   - EndpointType (v1+) 1, brokers, is the only kind answered; 2
//     (controllers) gets UNSUPPORTED_ENDPOINT_TYPE, as a broker does.
//   - Authorized operations are not computed: -2147483648.
//
// Version notes:
//   - v1: EndpointType. v2: IncludeFencedBrokers and IsFenced.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(0, 2, handleDescribeCluster) }

// endpointTypeBrokers is DescribeCluster's EndpointType for brokers.
const endpointTypeBrokers = 1

func handleDescribeCluster(_ context.Context, b *Broker, r *request, req *kmsg.DescribeClusterRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterAuthorizedOperations = authorizedOperationsNotRequested
	resp.EndpointType = endpointTypeBrokers
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.EndpointType = req.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return replyWith(resp), nil
	}
	st := b.meta.State()
	resp.ClusterID = st.ClusterID()
	resp.ControllerID = b.config.BrokerID
	for _, broker := range st.Brokers() {
		if broker.Unregistered || (broker.Fenced && !req.IncludeFencedBrokers) {
			continue
		}
		host, port, ok := brokerEndpoint(broker, r.listenerName())
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.IsFenced = broker.ID, host, port, broker.Fenced
		if broker.Rack != "" {
			rack := broker.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return replyWith(resp), nil
}
