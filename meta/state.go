package meta

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/google/uuid"
	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/stratalog/strata/segmentobject"
)

// NoLeader is a partition's Leader when no replica leads it.
const NoLeader int32 = -1

// Listener is one of a broker's advertised endpoints, as in Kafka's broker
// registration.
type Listener struct {
	Name             string `json:"name"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"security_protocol"`
}

// Broker is a registered broker. Epoch is its incarnation epoch: a number
// handed out by registration, larger than every epoch handed out before, so
// a request carrying an older epoch comes from an earlier incarnation.
type Broker struct {
	ID        int32      `json:"id"`
	Epoch     int64      `json:"epoch"`
	Rack      string     `json:"rack,omitempty"`
	Listeners []Listener `json:"listeners"`
	Fenced    bool       `json:"fenced,omitempty"`
	// Draining marks a broker being emptied (DrainBroker): it is elected
	// leader only when no other replica can be, and takes no new replicas.
	// It outlives the broker's incarnations until undrained.
	Draining bool `json:"draining,omitempty"`
	// Unregistered marks a fenced broker removed for good
	// (UnregisterBroker): it is listed nowhere, and the metadata leader
	// removes it from the Raft group if it is a non-voter. Registering
	// again brings it back.
	Unregistered bool `json:"unregistered,omitempty"`
}

func (b *Broker) clone() Broker {
	c := *b
	c.Listeners = slices.Clone(b.Listeners)
	return c
}

// Topic is a topic: its id, name, partition count and the configs set on it
// explicitly (Kafka names, canonical values). Unset configs have their
// default; see Config.
type Topic struct {
	ID         uuid.UUID         `json:"id"`
	Name       string            `json:"name"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

func (t *Topic) clone() Topic {
	c := *t
	if t.Configs != nil {
		c.Configs = make(map[string]string, len(t.Configs))
		for k, v := range t.Configs {
			c.Configs[k] = v
		}
	}
	return c
}

// Config returns the topic's effective value of the named config: the
// explicit one, or the default. It reports false for unknown names.
func (t Topic) Config(name string) (string, bool) {
	if _, ok := LookupTopicConfig(name); !ok {
		return "", false
	}
	return effectiveTopicConfig(t.Configs, name), true
}

// Partition is one partition's replication state. LeaderEpoch grows each
// time the leader changes; PartitionEpoch grows on every change, and a
// change proposed against an older PartitionEpoch is refused. While a
// reassignment is in progress, Replicas holds the target replicas followed
// by those leaving, AddingReplicas the targets that were not replicas
// before, and RemovingReplicas those leaving (see ReassignPartition).
type Partition struct {
	Topic            string  `json:"topic"`
	Partition        int32   `json:"partition"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	Leader           int32   `json:"leader"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	PartitionEpoch   int32   `json:"partition_epoch"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// UncleanLeaderEpoch is the leader epoch of the partition's newest
	// unclean election (a leader from outside the ISR), 0 if it had none.
	// Records written at earlier epochs that only the old ISR held were
	// given up then: a replica that holds some may truncate them though
	// it counted them committed (below its high watermark), as a replica
	// never may after clean elections alone. Absent from the JSON when 0,
	// so that the state of a partition that never had one reads the same
	// on a release before this field. It is cleared (0) once the ISR holds
	// every replica again: each has then truncated to the log since.
	UncleanLeaderEpoch int32 `json:"unclean_leader_epoch,omitempty"`
}

