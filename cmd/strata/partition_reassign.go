package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stratalog/strata/placement"
)

// reassignmentPlan is the JSON plan of kafka-reassign-partitions.sh, read
// and written unchanged so plans move between the two tools.
type reassignmentPlan struct {
	Version    int                `json:"version"`
	Partitions []plannedPartition `json:"partitions"`
}

// plannedPartition is one partition's target replicas, the preferred
// leader first. LogDirs, when given, must say "any" for each replica:
// a strata broker has one log directory.
type plannedPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

func (p plannedPartition) key() placement.Partition {
	return placement.Partition{Topic: p.Topic, Index: p.Partition}
}

// planOf writes targets as a plan, in partition order.
func planOf(targets map[placement.Partition][]int32) reassignmentPlan {
	plan := reassignmentPlan{Version: 1, Partitions: []plannedPartition{}}
	for _, k := range sortedPartitions(targets) {
		dirs := make([]string, len(targets[k]))
		for i := range dirs {
			dirs[i] = "any"
		}
		plan.Partitions = append(plan.Partitions, plannedPartition{Topic: k.Topic, Partition: k.Index, Replicas: targets[k], LogDirs: dirs})
	}
	return plan
}

func sortedPartitions[V any](m map[placement.Partition]V) []placement.Partition {
	keys := make([]placement.Partition, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, placement.Partition.Compare)
	return keys
}

// readPlan reads a plan from path ("-": standard input) and checks its
// form: version 1, each partition once, replicas without repeats, log
// directories "any" if given.
func readPlan(e *env, path string) (reassignmentPlan, error) {
	var plan reassignmentPlan
	if path == "" {
		return plan, usageError("give the plan with --plan FILE (- for standard input), as --generate writes it")
	}
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return plan, usageError("--plan: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&plan); err != nil {
		return plan, usageError("--plan %s: not a reassignment plan: %v", path, err)
	}
	if plan.Version != 1 {
		return plan, usageError("--plan %s: version %d; only version 1 plans exist", path, plan.Version)
	}
	if len(plan.Partitions) == 0 {
		return plan, usageError("--plan %s: no partitions", path)
	}
	seen := map[placement.Partition]bool{}
	for _, p := range plan.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		switch {
		case seen[p.key()]:
			return plan, usageError("--plan %s: %s is listed twice", path, name)
		case len(p.Replicas) == 0:
			return plan, usageError("--plan %s: %s has no replicas", path, name)
		case p.LogDirs != nil && len(p.LogDirs) != len(p.Replicas):
			return plan, usageError("--plan %s: %s has %d log_dirs for %d replicas", path, name, len(p.LogDirs), len(p.Replicas))
		}
		for i, r := range p.Replicas {
			if slices.Contains(p.Replicas[:i], r) {
				return plan, usageError("--plan %s: %s lists broker %d twice", path, name, r)
			}
		}
		for _, d := range p.LogDirs {
			if d != "any" {
				return plan, usageError("--plan %s: %s asks for log directory %q; a strata broker has one, so give \"any\" or leave log_dirs out", path, name, d)
			}
		}
		seen[p.key()] = true
	}
	return plan, nil
}

// clusterView is the cluster as plans see it: the registered brokers and,
// per partition, its target replicas (its replicas once any reassignment
// in progress completes) and leader.
type clusterView struct {
	brokers     map[int32]kadm.BrokerDetail
	targets     map[placement.Partition][]int32
	leaders     map[placement.Partition]int32
	reassigning map[placement.Partition]kadm.ListPartitionReassignmentsResponse
}

// loadView reads the cluster's brokers and partitions (internal topics
// left out) and the reassignments in progress.
func loadView(ctx context.Context, admin *kadm.Client) (*clusterView, error) {
	md, err := admin.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	v := &clusterView{
		brokers:     map[int32]kadm.BrokerDetail{},
		targets:     map[placement.Partition][]int32{},
		leaders:     map[placement.Partition]int32{},
		reassigning: map[placement.Partition]kadm.ListPartitionReassignmentsResponse{},
	}
	for _, b := range md.Brokers {
		v.brokers[b.NodeID] = b
	}
	topics := kadm.TopicsSet{}
	for name, t := range md.Topics {
		if t.IsInternal || t.Err != nil {
			continue
		}
		topics.Add(name)
		for _, p := range t.Partitions {
			k := placement.Partition{Topic: name, Index: p.Partition}
			v.targets[k] = slices.Clone(p.Replicas)
			v.leaders[k] = p.Leader
		}
	}
	if len(topics) == 0 {
		return v, nil
	}
	listed, err := admin.ListPartitionReassignments(ctx, topics)
	if err != nil {
		return nil, err
	}
	for _, r := range listed.Sorted() {
		k := placement.Partition{Topic: r.Topic, Index: r.Partition}
		v.reassigning[k] = r
		v.targets[k] = slices.DeleteFunc(slices.Clone(r.Replicas), func(b int32) bool { return slices.Contains(r.RemovingReplicas, b) })
	}
	return v, nil
}

