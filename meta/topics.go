package meta

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Topics and their partitions: CreateTopic, DeleteTopic, AlterTopicConfigs,
// AlterPartition and CreatePartitions.

func init() {
	registerCommand(cmdCreateTopic, "CreateTopic", 1, (*CreateTopic).apply)
	registerCommand(cmdDeleteTopic, "DeleteTopic", 1, (*DeleteTopic).apply)
	registerCommand(cmdAlterTopicConfigs, "AlterTopicConfigs", 1, (*AlterTopicConfigs).apply)
	registerCommand(cmdAlterPartition, "AlterPartition", 1, (*AlterPartition).apply)
	registerCommand(cmdCreatePartitions, "CreatePartitions", 1, (*CreatePartitions).apply)
}

// Limits on topics.
const (
	maxTopicNameLength   = 249
	maxPartitionsCreated = 1 << 16
)

// CreateTopic creates a topic with one partition per entry of Replicas. The
// proposer chooses the id (uuid.New()) and the assignment; every replica
// list has the same length, no repeats, and registered brokers only. Each
// partition starts with the unfenced replicas as its ISR and the first of
// them as leader, at leader and partition epoch 0.
type CreateTopic struct {
	ID       uuid.UUID         `json:"id"`
	Name     string            `json:"name"`
	Replicas [][]int32         `json:"replicas"`
	Configs  map[string]string `json:"configs,omitempty"`
}

func (CreateTopic) commandType() CommandType { return cmdCreateTopic }

func (c *CreateTopic) apply(tx *txn) (int64, error) {
	if err := validTopicName(c.Name); err != nil {
		return 0, err
	}
	if c.ID == uuid.Nil {
		return 0, fmt.Errorf("%w: topic %q has no id", ErrInvalidCommand, c.Name)
	}
	if _, ok := tx.topic(c.Name); ok {
		return 0, fmt.Errorf("%w: %q", ErrTopicExists, c.Name)
	}
	if err := tx.st.CheckNewTopicName(c.Name); err != nil {
		return 0, err
	}
	if name, ok := tx.st.topicIDs.Get(c.ID[:]); ok {
		return 0, fmt.Errorf("%w: id %s is topic %q's", ErrTopicExists, c.ID, name)
	}
	if len(c.Replicas) == 0 || len(c.Replicas) > maxPartitionsCreated {
		return 0, fmt.Errorf("%w: %d partitions for %q (1 to %d)", ErrInvalidPartitions, len(c.Replicas), c.Name, maxPartitionsCreated)
	}
	configs, err := ValidateTopicConfigs(c.Configs)
	if err != nil {
		return 0, err
	}
	partitions := make([]*Partition, len(c.Replicas))
	for i, replicas := range c.Replicas {
		if partitions[i], err = newPartition(tx, c.Name, int32(i), replicas, len(c.Replicas[0])); err != nil {
			return 0, err
		}
	}
	tx.putTopic(&Topic{ID: c.ID, Name: c.Name, Partitions: int32(len(c.Replicas)), Configs: configs})
	for _, p := range partitions {
		tx.putPartition(p)
	}
	return 0, nil
}

// newPartition checks a new partition's replica list and returns the
// partition as it starts: the unfenced replicas as its ISR, the first of
// them as leader, leader and partition epochs 0.
func newPartition(tx *txn, topic string, index int32, replicas []int32, factor int) (*Partition, error) {
	if err := checkReplicas(tx, replicas, factor); err != nil {
		return nil, fmt.Errorf("%w (partition %d)", err, index)
	}
	p := &Partition{Topic: topic, Partition: index, Replicas: slices.Clone(replicas), Leader: NoLeader}
	for _, r := range replicas {
		if b, _ := tx.broker(r); !b.Fenced {
			p.ISR = append(p.ISR, r)
		}
	}
	if len(p.ISR) == 0 {
		return nil, fmt.Errorf("%w: every replica of partition %d is fenced", ErrInvalidReplicaAssignment, index)
	}
	p.Leader = p.ISR[0]
	return p, nil
}