func (p *Partition) clone() Partition {
	c := *p
	c.Replicas = slices.Clone(p.Replicas)
	c.ISR = slices.Clone(p.ISR)
	c.AddingReplicas = slices.Clone(p.AddingReplicas)
	c.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	return c
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is the replica list p has once its reassignment (if
// any) completes: Replicas without RemovingReplicas.
func (p Partition) TargetReplicas() []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// SegmentState is where a remote segment is in its life:
// copying -> committed -> deleting -> (gone), or copying -> deleting for an
// abandoned upload.
type SegmentState uint8

// Segment states.
const (
	SegmentCopying SegmentState = iota + 1
	SegmentCommitted
	SegmentDeleting
)

var segmentStateNames = [...]string{SegmentCopying: "copying", SegmentCommitted: "committed", SegmentDeleting: "deleting"}

func (s SegmentState) String() string {
	if s >= SegmentCopying && s <= SegmentDeleting {
		return segmentStateNames[s]
	}
	return fmt.Sprintf("SegmentState(%d)", uint8(s))
}

// MarshalText encodes the state by name.
func (s SegmentState) MarshalText() ([]byte, error) {
	if s < SegmentCopying || s > SegmentDeleting {
		return nil, fmt.Errorf("meta: invalid segment state %d", uint8(s))
	}
	return []byte(segmentStateNames[s]), nil
}

// UnmarshalText decodes a state name.
func (s *SegmentState) UnmarshalText(text []byte) error {
	for i := SegmentCopying; i <= SegmentDeleting; i++ {
		if string(text) == segmentStateNames[i] {
			*s = i
			return nil
		}
	}
	return fmt.Errorf("meta: invalid segment state %q", text)
}

// EpochEntry says that leader epoch Epoch starts at StartOffset. It is
// segmentobject's entry, the one type of the segment objects' epochs
// sections, the bucket manifest and meta; this name stays for the callers
// that build commands with it.
type EpochEntry = segmentobject.EpochEntry

// RemoteSegment is one segment object in the bucket, with where the upload
// protocol has it. Offsets are inclusive: the segment holds BaseOffset
// through EndOffset. LeaderEpochs are the leader epochs of the records in
// it, the first starting at BaseOffset. Manifest.Committed gives the
// committed ones in the bucket manifest's terms (ObjectKey is Key there,
// SizeBytes LogBytes).
type RemoteSegment struct {
	ID           uuid.UUID                  `json:"id"`
	State        SegmentState               `json:"state"`
	BaseOffset   int64                      `json:"base_offset"`
	EndOffset    int64                      `json:"end_offset"`
	MaxTimestamp int64                      `json:"max_timestamp"`
	SizeBytes    int64                      `json:"size_bytes"`
	LeaderEpochs []segmentobject.EpochEntry `json:"leader_epochs"`
	ObjectKey    string                     `json:"object_key"`
	// Replaces, on a copying segment, names the committed segments it
	// replaces once committed (recompact.go); empty for an upload.
	Replaces []uuid.UUID `json:"replaces,omitempty"`
	// RetireAtMs, on a deleting segment that a replacement took the
	// place of, is when its object may be deleted (Unix milliseconds):
	// readers that found it before the swap have until then.
	RetireAtMs int64 `json:"retire_at_ms,omitempty"`
}

func (s RemoteSegment) overlaps(o RemoteSegment) bool {
	return s.BaseOffset <= o.EndOffset && o.BaseOffset <= s.EndOffset
}

// Manifest is a partition's remote segments, sorted by BaseOffset then ID,
// and its remote log start offset: no offset below it is served from the
// bucket. Committed segments never overlap; RemoteLogStartOffset never
// decreases.
type Manifest struct {
	Topic                string          `json:"topic"`
	Partition            int32           `json:"partition"`
	RemoteLogStartOffset int64           `json:"remote_log_start_offset"`
	Segments             []RemoteSegment `json:"segments"`
	// CleanedOffset is the remote cleaner's checkpoint on a compacted
	// topic: the committed segments below it were recompacted against
	// every key up to it (recompact.go).
	CleanedOffset int64 `json:"cleaned_offset,omitempty"`
}

func (m *Manifest) clone() Manifest {
	c := *m
	c.Segments = make([]RemoteSegment, len(m.Segments))
	for i, s := range m.Segments {
		s.LeaderEpochs = slices.Clone(s.LeaderEpochs)
		s.Replaces = slices.Clone(s.Replaces)
		c.Segments[i] = s
	}
	return c
}

// HighestTieredOffset is the end offset of the highest committed segment, or
// -1 when none is committed.
func (m Manifest) HighestTieredOffset() int64 {
	highest := int64(-1)
	for _, s := range m.Segments {
		if s.State == SegmentCommitted && s.EndOffset > highest {
			highest = s.EndOffset
		}
	}
	return highest
}

// Committed is m's committed, readable part as the one manifest type,
// what offload publishes into the bucket and remotefetch reads: the
// committed segments that end at or above the remote log start offset, in
// offset order. m's invariants make it valid (segmentobject's Validate).
// meta keeps no tail sizes, so every TailBytes is 0, and keys manifests by
// topic name, so TopicID is left for a caller that needs it (the Topic's
// ID). Its EpochsBelow is the leader-epoch history of the tiered offsets.
func (m Manifest) Committed() segmentobject.Manifest {
	out := segmentobject.Manifest{
		Version: segmentobject.ManifestVersion, Topic: m.Topic, Partition: m.Partition,
		LogStartOffset: m.RemoteLogStartOffset,
	}
	for _, s := range m.Segments {
		if s.State != SegmentCommitted || s.EndOffset < m.RemoteLogStartOffset {
			continue
		}
		out.Segments = append(out.Segments, segmentobject.ManifestSegment{
			ID: s.ID, Key: s.ObjectKey, BaseOffset: s.BaseOffset, EndOffset: s.EndOffset,
			MaxTimestamp: s.MaxTimestamp, LogBytes: s.SizeBytes, LeaderEpochs: slices.Clone(s.LeaderEpochs),
		})
	}
	return out
}

// Find returns the committed segment holding offset, if offset is at or
// above the remote log start offset and some committed segment holds it.
func (m Manifest) Find(offset int64) (RemoteSegment, bool) {
	if offset < m.RemoteLogStartOffset {
		return RemoteSegment{}, false
	}
	for _, s := range m.Segments {
		if s.State == SegmentCommitted && s.BaseOffset <= offset && offset <= s.EndOffset {
			return s, true
		}
	}
	return RemoteSegment{}, false
}

func (m *Manifest) segmentIndex(id uuid.UUID) int {
	return slices.IndexFunc(m.Segments, func(s RemoteSegment) bool { return s.ID == id })
}

// CommittedOffset is a consumer group's committed position in a partition.
type CommittedOffset struct {
	Group        string `json:"group"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Offset       int64  `json:"offset"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Metadata     string `json:"metadata,omitempty"`
	CommitTimeMs int64  `json:"commit_time_ms"`
}

// State is the metadata at one applied log index. A State never changes:
// applying commands makes a new one that shares what did not change, so a
// State can be read from any goroutine without locks, and everything read
// from one State is consistent. The accessors return copies.
type State struct {
	index           uint64
	clusterID       string
	nextBrokerEpoch int64
	brokers         *iradix.Tree[*Broker]
	topics          *iradix.Tree[*Topic]
	topicIDs        *iradix.Tree[string]
	partitions      *iradix.Tree[*Partition]
	manifests       *iradix.Tree[*Manifest]
	offsets         *iradix.Tree[*CommittedOffset]
	brokerConfigs   *iradix.Tree[*BrokerConfigs]
	clientQuotas    *iradix.Tree[*ClientQuota]
	credentials     *iradix.Tree[*UserCredential]
	acls            *iradix.Tree[*ACLResource]
	schemas         *iradix.Tree[*RegisteredSchema]
	subjects        *iradix.Tree[*Subject]
	registry        RegistryConfig

	// superseded is closed when a newer State is published.
	superseded chan struct{}
}

func newState() *State {
	return &State{
		nextBrokerEpoch: 1,
		brokers:         iradix.New[*Broker](),
		topics:          iradix.New[*Topic](),
		topicIDs:        iradix.New[string](),
		partitions:      iradix.New[*Partition](),
		manifests:       iradix.New[*Manifest](),
		offsets:         iradix.New[*CommittedOffset](),
		brokerConfigs:   iradix.New[*BrokerConfigs](),
		clientQuotas:    iradix.New[*ClientQuota](),
		credentials:     iradix.New[*UserCredential](),
		acls:            iradix.New[*ACLResource](),
		schemas:         iradix.New[*RegisteredSchema](),
		subjects:        iradix.New[*Subject](),
		superseded:      make(chan struct{}),
	}
}

// Index is the Raft index of the last command entry applied to this state.
func (s *State) Index() uint64 { return s.index }

// ClusterID is the cluster's id, set once by the first leader.
func (s *State) ClusterID() string { return s.clusterID }

// Broker returns the registered broker with the given id.
func (s *State) Broker(id int32) (Broker, bool) {
	b, ok := s.brokers.Get(brokerKey(id))
	if !ok {
		return Broker{}, false
	}
	return b.clone(), true
}

// Brokers returns every registered broker, by id.
func (s *State) Brokers() []Broker {
	var out []Broker
	s.brokers.Root().Walk(func(_ []byte, b *Broker) bool {
		out = append(out, b.clone())
		return false
	})
	return out
}

// Topic returns the named topic.
func (s *State) Topic(name string) (Topic, bool) {
	t, ok := s.topics.Get(topicKey(name))
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true
}

// TopicByID returns the topic with the given id.
func (s *State) TopicByID(id uuid.UUID) (Topic, bool) {
	name, ok := s.topicIDs.Get(id[:])
	if !ok {
		return Topic{}, false
	}
	return s.Topic(name)
}

// Topics returns every topic, by name.
func (s *State) Topics() []Topic {
	var out []Topic
	s.topics.Root().Walk(func(_ []byte, t *Topic) bool {
		out = append(out, t.clone())
		return false
	})
	return out
}

// Partition returns one partition of a topic.
func (s *State) Partition(topic string, partition int32) (Partition, bool) {
	p, ok := s.partitions.Get(partitionKey(topic, partition))
	if !ok {
		return Partition{}, false
	}
	return p.clone(), true
}

// Partitions returns a topic's partitions, by index.
func (s *State) Partitions(topic string) []Partition {
	var out []Partition
	s.partitions.Root().WalkPrefix(partitionPrefix(topic), func(_ []byte, p *Partition) bool {
		out = append(out, p.clone())
		return false
	})
	return out
}

// Manifest returns a partition's remote segment manifest. A partition that
// never tiered anything has an empty one.
func (s *State) Manifest(topic string, partition int32) (Manifest, bool) {
	if m, ok := s.manifests.Get(partitionKey(topic, partition)); ok {
		return m.clone(), true
	}
	if _, ok := s.partitions.Get(partitionKey(topic, partition)); !ok {
		return Manifest{}, false
	}
	return Manifest{Topic: topic, Partition: partition}, true
}

// CommittedOffset returns a group's committed offset for a partition.
func (s *State) CommittedOffset(group, topic string, partition int32) (CommittedOffset, bool) {
	o, ok := s.offsets.Get(offsetKey(group, topic, partition))
	if !ok {
		return CommittedOffset{}, false
	}
	return *o, true
}

// GroupOffsets returns every committed offset of a group, by topic and
// partition.
func (s *State) GroupOffsets(group string) []CommittedOffset {
	var out []CommittedOffset
	s.offsets.Root().WalkPrefix(groupPrefix(group), func(_ []byte, o *CommittedOffset) bool {
		out = append(out, *o)
		return false
	})
	return out
}

// Groups returns the groups that have committed offsets, sorted.
func (s *State) Groups() []string {
	var out []string
	s.offsets.Root().Walk(func(_ []byte, o *CommittedOffset) bool {
		if len(out) == 0 || out[len(out)-1] != o.Group {
			out = append(out, o.Group)
		}
		return false
	})
	slices.Sort(out)
	return out
}

// Tree keys. Broker ids and partition indexes are never negative, so their
// big-endian bytes sort numerically. Topic names cannot hold a NUL, which
// therefore ends a topic name in a partition key. Group ids can hold any
// byte, so they are length-prefixed.

func brokerKey(id int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(id)) }

func topicKey(name string) []byte { return []byte(name) }

func partitionPrefix(topic string) []byte { return append([]byte(topic), 0) }

func partitionKey(topic string, partition int32) []byte {
	return binary.BigEndian.AppendUint32(partitionPrefix(topic), uint32(partition))
}

func groupPrefix(group string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(group))), group...)
}

