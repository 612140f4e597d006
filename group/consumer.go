package group

import "github.com/twmb/franz-go/pkg/kmsg"

// The "consumer" protocol type's metadata and assignments are Kafka's
// ConsumerProtocol encodings. The coordinator reads them only to answer
// OffsetDelete (which topics the members subscribe to) and to say which
// member owns a lagging partition; it never needs them to run the group.

const consumerProtocolType = "consumer"

// subscribedTopics are the topics a consumer group's members subscribe to.
func (g *group) subscribedTopics() map[string]bool {
	topics := map[string]bool{}
	if g.protocolType != consumerProtocolType {
		return topics
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			continue
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics
}

// owners maps each assigned partition of a consumer group to its member.
func (g *group) owners() map[partitionKey]string {
	owners := map[partitionKey]string{}
	if g.protocolType != consumerProtocolType {
		return owners
	}
	for _, m := range g.members {
		var a kmsg.ConsumerMemberAssignment
		if len(m.assignment) == 0 || a.ReadFrom(m.assignment) != nil {
			continue
		}
		for _, t := range a.Topics {
			for _, p := range t.Partitions {
				owners[partitionKey{t.Topic, p}] = m.id
			}
		}
	}
	return owners
}
