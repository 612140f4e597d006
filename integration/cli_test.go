package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCLI drives a server with the strata CLI: topics, produce and consume
// in text and JSON, and cluster status.
func TestCLI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, err := s.strata(ctx, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	run("", "topic", "create", "cli", "--partitions", "2", "--config", "retention.ms=60000")
	var listed []struct {
		Topic      string `json:"topic"`
		Partitions int    `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(run("", "topic", "list", "--json")), &listed); err != nil || len(listed) != 1 || listed[0].Topic != "cli" || listed[0].Partitions != 2 {
		t.Fatalf("topic list --json: %v %+v", err, listed)
	}
	if table := run("", "topic", "list"); !strings.Contains(table, "TOPIC") || !strings.Contains(table, "cli") {
		t.Fatalf("topic list table:\n%s", table)
	}

	run("k1:one\nk2:two\nk3:three\n", "produce", "cli", "--key-separator", ":", "--header", "source=test", "--partition", "1")
	lines := strings.Split(strings.TrimSpace(run("", "consume", "cli", "--partition", "1", "--key-separator", "=")), "\n")
	if strings.Join(lines, ",") != "k1=one,k2=two,k3=three" {
		t.Fatalf("consume text: %q", lines)
	}
	var first struct {
		Offset  int64   `json:"offset"`
		Key     *string `json:"key"`
		Value   *string `json:"value"`
		Headers []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"headers"`
	}
	out := run("", "consume", "cli", "--partition", "1", "--from", "1", "--max", "1", "--json")
	if err := json.Unmarshal([]byte(out), &first); err != nil || first.Offset != 1 || *first.Key != "k2" || *first.Value != "two" ||
		len(first.Headers) != 1 || first.Headers[0].Key != "source" || *first.Headers[0].Value != "test" {
		t.Fatalf("consume --json from offset 1: %v %s", err, out)
	}
	if out := run("", "consume", "cli", "--partition", "1", "--from", "latest"); out != "" {
		t.Fatalf("consume from latest without --follow printed %q", out)
	}

	run("", "topic", "alter", "cli", "--set", "retention.ms=120000", "--set", "max.message.bytes=65536")
	var described []struct {
		Partitions []struct {
			HighWatermark int64 `json:"high_watermark"`
		} `json:"partitions"`
		Configs []struct {
			Name   string `json:"name"`
			Value  string `json:"value"`
			Source string `json:"source"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(run("", "topic", "describe", "cli", "--json")), &described); err != nil || len(described) != 1 {
		t.Fatalf("topic describe --json: %v", err)
	}
	if described[0].Partitions[1].HighWatermark != 3 {
		t.Fatalf("partition 1 high watermark %d, want 3", described[0].Partitions[1].HighWatermark)
	}
	configs := map[string]string{}
	for _, c := range described[0].Configs {
		configs[c.Name] = c.Value + " " + c.Source
	}
	if configs["retention.ms"] != "120000 topic" || configs["max.message.bytes"] != "65536 topic" || configs["segment.bytes"] != "134217728 default" {
		t.Fatalf("described configs: retention.ms %q, max.message.bytes %q, segment.bytes %q", configs["retention.ms"], configs["max.message.bytes"], configs["segment.bytes"])
	}

	_, err := s.strata(ctx, "", "topic", "alter", "cli", "--set", "retention.msec=1")
	if err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") || strings.Count(strings.TrimSpace(err.Error()), "\n") != 0 {
		t.Fatalf("altering an unknown config: %v; want one line naming INVALID_CONFIG", err)
	}
	_, err = s.strata(ctx, "", "topic", "describe", "missing")
	if err == nil || !strings.Contains(err.Error(), "strata topic list") {
		t.Fatalf("describing a missing topic: %v; want the fix named", err)
	}

	var status struct {
		ClusterID string `json:"cluster_id"`
		LeaderID  string `json:"leader_id"`
		Term      uint64 `json:"term"`
		Servers   []struct {
			Suffrage string `json:"suffrage"`
		} `json:"servers"`
		Brokers []struct {
			ID    int32  `json:"id"`
			State string `json:"state"`
		} `json:"brokers"`
		Serving struct {
			Partitions int `json:"partitions"`
			Led        int `json:"led_here"`
		} `json:"serving"`
	}
	if err := json.Unmarshal([]byte(run("", "cluster", "status", "--json")), &status); err != nil {
		t.Fatal(err)
	}
	if status.ClusterID == "" || status.LeaderID != "1" || status.Term == 0 || len(status.Servers) != 1 || status.Servers[0].Suffrage != "voter" ||
		len(status.Brokers) != 1 || status.Brokers[0].State != "active" || status.Serving.Partitions != 2 || status.Serving.Led != 2 {
		t.Fatalf("cluster status: %+v", status)
	}
	if table := run("", "cluster", "status"); !strings.Contains(table, "BROKER") || !strings.Contains(table, "voter") {
		t.Fatalf("cluster status table:\n%s", table)
	}

	run("", "topic", "delete", "cli")
	if out := run("", "topic", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("topics after delete: %s", out)
	}
}