// placementBrokers are the brokers ids names, with their racks, or an
// error naming one that is not registered.
func (v *clusterView) placementBrokers(ids []int32) ([]placement.Broker, error) {
	out := make([]placement.Broker, 0, len(ids))
	for _, id := range ids {
		b, ok := v.brokers[id]
		if !ok {
			return nil, usageError("broker %d is not registered (`strata cluster status` lists the brokers)", id)
		}
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		out = append(out, placement.Broker{ID: id, Rack: rack})
	}
	return out, nil
}

// checkPlan refuses a plan naming a partition or broker the cluster does
// not have, naming it.
func (v *clusterView) checkPlan(plan reassignmentPlan) error {
	for _, p := range plan.Partitions {
		if _, ok := v.targets[p.key()]; !ok {
			return usageError("the plan names partition %s-%d, which does not exist (`strata topic describe %s` shows its partitions)", p.Topic, p.Partition, p.Topic)
		}
		for _, r := range p.Replicas {
			if _, ok := v.brokers[r]; !ok {
				return usageError("the plan puts %s-%d on broker %d, which is not registered (`strata cluster status` lists the brokers)", p.Topic, p.Partition, r)
			}
		}
	}
	return nil
}

// parseBrokerList parses --brokers: comma-separated broker ids.
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, field := range strings.Split(s, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		id, err := strconv.ParseInt(field, 10, 32)
		if err != nil || id < 0 {
			return nil, usageError("--brokers: %q is not a broker id", field)
		}
		if slices.Contains(out, int32(id)) {
			return nil, usageError("--brokers: broker %d listed twice", id)
		}
		out = append(out, int32(id))
	}
	if len(out) == 0 {
		return nil, usageError("--brokers is empty: give the broker ids to place the replicas on, e.g. --brokers 1,2,3")
	}
	return out, nil
}

