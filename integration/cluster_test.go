package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startCluster starts n `strata server` processes that are the voters of
// one metadata group, each a broker too, with the extra flags, and waits
// until all are ready.
func startCluster(t *testing.T, n int, extra ...string) []*server {
	t.Helper()
	return startClusterOf(t, n, n, extra...)
}

// startClusterOf is startCluster with only the first voters servers in
// the metadata group's voters; the others follow it as non-voters.
func startClusterOf(t *testing.T, n, voters int, extra ...string) []*server {
	t.Helper()
	return startClusterFlags(t, n, voters, nil, nil, extra...)
}

// startClusterFlags is startClusterOf with, when set, place(i, s) run on
// server i before anything uses its addresses (to move it: other
// addresses, a wrapper), and flags(i, s) appended to its flags.
func startClusterFlags(t *testing.T, n, voters int, place func(i int, s *server), flags func(i int, s *server) []string, extra ...string) []*server {
	t.Helper()
	servers := make([]*server, n)
	var peers []string
	for i := range servers {
		servers[i] = &server{t: t, dataDir: t.TempDir(), kafka: freePort(t), admin: freePort(t), meta: freePort(t)}
		if place != nil {
			place(i, servers[i])
		}
		if i < voters {
			peers = append(peers, fmt.Sprintf("%d=%s", i+1, servers[i].meta))
		}
	}
	if !slices.Contains(extra, "--bucket") {
		// The brokers of a cluster share one bucket.
		extra = append([]string{"--bucket", "file://" + t.TempDir()}, extra...)
	}
	for i, s := range servers {
		s.extra = append([]string{"--node-id", fmt.Sprint(i + 1), "--meta-peers", strings.Join(peers, ","), "--broker.session.timeout.ms", "4000"}, extra...)
		if flags != nil {
			s.extra = append(s.extra, flags(i, s)...)
		}
		s.launch()
		t.Cleanup(s.stop)
	}
	for _, s := range servers {
		s.waitReady()
	}
	return servers
}

// metaStatus is the part of the admin cluster status the tests read.
type metaStatus struct {
	LeaderID    string       `json:"leader_id"`
	CommitIndex uint64       `json:"commit_index"`
	StateIndex  uint64       `json:"state_index"`
	Brokers     []metaBroker `json:"brokers"`
	Servers     []metaServer `json:"servers"`
}

type metaBroker struct {
	ID    int32  `json:"id"`
	State string `json:"state"`
}

// metaServer is a member of the metadata group's Raft configuration.
type metaServer struct {
	ID       string `json:"id"`
	Suffrage string `json:"suffrage"`
}

func clusterStatusOf(s *server) (metaStatus, error) {
	var st metaStatus
	resp, err := adminHTTP.Get("http://" + s.admin + "/v1/cluster/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("cluster status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitForStatus polls s's cluster status until ok accepts it: leader
// elections and catching up have no event a client can wait on.
func waitForStatus(t *testing.T, s *server, what string, ok func(metaStatus) bool) metaStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := clusterStatusOf(s)
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute (last status %+v, %v):\n%s", what, st, err, s.log)
		}
		<-tick.C
	}
}

// TestClusterSurvivesKill9OfTheMetadataLeader runs three strata servers as
// the voters of one metadata group and brokers of one cluster, over real
// TCP on loopback. It kills the Raft leader's process with SIGKILL: the two
// others elect a new leader and go on creating topics; the killed broker
// is fenced; restarted, it catches up with everything committed while it
// was down, takes its partitions back, and every record acknowledged
// before the kill reads back from the partitions it leads.
func TestClusterSurvivesKill9OfTheMetadataLeader(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	seeds := kafkaAddresses(servers)
	cl := newClientSeeds(t, seeds)
	admin := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopics := func(admin *kadm.Client, names ...string) {
		t.Helper()
		resp, err := admin.CreateTopics(ctx, 3, 1, nil, names...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("create topics %v: %v", names, err)
		}
	}
	createTopics(admin, "before-0", "before-1", "before-2")
	// Three partitions, each led by one of the three brokers.
	records := make([]*kgo.Record, 300)
	for i := range records {
		records[i] = &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "value %d", i)}
	}
	produced := produceAll(t, cl, "before-0", records)

	st := waitForStatus(t, servers[0], "a metadata leader", func(st metaStatus) bool { return st.LeaderID != "" })
	var leader int
	fmt.Sscan(st.LeaderID, &leader)
	killed := servers[leader-1]
	var survivors []*server
	for i, s := range servers {
		if i != leader-1 {
			survivors = append(survivors, s)
		}
	}
	killed.kill()

	waitForStatus(t, survivors[0], "a new metadata leader", func(st metaStatus) bool {
		return st.LeaderID != "" && st.LeaderID != fmt.Sprint(leader)
	})
	survivorAdmin := kadm.NewClient(newClientSeeds(t, []string{survivors[0].kafka, survivors[1].kafka}))
	createTopics(survivorAdmin, "after-0", "after-1")
	waitForStatus(t, survivors[1], "the killed broker fenced", func(st metaStatus) bool {
		for _, b := range st.Brokers {
			if b.ID == int32(leader) {
				return b.State == "fenced"
			}
		}
		return false
	})

	killed.restart()
	want := waitForStatus(t, survivors[0], "the survivors' state", func(metaStatus) bool { return true })
	waitForStatus(t, killed, "the restarted node caught up", func(st metaStatus) bool { return st.StateIndex >= want.StateIndex })
	listed, err := kadm.NewClient(newClientSeeds(t, []string{killed.kafka})).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := listed.Names()
	slices.Sort(names)
	if !slices.Equal(names, []string{"after-0", "after-1", "before-0", "before-1", "before-2"}) {
		t.Fatalf("the restarted node lists topics %v", names)
	}
	checkSameRecords(t, produced, consumeAllSeeds(t, seeds, "before-0", len(produced)))
}
