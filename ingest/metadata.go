package ingest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/placement"
)

// Metadata is the broker's window on the metadata group: the committed
// state, read locally without a round trip; proposals, which go to the Raft
// leader and return once applied on this node; and a stream of applied
// changes; and the heartbeats that keep this broker unfenced. *meta.Node
// provides it. This is the whole seam between ingest and meta.
type Metadata interface {
	State() *meta.State
	LinearizableState(ctx context.Context) (*meta.State, error)
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, error)
	Watch(opts meta.WatchOptions) *meta.Watch
	Heartbeat(ctx context.Context, brokerID int32, epoch int64) error
}

// topicByName finds a topic in st, or fails with ErrUnknownTopic.
func topicByName(st *meta.State, name string) (meta.Topic, error) {
	t, ok := st.Topic(name)
	if !ok {
		return meta.Topic{}, fmt.Errorf("%w: topic %q", ErrUnknownTopic, name)
	}
	return t, nil
}

// topicByID finds a topic by its id, or fails with ErrUnknownTopicID.
func topicByID(st *meta.State, id [16]byte) (meta.Topic, error) {
	t, ok := st.TopicByID(uuid.UUID(id))
	if !ok {
		return meta.Topic{}, fmt.Errorf("%w: %s", ErrUnknownTopicID, uuid.UUID(id))
	}
	return t, nil
}

// liveBrokers are the registered brokers that are not fenced, by id.
func liveBrokers(st *meta.State) []meta.Broker {
	return slices.DeleteFunc(st.Brokers(), func(b meta.Broker) bool { return b.Fenced })
}

// brokerEndpoint is a broker's Kafka address on the listener called
// listener, as Metadata reports it to a client that came in on that
// listener.
func brokerEndpoint(b meta.Broker, listener string) (host string, port int32, ok bool) {
	for _, l := range b.Listeners {
		if l.Name == listener {
			return l.Host, l.Port, true
		}
	}
	return "", 0, false
}

// listenerName is the listener req came in on.
func (r *request) listenerName() string {
	if r.session == nil {
		return defaultListenerName
	}
	return r.session.listener.Name
}

// defaultListenerName is the name of the embedded default listener.
const defaultListenerName = "PLAINTEXT"

// listenerFor describes a listener's advertised host:port (address) as a
// meta listener.
func listenerFor(l Listener, address string) (meta.Listener, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return meta.Listener{}, err
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return meta.Listener{}, fmt.Errorf("port %q of %q", portText, address)
	}
	return meta.Listener{Name: l.Name, Host: host, Port: int32(port), SecurityProtocol: string(l.Protocol)}, nil
}

// assignReplicas places partitions new partitions of replicationFactor
// replicas on the live brokers, leaving out draining ones while enough
// others are left (package placement): over racks first, then
// on the brokers that hold the fewest replicas and preferred leaderships
// across the cluster, so a newly added broker takes new partitions until
// it has its share.
func (b *Broker) assignReplicas(st *meta.State, partitions int32, replicationFactor int16) ([][]int32, error) {
	live := liveBrokers(st)
	if staying := slices.DeleteFunc(slices.Clone(live), func(m meta.Broker) bool { return m.Draining }); len(staying) >= int(replicationFactor) {
		live = staying
	}
	if replicationFactor < 1 || int(replicationFactor) > len(live) {
		return nil, fmt.Errorf("%w: %d replicas with %d live brokers", ErrInvalidReplicationFactor, replicationFactor, len(live))
	}
	brokers := make([]placement.Broker, len(live))
	for i, m := range live {
		brokers[i] = placement.Broker{ID: m.ID, Rack: m.Rack}
	}
	// Refused before placing, so a request for far too many partitions
	// costs no placement (checkPartitionLimit checks each broker after).
	replicas, leaders := brokerLoad(st)
	room := 0
	for _, broker := range brokers {
		room += max(b.maxPartitions-replicas[broker.ID], 0)
	}
	if need := int(partitions) * int(replicationFactor); need > room {
		if len(brokers) == 1 {
			return nil, b.partitionLimitError(int(partitions), brokers[0].ID, replicas[brokers[0].ID], need)
		}
		return nil, fmt.Errorf("%w: %d partitions of %d replicas need %d places, past max.broker.partitions %d on the live brokers (room for %d): create fewer partitions, add brokers, or raise the descriptor limit",
			ErrPartitionLimit, partitions, replicationFactor, need, b.maxPartitions, room)
	}
	return placement.Place(brokers, int(partitions), int(replicationFactor), replicas, leaders)
}
