package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startLimitedServer starts a single-node server whose descriptor limit
// starts at soft and may rise to hard (prlimit sets both before strata
// runs), so the descriptor budget is small and the same on every machine.
func startLimitedServer(t *testing.T, soft, hard int, extra ...string) *server {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to start a server with a low descriptor limit: %v", err)
	}
	// prlimit execs strata, so the signals stop sends reach it.
	s := &server{t: t, dataDir: t.TempDir(), kafka: freePort(t), admin: freePort(t), meta: freePort(t), extra: extra,
		wrapper: []string{prlimit, fmt.Sprintf("--nofile=%d:%d", soft, hard), "--"}}
	s.launch()
	t.Cleanup(s.stop)
	s.waitReady()
	return s
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, s *server) (int, string) {
	t.Helper()
	return httpGet(t, "http://"+s.admin+"/readyz")
}

// waitReadyz polls /readyz until ok accepts its answer: readiness changes
// inside the process, with no event a test can wait on. It fails the test
// after two minutes, a bound on a broken broker, not a measurement.
func waitReadyz(t *testing.T, s *server, what string, ok func(status int, body string) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, body := readyz(t, s)
		if ok(status, body) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz still answers %d %q", what, status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// roundTrip produces n records to topic and reads them back.
func roundTrip(t *testing.T, s *server, topic string, n int) {
	t.Helper()
	var records []*kgo.Record
	for i := range n {
		records = append(records, &kgo.Record{Value: fmt.Appendf(nil, "%s %d", topic, i)})
	}
	produced := produceAll(t, newClient(t, s), topic, records)
	checkSameRecords(t, produced, consumeAll(t, s, topic, n))
}

// The 20,000 partitions, asked of a broker whose descriptor limit
// holds 256: refused, with a message naming the limit, and the broker
// stays healthy. Then it is filled to its limit exactly, under 1,024
// descriptors, and keeps serving.
func TestTwentyThousandPartitionsRefusedCleanly(t *testing.T) {
	t.Parallel()
	s := startLimitedServer(t, 256, 1024)
	if !strings.Contains(s.log.String(), "descriptor_limit=1024 descriptor_hard_limit=1024 max_broker_partitions=256 max_connections=192") {
		t.Fatalf("the starting line does not report the raised limit:\n%s", s.log)
	}
	metrics := scrape(t, s)
	for _, want := range []string{"process_max_fds 1024", "strata_ingest_max_broker_partitions 256", "strata_ingest_max_connections 192", `strata_ingest_descriptor_budget{use="limit"} 1024`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))
	// kadm returns the topic's error as its own too.
	r, _ := admin.CreateTopic(ctx, 20000, 1, nil, "fdx")
	if !errors.Is(r.Err, kerr.PolicyViolation) || !strings.Contains(r.ErrMessage, "20000 new partitions would give broker 1 20000 partitions, past max.broker.partitions 256") {
		t.Fatalf("20,000 partitions: %v %q, want POLICY_VIOLATION naming max.broker.partitions", r.Err, r.ErrMessage)
	}
	_, err := s.strata(ctx, "", "topic", "create", "fdx", "--partitions", "20000")
	if err == nil || !strings.Contains(err.Error(), "POLICY_VIOLATION") || !strings.Contains(err.Error(), "past max.broker.partitions 256") {
		t.Fatalf("strata topic create --partitions 20000: %v", err)
	}
	if status, body := readyz(t, s); status != http.StatusOK {
		t.Fatalf("/readyz after the refusal: %d %s", status, body)
	}
	listed, err := admin.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listed.Has("fdx") {
		t.Fatal("the refused topic exists")
	}

	// Up to the limit is served: 255 partitions and one more topic.
	createTopic(t, s, "filled", 255, nil)
	createTopic(t, s, "other", 1, nil)
	r, _ = admin.CreateTopic(ctx, 1, 1, nil, "one-too-many")
	if !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("a 257th partition: %v, want POLICY_VIOLATION", r.Err)
	}
	grown, err := admin.CreatePartitions(ctx, 1, "other")
	if err != nil {
		t.Fatal(err)
	}
	if g := grown["other"]; !errors.Is(g.Err, kerr.PolicyViolation) {
		t.Fatalf("growing past the limit: %v, want POLICY_VIOLATION", g.Err)
	}
	if status, body := readyz(t, s); status != http.StatusOK {
		t.Fatalf("/readyz with 256 partitions: %d %s", status, body)
	}
	roundTrip(t, s, "other", 50)
	roundTrip(t, s, "filled", 255)
	if strings.Contains(s.log.String(), "too many open files") {
		t.Fatalf("the broker ran out of descriptors:\n%s", s.log)
	}

	// Restarted with a lower max.broker.partitions, the broker serves the
	// partitions it has and refuses more.
	s.stop()
	s.extra = []string{"--max.broker.partitions", "10"}
	s.restart()
	if !strings.Contains(s.log.String(), "this broker holds more partitions than max.broker.partitions") {
		t.Fatalf("no warning for holding 256 partitions past a limit of 10:\n%s", s.log)
	}
	admin = kadm.NewClient(newClient(t, s))
	r, _ = admin.CreateTopic(ctx, 1, 1, nil, "past-ten")
	if !errors.Is(r.Err, kerr.PolicyViolation) || !strings.Contains(r.ErrMessage, "past max.broker.partitions 10") {
		t.Fatalf("creating past a lowered limit: %v %q", r.Err, r.ErrMessage)
	}
	more := produceAll(t, newClient(t, s), "other", []*kgo.Record{{Value: []byte("after the restart")}})
	if more[0].offset != 50 {
		t.Fatalf("produced at offset %d after the restart, want 50", more[0].offset)
	}
}

