package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// replicationRow is one partition as `strata topic list --under-replicated`
// (and the other reports) print it with --json.
type replicationRow struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
}

// clusterReplication is the part of `strata cluster status --json` that
// counts partitions by replication health.
type clusterReplication struct {
	Replication *struct {
		Partitions      int `json:"partitions"`
		UnderReplicated int `json:"under_replicated"`
		UnderMinISR     int `json:"under_min_isr"`
		Unavailable     int `json:"unavailable"`
	} `json:"replication"`
}

// TestReplicationCLI drives the replication views of the CLI over three
// real brokers: `topic describe` shows a full ISR for a topic of
// replication factor 3; once one broker is killed with SIGKILL and fenced,
// `topic list --under-replicated` lists that topic's partitions without
// it in their ISR, `--unavailable` the partitions of a one-replica topic
// it held, `--at-min-isr` the first topic's (min.insync.replicas 2), and
// `cluster status` counts both; restarted, the broker catches up and the
// lists are empty again, and the counts 0.
func TestReplicationCLI(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := func(s *server, args ...string) (string, error) { return s.strata(ctx, "", args...) }
	must := func(s *server, args ...string) string {
		t.Helper()
		out, err := run(s, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	rows := func(s *server, report string) ([]replicationRow, error) {
		out, err := run(s, "topic", "list", report, "--json")
		if err != nil {
			return nil, err
		}
		var got []replicationRow
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			return nil, fmt.Errorf("topic list %s --json: %w: %q", report, err, out)
		}
		return got, nil
	}
	names := func(rows []replicationRow) string {
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
		}
		return strings.Join(out, " ")
	}
	counts := func(s *server) (clusterReplication, error) {
		var c clusterReplication
		out, err := run(s, "cluster", "status", "--json")
		if err != nil {
			return c, err
		}
		if err := json.Unmarshal([]byte(out), &c); err != nil || c.Replication == nil {
			return c, fmt.Errorf("cluster status --json without replication counts (%v): %s", err, out)
		}
		return c, nil
	}

	must(servers[0], "topic", "create", "replicated", "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	must(servers[0], "topic", "create", "single", "--partitions", "3", "--replication-factor", "1")

	type described struct {
		Partitions []struct {
			Partition       int32   `json:"partition"`
			Leader          int32   `json:"leader"`
			LeaderEpoch     int32   `json:"leader_epoch"`
			Replicas        []int32 `json:"replicas"`
			ISR             []int32 `json:"isr"`
			OfflineReplicas []int32 `json:"offline_replicas"`
		} `json:"partitions"`
	}
	describe := func(s *server, topic string) (described, error) {
		var d []described
		out, err := run(s, "topic", "describe", topic, "--json")
		if err != nil {
			return described{}, err
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil || len(d) != 1 {
			return described{}, fmt.Errorf("topic describe %s --json (%v): %s", topic, err, out)
		}
		return d[0], nil
	}
	waitUntil(t, "describe shows every partition of replicated led, with replicas and ISR of 3", func() (bool, string) {
		d, err := describe(servers[0], "replicated")
		if err != nil {
			return false, err.Error()
		}
		for _, p := range d.Partitions {
			if p.Leader < 0 || len(p.Replicas) != 3 || len(p.ISR) != 3 || len(p.OfflineReplicas) != 0 {
				return false, fmt.Sprintf("%+v", d)
			}
		}
		return len(d.Partitions) == 3, fmt.Sprintf("%+v", d)
	})
	if table := must(servers[0], "topic", "describe", "replicated"); !strings.Contains(table, "REPLICAS") || !strings.Contains(table, "ISR") || !strings.Contains(table, "OFFLINE") {
		t.Fatalf("describe table has no REPLICAS, ISR and OFFLINE columns:\n%s", table)
	}
	waitUntil(t, "every report empty and every count 0 on a healthy cluster", func() (bool, string) {
		for _, report := range []string{"--under-replicated", "--unavailable"} {
			if out, err := run(servers[0], "topic", "list", report); err != nil || out != "" {
				return false, fmt.Sprintf("topic list %s: %q %v", report, out, err)
			}
		}
		c, err := counts(servers[0])
		if err != nil {
			return false, err.Error()
		}
		r := *c.Replication
		return r.Partitions == 6 && r.UnderReplicated == 0 && r.Unavailable == 0 && r.UnderMinISR == 0, fmt.Sprintf("%+v", r)
	})

	// Kill the broker that holds single-0, and watch from another one.
	single, err := describe(servers[0], "single")
	if err != nil {
		t.Fatal(err)
	}
	victim := single.Partitions[0].Replicas[0]
	var wantUnavailable []string
	for _, p := range single.Partitions {
		if p.Replicas[0] == victim {
			wantUnavailable = append(wantUnavailable, fmt.Sprintf("single-%d", p.Partition))
		}
	}
	killed := servers[victim-1]
	observer := servers[victim%3]
	killed.kill()

	const wantURP = "replicated-0 replicated-1 replicated-2"
	waitUntil(t, fmt.Sprintf("broker %d's partitions under-replicated, and single's on it unavailable", victim), func() (bool, string) {
		urp, err := rows(observer, "--under-replicated")
		if err != nil {
			return false, err.Error()
		}
		if names(urp) != wantURP {
			return false, fmt.Sprintf("under-replicated %q", names(urp))
		}
		for _, r := range urp {
			if slices.Contains(r.ISR, victim) || len(r.ISR) != 2 || len(r.Replicas) != 3 || r.Leader == victim || r.Leader < 0 {
				return false, fmt.Sprintf("under-replicated %+v", urp)
			}
		}
		unavailable, err := rows(observer, "--unavailable")
		if err != nil {
			return false, err.Error()
		}
		if names(unavailable) != strings.Join(wantUnavailable, " ") {
			return false, fmt.Sprintf("unavailable %q, want %q", names(unavailable), wantUnavailable)
		}
		c, err := counts(observer)
		if err != nil {
			return false, err.Error()
		}
		r := *c.Replication
		return r.UnderReplicated == 3 && r.Unavailable == len(wantUnavailable), fmt.Sprintf("cluster status %+v", r)
	})
	atMin, err := rows(observer, "--at-min-isr")
	if err != nil || !strings.Contains(names(atMin), wantURP) {
		t.Errorf("--at-min-isr with broker %d down: %q %v; want the replicated partitions (ISR 2 of min.insync.replicas 2)", victim, names(atMin), err)
	}
	if table := must(observer, "topic", "list", "--under-replicated"); !strings.HasPrefix(table, "TOPIC") || strings.Count(table, "\nreplicated ") != 3 {
		t.Errorf("topic list --under-replicated table:\n%s", table)
	}
	if status := must(observer, "cluster", "status"); !strings.Contains(status, " 3 under-replicated") || !strings.Contains(status, fmt.Sprintf(" %d unavailable", len(wantUnavailable))) {
		t.Errorf("cluster status does not count them:\n%s", status)
	}
	d, err := describe(observer, "replicated")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Partitions {
		if !slices.Equal(p.OfflineReplicas, []int32{victim}) {
			t.Errorf("describe with broker %d fenced: partition %d offline replicas %v", victim, p.Partition, p.OfflineReplicas)
		}
	}

	killed.restart()
	// Each broker answers from the metadata it has applied, and the CLI's
	// requests may go to any of them: the restarted broker can still
	// show its old ISRs for a moment after another showed the full ones,
	// so the JSON report is asked in the same wait.
	waitUntil(t, fmt.Sprintf("broker %d back in every ISR, and every report empty", victim), func() (bool, string) {
		for _, report := range []string{"--under-replicated", "--unavailable", "--under-min-isr"} {
			if out, err := run(observer, "topic", "list", report); err != nil || out != "" {
				return false, fmt.Sprintf("topic list %s: %q %v", report, out, err)
			}
		}
		if out, err := run(observer, "topic", "list", "--under-replicated", "--json"); err != nil || strings.TrimSpace(out) != "[]" {
			return false, fmt.Sprintf("topic list --under-replicated --json: %q %v, want []", out, err)
		}
		c, err := counts(observer)
		if err != nil {
			return false, err.Error()
		}
		r := *c.Replication
		return r.UnderReplicated == 0 && r.Unavailable == 0 && r.UnderMinISR == 0, fmt.Sprintf("cluster status %+v", r)
	})
}

// waitUntil polls ok until it holds, failing the test after a minute with
// what ok last said: a broker's fencing and catching up have no event a
// client can wait on.
func waitUntil(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute; last: %s", what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
