package ingest

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
)

// defaultReplication is the replication factor of a topic created without
// one: default.replication.factor when set. Unset, a cluster of at least
// three registered brokers gives 3 replicas and, unless the topic sets
// it, min.insync.replicas 2, so an acknowledged write survives the loss of
// any one broker and the partition still takes writes meanwhile; a smaller
// cluster gives 1. Departure: Kafka's default is 1 replica everywhere,
// which on a cluster loses acknowledged writes with a single disk.
func (b *Broker) defaultReplication(st *meta.State, configs map[string]string) (int16, map[string]string) {
	if b.config.DefaultReplicationFactor > 0 {
		return int16(b.config.DefaultReplicationFactor), configs
	}
	if len(st.Brokers()) < 3 {
		return 1, configs
	}
	if _, set := configs["min.insync.replicas"]; !set {
		configs = maps.Clone(configs)
		if configs == nil {
			configs = map[string]string{}
		}
		configs["min.insync.replicas"] = "2"
	}
	return 3, configs
}

// topicOpenWait bounds how long a topic creation waits for this broker to
// open the new partitions before answering; past it, clients retry on
// NOT_LEADER_OR_FOLLOWER as usual.
const topicOpenWait = 10 * time.Second

// maxTopicPartitions is the most partitions one topic may have; the
// metadata group refuses more, and the broker checks before building an
// assignment that large.
const maxTopicPartitions = 1 << 16

// topicSpec is a topic to create, as CreateTopics, auto-creation and the
// tests describe one.
type topicSpec struct {
	name              string
	partitions        int32 // -1: Config.DefaultPartitions
	replicationFactor int16 // -1: the default (defaultReplication)
	// assignment, when set, gives each partition's replicas and overrides
	// partitions and replicationFactor.
	assignment [][]int32
	configs    map[string]string
}

// createTopic validates spec and, unless validateOnly, proposes it to the
// metadata group. It returns the topic as created (or as it would be).
func (b *Broker) createTopic(ctx context.Context, spec topicSpec, validateOnly bool) (meta.Topic, [][]int32, error) {
	st := b.meta.State()
	if err := validateTopicName(st, spec.name); err != nil {
		return meta.Topic{}, nil, err
	}
	if _, exists := st.Topic(spec.name); exists {
		return meta.Topic{}, nil, fmt.Errorf("%w: %q", meta.ErrTopicExists, spec.name)
	}
	configs, err := meta.ValidateTopicConfigs(spec.configs)
	if err != nil {
		return meta.Topic{}, nil, err
	}
	if err := meta.CheckClientTopicConfigs(configs); err != nil {
		return meta.Topic{}, nil, err
	}
	if err := b.checkCompaction(configs); err != nil {
		return meta.Topic{}, nil, err
	}
	assignment := spec.assignment
	if assignment == nil {
		partitions, factor := spec.partitions, spec.replicationFactor
		if partitions == -1 {
			partitions = b.config.DefaultPartitions
		}
		if factor == -1 {
			factor, configs = b.defaultReplication(st, configs)
		}
		if partitions < 1 || partitions > maxTopicPartitions {
			return meta.Topic{}, nil, fmt.Errorf("%w: %d partitions (1 to %d)", meta.ErrInvalidPartitions, partitions, maxTopicPartitions)
		}
		if assignment, err = b.assignReplicas(st, partitions, factor); err != nil {
			return meta.Topic{}, nil, err
		}
	}
	if err := b.checkPartitionLimit(st, assignment); err != nil {
		return meta.Topic{}, nil, err
	}
	cmd := &meta.CreateTopic{ID: uuid.New(), Name: spec.name, Replicas: assignment, Configs: configs}
	topic := meta.Topic{ID: cmd.ID, Name: spec.name, Partitions: int32(len(assignment)), Configs: maps.Clone(configs)}
	if validateOnly {
		return topic, assignment, st.Check(cmd)
	}
	result, err := b.meta.Propose(ctx, cmd)
	if err != nil {
		return meta.Topic{}, nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, topicOpenWait)
	defer cancel()
	b.partitions.WaitReconciled(waitCtx, result.Index)
	b.log.Info("created topic", "topic", spec.name, "id", cmd.ID, "partitions", len(assignment))
	return topic, assignment, nil
}

// validateTopicName applies the metadata group's rules for a new topic's
// name (meta.State.CheckNewTopicName: Kafka's legal names, not the
// internal topic, no collision once '.' reads as '_') before a proposal, so
// validate-only requests, which never reach the state machine, get the same
// answer as real ones. The state machine checks again: two concurrent
// creates cannot both pass.
func validateTopicName(st *meta.State, name string) error {
	return st.CheckNewTopicName(name)
}

// autoCreate creates topic name with the broker defaults when
// auto.create.topics.enable is on; otherwise it reports the topic unknown.
func (b *Broker) autoCreate(ctx context.Context, name string) (meta.Topic, error) {
	if !b.config.AutoCreateTopics {
		return meta.Topic{}, fmt.Errorf("%w: topic %q", ErrUnknownTopic, name)
	}
	topic, _, err := b.createTopic(ctx, topicSpec{name: name, partitions: -1, replicationFactor: -1}, false)
	if err == nil {
		return topic, nil
	}
	// A concurrent request may have created it first.
	if t, ok := b.meta.State().Topic(name); ok {
		return t, nil
	}
	return meta.Topic{}, err
}

// checkCompaction refuses a compacted topic when this broker does not
// compact (log.cleaner.enable=false): the setting would be ignored.
func (b *Broker) checkCompaction(configs map[string]string) error {
	if !b.cleans && meta.Compacted(configs) {
		return fmt.Errorf("%w: cleanup.policy=%s needs the log cleaner, and this broker runs with log.cleaner.enable=false", meta.ErrInvalidConfig, configs["cleanup.policy"])
	}
	return nil
}