// A partition that cannot open makes /readyz say so, naming it, while
// other topics keep working; once the cause is gone it opens on a retry,
// with no restart, and /readyz is ready again.
func TestPartitionThatFailsToOpenRecovers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "healthy", 1, nil)
	// A file where the partition's directory goes: every open fails
	// until it is removed.
	blocker := filepath.Join(s.dataDir, "partitions", "blocked-0")
	if err := os.WriteFile(blocker, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	createTopic(t, s, "blocked", 1, nil)
	waitReadyz(t, s, "with blocked-0 unopenable", func(status int, body string) bool {
		return status == http.StatusServiceUnavailable && strings.Contains(body, "blocked-0")
	})
	roundTrip(t, s, "healthy", 20)

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, s, "once blocked-0 can open", func(status int, _ string) bool { return status == http.StatusOK })
	roundTrip(t, s, "blocked", 20)
	if !strings.Contains(s.log.String(), "partition is back online") {
		t.Fatalf("no log line for the recovery:\n%s", s.log)
	}
}

// A replication factor above the live brokers is refused, by the broker
// and so by the CLI, saying why and what to do.
func TestReplicationFactorAboveTheBrokersRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.strata(ctx, "", "topic", "create", "rf3", "--replication-factor", "3")
	if err == nil {
		t.Fatal("strata topic create --replication-factor 3 succeeded")
	}
	for _, want := range []string{"INVALID_REPLICATION_FACTOR", "3 replicas with 1 live brokers", "no larger than the live brokers"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("strata topic create --replication-factor 3: %v, want %q in it", err, want)
		}
	}
	if _, err := s.strata(ctx, "", "topic", "create", "rf1", "--replication-factor", "1"); err != nil {
		t.Fatal(err)
	}
}

// A max.broker.partitions or max.connections the descriptor limit cannot
// hold is refused at start, naming the setting and the fix, rather than
// accepted and then run out of descriptors.
func TestLimitsPastTheDescriptorBudgetRefusedAtStart(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ flag, value, want string }{
		{"--max.broker.partitions", "300", "max.broker.partitions 300: the descriptor limit 1024 holds at most 256 partitions"},
		{"--max.connections", "300", "max.connections 300: the descriptor limit 1024 gives client sockets 192 descriptors"},
	} {
		cmd := exec.CommandContext(ctx, prlimit, "--nofile=1024:1024", "--", strataBinary, "server",
			"--listen", freePort(t), "--admin-listen", freePort(t), "--meta-listen", freePort(t), "--schema.registry.listen", freePort(t), "--data", t.TempDir(), c.flag, c.value)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "ulimit -Hn") {
			t.Fatalf("strata server %s %s: %v, output %q; want a refusal containing %q", c.flag, c.value, err, out, c.want)
		}
	}
}