// runPartitionReassign is `strata partition reassign`, the workflow of
// kafka-reassign-partitions.sh with its JSON plans: --generate writes a
// plan for topics over brokers, --execute starts one (and with --wait
// shows its progress until done), --verify says where each partition of a
// plan is, --cancel stops the partitions of a plan still moving.
func runPartitionReassign(ctx context.Context, e *env, args []string) error {
	var (
		client                             clientFlags
		generate, execute, verify, cancelF bool
		topics, brokers, planPath          string
		wait                               bool
		throttle                           int64
	)
	fs := newFlagSet(e, "partition reassign", reassignSynopsis)
	client.register(fs)
	fs.BoolVar(&generate, "generate", false, "write a plan for --topics over --brokers to standard output")
	fs.BoolVar(&execute, "execute", false, "start the reassignments of --plan")
	fs.BoolVar(&verify, "verify", false, "report where each partition of --plan is; fails while any is not done")
	fs.BoolVar(&cancelF, "cancel", false, "cancel the reassignments of --plan still in progress")
	fs.StringVar(&topics, "topics", "", "topics to plan for, comma-separated (--generate)")
	fs.StringVar(&brokers, "brokers", "", "broker ids to place replicas on, comma-separated (--generate)")
	fs.StringVar(&planPath, "plan", "", "the plan `file` (- for standard input)")
	fs.BoolVar(&wait, "wait", false, "after --execute, show progress until every reassignment is done")
	fs.Int64Var(&throttle, "throttle", 0, "with --execute: hold the copies to this many `bytes/s` per broker, as kafka-reassign-partitions.sh does (replication throttles; --verify lifts them once done)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("unexpected argument %q", rest[0])
	}
	modes := 0
	for _, m := range []bool{generate, execute, verify, cancelF} {
		if m {
			modes++
		}
	}
	if modes != 1 {
		return usageError("give exactly one of --generate, --execute, --verify and --cancel")
	}
	if wait && !execute {
		return usageError("--wait goes with --execute")
	}
	if throttle < 0 || (throttle > 0 && !execute) {
		return usageError("--throttle %d: give a positive rate in bytes per second, with --execute", throttle)
	}
	var plan reassignmentPlan
	if !generate {
		if plan, err = readPlan(e, planPath); err != nil {
			return err
		}
	}
	reqCtx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(reqCtx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	view, err := loadView(reqCtx, admin)
	if err != nil {
		return err
	}
	switch {
	case generate:
		return generatePlan(e, view, topics, brokers)
	case execute:
		if err := view.checkPlan(plan); err != nil {
			return err
		}
		if throttle > 0 {
			if err := setReassignThrottles(reqCtx, admin, view, plan, throttle); err != nil {
				return err
			}
		}
		started, err := startPlan(reqCtx, e, admin, view, plan, &client)
		if err != nil || !wait {
			return err
		}
		return waitReassigned(ctx, e, admin, started, client.timeout)
	case verify:
		if err := view.checkPlan(plan); err != nil {
			return err
		}
		if err := verifyPlan(e, view, plan, client.json); err != nil {
			return err
		}
		return liftReassignThrottles(reqCtx, e, admin, view, plan, client.json)
	default:
		return cancelPlan(reqCtx, e, admin, view, plan, client.json)
	}
}

const reassignSynopsis = "(--generate|--execute|--verify|--cancel) [flags]"

// generatePlan writes the plan placing every partition of topics on
// brokers (package placement: racks, then even counts, moving as few
// replicas as it can) on standard output, and the current assignment, to
// roll back with, on standard error.
func generatePlan(e *env, view *clusterView, topicList, brokerList string) error {
	if topicList == "" {
		return usageError("--generate needs --topics: the topics whose partitions to place")
	}
	ids, err := parseBrokerList(brokerList)
	if err != nil {
		return err
	}
	targets, err := view.placementBrokers(ids)
	if err != nil {
		return err
	}
	current := map[placement.Partition][]int32{}
	for _, name := range strings.Split(topicList, ",") {
		name = strings.TrimSpace(name)
		if err := checkTopicName("--topics", name); err != nil {
			return err
		}
		found := false
		for k, replicas := range view.targets {
			if k.Topic == name {
				current[k], found = replicas, true
			}
		}
		if !found {
			return usageError("--topics: topic %q does not exist (`strata topic list` shows the topics)", name)
		}
	}
	proposed, err := placement.Balance(current, targets)
	if err != nil {
		return usageError("%v: give more brokers", strings.TrimPrefix(err.Error(), "placement: "))
	}
	fmt.Fprintln(e.stderr, "Current partition replica assignment (keep it to roll back):")
	if err := printJSON(e.stderr, planOf(current)); err != nil {
		return err
	}
	return printJSON(e.stdout, planOf(proposed))
}

// startPlan starts the reassignment of every partition of plan whose
// target differs from the one it has, and reports what it started.
func startPlan(ctx context.Context, e *env, admin *kadm.Client, view *clusterView, plan reassignmentPlan, client *clientFlags) ([]placement.Partition, error) {
	var req kadm.AlterPartitionAssignmentsReq
	var started []placement.Partition
	for _, p := range plan.Partitions {
		if slices.Equal(view.targets[p.key()], p.Replicas) {
			continue
		}
		req.Assign(p.Topic, p.Partition, p.Replicas)
		started = append(started, p.key())
	}
	if len(started) > 0 {
		resp, err := admin.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return nil, kafkaError(fmt.Sprintf("reassigning %s-%d", r.Topic, r.Partition), r.Err, r.ErrMessage)
			}
		}
	}
	if client.json {
		return started, printJSON(e.stdout, map[string]any{"started": partitionNames(started), "unchanged": len(plan.Partitions) - len(started)})
	}
	fmt.Fprintf(e.stdout, "started %d reassignments; %d partitions already had their planned replicas\n", len(started), len(plan.Partitions)-len(started))
	return started, nil
}

func partitionNames(keys []placement.Partition) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s-%d", k.Topic, k.Index)
	}
	return out
}

