package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// joinCluster starts a new, empty broker with id next to servers, as an
// operator adds one: the same metadata voters and flags, a fresh data
// directory. It joins the metadata group as a non-voter.
func joinCluster(t *testing.T, servers []*server, id int) *server {
	t.Helper()
	extra := slices.Clone(servers[0].extra)
	extra[slices.Index(extra, "--node-id")+1] = fmt.Sprint(id)
	s := &server{t: t, dataDir: t.TempDir(), kafka: freePort(t), admin: freePort(t), meta: freePort(t), extra: extra}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// watchAvailability polls Metadata until stop is closed and returns the
// partitions of topic it ever saw without a leader.
func watchAvailability(ctx context.Context, admin *kadm.Client, topic string, stop <-chan struct{}) func() []string {
	var mu sync.Mutex
	var unavailable []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			md, err := admin.Metadata(ctx, topic)
			if err != nil {
				continue
			}
			for _, p := range md.Topics[topic].Partitions {
				if p.Leader < 0 {
					mu.Lock()
					unavailable = append(unavailable, fmt.Sprintf("%s-%d at %s", topic, p.Partition, time.Now().Format(time.StampMilli)))
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return unavailable
	}
}

// replicasOn counts the replicas, and the partitions led, of topic on
// broker id.
func replicasOn(ctx context.Context, t *testing.T, admin *kadm.Client, topic string, id int32) (replicas, led int) {
	t.Helper()
	md, err := admin.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[topic].Partitions {
		if slices.Contains(p.Replicas, id) {
			replicas++
		}
		if p.Leader == id {
			led++
		}
	}
	return replicas, led
}

// TestClusterOperationsUnderLoad is the seeds' runbook for a degraded
// broker, done with the strata CLI under idempotent acks=all producers and
// a consumer group: a plan from `partition reassign --generate` moves every
// partition off broker 1 and round-trips through --execute (throttled, as
// kafka-reassign-partitions.sh --throttle does) and --verify (which lifts
// the throttles);
// broker 2 is drained (no partition is ever without a leader meanwhile)
// and killed, leaving no partition under-replicated; a new empty broker joins and `cluster rebalance` gives it
// its share. No acknowledged record is lost or duplicated. Plans naming a
// broker or partition the cluster lacks are refused with a line naming it.
func TestClusterOperationsUnderLoad(t *testing.T) {
	t.Parallel()
	servers := startClusterOf(t, 4, 3)
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, seeds[:1]))
	const topic = "ops"
	replicatedTopic(ctx, t, admin, topic, 8, nil)
	led, load := startLedgerLoad(t, seeds, topic, 5*time.Millisecond)
	time.Sleep(time.Second)
	cli := func(args ...string) string {
		t.Helper()
		out, err := servers[0].strata(ctx, "", args...)
		if err != nil {
			t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	// A plan off broker 1, round-tripped through --execute and --verify.
	plan := cli("partition", "reassign", "--generate", "--topics", topic, "--brokers", "2,3,4")
	var parsed reassignmentPlanDoc
	if err := json.Unmarshal([]byte(plan), &parsed); err != nil || parsed.Version != 1 || len(parsed.Partitions) != 8 {
		t.Fatalf("generated plan %v:\n%s", err, plan)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(cli("partition", "reassign", "--execute", "--plan", planFile, "--wait", "--timeout", "30s", "--throttle", "100000000"))
	throttledReplicas := func() string {
		var configs []struct{ Name, Value string }
		json.Unmarshal([]byte(cli("config", "describe", "--topic", topic, "--json")), &configs)
		for _, c := range configs {
			if c.Name == "follower.replication.throttled.replicas" {
				return c.Value
			}
		}
		return "?"
	}
	// Each broker answers DescribeConfigs from its copy of the metadata,
	// which follows the group in its own time.
	eventually(t, "--throttle setting follower.replication.throttled.replicas", func() bool {
		got := throttledReplicas()
		return got != "" && got != "?"
	})
	t.Log(cli("partition", "reassign", "--verify", "--plan", planFile))
	eventually(t, "--verify of a finished plan lifting follower.replication.throttled.replicas", func() bool { return throttledReplicas() == "" })
	// Every broker's Metadata answer follows the metadata group in its
	// own time, as in Kafka.
	eventually(t, "no replica left on broker 1", func() bool { n, _ := replicasOn(ctx, t, admin, topic, 1); return n == 0 })

	// Plans naming what the cluster lacks are refused, naming it.
	for _, c := range []struct {
		edit func(*reassignmentPlanDoc)
		want string
	}{
		{func(d *reassignmentPlanDoc) { d.Partitions[0].Replicas[0] = 9 }, "broker 9, which is not registered"},
		{func(d *reassignmentPlanDoc) { d.Partitions[0].Partition = 99 }, "partition ops-99, which does not exist"},
	} {
		var doc reassignmentPlanDoc
		json.Unmarshal([]byte(plan), &doc)
		c.edit(&doc)
		bad, _ := json.Marshal(doc)
		_, err := servers[0].strata(ctx, string(bad), "partition", "reassign", "--execute", "--plan", "-")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("a plan naming what the cluster lacks: %v, want exit 2 naming %q", err, c.want)
		}
	}

	// Drain broker 2, no partition unavailable meanwhile; then kill it.
	stop := make(chan struct{})
	unavailable := watchAvailability(ctx, admin, topic, stop)
	t.Log(cli("broker", "drain", "2", "--timeout", "30s"))
	close(stop)
	if seen := unavailable(); len(seen) > 0 {
		t.Fatalf("partitions without a leader during the drain: %v", seen)
	}
	eventually(t, "broker 2 empty after draining", func() bool { n, l := replicasOn(ctx, t, admin, topic, 2); return n == 0 && l == 0 })
	servers[1].kill()
	// Stopped after its drain, it leaves no partition under-replicated or
	// unavailable, also once it is fenced.
	waitForStatus(t, servers[0], "broker 2 fenced", func(st metaStatus) bool {
		return slices.ContainsFunc(st.Brokers, func(b metaBroker) bool { return b.ID == 2 && b.State == "fenced" })
	})
	md, err := admin.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			t.Fatalf("with the drained broker stopped, %s-%d has leader %d, replicas %v, ISR %v", topic, p.Partition, p.Leader, p.Replicas, p.ISR)
		}
	}

	// A new empty broker takes its share.
	fifth := joinCluster(t, servers, 5)
	t.Log(cli("cluster", "rebalance", "--execute", "--wait", "--timeout", "30s"))
	eventually(t, "the new broker holding its share of 24 replicas and 8 leaders over 4 brokers", func() bool {
		replicas, leads := replicasOn(ctx, t, admin, topic, 5)
		return replicas == 6 && leads == 2
	})
	checkLedger(ctx, t, led, load, append(seeds, fifth.kafka), topic, 1000)
}

// reassignmentPlanDoc is the plan format, as a user's tools read it.
type reassignmentPlanDoc struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	} `json:"partitions"`
}
