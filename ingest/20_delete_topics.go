package ingest

// DeleteTopics: v1-6
//
// Behavior:
//   - Each topic is deleted through the metadata group; its partitions stop
//     being served and their directories are removed once the deletion is
//     applied on this broker. Its objects in the bucket are deleted then
//     too, by each broker that held a replica (offload.Manager.Purge).
//   - __consumer_offsets, by name or id, is INVALID_TOPIC_EXCEPTION: the
//     internal topic is the brokers' own (internal_topic.go).
//   - An unknown name is UNKNOWN_TOPIC_OR_PARTITION; an unknown id (v6+) is
//     UNKNOWN_TOPIC_ID; a v6 entry with both a name and an id is
//     INVALID_REQUEST.
//
// Version notes:
//   - v1-3 differ only in throttling behaviour. v4: flexible. v5: error
//     messages. v6: topics by name or id.

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(1, 6, handleDeleteTopics) }

func handleDeleteTopics(ctx context.Context, b *Broker, r *request, req *kmsg.DeleteTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	targets := req.Topics
	if req.Version < 6 {
		targets = nil
		for _, name := range req.TopicNames {
			targets = append(targets, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
	}
	for _, target := range targets {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID = target.Topic, target.TopicID
		topic, err := deleteOneTopic(ctx, b, r, target)
		if err != nil {
			t.ErrorCode = errorCode(err)
			t.ErrorMessage = errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("DeleteTopics", kerr.ErrorForCode(t.ErrorCode).Error()).Inc()
		} else {
			name := topic.Name
			t.Topic, t.TopicID = &name, topic.ID
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}

func deleteOneTopic(ctx context.Context, b *Broker, r *request, target kmsg.DeleteTopicsRequestTopic) (meta.Topic, error) {
	st := b.meta.State()
	var topic meta.Topic
	var err error
	switch {
	case target.Topic != nil && target.TopicID != uuid.Nil:
		return meta.Topic{}, fmt.Errorf("%w: give a topic name or an id, not both", ErrInvalidRequest)
	case target.Topic != nil && isInternalTopic(*target.Topic), target.Topic == nil && target.TopicID == consumerOffsetsTopicID(st.ClusterID()):
		return meta.Topic{}, fmt.Errorf("%w: Topic %s is an internal topic and cannot be deleted", ErrInternalTopic, meta.ConsumerOffsetsTopic)
	case target.Topic != nil:
		if !b.authorize(r, acl.OpDelete, acl.Topic, *target.Topic) {
			return meta.Topic{}, ErrTopicAuthorization
		}
		topic, err = topicByName(st, *target.Topic)
	default:
		topic, err = topicByID(st, target.TopicID)
		if err == nil && !b.authorize(r, acl.OpDelete, acl.Topic, topic.Name) {
			return meta.Topic{}, ErrTopicAuthorization
		}
	}
	if err != nil {
		return meta.Topic{}, err
	}
	if _, err := b.meta.Propose(ctx, &meta.DeleteTopic{Name: topic.Name, ID: topic.ID}); err != nil {
		return meta.Topic{}, err
	}
	b.log.Info("deleted topic", "topic", topic.Name, "id", topic.ID)
	return topic, nil
}
