package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/placement"
)

// brokerArg is the one broker id a command takes.
func brokerArg(rest []string) (int32, error) {
	if len(rest) != 1 {
		return 0, usageError("give exactly one broker id")
	}
	id, err := strconv.ParseInt(rest[0], 10, 32)
	if err != nil || id < 0 {
		return 0, usageError("%q is not a broker id", rest[0])
	}
	return int32(id), nil
}

// setDraining starts or ends draining broker id through the admin address.
func setDraining(ctx context.Context, admin *adminClient, id int32, on bool) error {
	method := http.MethodDelete
	if on {
		method = http.MethodPost
	}
	path := strings.Replace(drainPath, "{id}", strconv.Itoa(int(id)), 1)
	answer, err := admin.do(ctx, method, path)
	if err != nil {
		return err
	}
	switch answer.code {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		return withFix(fmt.Errorf("broker %d is not registered", id), "`strata cluster status` lists the brokers")
	}
	return fmt.Errorf("%s %s on %s: %s: %s", method, path, admin.address, answer.status, answer.message())
}

// drainingBrokers are the brokers the status at admin lists as draining.
func drainingBrokers(ctx context.Context, admin *adminClient) ([]int32, error) {
	status, err := fetchStatus(ctx, admin)
	if err != nil {
		return nil, err
	}
	var out []int32
	for _, b := range status.Brokers {
		if b.State == "draining" {
			out = append(out, b.ID)
		}
	}
	return out, nil
}

// balancedCluster is the cluster as read for a drain or a rebalance, and
// every partition placed over the live brokers that are not draining;
// err says why they could not be (balanced is then nil).
type balancedCluster struct {
	kafka    *kadm.Client
	close    func()
	view     *clusterView
	balanced map[placement.Partition][]int32
	err      error
}

// balanceCluster reads the draining brokers from the admin address and the
// rest through Kafka, and balances. The caller closes it.
func balanceCluster(ctx context.Context, admin *adminClient, client *clientFlags) (*balancedCluster, error) {
	draining, err := drainingBrokers(ctx, admin)
	if err != nil {
		return nil, err
	}
	kafka, closeAdmin, err := newAdmin(ctx, client)
	if err != nil {
		return nil, err
	}
	c := &balancedCluster{kafka: kafka, close: closeAdmin}
	if c.view, err = loadView(ctx, kafka); err != nil {
		closeAdmin()
		return nil, err
	}
	brokers, err := c.view.staying(draining)
	if err != nil {
		closeAdmin()
		return nil, err
	}
	if c.balanced, err = placement.Balance(c.view.targets, brokers); err != nil {
		c.err = errors.New(strings.TrimPrefix(err.Error(), "placement: "))
	}
	return c, nil
}

