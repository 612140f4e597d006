package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fabricatedMetadata is a Metadata answer of a three-broker cluster whose
// broker 3 is down (so not among the brokers), as kadm decodes one:
//
//	orders-0  leader 1, ISR 1,2,3        healthy
//	orders-1  leader 2, ISR 2,1          under-replicated, at min ISR 2
//	orders-2  leader 1, ISR 1            under-replicated, under min ISR 2
//	logs-0    leader -1, ISR 3           unavailable (LEADER_NOT_AVAILABLE), under min ISR (no leader)
//	logs-1    leader 3, ISR 3            unavailable: leader not live (a stale answer)
//	__consumer_offsets-0 leader -1       internal: left out
func fabricatedMetadata() kadm.Metadata {
	partition := func(topic string, p, leader, epoch int32, replicas, isr, offline []int32, err error) kadm.PartitionDetail {
		return kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, LeaderEpoch: epoch, Replicas: replicas, ISR: isr, OfflineReplicas: offline, Err: err}
	}
	return kadm.Metadata{
		Brokers: kadm.BrokerDetails{{NodeID: 1}, {NodeID: 2}},
		Topics: kadm.TopicDetails{
			"orders": {Topic: "orders", Partitions: kadm.PartitionDetails{
				0: partition("orders", 0, 1, 4, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{}, nil),
				1: partition("orders", 1, 2, 7, []int32{2, 3, 1}, []int32{2, 1}, []int32{3}, nil),
				2: partition("orders", 2, 1, 2, []int32{3, 1, 2}, []int32{1}, []int32{3}, nil),
			}},
			"logs": {Topic: "logs", Partitions: kadm.PartitionDetails{
				0: partition("logs", 0, -1, 3, []int32{3}, []int32{3}, []int32{3}, kerr.LeaderNotAvailable),
				1: partition("logs", 1, 3, 1, []int32{3}, []int32{3}, nil, nil),
			}},
			"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true, Partitions: kadm.PartitionDetails{
				0: partition("__consumer_offsets", 0, -1, 0, nil, nil, []int32{}, kerr.LeaderNotAvailable),
			}},
		},
	}
}

func reportNamed(t *testing.T, flag string) healthReport {
	t.Helper()
	for _, r := range healthReports {
		if r.flag == flag {
			return r
		}
	}
	t.Fatalf("no report --%s", flag)
	return healthReport{}
}

// TestHealthReportsKeep judges each fabricated partition by each report,
// as kafka-topics.sh would.
func TestHealthReportsKeep(t *testing.T) {
	t.Parallel()
	partitions, err := healthOf(fabricatedMetadata(), map[string]int{"orders": 2, "logs": 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag string
		want string
	}{
		{"under-replicated", "orders-1 orders-2"},
		{"unavailable", "logs-0 logs-1"},
		{"under-min-isr", "logs-0 orders-2"},
		{"at-min-isr", "logs-0 logs-1 orders-1"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			r := reportNamed(t, tc.flag)
			var kept []string
			for _, p := range partitions {
				if r.keeps(p) {
					kept = append(kept, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
				}
			}
			if got := strings.Join(kept, " "); got != tc.want {
				t.Errorf("--%s keeps %q, want %q", tc.flag, got, tc.want)
			}
		})
	}
	want := healthCounts{Partitions: 5, UnderReplicated: 2, UnderMinISR: 2, Unavailable: 2}
	if got := countHealth(partitions); got != want {
		t.Errorf("countHealth = %+v, want %+v", got, want)
	}
}

// TestHealthWithoutMinISR: the reports that do not ask for
// min.insync.replicas still judge a leaderless partition under min ISR,
// and nothing at min ISR.
func TestHealthWithoutMinISR(t *testing.T) {
	t.Parallel()
	partitions, err := healthOf(fabricatedMetadata(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var under, at []string
	for _, p := range partitions {
		if p.underMinISR() {
			under = append(under, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		}
		if p.atMinISR() {
			at = append(at, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		}
		if p.MinInsyncReplicas != 0 {
			t.Fatalf("%s-%d has min ISR %d, asked for none", p.Topic, p.Partition, p.MinInsyncReplicas)
		}
	}
	if strings.Join(under, " ") != "logs-0" || len(at) != 0 {
		t.Fatalf("without min.insync.replicas: under min ISR %q, at min ISR %q; want only logs-0 under", under, at)
	}
}

func TestHealthOfATopicInError(t *testing.T) {
	t.Parallel()
	m := fabricatedMetadata()
	m.Topics["broken"] = kadm.TopicDetail{Topic: "broken", Err: kerr.UnknownTopicOrPartition}
	if _, err := healthOf(m, nil); err == nil || !strings.Contains(err.Error(), "topic broken") {
		t.Fatalf("healthOf with a topic in error: %v", err)
	}
}

// TestPrintHealth prints what --under-replicated prints, as a table and as
// JSON, and what it prints with nothing to report: nothing, or [].
func TestPrintHealth(t *testing.T) {
	t.Parallel()
	partitions, err := healthOf(fabricatedMetadata(), map[string]int{"orders": 2, "logs": 1})
	if err != nil {
		t.Fatal(err)
	}
	var kept []partitionHealth
	for _, p := range partitions {
		if p.underReplicated() {
			kept = append(kept, p)
		}
	}
	var table bytes.Buffer
	if err := printHealth(&table, kept, false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"TOPIC   PARTITION  LEADER  EPOCH  REPLICAS  ISR  OFFLINE\n" +
		"orders  1          2       7      2,3,1     2,1  3\n" +
		"orders  2          1       2      3,1,2     1    3\n"
	if table.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), want)
	}
	table.Reset()
	if err := printHealth(&table, kept[:1], true); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(table.String(), "\n"); !strings.HasSuffix(lines[0], "OFFLINE  MIN-ISR") || !strings.HasSuffix(lines[1], "3        2") {
		t.Errorf("table with MIN-ISR:\n%s", table.String())
	}
	table.Reset()
	if err := printHealth(&table, nil, false); err != nil || table.Len() != 0 {
		t.Errorf("nothing to report printed %q (%v); want nothing", table.String(), err)
	}

	var out bytes.Buffer
	if err := printJSON(&out, kept[:1]); err != nil {
		t.Fatal(err)
	}
	var decoded []map[string]any
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"topic", "partition", "leader", "leader_epoch", "replicas", "isr", "offline_replicas", "min_insync_replicas"} {
		if _, ok := decoded[0][field]; !ok {
			t.Errorf("JSON %s has no %q", out.String(), field)
		}
	}
	// logs-1 had no offline list in Metadata: [] in JSON, not null.
	var logs1 partitionHealth
	for _, p := range partitions {
		if p.Topic == "logs" && p.Partition == 1 {
			logs1 = p
		}
	}
	out.Reset()
	printJSON(&out, logs1)
	if !strings.Contains(out.String(), `"offline_replicas": []`) {
		t.Errorf("a missing offline list: %s", out.String())
	}
}