func offsetKey(group, topic string, partition int32) []byte {
	key := append(groupPrefix(group), topic...)
	key = append(key, 0)
	return binary.BigEndian.AppendUint32(key, uint32(partition))
}

// txn is one command's view of the state while it applies: it starts as a
// copy of the current State (a few pointers) and replaces whole trees as it
// writes, so the State it started from never changes. The state machine
// keeps the result only if the command succeeds, which is what makes every
// command all-or-nothing.
type txn struct {
	st      State
	index   uint64
	changes []Change
}

func (tx *txn) changed(c Change) {
	c.Index = tx.index
	tx.changes = append(tx.changes, c)
}

func (tx *txn) broker(id int32) (*Broker, bool) { return tx.st.brokers.Get(brokerKey(id)) }

func (tx *txn) putBroker(b *Broker) {
	tx.st.brokers, _, _ = tx.st.brokers.Insert(brokerKey(b.ID), b)
	tx.changed(Change{Kind: ChangeBroker, BrokerID: b.ID})
}

func (tx *txn) topic(name string) (*Topic, bool) { return tx.st.topics.Get(topicKey(name)) }

func (tx *txn) putTopic(t *Topic) {
	tx.st.topics, _, _ = tx.st.topics.Insert(topicKey(t.Name), t)
	tx.st.topicIDs, _, _ = tx.st.topicIDs.Insert(t.ID[:], t.Name)
	tx.changed(Change{Kind: ChangeTopic, Topic: t.Name})
}