// verifyPlan reports, per partition of plan, whether it has its planned
// replicas, is still moving to them, or has others; it fails unless every
// one is done.
func verifyPlan(e *env, view *clusterView, plan reassignmentPlan, asJSON bool) error {
	type verdict struct {
		Partition string  `json:"partition"`
		State     string  `json:"state"`
		Replicas  []int32 `json:"replicas"`
	}
	var out []verdict
	pending := 0
	for _, p := range plan.Partitions {
		v := verdict{Partition: fmt.Sprintf("%s-%d", p.Topic, p.Partition), Replicas: view.targets[p.key()]}
		_, moving := view.reassigning[p.key()]
		switch {
		case !slices.Equal(v.Replicas, p.Replicas):
			v.State = "differs"
		case moving:
			v.State = "in progress"
		default:
			v.State = "done"
		}
		if v.State != "done" {
			pending++
		}
		out = append(out, v)
	}
	if asJSON {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		tw := newTable(e.stdout, "PARTITION", "STATE", "TARGET-REPLICAS")
		for _, v := range out {
			tw.row(v.Partition, v.State, ids(v.Replicas))
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	if pending > 0 {
		return withFix(fmt.Errorf("%d of %d partitions do not have their planned replicas yet", pending, len(out)),
			"run --verify again once in-progress ones finish; --execute the plan for those that differ")
	}
	return nil
}

// cancelPlan cancels the reassignments in progress of plan's partitions,
// restoring the replicas each started from.
func cancelPlan(ctx context.Context, e *env, admin *kadm.Client, view *clusterView, plan reassignmentPlan, asJSON bool) error {
	var req kadm.AlterPartitionAssignmentsReq
	var cancelled []placement.Partition
	for _, p := range plan.Partitions {
		if _, moving := view.reassigning[p.key()]; moving {
			req.CancelAssign(p.Topic, p.Partition)
			cancelled = append(cancelled, p.key())
		}
	}
	if len(cancelled) > 0 {
		resp, err := admin.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return err
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return kafkaError(fmt.Sprintf("cancelling %s-%d", r.Topic, r.Partition), r.Err, r.ErrMessage)
			}
		}
	}
	if asJSON {
		return printJSON(e.stdout, map[string]any{"cancelled": partitionNames(cancelled)})
	}
	_, err := fmt.Fprintf(e.stdout, "cancelled %d reassignments; %d partitions of the plan had none in progress\n", len(cancelled), len(plan.Partitions)-len(cancelled))
	return err
}

