package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readPatience bounds ReadAll, whatever its context says.
const readPatience = time.Minute

// reading is how far ReadAll has read one partition.
type reading struct {
	end  int64 // the high watermark when ReadAll was called
	next int64 // the offset after the last record read
}

// ReadAll reads every partition of topic from its log start to the high
// watermark kadm.ListEndOffsets reports when ReadAll is called, with a
// client of its own, and returns the records in offset order within each
// partition: the final read Check takes. It waits until ctx is done or a
// minute has passed for partitions to have leaders and to be read to their
// end; a partition that cannot be (a record missing below its high
// watermark) is named in the error.
func ReadAll(ctx context.Context, seeds []string, topic string) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, readPatience)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, fmt.Errorf("ledger: read %s: %w", topic, err)
	}
	defer cl.Close()
	ends, starts, err := listBounds(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return nil, fmt.Errorf("ledger: read %s: %w", topic, err)
	}

	left := make(map[int32]*reading) // partitions not yet read to their end
	from := make(map[int32]kgo.Offset)
	ends.Each(func(end kadm.ListedOffset) {
		start, _ := starts.Lookup(topic, end.Partition)
		if start.Offset < end.Offset {
			left[end.Partition] = &reading{end: end.Offset, next: start.Offset}
			from[end.Partition] = kgo.NewOffset().At(start.Offset)
		}
	})
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})

	var final []*kgo.Record
	var lastErr error
	for len(left) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ledger: read %s: %s: %w (last fetch error: %v)", topic, describe(left), ctx.Err(), lastErr)
		}
		for _, fe := range fetches.Errors() {
			lastErr = fe.Err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			p, ok := left[r.Partition]
			if !ok || r.Offset >= p.end {
				return // past the high watermark ReadAll started at
			}
			final = append(final, r)
			p.next = r.Offset + 1
			if p.next == p.end {
				delete(left, r.Partition)
			}
		})
	}
	return final, nil
}

// listBounds lists the end and start offsets of topic's partitions,
// retrying until every partition answers: just after a fault some have no
// leader yet, and a client has no event to wait on for that.
func listBounds(ctx context.Context, adm *kadm.Client, topic string) (ends, starts kadm.ListedOffsets, err error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error // the last answer before ctx was done
	for {
		ends, err = adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			starts, err = adm.ListStartOffsets(ctx, topic)
		}
		if err == nil {
			err = starts.Error()
		}
		if err == nil {
			return ends, starts, nil
		}
		if ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("listing offsets: %w (last answer: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// describe names the partitions left and how far each was read.
func describe(left map[int32]*reading) string {
	var s []string
	for _, id := range slices.Sorted(maps.Keys(left)) {
		s = append(s, fmt.Sprintf("partition %d read to offset %d of %d", id, left[id].next, left[id].end))
	}
	return strings.Join(s, ", ")
}
