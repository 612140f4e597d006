package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// resetTarget says where `group reset-offsets` moves offsets; exactly one
// way is given.
type resetTarget struct {
	earliest bool
	latest   bool
	datetime string
	shiftBy  int64
	shift    bool
}

// resetPlanRow is one partition of a reset plan.
type resetPlanRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current"`
	New       int64  `json:"new"`
}

// runGroupResetOffsets is `strata group reset-offsets GROUP`: it computes
// new committed offsets for the group's partitions and, with --execute,
// commits them. The group must have no members (stop the consumers first).
func runGroupResetOffsets(ctx context.Context, e *env, args []string) error {
	var (
		client  clientFlags
		target  resetTarget
		topics  string
		execute bool
	)
	fs := newFlagSet(e, "group reset-offsets", "GROUP (--to-earliest|--to-latest|--to-datetime T|--shift-by N) [flags]")
	client.register(fs)
	fs.StringVar(&topics, "topic", "", "reset these `topics`, comma-separated (default: every topic the group committed)")
	fs.BoolVar(&target.earliest, "to-earliest", false, "to each partition's log start offset")
	fs.BoolVar(&target.latest, "to-latest", false, "to each partition's end offset")
	fs.StringVar(&target.datetime, "to-datetime", "", "to the first offset at or after `TIME` (RFC 3339, e.g. 2026-11-29T15:00:00Z)")
	fs.Func("shift-by", "move each committed offset by `N` (negative goes back), within the log", func(s string) error {
		_, err := fmt.Sscan(s, &target.shiftBy)
		target.shift = true
		return err
	})
	fs.BoolVar(&execute, "execute", false, "commit the new offsets (without it, only print the plan)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError("give exactly one group")
	}
	groupID := rest[0]
	ways := 0
	for _, set := range []bool{target.earliest, target.latest, target.datetime != "", target.shift} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return usageError("give exactly one of --to-earliest, --to-latest, --to-datetime, --shift-by")
	}
	var at time.Time
	if target.datetime != "" {
		if at, err = time.Parse(time.RFC3339, target.datetime); err != nil {
			return usageError("--to-datetime %q: want RFC 3339, like 2026-11-29T15:00:00Z", target.datetime)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()

	committed, err := admin.FetchOffsets(ctx, groupID)
	if err != nil {
		return kafkaError(fmt.Sprintf("group %q", groupID), err, "")
	}
	var names []string
	for _, t := range strings.Split(topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		for t := range committed {
			names = append(names, t)
		}
		slices.Sort(names)
	}
	if len(names) == 0 {
		return fmt.Errorf("group %q has no committed offsets: name the topics with --topic", groupID)
	}
	starts, err := admin.ListStartOffsets(ctx, names...)
	if err != nil {
		return err
	}
	ends, err := admin.ListEndOffsets(ctx, names...)
	if err != nil {
		return err
	}
	var byTime kadm.ListedOffsets
	if !at.IsZero() {
		if byTime, err = admin.ListOffsetsAfterMilli(ctx, at.UnixMilli(), names...); err != nil {
			return err
		}
	}
	plan, err := resetPlan(target, committed, starts, ends, byTime)
	if err != nil {
		return err
	}
	if execute {
		offsets := kadm.Offsets{}
		for _, r := range plan {
			offsets.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.New, LeaderEpoch: -1})
		}
		responses, err := admin.CommitOffsets(ctx, groupID, offsets)
		if err != nil {
			return kafkaError(fmt.Sprintf("group %q", groupID), err, "")
		}
		if err := responses.Error(); err != nil {
			return kafkaError(fmt.Sprintf("group %q (stop its consumers first)", groupID), err, "")
		}
	}
	if client.json {
		return printJSON(e.stdout, struct {
			Group    string         `json:"group"`
			Executed bool           `json:"executed"`
			Offsets  []resetPlanRow `json:"offsets"`
		}{groupID, execute, plan})
	}
	t := newTable(e.stdout, "TOPIC", "PARTITION", "CURRENT", "NEW")
	for _, r := range plan {
		current := fmt.Sprint(r.Current)
		if r.Current < 0 {
			current = "-"
		}
		t.row(r.Topic, r.Partition, current, r.New)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if !execute {
		fmt.Fprintln(e.stdout, "dry run: nothing committed; add --execute to commit these offsets")
	}
	return nil
}

// resetPlan computes the new offset of every partition of the listed
// topics. A shift moves from the committed offset (or the end, for a
// partition without one) and stays within the log.
func resetPlan(target resetTarget, committed kadm.OffsetResponses, starts, ends, byTime kadm.ListedOffsets) ([]resetPlanRow, error) {
	var plan []resetPlanRow
	var errs []error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", end.Topic, end.Partition, end.Err))
			return
		}
		start, _ := starts.Lookup(end.Topic, end.Partition)
		row := resetPlanRow{Topic: end.Topic, Partition: end.Partition, Current: -1}
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok && c.Err == nil {
			row.Current = c.At
		}
		switch {
		case target.earliest:
			row.New = start.Offset
		case target.latest:
			row.New = end.Offset
		case target.shift:
			from := row.Current
			if from < 0 {
				from = end.Offset
			}
			row.New = min(max(from+target.shiftBy, start.Offset), end.Offset)
		default:
			row.New = end.Offset
			if o, ok := byTime.Lookup(end.Topic, end.Partition); ok && o.Err == nil && o.Offset >= 0 {
				row.New = o.Offset
			}
		}
		plan = append(plan, row)
	})
	slices.SortFunc(plan, func(a, b resetPlanRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return plan, errors.Join(errs...)
}
