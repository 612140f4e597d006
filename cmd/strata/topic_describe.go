package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// describedTopic is what `strata topic describe` prints for one topic.
type describedTopic struct {
	Topic      string               `json:"topic"`
	ID         string               `json:"id"`
	Partitions []describedPartition `json:"partitions"`
	Configs    []describedConfig    `json:"configs"`
}

// describedPartition is one partition: its replication as Metadata
// reports it (leader -1 when there is none, or it is not live) and its
// offsets.
type describedPartition struct {
	partitionReplication
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

// partitionReplication is a partition's replica set as Metadata reports
// it, the part describe and the health reports share.
type partitionReplication struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
}

func replicationOf(p kadm.PartitionDetail) partitionReplication {
	return partitionReplication{
		Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
		Replicas: orEmpty(p.Replicas), ISR: orEmpty(p.ISR), OfflineReplicas: orEmpty(p.OfflineReplicas),
	}
}

type describedConfig struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// runTopicDescribe is `strata topic describe NAME...`.
func runTopicDescribe(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "topic describe", "NAME... [flags]")
	client.register(fs)
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageError("give at least one topic name")
	}
	if err := checkTopicNames("topic", names); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()

	topics, err := admin.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	for _, name := range names {
		t, ok := topics[name]
		if !ok {
			return fmt.Errorf("topic %q: not in the broker's metadata", name)
		}
		if t.Err != nil {
			return kafkaError(fmt.Sprintf("topic %q", name), t.Err, "")
		}
	}
	starts, err := admin.ListStartOffsets(ctx, names...)
	if err != nil {
		return err
	}
	ends, err := admin.ListEndOffsets(ctx, names...)
	if err != nil {
		return err
	}
	configs, err := admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return err
	}

	var out []describedTopic
	for _, name := range names {
		t := topics[name]
		d := describedTopic{Topic: name, ID: topicID(t.ID), Partitions: describePartitions(t, starts, ends)}
		rc, err := configs.On(name, nil)
		if err != nil {
			return err
		}
		if rc.Err != nil {
			return kafkaError(fmt.Sprintf("topic %q configs", name), rc.Err, rc.ErrMessage)
		}
		for _, c := range rc.Configs {
			d.Configs = append(d.Configs, describedConfig{Name: c.Key, Value: c.MaybeValue(), Source: configSource(c)})
		}
		sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
		out = append(out, d)
	}
	if client.json {
		return printJSON(e.stdout, out)
	}
	return printDescribed(e.stdout, out)
}

// describePartitions is t's partitions in order, with the offsets from
// starts and ends (-1 where a partition has none, as when it has no
// leader).
func describePartitions(t kadm.TopicDetail, starts, ends kadm.ListedOffsets) []describedPartition {
	var out []describedPartition
	for _, p := range t.Partitions.Sorted() {
		dp := describedPartition{partitionReplication: replicationOf(p), LogStartOffset: -1, HighWatermark: -1}
		if o, ok := starts.Lookup(t.Topic, p.Partition); ok && o.Err == nil {
			dp.LogStartOffset = o.Offset
		}
		if o, ok := ends.Lookup(t.Topic, p.Partition); ok && o.Err == nil {
			dp.HighWatermark = o.Offset
		}
		out = append(out, dp)
	}
	return out
}

// printDescribed prints each topic as two tables, its partitions and its
// configs.
func printDescribed(w io.Writer, topics []describedTopic) error {
	for i, d := range topics {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Topic %s  id %s  partitions %d\n\n", d.Topic, d.ID, len(d.Partitions))
		tw := newTable(w, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START", "HIGH-WATERMARK")
		for _, p := range d.Partitions {
			tw.row(p.Partition, p.Leader, p.LeaderEpoch, ids(p.Replicas), ids(p.ISR), ids(p.OfflineReplicas), p.LogStartOffset, p.HighWatermark)
		}
		if err := tw.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		tw = newTable(w, "CONFIG", "VALUE", "SOURCE")
		for _, c := range d.Configs {
			tw.row(c.Name, c.Value, c.Source)
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	return nil
}

// configSource names where a config's value comes from, as Kafka does.
func configSource(c kadm.Config) string {
	switch c.Source.String() {
	case "DYNAMIC_TOPIC_CONFIG":
		return "topic"
	case "DEFAULT_CONFIG":
		return "default"
	default:
		return c.Source.String()
	}
}
