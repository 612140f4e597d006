package ingest

import (
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// The internal topic __consumer_offsets, as the brokers answer for it.
//
// Kafka keeps committed offsets in it, and clients expect it in Metadata as
// an internal topic: regex consumers skip it, admin tools list it apart.
// strata keeps committed offsets in the metadata group instead (group/,
// meta/offsets.go), so the topic is answered here rather than stored:
//
//   - Metadata lists it, IsInternal, with consumerOffsetsPartitions
//     partitions, in every all-topics answer and when asked by name or id;
//     it is never auto-created. Its id is derived from the cluster id, so
//     every broker gives the same one.
//   - Each partition's leader is the live broker that rendezvous hashing
//     (group.ChooseCoordinator) picks for the partition's name, one replica,
//     leader epoch 0. Group coordinators are chosen by hashing the group id
//     instead (FindCoordinator), not through this topic's partitions:
//     clients find coordinators with FindCoordinator, and no record of a
//     group lives in a partition here.
//   - Reading it is reading an empty log, on any broker: Fetch answers no
//     records with high watermark and log start 0 (and waits MaxWaitMillis
//     as on a quiet partition), ListOffsets answers offset 0 for latest and
//     earliest and none for a timestamp. This departs from Kafka, whose
//     topic holds the offset-commit records lag monitors decode.
//   - Produce is INVALID_TOPIC_EXCEPTION ("Cannot append to internal
//     topic"), as in Kafka; CreateTopics is TOPIC_ALREADY_EXISTS (the
//     metadata group refuses the name); DeleteTopics is
//     INVALID_TOPIC_EXCEPTION.

// consumerOffsetsPartitions is the partition count Metadata gives
// __consumer_offsets: Kafka's offsets.topic.num.partitions default.
const consumerOffsetsPartitions = 50

// consumerOffsetsTopicID is the id Metadata gives __consumer_offsets in the
// cluster clusterID.
func consumerOffsetsTopicID(clusterID string) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("strata/"+clusterID+"/"+meta.ConsumerOffsetsTopic))
}

// isInternalTopic reports whether name is the internal topic, which the
// brokers answer for and nobody writes.
func isInternalTopic(name string) bool { return name == meta.ConsumerOffsetsTopic }

// internalTopicLeader is the leader Metadata names for a partition of the
// internal topic among the live brokers with a Kafka listener, or -1 when
// there is none.
func internalTopicLeader(brokers []int32, partition int32) int32 {
	if len(brokers) == 0 {
		return -1
	}
	return group.ChooseCoordinator(fmt.Sprintf("%s-%d", meta.ConsumerOffsetsTopic, partition), brokers)
}

// consumerOffsetsMetadata describes the internal topic as of st.
func consumerOffsetsMetadata(st *meta.State) kmsg.MetadataResponseTopic {
	var brokers []int32
	for _, b := range liveBrokers(st) {
		if len(b.Listeners) > 0 {
			brokers = append(brokers, b.ID)
		}
	}
	t := kmsg.NewMetadataResponseTopic()
	name := meta.ConsumerOffsetsTopic
	t.Topic, t.TopicID, t.IsInternal = &name, consumerOffsetsTopicID(st.ClusterID()), true
	t.AuthorizedOperations = authorizedOperationsNotRequested
	for i := range int32(consumerOffsetsPartitions) {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = i
		p.OfflineReplicas = []int32{}
		if leader := internalTopicLeader(brokers, i); leader == -1 {
			p.Leader, p.ErrorCode = -1, kerr.LeaderNotAvailable.Code
		} else {
			p.Leader, p.Replicas, p.ISR = leader, []int32{leader}, []int32{leader}
		}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// insertInternalTopic puts the internal topic into an all-topics answer at
// its place in name order, after its metadata topics.
func insertInternalTopic(topics []kmsg.MetadataResponseTopic, st *meta.State) []kmsg.MetadataResponseTopic {
	at, _ := slices.BinarySearchFunc(topics, meta.ConsumerOffsetsTopic, func(t kmsg.MetadataResponseTopic, name string) int {
		switch {
		case *t.Topic < name:
			return -1
		case *t.Topic > name:
			return 1
		}
		return 0
	})
	return slices.Insert(topics, at, consumerOffsetsMetadata(st))
}

// internalPartition checks a partition index of the internal topic.
func internalPartition(partition int32) error {
	if partition < 0 || partition >= consumerOffsetsPartitions {
		return fmt.Errorf("%w: %s-%d", ErrUnknownTopic, meta.ConsumerOffsetsTopic, partition)
	}
	return nil
}

// fetchInternal answers a fetch of a partition of the internal topic: an
// empty log, so offset 0 reads nothing and any other offset is out of
// range.
func fetchInternal(p *fetchReplyPartition, partition int32, offset int64) error {
	if err := internalPartition(partition); err != nil {
		return err
	}
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = 0, 0, 0
	if offset != 0 {
		return fmt.Errorf("%w: offset %d of the empty %s-%d", hotlog.ErrOffsetOutOfRange, offset, meta.ConsumerOffsetsTopic, partition)
	}
	return nil
}

// listInternalOffset answers ListOffsets for a partition of the internal
// topic, an empty log: latest, earliest and earliest local are 0, and no
// record matches a timestamp.
func listInternalOffset(partition int32, timestamp int64) (timestampOffset, error) {
	if err := internalPartition(partition); err != nil {
		return notFound, err
	}
	switch timestamp {
	case timestampLatest, timestampEarliest, timestampEarliestLocal:
		return timestampOffset{timestamp: -1, offset: 0, leaderEpoch: -1}, nil
	}
	return notFound, nil
}
