package meta

import (
	"errors"
	"strings"
	"testing"
)

// TestTopicNameCollisions: a name that equals an existing topic's once '.'
// reads as '_' is refused in the state machine with Kafka's message, even
// when both creates share one Raft entry, as concurrent proposals coalesced
// by the batcher do; names that do not collide, and the same name again,
// get their usual answers.
func TestTopicNameCollisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(InitCluster{ClusterID: "c1"}, brokerCmd(1))
	errs := h.apply(topicCmd("a.b", 1, 1), topicCmd("a_b", 1, 1), topicCmd("a.b.c", 1, 1), topicCmd("a_b_c", 1, 1), topicCmd("ab", 1, 1))
	want := []error{nil, ErrInvalidTopicName, nil, ErrInvalidTopicName, nil}
	for i, err := range errs {
		if !errors.Is(err, want[i]) || (want[i] == nil) != (err == nil) {
			t.Errorf("create %d: %v, want %v", i, err, want[i])
		}
	}
	if msg := errs[1].Error(); !strings.Contains(msg, "Topic 'a_b' collides with existing topic: a.b") {
		t.Errorf("collision message %q", msg)
	}
	if err := h.apply(topicCmd("a.b", 1, 1))[0]; !errors.Is(err, ErrTopicExists) {
		t.Errorf("creating a.b again: %v, want ErrTopicExists", err)
	}
	st := h.f.current()
	for name, want := range map[string]error{
		"a_b": ErrInvalidTopicName, "a.b.c": nil, "a__b": nil, "a-b": nil, "b.a": nil,
		"": ErrInvalidTopicName, "bad name": ErrInvalidTopicName,
	} {
		if err := st.CheckNewTopicName(name); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("CheckNewTopicName(%q) = %v, want %v", name, err, want)
		}
	}
	if _, ok := st.Topic("a_b"); ok {
		t.Error("the colliding topic was created")
	}
}

// TestConsumerOffsetsCannotBeCreated: the internal topic's name is refused
// as a topic that exists, as Kafka answers TOPIC_ALREADY_EXISTS; other
// names starting with "__" are ordinary, as in Kafka.
func TestConsumerOffsetsCannotBeCreated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(InitCluster{ClusterID: "c1"}, brokerCmd(1))
	if err := h.apply(topicCmd(ConsumerOffsetsTopic, 1, 1))[0]; !errors.Is(err, ErrTopicExists) {
		t.Fatalf("creating %s: %v, want ErrTopicExists", ConsumerOffsetsTopic, err)
	}
	if _, ok := h.f.current().Topic(ConsumerOffsetsTopic); ok {
		t.Fatal("the internal topic was created as an ordinary one")
	}
	if err := h.apply(topicCmd("__mine", 1, 1))[0]; err != nil {
		t.Fatalf("creating __mine: %v", err)
	}
}
