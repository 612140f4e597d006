package main

import (
	"context"
	"io"
	"strings"
)

// runTopicList is `strata topic list`: the topics, or, with one of the
// healthReports' flags, the partitions that report keeps. A report with
// nothing to show prints nothing (`[]` under --json) and exits 0, as
// kafka-topics.sh does, so that a script can test for empty output.
func runTopicList(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "topic list", topicListSynopsis())
	client.register(fs)
	asked := make([]bool, len(healthReports))
	for i, r := range healthReports {
		fs.BoolVar(&asked[i], r.flag, false, r.usage)
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return withFix(usageError("topic list takes flags only, not %q", rest[0]), "`strata topic describe NAME` shows one topic")
	}
	report, err := chosenReport(asked)
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
	if report != nil {
		m, err := admin.Metadata(ctx)
		if err != nil {
			return err
		}
		var minISR map[string]int
		if report.needsMinISR {
			if minISR, err = minInsyncReplicas(ctx, admin, m.Topics); err != nil {
				return err
			}
		}
		partitions, err := healthOf(m, minISR)
		if err != nil {
			return err
		}
		kept := []partitionHealth{}
		for _, p := range partitions {
			if report.keeps(p) {
				kept = append(kept, p)
			}
		}
		if client.json {
			return printJSON(e.stdout, kept)
		}
		return printHealth(e.stdout, kept, report.needsMinISR)
	}

	topics, err := admin.ListTopics(ctx)
	if err != nil {
		return err
	}
	type listed struct {
		Topic             string `json:"topic"`
		ID                string `json:"id"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
	}
	out := make([]listed, 0, len(topics))
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			return kafkaError("topic "+t.Topic, t.Err, "")
		}
		out = append(out, listed{Topic: t.Topic, ID: topicID(t.ID), Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas()})
	}
	if client.json {
		return printJSON(e.stdout, out)
	}
	tw := newTable(e.stdout, "TOPIC", "ID", "PARTITIONS", "REPLICATION")
	for _, t := range out {
		tw.row(t.Topic, t.ID, t.Partitions, t.ReplicationFactor)
	}
	return tw.flush()
}

// topicListSynopsis is topic list's synopsis, naming each report's flag.
func topicListSynopsis() string {
	flags := make([]string, len(healthReports))
	for i, r := range healthReports {
		flags[i] = "--" + r.flag
	}
	return "[" + strings.Join(flags, "|") + "] [flags]"
}

// chosenReport is the one report whose flag was given, nil for none. Two
// or more are refused, as kafka-topics.sh refuses them: each is a list of
// its own, and a merged one would not say which partition is there why.
func chosenReport(asked []bool) (*healthReport, error) {
	var given []string
	var report *healthReport
	for i, ok := range asked {
		if ok {
			given = append(given, "--"+healthReports[i].flag)
			report = &healthReports[i]
		}
	}
	if len(given) > 1 {
		return nil, withFix(usageError("%s are separate reports: give one of them", strings.Join(given, " and ")),
			"run `strata topic list` once per report, or `strata cluster status` for the counts of all of them")
	}
	return report, nil
}

// printHealth prints the partitions a report kept as a table, or nothing
// at all when it kept none. The MIN-ISR column is there for the reports
// that read it.
func printHealth(w io.Writer, partitions []partitionHealth, withMinISR bool) error {
	if len(partitions) == 0 {
		return nil
	}
	header := []string{"TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE"}
	if withMinISR {
		header = append(header, "MIN-ISR")
	}
	tw := newTable(w, header...)
	for _, p := range partitions {
		cells := []any{p.Topic, p.Partition, p.Leader, p.LeaderEpoch, ids(p.Replicas), ids(p.ISR), ids(p.OfflineReplicas)}
		if withMinISR {
			cells = append(cells, p.MinInsyncReplicas)
		}
		tw.row(cells...)
	}
	return tw.flush()
}