// waitReassigned waits until none of partitions is being reassigned,
// drawing on a terminal the bytes left to copy (each adding replica's
// distance from its leader's local size, from DescribeLogDirs), the rate
// and the time left; it prints a last line when done.
func waitReassigned(ctx context.Context, e *env, admin *kadm.Client, partitions []placement.Partition, requestTimeout time.Duration) error {
	began := time.Now()
	bar := newCopyProgress(e.stderr, e.stdout)
	for {
		reqCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		view, err := loadView(reqCtx, admin)
		var left int64
		moving := 0
		if err == nil {
			sizes := localSizes(reqCtx, admin)
			for _, k := range partitions {
				r, ok := view.reassigning[k]
				if !ok {
					continue
				}
				moving++
				leaderSize := sizes[view.leaders[k]][k]
				for _, b := range r.AddingReplicas {
					left += max(leaderSize-sizes[b][k], 0)
				}
			}
		}
		cancel()
		if err == nil && moving == 0 {
			bar.done()
			_, err := fmt.Fprintf(e.stdout, "%d reassignments done in %s\n", len(partitions), time.Since(began).Round(100*time.Millisecond))
			return err
		}
		if err == nil {
			bar.update(moving, left)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting with %d reassignments in progress (they go on; --verify follows them): %w", moving, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// localSizes is each broker's local size of each partition it holds, as
// DescribeLogDirs reports it; brokers that do not answer are left out.
func localSizes(ctx context.Context, admin *kadm.Client) map[int32]map[placement.Partition]int64 {
	described, _ := admin.DescribeAllLogDirs(ctx, nil)
	out := map[int32]map[placement.Partition]int64{}
	for broker, dirs := range described {
		sizes := map[placement.Partition]int64{}
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			sizes[placement.Partition{Topic: p.Topic, Index: p.Partition}] += p.Size
		})
		out[broker] = sizes
	}
	return out
}

// copyProgress draws the bytes a reassignment has left to copy on a
// terminal (standard error) when the output goes elsewhere.
type copyProgress struct {
	out   io.Writer // nil: not a terminal
	first int64     // bytes left when first seen
	began time.Time
}

func newCopyProgress(w, output io.Writer) *copyProgress {
	p := &copyProgress{first: -1, began: time.Now()}
	if isTerminal(w) && !isTerminal(output) {
		p.out = w
	}
	return p
}

func (p *copyProgress) update(moving int, left int64) {
	if p.first < 0 || left > p.first {
		p.first, p.began = left, time.Now()
	}
	if p.out == nil {
		return
	}
	const width = 30
	done := p.first - left
	filled := int(done * width / max(p.first, 1))
	rate := float64(done) / max(time.Since(p.began).Seconds(), 0.001)
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(left)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(p.out, "\r[%s%s] %d moving, %.1f MiB left, %.1f MiB/s, %s left ", strings.Repeat("#", filled), strings.Repeat(" ", width-filled),
		moving, float64(left)/(1<<20), rate/(1<<20), eta)
}

func (p *copyProgress) done() {
	if p.out != nil {
		fmt.Fprintln(p.out)
	}
}

// setReassignThrottles throttles a plan's copies as kafka-reassign-partitions.sh
// --throttle does: leader. and follower.replication.throttled.rate on every
// broker the moving partitions have or get, and, per topic, the current
// replicas of each moving partition as leader.replication.throttled.replicas
// and the ones it gets as follower.replication.throttled.replicas.
func setReassignThrottles(ctx context.Context, admin *kadm.Client, view *clusterView, plan reassignmentPlan, rate int64) error {
	brokers := map[int32]bool{}
	leaders, followers := map[string][]string{}, map[string][]string{}
	for _, p := range plan.Partitions {
		current := view.targets[p.key()]
		if slices.Equal(current, p.Replicas) {
			continue
		}
		for _, r := range current {
			brokers[r] = true
			leaders[p.Topic] = append(leaders[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
		}
		for _, r := range p.Replicas {
			brokers[r] = true
			if !slices.Contains(current, r) {
				followers[p.Topic] = append(followers[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
			}
		}
	}
	value := strconv.FormatInt(rate, 10)
	rates := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: &value},
		{Op: kadm.SetConfig, Name: "follower.replication.throttled.rate", Value: &value},
	}
	for b := range brokers {
		if err := alterAll(admin.AlterBrokerConfigs(ctx, rates, b)); err != nil {
			return fmt.Errorf("throttling broker %d: %w", b, err)
		}
	}
	for topic, list := range leaders {
		leaderList, followerList := strings.Join(list, ","), strings.Join(followers[topic], ",")
		changes := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &leaderList}}
		if followerList != "" {
			changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: &followerList})
		}
		if err := alterAll(admin.AlterTopicConfigs(ctx, changes, topic)); err != nil {
			return fmt.Errorf("throttling topic %q: %w", topic, err)
		}
	}
	return nil
}

// liftReassignThrottles removes, once a plan is done, the throttles
// --throttle set: the rates on every live broker and the throttled replica
// lists of the plan's topics, as kafka-reassign-partitions.sh --verify does.
func liftReassignThrottles(ctx context.Context, e *env, admin *kadm.Client, view *clusterView, plan reassignmentPlan, asJSON bool) error {
	rates := []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"},
	}
	for id := range view.brokers {
		if err := alterAll(admin.AlterBrokerConfigs(ctx, rates, id)); err != nil {
			return fmt.Errorf("lifting the throttle of broker %d: %w", id, err)
		}
	}
	lists := []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.replicas"},
		{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.replicas"},
	}
	topics := map[string]bool{}
	for _, p := range plan.Partitions {
		topics[p.Topic] = true
	}
	for topic := range topics {
		if err := alterAll(admin.AlterTopicConfigs(ctx, lists, topic)); err != nil {
			return fmt.Errorf("lifting the throttles of topic %q: %w", topic, err)
		}
	}
	if asJSON {
		return nil
	}
	_, err := fmt.Fprintln(e.stdout, "replication throttles lifted")
	return err
}

// alterAll is the first error of an alter configs call.
func alterAll(responses kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range responses {
		if r.Err != nil {
			return kafkaError(r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