// checkReplicas checks one partition's replica list.
func checkReplicas(tx *txn, replicas []int32, factor int) error {
	if len(replicas) == 0 || len(replicas) != factor {
		return fmt.Errorf("%w: %d replicas where the first partition has %d", ErrInvalidReplicaAssignment, len(replicas), factor)
	}
	for i, r := range replicas {
		if slices.Contains(replicas[:i], r) {
			return fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, r)
		}
		if _, ok := tx.broker(r); !ok {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// validTopicName applies Kafka's rule: 1 to 249 characters from
// [a-zA-Z0-9._-], and not "." or "..".
func validTopicName(name string) error {
	if reason := TopicNameProblem(name); reason != "" {
		return fmt.Errorf("%w: %s", ErrInvalidTopicName, reason)
	}
	return nil
}

// TopicNameProblem says what makes name illegal as a topic name under
// Kafka's rule (Topic.validate: 1 to 249 ASCII letters, digits, '.', '_'
// and '-', and not "." or ".."), or "" when it is legal. The broker and
// the CLI both ask it, so the rule and its words are in one place.
func TopicNameProblem(name string) string {
	shown := name
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	switch {
	case name == "":
		return "topic name is empty"
	case name == "." || name == "..":
		return fmt.Sprintf("topic name %q is not allowed", name)
	case len(name) > maxTopicNameLength:
		return fmt.Sprintf("topic name %q is %d characters long: at most %d", shown, len(name), maxTopicNameLength)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("topic name %q has %q at byte %d", shown, r, i)
		}
	}
	return ""
}

// ConsumerOffsetsTopic is Kafka's internal topic of committed offsets. The
// brokers answer for it themselves (Metadata lists it as internal); it is
// never a topic in this state, and CreateTopic refuses the name as a topic
// that exists, as Kafka does.
const ConsumerOffsetsTopic = "__consumer_offsets"

// CheckNewTopicName applies, against s, every rule the name of a topic to
// create must pass besides not existing yet: Kafka's legal names
// (ErrInvalidTopicName), not the internal topic (ErrTopicExists), and no
// collision with an existing topic once '.' is read as '_', since both map
// to the same metric names (ErrInvalidTopicName, with Kafka's message).
// CreateTopic applies it in the state machine, so two concurrent creates of
// "a.b" and "a_b" cannot both pass; brokers apply it early for
// validate-only requests.
func (s *State) CheckNewTopicName(name string) error {
	if err := validTopicName(name); err != nil {
		return err
	}
	if name == ConsumerOffsetsTopic {
		return fmt.Errorf("%w: topic '%s' already exists (it is the internal topic of committed offsets)", ErrTopicExists, name)
	}
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	normalized := collisionName(name)
	var colliding string
	s.topics.Root().Walk(func(_ []byte, t *Topic) bool {
		if t.Name != name && collisionName(t.Name) == normalized {
			colliding = t.Name
			return true
		}
		return false
	})
	if colliding != "" {
		return fmt.Errorf("%w: Topic '%s' collides with existing topic: %s", ErrInvalidTopicName, name, colliding)
	}
	return nil
}

// collisionName is a topic name with '.' read as '_', as Kafka compares
// names for collisions.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// lookupTopic finds a topic by name and, when id is not nil, checks it.
func lookupTopic(tx *txn, name string, id uuid.UUID) (*Topic, error) {
	t, ok := tx.topic(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if id != uuid.Nil && id != t.ID {
		return nil, fmt.Errorf("%w: %q is %s, not %s", ErrTopicIDMismatch, name, t.ID, id)
	}
	return t, nil
}

// lookupPartition returns a partition of a topic found by lookupTopic, or
// ErrUnknownPartition.
func lookupPartition(tx *txn, topic string, id uuid.UUID, partition int32) (*Partition, error) {
	if _, err := lookupTopic(tx, topic, id); err != nil {
		return nil, err
	}
	p, ok := tx.partition(topic, partition)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, partition)
	}
	return p, nil
}

// DeleteTopic deletes a topic with its partitions, manifests and the
// committed offsets of every group on it. The remote objects it named are
// left to the orphan sweep. A non-nil ID must match the topic's.
type DeleteTopic struct {
	Name string    `json:"name"`
	ID   uuid.UUID `json:"id"`
}

func (DeleteTopic) commandType() CommandType { return cmdDeleteTopic }

func (c *DeleteTopic) apply(tx *txn) (int64, error) {
	t, err := lookupTopic(tx, c.Name, c.ID)
	if err != nil {
		return 0, err
	}
	tx.st.topics, _, _ = tx.st.topics.Delete(topicKey(t.Name))
	tx.st.topicIDs, _, _ = tx.st.topicIDs.Delete(t.ID[:])
	tx.st.partitions, _ = tx.st.partitions.DeletePrefix(partitionPrefix(t.Name))
	tx.st.manifests, _ = tx.st.manifests.DeletePrefix(partitionPrefix(t.Name))
	tx.changed(Change{Kind: ChangeTopic, Topic: t.Name})
	var gone []*CommittedOffset
	tx.st.offsets.Root().Walk(func(_ []byte, o *CommittedOffset) bool {
		if o.Topic == t.Name {
			gone = append(gone, o)
		}
		return false
	})
	for i, o := range gone {
		tx.st.offsets, _, _ = tx.st.offsets.Delete(offsetKey(o.Group, o.Topic, o.Partition))
		if i == 0 || gone[i-1].Group != o.Group {
			tx.changed(Change{Kind: ChangeOffsets, Group: o.Group})
		}
	}
	return 0, nil
}

