package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGhostConsumerReported: a member that keeps heartbeating but stops
// consuming while records arrive is reported stalled by `strata group
// describe` once its committed offset has not moved for the threshold.
func TestGhostConsumerReported(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--group.initial.rebalance.delay.ms", "0", "--group.min.session.timeout.ms", "500", "--group.stall.threshold.ms", "300")
	const topic, group = "ghost", "ghost-group"
	createTopic(t, s, topic, 1, nil)
	producer := newClient(t, s)
	batch := func() []*kgo.Record {
		var out []*kgo.Record
		for i := range 10 {
			out = append(out, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)})
		}
		return out
	}
	produceAll(t, producer, topic, batch())

	ch := newChanges()
	ghost := newMemberLog("ghost", ch)
	c := startConsumer(t, s, ghost, group, topic)
	waitCommittedAtEnd(t, s, group, topic)
	// Stop polling but keep the client: it goes on heartbeating.
	c.cancel()
	<-c.done
	produceAll(t, producer, topic, batch())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last []groupDocument
	for {
		out, err := s.strata(ctx, "", "group", "describe", group, "--json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &last); err != nil {
			t.Fatal(err)
		}
		if len(last) == 1 && last[0].State == "Stable" && len(last[0].Partitions) == 1 {
			p := last[0].Partitions[0]
			if p.Stalled && p.LagRecords == 10 && p.Member != "" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no stalled partition reported: %+v", last)
		case <-tick.C:
		}
	}
}
