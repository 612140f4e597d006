package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupOffsetsSurviveRestartAndCLI: committed offsets survive a broker
// restart; `strata group` lists, describes (with lag), resets and deletes
// the group.
func TestGroupOffsetsSurviveRestartAndCLI(t *testing.T) {
	t.Parallel()
	s := groupServer(t)
	const topic, group = "offsets", "offsets-group"
	createTopic(t, s, topic, 3, nil)
	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var records []*kgo.Record
	for i := range 30 {
		records = append(records, &kgo.Record{Partition: int32(i % 3), Value: []byte("v")})
	}
	produceAll(t, producer, topic, records)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	commit := kadm.Offsets{}
	for p, at := range []int64{4, 5, 10} {
		commit.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: at, LeaderEpoch: 0, Metadata: "meta"})
	}
	if resp, err := kadm.NewClient(newClient(t, s)).CommitOffsets(ctx, group, commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	s.stop()
	s.restart()
	fetched, err := kadm.NewClient(newClient(t, s)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p, at := range []int64{4, 5, 10} {
		o, ok := fetched.Lookup(topic, int32(p))
		if !ok || o.Err != nil || o.At != at || o.Metadata != "meta" {
			t.Fatalf("partition %d after restart: %+v (present %v), want %d", p, o, ok, at)
		}
	}

	run := func(args ...string) string {
		t.Helper()
		out, err := s.strata(ctx, "", args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var listed []struct {
		Group string `json:"group"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(run("group", "list", "--json")), &listed); err != nil || len(listed) != 1 || listed[0].Group != group || listed[0].State != "Empty" {
		t.Fatalf("group list --json: %v %+v", err, listed)
	}
	var described []groupDocument
	if err := json.Unmarshal([]byte(run("group", "describe", group, "--json")), &described); err != nil || len(described) != 1 {
		t.Fatalf("group describe --json: %v %+v", err, described)
	}
	lags := map[int32]int64{}
	for _, p := range described[0].Partitions {
		lags[p.Partition] = p.LagRecords
		// The records were produced before the restart, well under a
		// minute ago: a lagging partition's age is in between.
		lagging := p.LagRecords > 0 && p.LagMs > 0 && p.LagMs < time.Minute.Milliseconds()
		caughtUp := p.LagRecords == 0 && p.LagMs == 0
		if !lagging && !caughtUp || p.Error != "" {
			t.Fatalf("partition lag %+v", p)
		}
	}
	if lags[0] != 6 || lags[1] != 5 || lags[2] != 0 {
		t.Fatalf("lag by partition %v, want 6, 5, 0", lags)
	}
	if table := run("group", "describe", group); !strings.Contains(table, "LAG TIME") || !strings.Contains(table, "Empty") {
		t.Fatalf("group describe table:\n%s", table)
	}
	metrics := scrape(t, s)
	for _, want := range []string{
		`strata_group_lag_records{group="offsets-group",partition="0",topic="offsets"} 6`,
		`strata_group_lag_records{group="offsets-group",partition="2",topic="offsets"} 0`,
		`strata_group_stalled{group="offsets-group",member="",partition="0",topic="offsets"} 0`,
		`strata_group_members{group="offsets-group",state="Empty"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %s", want)
		}
	}

	committed := func() []int64 {
		t.Helper()
		var plan struct {
			Offsets []struct {
				Current int64 `json:"current"`
			} `json:"offsets"`
		}
		if err := json.Unmarshal([]byte(run("group", "reset-offsets", group, "--shift-by", "0", "--json")), &plan); err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, o := range plan.Offsets {
			out = append(out, o.Current)
		}
		return out
	}
	if out := run("group", "reset-offsets", group, "--to-earliest"); !strings.Contains(out, "dry run") {
		t.Fatalf("reset without --execute:\n%s", out)
	}
	checkOffsets := func(what string, want ...int64) {
		t.Helper()
		if got := committed(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("%s: committed %v, want %v", what, got, want)
		}
	}
	checkOffsets("after a dry run", 4, 5, 10)
	run("group", "reset-offsets", group, "--to-earliest", "--execute")
	checkOffsets("to earliest", 0, 0, 0)
	run("group", "reset-offsets", group, "--shift-by", "7", "--execute")
	checkOffsets("shifted by 7", 7, 7, 7)
	run("group", "reset-offsets", group, "--shift-by", "7", "--execute")
	checkOffsets("shifted past the end", 10, 10, 10)
	run("group", "reset-offsets", group, "--to-datetime", "2000-01-01T00:00:00Z", "--execute")
	checkOffsets("to a time before every record", 0, 0, 0)
	run("group", "reset-offsets", group, "--to-latest", "--execute")
	checkOffsets("to latest", 10, 10, 10)

	run("group", "delete", group)
	if out := run("group", "list", "--json"); strings.Contains(out, group) {
		t.Fatalf("group listed after delete: %s", out)
	}
}

// scrape returns the server's /metrics.
func scrape(t *testing.T, s *server) string {
	t.Helper()
	status, body := httpGet(t, "http://"+s.admin+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	return body
}

// groupDocument is the part of `strata group describe --json` the test
// reads.
type groupDocument struct {
	Group      string `json:"group"`
	State      string `json:"state"`
	Partitions []struct {
		Partition  int32  `json:"partition"`
		LagRecords int64  `json:"lag_records"`
		LagMs      int64  `json:"lag_ms"`
		Member     string `json:"member"`
		Stalled    bool   `json:"stalled"`
		Error      string `json:"error"`
	} `json:"partitions"`
}