func (tx *txn) partition(topic string, partition int32) (*Partition, bool) {
	return tx.st.partitions.Get(partitionKey(topic, partition))
}

func (tx *txn) putPartition(p *Partition) {
	tx.st.partitions, _, _ = tx.st.partitions.Insert(partitionKey(p.Topic, p.Partition), p)
	tx.changed(Change{Kind: ChangePartition, Topic: p.Topic, Partition: p.Partition})
}

func (tx *txn) manifest(topic string, partition int32) *Manifest {
	if m, ok := tx.st.manifests.Get(partitionKey(topic, partition)); ok {
		return m
	}
	return &Manifest{Topic: topic, Partition: partition}
}

func (tx *txn) putManifest(m *Manifest) {
	tx.st.manifests, _, _ = tx.st.manifests.Insert(partitionKey(m.Topic, m.Partition), m)
	tx.changed(Change{Kind: ChangeManifest, Topic: m.Topic, Partition: m.Partition})
}

func (tx *txn) putOffset(o *CommittedOffset) {
	tx.st.offsets, _, _ = tx.st.offsets.Insert(offsetKey(o.Group, o.Topic, o.Partition), o)
}

// partitionsWhere returns the partitions, in key order, for which keep is
// true.
func (tx *txn) partitionsWhere(keep func(*Partition) bool) []*Partition {
	var out []*Partition
	tx.st.partitions.Root().Walk(func(_ []byte, p *Partition) bool {
		if keep(p) {
			out = append(out, p)
		}
		return false
	})
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
