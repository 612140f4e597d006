package ingest

// CreateTopics: v2-7
//
// Behavior:
//   - Each topic is validated (name, partitions, replication factor or manual
//     assignment, configs under Kafka's names with valid values) and created
//     through the metadata group; the answer comes once the topic is applied
//     on this broker.
//   - NumPartitions -1 is num.partitions; ReplicationFactor -1 is
//     default.replication.factor, or when that is unset 3 (with
//     min.insync.replicas 2 unless the request sets it) once three brokers
//     are registered, else 1 (topics.go).
//   - More replicas than live brokers is INVALID_REPLICATION_FACTOR; an
//     assignment naming an unregistered broker, or one twice, is
//     INVALID_REPLICA_ASSIGNMENT, validate-only requests included (the
//     state machine's own check, meta.State.Check).
//   - A topic that would take any broker past max.broker.partitions is
//     POLICY_VIOLATION, naming the broker, the count and the limit
//     (descriptors.go). KIP-578 proposed a RESOURCE_LIMIT_REACHED code for
//     this, but Kafka never added it; Kafka answers POLICY_VIOLATION to a
//     request creating too many partitions (KAFKA-17870).
//   - A config name Kafka does not have, or a bad value, is INVALID_CONFIG
//     and creates nothing.
//   - A topic named twice in one request is INVALID_REQUEST for each.
//   - ValidateOnly (v1+) checks everything and answers as if created, but
//     changes nothing.
//   - v5+ responses carry the partition count, replication factor and every
//     config with its source.
//
// Version notes:
//   - v2-4 differ only in throttling behaviour. v5: flexible, configs in the
//     response. v7: topic id in the response.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(2, 7, handleCreateTopics) }

func handleCreateTopics(ctx context.Context, b *Broker, r *request, req *kmsg.CreateTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	// Create on the cluster creates any topic; else Create on each.
	cluster := b.authorizeCluster(r, acl.OpCreate)
	for _, rt := range req.Topics {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic = rt.Topic
		var err error
		switch {
		case seen[rt.Topic] > 1:
			err = fmt.Errorf("%w: topic %q named more than once", ErrInvalidRequest, rt.Topic)
		case !cluster && !b.authorize(r, acl.OpCreate, acl.Topic, rt.Topic):
			err = ErrTopicAuthorization
		default:
			err = createOneTopic(ctx, b, req, rt, &t)
		}
		if err != nil {
			t.ErrorCode = errorCode(err)
			t.ErrorMessage = errorMessage(err)
			t.NumPartitions, t.ReplicationFactor = -1, -1
			b.metrics.partitionErrors.WithLabelValues("CreateTopics", kerr.ErrorForCode(t.ErrorCode).Error()).Inc()
		}
		resp.Topics = append(resp.Topics, t)
	}
	return replyWith(resp), nil
}

// createOneTopic creates rt and fills the success fields of t.
func createOneTopic(ctx context.Context, b *Broker, req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, t *kmsg.CreateTopicsResponseTopic) error {
	spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, replicationFactor: rt.ReplicationFactor, configs: map[string]string{}}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return fmt.Errorf("%w: give either a replica assignment or a partition count and replication factor", ErrInvalidRequest)
		}
		spec.assignment = make([][]int32, len(rt.ReplicaAssignment))
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) {
				return fmt.Errorf("%w: replica assignment for partition %d out of order", ErrInvalidRequest, a.Partition)
			}
			spec.assignment[i] = a.Replicas
		}
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return fmt.Errorf("%w: config %q has a null value", ErrInvalidRequest, c.Name)
		}
		spec.configs[c.Name] = *c.Value
	}
	topic, assignment, err := b.createTopic(ctx, spec, req.ValidateOnly)
	if err != nil {
		return err
	}
	t.TopicID = topic.ID
	t.NumPartitions = int32(len(assignment))
	t.ReplicationFactor = int16(len(assignment[0]))
	for _, e := range topicConfigEntries(topic) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		value := e.value
		c.Name, c.Value, c.Source = e.name, &value, int8(e.source)
		t.Configs = append(t.Configs, c)
	}
	return nil
}

// requestTimeout bounds ctx by a request's timeout field, when positive.
func requestTimeout(ctx context.Context, millis int32) (context.Context, context.CancelFunc) {
	if millis <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, msDuration(millis))
}
