package meta

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// grow is a CreatePartitions of "orders" (3 partitions on 1,2,3 in
// preconditionBase) to count, one replica list per new partition.
func grow(id uuid.UUID, count int32, replicas ...[]int32) CreatePartitions {
	return CreatePartitions{Topic: "orders", TopicID: id, Count: count, Replicas: replicas}
}

func TestCreatePartitionsAddsPartitionsAndNotifies(t *testing.T) {
	t.Parallel()
	h, orders := preconditionBase(t)
	before := h.f.current()
	var published []Change
	h.f.publish = func(_ *State, changes []Change) { published = append(published, changes...) }
	if errs := h.apply(commit("g", "orders", 4, 1)); !errors.Is(errs[0], ErrUnknownPartition) {
		t.Fatalf("committing to partition 4 before it exists: %v", errs[0])
	}
	published = nil

	// Broker 4 is fenced: partition 4's ISR leaves it out.
	h.mustApply(grow(orders.ID, 5, []int32{2, 3, 1}, []int32{4, 3, 1}))
	st := h.f.current()
	topic, _ := st.Topic("orders")
	if topic.Partitions != 5 || topic.ID != orders.ID {
		t.Fatalf("topic after growing: %+v", topic)
	}
	want := []Partition{
		{Topic: "orders", Partition: 3, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2},
		{Topic: "orders", Partition: 4, Replicas: []int32{4, 3, 1}, ISR: []int32{3, 1}, Leader: 3},
	}
	got := st.Partitions("orders")
	if len(got) != 5 || !reflect.DeepEqual(got[3:], want) {
		t.Fatalf("partitions after growing:\n%+v\nwant the last two\n%+v", got, want)
	}
	if !reflect.DeepEqual(got[:3], before.Partitions("orders")) {
		t.Fatal("growing changed the existing partitions")
	}
	if m, ok := st.Manifest("orders", 4); !ok || len(m.Segments) != 0 {
		t.Fatalf("new partition's manifest %+v %v", m, ok)
	}
	wantChanges := []Change{
		{Kind: ChangeTopic, Topic: "orders"},
		{Kind: ChangePartition, Topic: "orders", Partition: 3},
		{Kind: ChangePartition, Topic: "orders", Partition: 4},
	}
	for i := range published {
		published[i].Index = 0
	}
	if !reflect.DeepEqual(published, wantChanges) {
		t.Fatalf("published %+v, want %+v", published, wantChanges)
	}
	// The new partitions are partitions like the others.
	h.mustApply(commit("g", "orders", 4, 1),
		AlterPartition{Topic: "orders", TopicID: orders.ID, Partition: 4, Leader: 1, ISR: []int32{1}})

	// A snapshot holds them, and reads back to the same state.
	snap := snapshotBytes(t, h.f.current())
	restored, err := readSnapshot(bufio.NewReader(bytes.NewReader(snap)))
	if err != nil {
		t.Fatal(err)
	}
	assertSameState(t, h.f.current(), restored)
	if n := len(restored.Partitions("orders")); n != 5 {
		t.Fatalf("restored topic has %d partitions", n)
	}

	// It grows again from there, without an id check.
	h.mustApply(CreatePartitions{Topic: "orders", Count: 6, Replicas: [][]int32{{1, 2, 3}}})
	if topic, _ := h.f.current().Topic("orders"); topic.Partitions != 6 {
		t.Fatalf("after growing again: %d partitions", topic.Partitions)
	}
}

func TestCreatePartitionsPreconditions(t *testing.T) {
	t.Parallel()
	_, orders := preconditionBase(t)
	oid := orders.ID
	ok := []int32{1, 2, 3}
	cases := []struct {
		name string
		cmd  CreatePartitions
		want error
	}{
		{"unknown topic", CreatePartitions{Topic: "nope", Count: 4, Replicas: [][]int32{ok}}, ErrUnknownTopic},
		{"wrong topic id", grow(uuid.New(), 4, ok), ErrTopicIDMismatch},
		{"same count", grow(oid, 3), ErrInvalidPartitions},
		{"fewer partitions", grow(oid, 2), ErrInvalidPartitions},
		{"negative count", grow(oid, -1), ErrInvalidPartitions},
		{"above the limit", grow(oid, maxPartitionsCreated+1), ErrInvalidPartitions},
		{"too few replica lists", grow(oid, 5, ok), ErrInvalidReplicaAssignment},
		{"too many replica lists", grow(oid, 4, ok, ok), ErrInvalidReplicaAssignment},
		{"no replica lists", grow(oid, 4), ErrInvalidReplicaAssignment},
		{"fewer replicas than the topic's factor", grow(oid, 4, []int32{1, 2}), ErrInvalidReplicaAssignment},
		{"more replicas than the topic's factor", grow(oid, 4, []int32{1, 2, 3, 4}), ErrInvalidReplicaAssignment},
		{"empty replica list", grow(oid, 4, []int32{}), ErrInvalidReplicaAssignment},
		{"repeated replica", grow(oid, 4, []int32{1, 2, 1}), ErrInvalidReplicaAssignment},
		{"unregistered replica", grow(oid, 4, []int32{1, 2, 9}), ErrInvalidReplicaAssignment},
		{"good list beside a bad one", grow(oid, 5, ok, []int32{1, 9, 2}), ErrInvalidReplicaAssignment},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := preconditionBase(t)
			before := contentBytes(t, h.f.current())
			if err := h.f.current().Check(tc.cmd); !errors.Is(err, tc.want) {
				t.Fatalf("Check: got %v, want %v", err, tc.want)
			}
			err := h.apply(tc.cmd)[0]
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "meta: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if after := contentBytes(t, h.f.current()); !bytes.Equal(before, after) {
				t.Fatal("a refused command changed the state")
			}
			if h.f.err() != nil {
				t.Fatalf("a precondition error stopped the state machine: %v", h.f.err())
			}
		})
	}
}

func TestCreatePartitionsOnlyFencedReplicas(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(brokerCmd(1), brokerCmd(2), topicCmd("t", 1, 1), FenceBroker{ID: 2, Epoch: 2})
	before := contentBytes(t, h.f.current())
	err := h.apply(CreatePartitions{Topic: "t", Count: 2, Replicas: [][]int32{{2}}})[0]
	if !errors.Is(err, ErrInvalidReplicaAssignment) || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("a new partition on a fenced broker only: %v", err)
	}
	if !bytes.Equal(before, contentBytes(t, h.f.current())) {
		t.Fatal("a refused command changed the state")
	}
}

func TestCheckChangesNothing(t *testing.T) {
	t.Parallel()
	h, orders := preconditionBase(t)
	st := h.f.current()
	before := contentBytes(t, st)
	for _, cmd := range []Command{grow(orders.ID, 4, []int32{3, 1, 2}), &CreatePartitions{Topic: "orders", Count: 4, Replicas: [][]int32{{3, 1, 2}}}} {
		if err := st.Check(cmd); err != nil {
			t.Fatalf("Check(%+v): %v", cmd, err)
		}
	}
	if h.f.current() != st || !bytes.Equal(before, contentBytes(t, st)) {
		t.Fatal("Check changed the state")
	}
	if n := len(st.Partitions("orders")); n != 3 {
		t.Fatalf("%d partitions after Check", n)
	}
}
