package ingest

// Metadata: v0-12
//
// Behavior:
//   - Brokers are the registered, unfenced brokers with their Kafka
//     listener. ControllerID is this broker: it forwards every metadata
//     change to the Raft leader, so clients may send admin requests to any
//     broker.
//   - A null topic list (v1+), or an empty one at v0, asks for every topic.
//   - An unknown topic is UNKNOWN_TOPIC_OR_PARTITION, unless
//     auto.create.topics.enable is on and the request allows it (v4+; always
//     at v0-3), in which case it is created with num.partitions partitions.
//   - A topic named twice is answered once, as Kafka answers the set.
//   - v10+: a topic may be asked for by id alone; an unknown id is
//     UNKNOWN_TOPIC_ID.
//   - A partition whose leader is fenced or absent reports leader -1 and
//     LEADER_NOT_AVAILABLE; so does one this broker leads but has not
//     opened yet (just created, or failed to open), so that a client sends
//     its first produce only once the partition can take it. A partition
//     another broker leads is reported as the metadata says: this broker
//     cannot see whether that broker has opened it.
//   - __consumer_offsets is listed as an internal topic (internal_topic.go)
//     in every all-topics answer and when asked for; it is never
//     auto-created.
//   - Authorized operations are not computed (there are no ACLs): reported as
//     Kafka reports "not requested", -2147483648.
//
// Version notes:
//   - v1: ControllerID, IsInternal, null topics means all.
//   - v2: ClusterID. v4: AllowAutoTopicCreation. v5: OfflineReplicas.
//   - v7: LeaderEpoch. v8: authorized operations. v9: flexible.
//   - v10: TopicID. v11: cluster authorized operations removed.
//   - v13 (top-level error code, KIP-1102) is not answered.

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 12, handleMetadata) }

// authorizedOperationsNotRequested is Kafka's "not computed" value.
const authorizedOperationsNotRequested = -2147483648

func handleMetadata(ctx context.Context, b *Broker, r *request, req *kmsg.MetadataRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	st := b.meta.State()
	clusterID := st.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = b.config.BrokerID
	resp.AuthorizedOperations = authorizedOperationsNotRequested
	for _, broker := range liveBrokers(st) {
		host, port, ok := brokerEndpoint(broker, r.listenerName())
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = broker.ID, host, port
		if broker.Rack != "" {
			rack := broker.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}

	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	describable := func(name string) bool { return b.authorize(r, acl.OpDescribe, acl.Topic, name) }
	if allTopics {
		// Only the topics the principal may describe, as Kafka lists them.
		for _, t := range st.Topics() {
			if isInternalTopic(t.Name) || !describable(t.Name) {
				continue // an internal name: created by a user before the name was refused
			}
			resp.Topics = append(resp.Topics, b.metadataTopic(st, t))
		}
		if describable(meta.ConsumerOffsetsTopic) {
			resp.Topics = insertInternalTopic(resp.Topics, st)
		}
		return replyWith(resp), nil
	}
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
	// A topic named again (by name, or by id without one) is answered
	// once, as Kafka answers the set of topics asked for: each answer
	// lists every partition, so a request naming one topic thousands of
	// times would otherwise build an answer a thousand times its size.
	byName, byID := make(map[string]bool), make(map[uuid.UUID]bool)
	for _, rt := range req.Topics {
		if rt.Topic != nil {
			if byName[*rt.Topic] {
				continue
			}
			byName[*rt.Topic] = true
		} else {
			if byID[rt.TopicID] {
				continue
			}
			byID[rt.TopicID] = true
		}
		var topic meta.Topic
		var err error
		switch {
		case (rt.Topic != nil && isInternalTopic(*rt.Topic) || rt.Topic == nil && rt.TopicID == consumerOffsetsTopicID(st.ClusterID())) && describable(meta.ConsumerOffsetsTopic):
			resp.Topics = append(resp.Topics, consumerOffsetsMetadata(st))
			continue
		case rt.Topic != nil && !describable(*rt.Topic):
			err = ErrTopicAuthorization
		case rt.Topic != nil:
			topic, err = topicByName(st, *rt.Topic)
			if errors.Is(err, ErrUnknownTopic) && autoCreate {
				if !b.authorizeCluster(r, acl.OpCreate) && !b.authorize(r, acl.OpCreate, acl.Topic, *rt.Topic) {
					err = ErrTopicAuthorization
					break
				}
				topic, err = b.autoCreate(ctx, *rt.Topic)
				st = b.meta.State()
			}
		case rt.TopicID != uuid.Nil:
			topic, err = topicByID(st, rt.TopicID)
			if err == nil && !describable(topic.Name) {
				err = ErrTopicAuthorization
			}
		default:
			err = ErrInvalidRequest
		}
		if err != nil {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			t.ErrorCode = errorCode(err)
			t.AuthorizedOperations = authorizedOperationsNotRequested
			b.metrics.partitionErrors.WithLabelValues("Metadata", kerr.ErrorForCode(t.ErrorCode).Error()).Inc()
			resp.Topics = append(resp.Topics, t)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(st, topic))
	}
	return replyWith(resp), nil
}

// metadataTopic describes one topic and its partitions as of st. A
// partition this broker leads but has not opened has no leader yet.
func (b *Broker) metadataTopic(st *meta.State, topic meta.Topic) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	name := topic.Name
	t.Topic, t.TopicID = &name, topic.ID
	t.AuthorizedOperations = authorizedOperationsNotRequested
	for _, p := range st.Partitions(topic.Name) {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p.Partition
		rp.Leader, rp.LeaderEpoch = p.Leader, p.LeaderEpoch
		rp.Replicas = append([]int32{}, p.Replicas...)
		rp.ISR = append([]int32{}, p.ISR...)
		rp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if broker, ok := st.Broker(r); !ok || broker.Fenced {
				rp.OfflineReplicas = append(rp.OfflineReplicas, r)
			}
		}
		leader, ok := st.Broker(p.Leader)
		opened := true
		if p.Leader == b.config.BrokerID {
			_, err := b.partitions.Leader(st, topic.Name, p.Partition)
			opened = err == nil
		}
		if p.Leader == meta.NoLeader || !ok || leader.Fenced || !opened {
			rp.Leader = -1
			rp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		t.Partitions = append(t.Partitions, rp)
	}
	return t
}
