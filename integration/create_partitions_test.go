package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCreatePartitions grows a topic the way operators' tools do, through
// kadm and `strata topic alter`: validate-only changes nothing, 2 to 5
// partitions shows in Metadata, a record produced to a new partition with
// franz-go consumes back, and a count that is no increase is refused with
// INVALID_PARTITIONS.
func TestCreatePartitions(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))
	createTopic(t, s, "grow", 2, nil)
	// partitions asks Metadata through a new client each time: a client
	// caches metadata for its MetadataMinAge, and a change another process
	// made (the CLI's) does not invalidate it.
	partitions := func() int {
		t.Helper()
		topics, err := kadm.NewClient(newClient(t, s)).ListTopics(ctx, "grow")
		if err != nil || topics["grow"].Err != nil {
			t.Fatalf("metadata: %v %v", err, topics["grow"].Err)
		}
		for _, p := range topics["grow"].Partitions {
			if p.Err != nil || p.Leader != 1 {
				t.Fatalf("metadata of partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
			}
		}
		return len(topics["grow"].Partitions)
	}
	update := func(validateOnly bool, count int) kadm.CreatePartitionsResponse {
		t.Helper()
		call := admin.UpdatePartitions
		if validateOnly {
			call = admin.ValidateUpdatePartitions
		}
		responses, err := call(ctx, count, "grow")
		if err != nil {
			t.Fatalf("create partitions (count %d): %v", count, err)
		}
		r, err := responses.On("grow", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	if r := update(true, 5); r.Err != nil {
		t.Fatalf("validate-only growth to 5: %v %s", r.Err, r.ErrMessage)
	}
	if n := partitions(); n != 2 {
		t.Fatalf("validate-only grew the topic to %d partitions", n)
	}
	if r := update(false, 5); r.Err != nil {
		t.Fatalf("growth to 5: %v %s", r.Err, r.ErrMessage)
	}
	if n := partitions(); n != 5 {
		t.Fatalf("metadata shows %d partitions after growing to 5", n)
	}

	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produced := produceAll(t, producer, "grow", []*kgo.Record{
		{Partition: 4, Key: []byte("k"), Value: []byte("on a new partition"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0, 1}}}},
	})
	if produced[0].partition != 4 || produced[0].offset != 0 {
		t.Fatalf("produced to partition %d offset %d", produced[0].partition, produced[0].offset)
	}
	checkSameRecords(t, produced, consumeAll(t, s, "grow", 1))

	for _, tc := range []struct {
		validateOnly bool
		count        int
	}{{false, 3}, {false, 5}, {true, 4}} {
		r := update(tc.validateOnly, tc.count)
		if !errors.Is(r.Err, kerr.InvalidPartitions) || r.ErrMessage == "" {
			t.Fatalf("count %d (validate-only %v) on 5 partitions: %v %q, want INVALID_PARTITIONS with a message", tc.count, tc.validateOnly, r.Err, r.ErrMessage)
		}
	}
	if r := update(true, 9); r.Err != nil {
		t.Fatalf("validate-only growth to 9: %v %s", r.Err, r.ErrMessage)
	}
	if n := partitions(); n != 5 {
		t.Fatalf("refused and validate-only requests left %d partitions, want 5", n)
	}

	// The CLI: growth, and a refusal as one line naming the fix.
	if out, err := s.strata(ctx, "", "topic", "alter", "grow", "--partitions", "6"); err != nil || !strings.Contains(out, "6 partitions") {
		t.Fatalf("strata topic alter --partitions 6: %v %q", err, out)
	}
	if n := partitions(); n != 6 {
		t.Fatalf("%d partitions after `strata topic alter --partitions 6`", n)
	}
	_, err := s.strata(ctx, "", "topic", "alter", "grow", "--partitions", "4")
	if err == nil || !strings.Contains(err.Error(), "INVALID_PARTITIONS") || !strings.Contains(err.Error(), "strata topic describe") ||
		strings.Count(strings.TrimSpace(err.Error()), "\n") != 0 {
		t.Fatalf("shrinking with the CLI: %v; want one line naming INVALID_PARTITIONS and the fix", err)
	}
}
