package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stratalog/strata/meta"
)

func TestReplicationLine(t *testing.T) {
	t.Parallel()
	if got := replicationLine(healthCounts{Partitions: 6}); got != "6 partitions in Metadata: 0 under-replicated, 0 under min ISR, 0 unavailable" {
		t.Errorf("healthy: %q", got)
	}
	got := replicationLine(healthCounts{Partitions: 6, UnderReplicated: 4, Unavailable: 1})
	if !strings.HasPrefix(got, "6 partitions in Metadata: 4 under-replicated, 0 under min ISR, 1 unavailable (list them with ") ||
		!strings.Contains(got, "`strata topic list --under-replicated`") || !strings.Contains(got, "`strata topic list --unavailable`") ||
		strings.Contains(got, "--under-min-isr") {
		t.Errorf("unhealthy: %q", got)
	}
}

// TestClusterStatusCountsOrSaysWhyNot serves a status document, and runs
// cluster status against it with no broker to ask for Metadata: the
// document is printed all the same, the command fails naming what it
// could not count and the fix, and the JSON has no replication counts
// rather than zeros.
func TestClusterStatusCountsOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	doc := clusterStatus{Status: meta.Status{NodeID: "1", ClusterID: "c", LeaderID: "1", Brokers: []meta.BrokerStatus{
		{ID: 1, State: "fenced", Listeners: []meta.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}},
	}}}
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { json.NewEncoder(w).Encode(doc) }))
	defer admin.Close()
	address := strings.TrimPrefix(admin.URL, "http://")

	code, stdout, stderr := runCLI(t, "", "cluster", "status", "--admin", address, "--bootstrap", "")
	if code != exitFailed || !strings.Contains(stdout, "BROKER") || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "no active broker") || !strings.Contains(stderr, "--bootstrap") {
		t.Errorf("no active broker: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "", "cluster", "status", "--admin", address, "--bootstrap", "127.0.0.1:1", "--timeout", "2s", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitFailed {
		t.Fatalf("unreachable bootstrap --json: exit %d, stdout %q: %v", code, stdout, err)
	}
	if _, ok := got["replication"]; ok || got["cluster_id"] != "c" {
		t.Errorf("unreachable bootstrap --json printed %s", stdout)
	}
	var failure errorJSON
	if err := json.Unmarshal([]byte(stderr), &failure); err != nil || !strings.Contains(failure.Error, "counting partitions") || !strings.Contains(failure.Hint, "--bootstrap") {
		t.Errorf("unreachable bootstrap --json: stderr %q (%v)", stderr, err)
	}
}

// TestStatusReportJSON: the counts are one more field of the admin
// document, which stays flat.
func TestStatusReportJSON(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	printJSON(&out, statusReport{clusterStatus: &clusterStatus{Status: meta.Status{ClusterID: "c"}}, Replication: &healthCounts{Partitions: 3, UnderReplicated: 2}})
	var got struct {
		ClusterID   string `json:"cluster_id"`
		Serving     any    `json:"serving"`
		Replication struct {
			Partitions      int `json:"partitions"`
			UnderReplicated int `json:"under_replicated"`
		} `json:"replication"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.ClusterID != "c" || got.Serving == nil ||
		got.Replication.Partitions != 3 || got.Replication.UnderReplicated != 2 || !strings.Contains(out.String(), `"unavailable": 0`) {
		t.Fatalf("status JSON %s: %+v %v", out.String(), got, err)
	}
}