// AlterTopicConfigs sets and deletes (returns to default) explicit topic
// configs, as Kafka's IncrementalAlterConfigs does. The resulting set is
// validated as a whole.
type AlterTopicConfigs struct {
	Name   string            `json:"name"`
	ID     uuid.UUID         `json:"id"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

func (AlterTopicConfigs) commandType() CommandType { return cmdAlterTopicConfigs }

func (c *AlterTopicConfigs) apply(tx *txn) (int64, error) {
	t, err := lookupTopic(tx, c.Name, c.ID)
	if err != nil {
		return 0, err
	}
	next := t.clone()
	if next.Configs == nil {
		next.Configs = make(map[string]string)
	}
	for _, name := range c.Delete {
		if _, ok := LookupTopicConfig(name); !ok {
			return 0, fmt.Errorf("%w: unknown config %q", ErrInvalidConfig, name)
		}
		if _, ok := c.Set[name]; ok {
			return 0, fmt.Errorf("%w: config %q both set and deleted", ErrInvalidConfig, name)
		}
		delete(next.Configs, name)
	}
	for name, value := range c.Set {
		next.Configs[name] = value
	}
	if next.Configs, err = ValidateTopicConfigs(next.Configs); err != nil {
		return 0, err
	}
	if err := CheckTopicConfigChange(&tx.st, *t, next.Configs); err != nil {
		return 0, err
	}
	tx.putTopic(&next)
	return 0, nil
}

// CheckClientTopicConfigChange is CheckTopicConfigChange's rule for
// remote.log.copy.disable, checked only where a client changes configs
// (see CheckClientTopicConfigs): copying turned off on a compacted topic
// whose bucket holds segments strands its tombstones in the hot log as
// turning tiering off would. next has passed ValidateTopicConfigs.
func CheckClientTopicConfigChange(st *State, t Topic, next map[string]string) error {
	if !Compacted(next) || !CopyDisabled(next) || !holdsTieredSegments(st, t.Name) {
		return nil
	}
	return fmt.Errorf("%w: topic %q is compacted and has segments in the bucket, so remote.log.copy.disable must stay false (the bucket's recompaction needs its tombstones); delete the topic to drop its tiered data", ErrInvalidConfig, t.Name)
}

// holdsTieredSegments reports whether the bucket holds segments of a
// partition of topic.
func holdsTieredSegments(st *State, topic string) bool {
	for _, p := range st.Partitions(topic) {
		if m, _ := st.Manifest(topic, p.Partition); m.HighestTieredOffset() >= 0 {
			return true
		}
	}
	return false
}

// CheckTopicConfigChange returns the error, if any, that a valid config
// change from t's configs to next does, in st: a compacted topic whose
// bucket holds segments turning remote.storage.enable off. Its tombstones
// must still reach the bucket, whose recompaction removes them with the
// older versions of their keys; kept in the hot log only, the cleaner
// there would drop them and those versions would come back. next has
// passed ValidateTopicConfigs.
func CheckTopicConfigChange(st *State, t Topic, next map[string]string) error {
	if !Compacted(next) || effectiveTopicConfig(next, "remote.storage.enable") == "true" || !holdsTieredSegments(st, t.Name) {
		return nil
	}
	return fmt.Errorf("%w: topic %q is compacted and has segments in the bucket, so remote.storage.enable must stay true (the bucket's recompaction needs its tombstones); delete the topic to drop its tiered data", ErrInvalidConfig, t.Name)
}

// AlterPartition sets a partition's leader and ISR, as Kafka's
// AlterPartition and leader elections do. PartitionEpoch must be the
// partition's current epoch (else ErrStalePartitionEpoch). The ISR must be
// non-empty replicas that are registered and unfenced, and the leader one of
// them or NoLeader (else ErrIneligibleReplica). A new leader bumps the leader
// epoch; any change bumps the partition epoch, which is Result.Epoch. A
// change to the current leader and ISR does nothing. An ISR that now holds
// every target of a reassignment in progress completes it.
type AlterPartition struct {
	Topic          string    `json:"topic"`
	TopicID        uuid.UUID `json:"topic_id"`
	Partition      int32     `json:"partition"`
	PartitionEpoch int32     `json:"partition_epoch"`
	Leader         int32     `json:"leader"`
	ISR            []int32   `json:"isr"`
}

func (AlterPartition) commandType() CommandType { return cmdAlterPartition }

func (c *AlterPartition) apply(tx *txn) (int64, error) {
	p, err := lookupPartition(tx, c.Topic, c.TopicID, c.Partition)
	if err != nil {
		return 0, err
	}
	if c.PartitionEpoch != p.PartitionEpoch {
		return 0, fmt.Errorf("%w: %s-%d is at %d, not %d", ErrStalePartitionEpoch, c.Topic, c.Partition, p.PartitionEpoch, c.PartitionEpoch)
	}
	if len(c.ISR) == 0 {
		return 0, fmt.Errorf("%w: empty ISR", ErrIneligibleReplica)
	}
	for i, r := range c.ISR {
		if slices.Contains(c.ISR[:i], r) {
			return 0, fmt.Errorf("%w: ISR lists %d twice", ErrInvalidCommand, r)
		}
		if !slices.Contains(p.Replicas, r) {
			return 0, fmt.Errorf("%w: %d is not a replica of %s-%d", ErrIneligibleReplica, r, c.Topic, c.Partition)
		}
		if b, ok := tx.broker(r); !ok || b.Fenced {
			return 0, fmt.Errorf("%w: broker %d is fenced or not registered", ErrIneligibleReplica, r)
		}
	}
	if c.Leader != NoLeader && !slices.Contains(c.ISR, c.Leader) {
		return 0, fmt.Errorf("%w: leader %d is not in the ISR", ErrIneligibleReplica, c.Leader)
	}
	if c.Leader == p.Leader && slices.Equal(c.ISR, p.ISR) {
		return int64(p.PartitionEpoch), nil
	}
	next := p.clone()
	next.Leader = c.Leader
	next.ISR = slices.Clone(c.ISR)
	completeReassignment(tx, &next)
	if len(next.ISR) == len(next.Replicas) {
		// Every replica has caught up with the leader's log since the
		// unclean election: none holds what it gave up any more.
		next.UncleanLeaderEpoch = 0
	}
	if next.Leader != p.Leader {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	tx.putPartition(&next)
	return int64(next.PartitionEpoch), nil
}

// CreatePartitions grows a topic to Count partitions, as Kafka's
// CreatePartitions does. Count must exceed the current count (else
// ErrInvalidPartitions). Replicas holds one replica list for each new
// partition, in order from the current count to Count-1; the proposer
// chooses them, as for CreateTopic, when the client gave none. Each list
// must be as long as the topic's replication factor (its first
// partition's target replica count), without repeats, on registered
// brokers only, not all fenced (else ErrInvalidReplicaAssignment). A
// non-nil TopicID must be the topic's. The new partitions start like
// CreateTopic's.
type CreatePartitions struct {
	Topic    string    `json:"topic"`
	TopicID  uuid.UUID `json:"topic_id"`
	Count    int32     `json:"count"`
	Replicas [][]int32 `json:"replicas"`
}

func (CreatePartitions) commandType() CommandType { return cmdCreatePartitions }

func (c *CreatePartitions) apply(tx *txn) (int64, error) {
	t, err := lookupTopic(tx, c.Topic, c.TopicID)
	if err != nil {
		return 0, err
	}
	switch {
	case c.Count == t.Partitions:
		return 0, fmt.Errorf("%w: topic %q already has %d partitions", ErrInvalidPartitions, c.Topic, t.Partitions)
	case c.Count < t.Partitions:
		return 0, fmt.Errorf("%w: topic %q has %d partitions; %d would not be an increase", ErrInvalidPartitions, c.Topic, t.Partitions, c.Count)
	case c.Count > maxPartitionsCreated:
		return 0, fmt.Errorf("%w: %d partitions for %q (at most %d)", ErrInvalidPartitions, c.Count, c.Topic, maxPartitionsCreated)
	}
	added := c.Count - t.Partitions
	if len(c.Replicas) != int(added) {
		return 0, fmt.Errorf("%w: adding %d partitions to %q, but %d replica lists were given", ErrInvalidReplicaAssignment, added, c.Topic, len(c.Replicas))
	}
	first, ok := tx.partition(c.Topic, 0)
	if !ok {
		panic(fmt.Sprintf("meta: topic %q has no partition 0", c.Topic))
	}
	partitions := make([]*Partition, added)
	for i, replicas := range c.Replicas {
		if partitions[i], err = newPartition(tx, c.Topic, t.Partitions+int32(i), replicas, len(first.TargetReplicas())); err != nil {
			return 0, err
		}
	}
	next := t.clone()
	next.Partitions = c.Count
	tx.putTopic(&next)
	for _, p := range partitions {
		tx.putPartition(p)
	}
	return 0, nil
}