// staying are the live brokers in view that are not draining, for
// placement.
func (v *clusterView) staying(draining []int32) ([]placement.Broker, error) {
	var ids []int32
	for id := range v.brokers {
		if !slices.Contains(draining, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return v.placementBrokers(ids)
}

// runBrokerDrain is `strata broker drain ID`: it marks the broker draining
// (its leaderships move to other in-sync replicas at once, and it takes no
// new replicas), then reassigns every replica it holds to the other live
// brokers (package placement: racks, then the least loaded) and, unless
// --no-wait, shows the copy's progress until the broker holds nothing.
func runBrokerDrain(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		admin  adminFlags
		noWait bool
	)
	fs := newFlagSet(e, "broker drain", "ID [flags]")
	client.register(fs)
	admin.register(fs, &client.security.tls)
	fs.BoolVar(&noWait, "no-wait", false, "start the reassignments and return; strata partition reassign --verify or strata cluster status follows them")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	id, err := brokerArg(rest)
	if err != nil {
		return err
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	reqCtx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	if err := setDraining(reqCtx, adminClient, id, true); err != nil {
		return err
	}
	c, err := balanceCluster(reqCtx, adminClient, &client)
	if err != nil {
		return err
	}
	defer c.close()
	if c.err != nil {
		return withFix(fmt.Errorf("cannot drain broker %d: %w", id, c.err),
			"add a broker first, or lower the topic's replication factor by reassigning it")
	}
	kafka, view, balanced := c.kafka, c.view, c.balanced
	moves := map[placement.Partition][]int32{}
	for k, replicas := range view.targets {
		if slices.Contains(replicas, id) {
			moves[k] = balanced[k]
		}
	}
	started, err := startPlan(reqCtx, e, kafka, view, planOf(moves), &client)
	if err != nil {
		return err
	}
	if noWait {
		return nil
	}
	if err := waitReassigned(ctx, e, kafka, started, client.timeout); err != nil {
		return err
	}
	if client.json {
		return nil
	}
	_, err = fmt.Fprintf(e.stdout, "broker %d holds no replicas and leads nothing: it can be stopped; `strata broker undrain %d` lets it take replicas again\n", id, id)
	return err
}

// runBrokerUndrain is `strata broker undrain ID`: the broker takes new
// replicas and leaderships again. Nothing moves back by itself;
// `strata cluster rebalance --execute` gives it its share.
func runBrokerUndrain(ctx context.Context, e *env, args []string) error {
	var (
		admin   adminFlags
		asJSON  bool
		timeout time.Duration
	)
	fs := newFlagSet(e, "broker undrain", "ID [flags]")
	admin.register(fs, nil)
	fs.BoolVar(&asJSON, "json", false, "print JSON, and errors as JSON on standard error")
	fs.DurationVar(&timeout, "timeout", 15*time.Second, "give up after this long")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	id, err := brokerArg(rest)
	if err != nil {
		return err
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := setDraining(ctx, adminClient, id, false); err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(e.stdout).Encode(drainState{Broker: id, Draining: false})
	}
	_, err = fmt.Fprintf(e.stdout, "broker %d takes replicas again; `strata cluster rebalance --execute` moves its share to it\n", id)
	return err
}

// runClusterRebalance is `strata cluster rebalance`: a plan that spreads
// every partition's replicas and preferred leaders evenly over the live
// brokers that are not draining, moving as few replicas as it can (a newly
// added broker takes its share). Without --execute it shows the plan;
// with it, it starts the plan and, with --wait, waits for it and then
// elects the preferred leaders so leadership is spread too.
func runClusterRebalance(ctx context.Context, e *env, args []string) error {
	var (
		client        clientFlags
		admin         adminFlags
		execute, wait bool
	)
	fs := newFlagSet(e, "cluster rebalance", "[--execute [--wait]] [flags]")
	client.register(fs)
	admin.register(fs, &client.security.tls)
	fs.BoolVar(&execute, "execute", false, "start the plan (without it: show the plan only)")
	fs.BoolVar(&wait, "wait", false, "with --execute: show progress until done, then move leadership to the preferred replicas")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("cluster rebalance takes no arguments")
	}
	if wait && !execute {
		return usageError("--wait goes with --execute")
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	reqCtx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	c, err := balanceCluster(reqCtx, adminClient, &client)
	if err != nil {
		return err
	}
	defer c.close()
	if c.err != nil {
		return withFix(c.err, "add brokers, or undrain one")
	}
	kafka, view, balanced := c.kafka, c.view, c.balanced
	changed := map[placement.Partition][]int32{}
	var copies int
	var copyBytes int64
	sizes := localSizes(reqCtx, kafka)
	for k, replicas := range balanced {
		if slices.Equal(replicas, view.targets[k]) {
			continue
		}
		changed[k] = replicas
		for _, r := range replicas {
			if !slices.Contains(view.targets[k], r) {
				copies++
				copyBytes += sizes[view.leaders[k]][k]
			}
		}
	}
	if !execute {
		if client.json {
			return printJSON(e.stdout, planOf(changed))
		}
		tw := newTable(e.stdout, "PARTITION", "REPLICAS", "PLANNED")
		for _, k := range sortedPartitions(changed) {
			tw.row(fmt.Sprintf("%s-%d", k.Topic, k.Index), ids(view.targets[k]), ids(changed[k]))
		}
		if err := tw.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(e.stdout, "would change %d partitions: %d replica copies, about %.1f MiB of hot tails (run with --execute to start)\n",
			len(changed), copies, float64(copyBytes)/(1<<20))
		return err
	}
	started, err := startPlan(reqCtx, e, kafka, view, planOf(changed), &client)
	if err != nil || !wait {
		return err
	}
	if err := waitReassigned(ctx, e, kafka, started, client.timeout); err != nil {
		return err
	}
	electCtx, cancelElect := context.WithTimeout(ctx, client.timeout)
	defer cancelElect()
	results, err := kafka.ElectLeaders(electCtx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		return err
	}
	moved := 0
	for _, t := range results {
		for _, r := range t {
			if r.Err == nil {
				moved++
			}
		}
	}
	if client.json {
		return nil
	}
	_, err = fmt.Fprintf(e.stdout, "preferred leaders elected: %d partitions changed leader (the reassignments moved the others already)\n", moved)
	return err
}

// runBrokerUnregister is `strata broker unregister ID` (UnregisterBroker):
// it removes a stopped broker that will not come back; its partitions show
// it offline until reassigned (`strata cluster rebalance --execute`).
func runBrokerUnregister(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "broker unregister", "ID [flags]")
	client.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	id, err := brokerArg(rest)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	cl, err := newClient(ctx, &client)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		message := ""
		if resp.ErrorMessage != nil {
			message = *resp.ErrorMessage
		}
		return kafkaError(fmt.Sprintf("unregistering broker %d", id), err, message)
	}
	if client.json {
		return printJSON(e.stdout, map[string]any{"unregistered": id})
	}
	_, err = fmt.Fprintf(e.stdout, "unregistered broker %d; `strata cluster rebalance --execute` moves the replicas it still has\n", id)
	return err
}
