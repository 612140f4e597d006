package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/meta"
)

// clusterStatus is the document the admin server returns at statusPath and
// `strata cluster status` prints: the metadata node's view of the group and
// the brokers, and what the answering broker serves.
type clusterStatus struct {
	meta.Status
	Serving servingStatus `json:"serving"`
}

// servingStatus counts topics and partitions as the answering broker sees
// them.
type servingStatus struct {
	Topics     int `json:"topics"`
	Partitions int `json:"partitions"`
	Led        int `json:"led_here"`
}

// statusReport is what `strata cluster status` prints: the admin
// server's document, and the partitions' replication health that the
// command counts from a Metadata answer, as `strata topic list` judges it
// (partition_health.go). The counts are the cluster's, not the answering
// broker's: its /metrics gauges count only the partitions it leads.
type statusReport struct {
	*clusterStatus
	Replication *healthCounts `json:"replication,omitempty"`
}

// runClusterStatus is `strata cluster status`: it asks a server's admin
// address for the metadata group's view of the cluster, then a broker for
// Metadata, to count the partitions that are under-replicated, under min
// ISR, and unavailable. (At min ISR is left to `strata topic list
// --at-min-isr`: every partition of a one-replica topic with
// min.insync.replicas 1 is, so on a single node the count would always
// alarm.) When the second part fails, the first is printed all the same
// and the command fails naming what it could not count.
func runClusterStatus(ctx context.Context, e *env, args []string) error {
	var (
		admin     adminFlags
		security  securityFlags
		bootstrap string
		asJSON    bool
		timeout   time.Duration
	)
	fs := newFlagSet(e, "cluster status", "[flags]")
	security.register(fs)
	admin.register(fs, &security.tls)
	fs.StringVar(&bootstrap, "bootstrap", os.Getenv("STRATA_BOOTSTRAP"), "broker `host:port` list to ask for Metadata, to count partitions by replication health (env STRATA_BOOTSTRAP; default: the active brokers the status lists)")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of tables, and errors as JSON on standard error")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("cluster status takes no arguments")
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := fetchStatus(ctx, adminClient)
	if err != nil {
		return err
	}
	report := statusReport{clusterStatus: status}
	if bootstrap == "" {
		bootstrap = activeBrokers(status)
	}
	counts, countErr := countPartitions(ctx, &clientFlags{bootstrap: bootstrap, timeout: timeout, security: security})
	if countErr == nil {
		report.Replication = &counts
	}
	if asJSON {
		if err := printJSON(e.stdout, report); err != nil {
			return err
		}
	} else {
		printStatus(e, report)
	}
	return countErr
}

// activeBrokers is the Kafka addresses of the brokers status lists as
// active, comma-separated.
func activeBrokers(status *clusterStatus) string {
	var out []string
	for _, b := range status.Brokers {
		if b.State == "active" && len(b.Listeners) > 0 {
			out = append(out, net.JoinHostPort(b.Listeners[0].Host, strconv.Itoa(int(b.Listeners[0].Port))))
		}
	}
	return strings.Join(out, ",")
}

// countPartitions asks the brokers at client.bootstrap for Metadata and
// the topics' min.insync.replicas, and counts the partitions by health.
func countPartitions(ctx context.Context, client *clientFlags) (healthCounts, error) {
	bootstrap := client.bootstrap
	if bootstrap == "" {
		return healthCounts{}, withFix(errors.New("cannot count partitions: the status lists no active broker to ask for Metadata"),
			"give a broker with --bootstrap")
	}
	admin, closeAdmin, err := newAdmin(ctx, client)
	if err != nil {
		return healthCounts{}, fmt.Errorf("counting partitions: %w", err)
	}
	defer closeAdmin()
	m, err := admin.Metadata(ctx)
	if err != nil {
		return healthCounts{}, fmt.Errorf("counting partitions: Metadata from %s: %w", bootstrap, err)
	}
	minISR, err := minInsyncReplicas(ctx, admin, m.Topics)
	if err != nil {
		return healthCounts{}, fmt.Errorf("counting partitions: %w", err)
	}
	partitions, err := healthOf(m, minISR)
	if err != nil {
		return healthCounts{}, fmt.Errorf("counting partitions: %w", err)
	}
	return countHealth(partitions), nil
}

func printStatus(e *env, s statusReport) {
	leader := s.LeaderID
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(e.stdout, "cluster %s  leader %s %s  term %d  commit index %d  applied %d\n",
		s.ClusterID, leader, s.LeaderAddress, s.Term, s.CommitIndex, s.AppliedIndex)
	fmt.Fprintf(e.stdout, "answered by node %s (%s)", s.NodeID, strings.ToLower(s.RaftState))
	if s.Error != "" {
		fmt.Fprintf(e.stdout, "  FAILED: %s", s.Error)
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(e.stdout)
	tw := newTable(e.stdout, "NODE", "ADDRESS", "SUFFRAGE", "LEADER")
	for _, v := range s.Servers {
		mark := ""
		if v.Leader {
			mark = "*"
		}
		tw.row(v.ID, v.Address, v.Suffrage, mark)
	}
	tw.flush()
	fmt.Fprintln(e.stdout)
	tw = newTable(e.stdout, "BROKER", "ADDRESS", "RACK", "EPOCH", "STATE", "LAST-HEARTBEAT")
	for _, b := range s.Brokers {
		address := "-"
		if len(b.Listeners) > 0 {
			address = net.JoinHostPort(b.Listeners[0].Host, strconv.Itoa(int(b.Listeners[0].Port)))
		}
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		heartbeat := "-"
		if b.LastHeartbeatAgoMs != nil {
			heartbeat = fmt.Sprintf("%dms ago", *b.LastHeartbeatAgoMs)
		}
		tw.row(b.ID, address, rack, b.Epoch, b.State, heartbeat)
	}
	tw.flush()
	fmt.Fprintf(e.stdout, "\n%d topics, %d partitions, %d led by the answering broker\n",
		s.Serving.Topics, s.Serving.Partitions, s.Serving.Led)
	if s.Replication != nil {
		fmt.Fprintln(e.stdout, replicationLine(*s.Replication))
	}
}

// replicationLine is the counts as one line, naming the topic list
// reports that list the partitions counted, when there are any.
func replicationLine(c healthCounts) string {
	line := fmt.Sprintf("%d partitions in Metadata: %d under-replicated, %d under min ISR, %d unavailable",
		c.Partitions, c.UnderReplicated, c.UnderMinISR, c.Unavailable)
	var flags []string
	for _, r := range []struct {
		n    int
		flag string
	}{{c.UnderReplicated, "--under-replicated"}, {c.UnderMinISR, "--under-min-isr"}, {c.Unavailable, "--unavailable"}} {
		if r.n > 0 {
			flags = append(flags, "`strata topic list "+r.flag+"`")
		}
	}
	if len(flags) > 0 {
		line += " (list them with " + strings.Join(flags, ", ") + ")"
	}
	return line
}

// fetchStatus reads the cluster status document from the admin address.
func fetchStatus(ctx context.Context, admin *adminClient) (*clusterStatus, error) {
	var status clusterStatus
	if err := admin.getJSON(ctx, statusPath, "status", &status); err != nil {
		return nil, err
	}
	return &status, nil
}
