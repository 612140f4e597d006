package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

// runClusterStatus is `strata cluster status`: it asks a server's admin
// address for the metadata group's view of the cluster.
func runClusterStatus(ctx context.Context, e *env, args []string) error {
	var (
		admin   string
		asJSON  bool
		timeout time.Duration
	)
	fs := newFlagSet(e, "cluster status", "[flags]")
	defaultAdmin := os.Getenv("STRATA_ADMIN")
	if defaultAdmin == "" {
		defaultAdmin = "127.0.0.1:9644"
	}
	fs.StringVar(&admin, "admin", defaultAdmin, "a server's admin HTTP `host:port` (env STRATA_ADMIN)")
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of tables, and errors as JSON on standard error")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("cluster status takes no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := fetchStatus(ctx, admin)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.stdout, status)
	}
	printStatus(e, status)
	return nil
}

func printStatus(e *env, s *clusterStatus) {
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
}

func fetchStatus(ctx context.Context, admin string) (*clusterStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+statusPath, nil)
	if err != nil {
		return nil, usageError("--admin %q: %v", admin, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the admin address %s: %w", admin, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading status from %s: %w", admin, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status from %s: %s: %s", admin, resp.Status, string(body))
	}
	var status clusterStatus
	if err := json.Unmarshal(body, &status); err != nil {
		return nil, fmt.Errorf("status from %s is not a status document: %w", admin, err)
	}
	return &status, nil
}
