package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runPartitionElectLeaders is `strata partition elect-leaders`, what
// kafka-leader-election.sh does: a preferred election (the first replica
// leads if it is in sync) or, with --unclean, a leader for partitions that
// have none, of the partitions named (TOPIC or TOPIC:PARTITION), or of
// every partition. Partitions that need no election are not listed.
func runPartitionElectLeaders(ctx context.Context, e *env, args []string) error {
	var (
		client  clientFlags
		unclean bool
	)
	fs := newFlagSet(e, "partition elect-leaders", "[TOPIC[:PARTITION]...] [--unclean] [flags]")
	client.register(fs)
	fs.BoolVar(&unclean, "unclean", false, "elect a leader for partitions without one, outside the ISR if need be (what only the old ISR held is lost)")
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	var set kadm.TopicsSet
	for _, name := range names {
		topic, partition, hasPartition := strings.Cut(name, ":")
		if err := checkTopicName("topic", topic); err != nil {
			return err
		}
		if !hasPartition {
			md, err := admin.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			t := md.Topics[topic]
			if t.Err != nil {
				return kafkaError(fmt.Sprintf("topic %q", topic), t.Err, "")
			}
			set.Add(topic, t.Partitions.Numbers()...)
			continue
		}
		p, err := strconv.ParseInt(partition, 10, 32)
		if err != nil || p < 0 {
			return usageError("%q: the partition after ':' must be a number", name)
		}
		set.Add(topic, int32(p))
	}
	how := kadm.ElectPreferredReplica
	if unclean {
		how = kadm.ElectLiveReplica
	}
	results, err := admin.ElectLeaders(ctx, how, set)
	if err != nil {
		return err
	}
	type outcome struct {
		Partition string `json:"partition"`
		Result    string `json:"result"`
	}
	var sorted []kadm.ElectLeadersResult
	for _, t := range results {
		for _, r := range t {
			sorted = append(sorted, r)
		}
	}
	slices.SortFunc(sorted, func(a, b kadm.ElectLeadersResult) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	out := []outcome{}
	failed := 0
	for _, r := range sorted {
		o := outcome{Partition: fmt.Sprintf("%s-%d", r.Topic, r.Partition), Result: "elected"}
		switch {
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			continue
		case r.Err != nil:
			o.Result = strings.TrimSuffix(fmt.Sprintf("%v: %s", r.Err, r.ErrMessage), ": ")
			failed++
		}
		out = append(out, o)
	}
	if client.json {
		err = printJSON(e.stdout, out)
	} else {
		tw := newTable(e.stdout, "PARTITION", "RESULT")
		for _, o := range out {
			tw.row(o.Partition, o.Result)
		}
		err = tw.flush()
		if err == nil && len(out) == 0 {
			_, err = fmt.Fprintln(e.stdout, "no partition needed an election")
		}
	}
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d elections failed", failed)
	}
	return err
}
