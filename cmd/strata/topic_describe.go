package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/placement"
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
	// LocalBytes is the leader's hot tail on its disk (DescribeLogDirs),
	// TieredBytes what the bucket holds of the partition; -1 when unknown.
	LocalBytes  int64 `json:"local_bytes"`
	TieredBytes int64 `json:"tiered_bytes"`
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

// runTopicDescribe is `strata topic describe NAME...`. The partitions'
// local sizes come from their leaders (DescribeLogDirs), their tiered
// sizes from a server's admin address; when the latter cannot be read the
// rest is printed all the same and the command fails saying so.
func runTopicDescribe(ctx context.Context, e *env, args []string) error {
	var (
		client    clientFlags
		adminAddr adminFlags
	)
	fs := newFlagSet(e, "topic describe", "NAME... [flags]")
	client.register(fs)
	adminAddr.register(fs, &client.security.tls)
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
	adminClient, err := adminAddr.client()
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

	local := localSizes(ctx, admin)
	var tieredErr error
	var out []describedTopic
	for _, name := range names {
		t := topics[name]
		d := describedTopic{Topic: name, ID: topicID(t.ID), Partitions: describePartitions(t, starts, ends)}
		tiered, err := fetchTiered(ctx, adminClient, name)
		if err != nil && tieredErr == nil {
			tieredErr = fmt.Errorf("tiered sizes: %w", err)
			if _, known := fixOf(err); !known { // else the admin client's fix says more
				tieredErr = withFix(tieredErr, "point --admin (or STRATA_ADMIN) at a server's admin address")
			}
		}
		for i := range d.Partitions {
			p := &d.Partitions[i]
			key := placement.Partition{Topic: name, Index: p.Partition}
			if size, ok := local[p.Leader][key]; ok {
				p.LocalBytes = size
			}
			if size, ok := tiered[p.Partition]; ok {
				p.TieredBytes = size
			}
		}
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
		err = printJSON(e.stdout, out)
	} else {
		err = printDescribed(e.stdout, out)
	}
	if err != nil {
		return err
	}
	return tieredErr
}

// fetchTiered reads each partition's tiered bytes from a server's admin
// address.
func fetchTiered(ctx context.Context, admin *adminClient, topic string) (map[int32]int64, error) {
	var parts []tieredPartition
	if err := admin.getJSON(ctx, strings.Replace(tieredPath, "{topic}", topic, 1), "tiered", &parts); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, p := range parts {
		out[p.Partition] = p.Bytes
	}
	return out, nil
}

// describePartitions is t's partitions in order, with the offsets from
// starts and ends (-1 where a partition has none, as when it has no
// leader).
func describePartitions(t kadm.TopicDetail, starts, ends kadm.ListedOffsets) []describedPartition {
	var out []describedPartition
	for _, p := range t.Partitions.Sorted() {
		dp := describedPartition{partitionReplication: replicationOf(p), LogStartOffset: -1, HighWatermark: -1, LocalBytes: -1, TieredBytes: -1}
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
		tw := newTable(w, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START", "HIGH-WATERMARK", "LOCAL", "TIERED")
		for _, p := range d.Partitions {
			tw.row(p.Partition, p.Leader, p.LeaderEpoch, ids(p.Replicas), ids(p.ISR), ids(p.OfflineReplicas), p.LogStartOffset, p.HighWatermark,
				byteSize(p.LocalBytes), byteSize(p.TieredBytes))
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

// byteSize prints a size for people: "-" when unknown.
func byteSize(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
