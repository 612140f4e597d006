package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/objstore/objstoretest"
)

// The files the alerting and dashboard checks read, from integration/.
const (
	alertsFile     = "../infra/prometheus/alerts.yml"
	alertTestsFile = "../infra/prometheus/alerts_test.yml"
	dashboardFile  = "../infra/grafana/strata.json"
	runbooksFile   = "../docs/runbooks.md"
	runbookBase    = "https://github.com/stratalog/strata/blob/main/docs/runbooks.md#"
)

// notExported are the series the alerts and the dashboard may name that no
// broker exports, each with the reason.
var notExported = map[string]string{
	"up": "Prometheus records it for every scrape target; no exporter serves it",
}

// TestDashboardMetricsExist checks that every metric the alerting rules
// and the Grafana dashboard name is on a real broker's /metrics, and that
// the labels they match on or group by are on it too (the values too, for
// an equality matcher). Series that appear only after activity are made to
// appear: two brokers replicate a tiered topic into versitygw behind the
// fault proxy, which refuses one upload, so uploads, a failure, local
// deletes and a read from the bucket happen; a consumer group commits; a
// throttled reassignment copies a replica; a produce to a partition that
// does not exist is refused; and a second broker with SASL_SSL refuses one
// login and takes another. The only names allowed without a series are in
// notExported.
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	exprs := alertExprs(t)
	exprs = append(exprs, dashboardExprs(t)...)
	if len(exprs) < 40 {
		t.Fatalf("read %d expressions from the alerts and the dashboard, expected many more: is the parsing broken?", len(exprs))
	}
	var parsed []promExpr
	for _, e := range exprs {
		p, err := parsePromQL(e.expr)
		if err != nil {
			t.Errorf("%s: %q: %v", e.where, e.expr, err)
			continue
		}
		p.where, p.source = e.where, e.expr
		parsed = append(parsed, p)
	}

	var mu sync.Mutex
	var scrapes []metricSamples
	keep := func(m metricSamples) {
		mu.Lock()
		defer mu.Unlock()
		scrapes = append(scrapes, m)
	}
	t.Run("brokers", func(t *testing.T) {
		t.Run("cluster", func(t *testing.T) {
			t.Parallel()
			for _, m := range dashboardClusterScenario(t) {
				keep(m)
			}
		})
		t.Run("secured", func(t *testing.T) {
			t.Parallel()
			keep(dashboardSecuredScenario(t))
		})
	})
	if t.Failed() {
		return
	}

	exposed := map[string][]map[string]string{}
	for _, m := range scrapes {
		for _, s := range m {
			exposed[s.name] = append(exposed[s.name], s.labels)
		}
	}
	for _, p := range parsed {
		checkExposed(t, p, exposed)
	}
}

// checkExposed fails the test for each metric p names that no scrape had,
// and for each label it matches on or groups by that none of its metrics
// carries.
func checkExposed(t *testing.T, p promExpr, exposed map[string][]map[string]string) {
	t.Helper()
	// job and instance are the target's labels, added by Prometheus.
	target := func(label string) bool { return label == "job" || label == "instance" }
	labelsOf := map[string]bool{}
	for _, sel := range p.selectors {
		if _, ok := notExported[sel.metric]; ok {
			continue
		}
		samples := exposed[sel.metric]
		if len(samples) == 0 {
			t.Errorf("%s names %s, which no broker's /metrics has: %s", p.where, sel.metric, p.source)
			continue
		}
		for _, labels := range samples {
			for l := range labels {
				labelsOf[l] = true
			}
		}
		for _, m := range sel.matchers {
			if target(m.label) {
				continue
			}
			has := slices.ContainsFunc(samples, func(l map[string]string) bool { _, ok := l[m.label]; return ok })
			if !has {
				t.Errorf("%s matches %s on label %s, which it does not have: %s", p.where, sel.metric, m.label, p.source)
				continue
			}
			if m.op == "=" && !strings.Contains(m.value, "$") &&
				!slices.ContainsFunc(samples, func(l map[string]string) bool { return l[m.label] == m.value }) {
				t.Errorf("%s matches %s{%s=%q}, a value no broker exported: %s", p.where, sel.metric, m.label, m.value, p.source)
			}
		}
	}
	for _, l := range p.grouping {
		if !target(l) && !labelsOf[l] {
			t.Errorf("%s groups by %s, a label none of its metrics has: %s", p.where, l, p.source)
		}
	}
}

// dashboardClusterScenario runs two brokers tiering into versitygw behind
// the fault proxy and returns a scrape of each once every series the
// scenario makes has appeared.
func dashboardClusterScenario(t *testing.T) []metricSamples {
	gw := startVersityGW(t)
	proxy := startFaultProxy(t, gw)
	// One upload refused: a failure that offload retries.
	refused := proxy.Add(segmentUpload, objstoretest.Status(http.StatusServiceUnavailable), 1)
	servers := startClusterFlags(t, 2, 1, func(_ int, s *server) { s.env = bucketEnv(gw) }, nil,
		"--bucket", objstoretest.S3URL(proxy.URL(), testBucket, "dashboard"),
		"--remote.log.manager.task.interval.ms", "200")
	seeds := kafkaAddresses(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClientSeeds(t, seeds, kgo.ProducerLinger(5*time.Millisecond))
	admin := kadm.NewClient(cl)

	// A tiered topic on both brokers: 1 MiB segments sealed after 2 s,
	// 1 MiB kept locally, so uploads, local deletes and remote reads
	// happen, and the leader reports its follower's lag.
	const tiered = "dash-tiered"
	created, err := admin.CreateTopic(ctx, 1, 2, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(strconv.Itoa(1 << 20)),
		"segment.ms":            kadm.StringPtr("2000"),
		"local.retention.bytes": kadm.StringPtr(strconv.Itoa(1 << 20)),
	}, tiered)
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", tiered, err)
	}
	records := produceAll(t, cl, tiered, tierRecords(4<<20))

	// A consumer group reads it all and commits, and stays a member.
	const group = "dash-group"
	member := newClientSeeds(t, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(tiered),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for read := 0; read < len(records); {
		fetches := member.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group read %d of %d records: %v", read, len(records), err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("group fetch %s[%d]: %v", topic, p, err) })
		read += fetches.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}

	// A produce to a partition that does not exist: a per-partition error.
	c := dialRaw(t, servers[0])
	p := c.roundTrip(produceRequest(tiered, 99, nil), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to %s-99: %v, want UNKNOWN_TOPIC_OR_PARTITION", tiered, kerr.ErrorForCode(p.ErrorCode))
	}

	// A replica copied under a replication throttle: a topic on broker 1
	// gets a second replica on broker 2 through `partition reassign
	// --throttle`, which sets the throttles on both sides.
	const moved = "dash-moved"
	createTopicOn(ctx, t, cl, moved, 1, 1)
	produceAll(t, cl, moved, tierRecords(512<<10))
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1,2]}]}`, moved)
	if out, err := servers[0].strata(ctx, plan, "partition", "reassign", "--execute", "--plan", "-", "--throttle", "1048576"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	// Wait for what appears later: the upload retried after the refusal
	// and local deletes, then the remote read below the local start.
	want := []string{
		"strata_offload_failures_total", "strata_offload_local_deletes_total",
		"strata_offload_awaiting_upload_bytes", "strata_replica_follower_lag_seconds",
		"strata_group_lag_seconds", "strata_group_stalled", "strata_group_members",
		"strata_replica_throttled_bytes_total", "strata_ingest_partition_errors_total",
	}
	missing := func(scrapes []metricSamples, names []string) []string {
		var out []string
		for _, name := range names {
			if !slices.ContainsFunc(scrapes, func(m metricSamples) bool { return m.has(name) }) {
				out = append(out, name)
			}
		}
		return out
	}
	scrapeAll := func() []metricSamples {
		var out []metricSamples
		for _, s := range servers {
			out = append(out, scrapeMetrics(t, s))
		}
		return out
	}
	localStart := func(scrapes []metricSamples) float64 {
		start := 0.0
		for _, m := range scrapes {
			for _, s := range m {
				if s.name == "strata_ingest_log_start_offset" && s.labels["topic"] == tiered {
					start = max(start, s.value)
				}
			}
		}
		return start
	}
	pollUntil(t, servers[0], 2*time.Minute, "series that need activity, and a local log start past 0", func() (bool, string) {
		scrapes := scrapeAll()
		gone := missing(scrapes, want)
		return len(gone) == 0 && localStart(scrapes) > 0,
			fmt.Sprintf("missing %v, local start %v, refused uploads %d", gone, localStart(scrapes), refused.Hits())
	})
	// Read from the start: below the local start, from the bucket.
	consumeAllSeeds(t, seeds, tiered, len(records))
	var final []metricSamples
	pollUntil(t, servers[0], time.Minute, "remote read series", func() (bool, string) {
		final = scrapeAll()
		gone := missing(final, []string{"strata_remotefetch_reads_total", "strata_remotefetch_bucket_requests_total", "strata_remotefetch_read_duration_seconds_bucket"})
		return len(gone) == 0, fmt.Sprintf("missing %v", gone)
	})
	return final
}

// dashboardSecuredScenario runs one broker with a SASL_SSL listener,
// refuses one login and takes another, and returns its /metrics.
func dashboardSecuredScenario(t *testing.T) metricSamples {
	s, sec := startSecureServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{s.kafka}
	wrong := sec.client(t, seeds, scram.Auth{User: sec.adminUser, Pass: "not-the-password"}.AsSha512Mechanism())
	if _, err := kadm.NewClient(wrong).ListTopics(ctx); err == nil {
		t.Fatal("a login with the wrong password succeeded")
	}
	if _, err := sec.admin(t, seeds).ListTopics(ctx); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.adminTLS}, Timeout: 10 * time.Second}
	var m metricSamples
	pollUntil(t, s, 30*time.Second, "failed and succeeded logins counted", func() (bool, string) {
		resp, err := client.Get("https://" + s.admin + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false, fmt.Sprintf("/metrics: %s %v", resp.Status, err)
		}
		m = parseMetrics(t, string(body))
		var results []string
		for _, s := range m {
			if s.name == "strata_ingest_authentications_total" {
				results = append(results, s.labels["result"])
			}
		}
		return slices.Contains(results, "failed") && slices.Contains(results, "succeeded"), fmt.Sprintf("login results %v", results)
	})
	return m
}

// has reports whether any sample is named name.
func (m metricSamples) has(name string) bool {
	return slices.ContainsFunc(m, func(s metricSample) bool { return s.name == name })
}

// TestDashboardRulesDocumentedAndTested checks what holds the alerting
// together without a broker: every alert has a promtool test in
// alerts_test.yml, a runbook_url under runbookBase whose anchor is a
// heading of docs/runbooks.md, and is named in its section; every link
// inside the runbooks resolves; and the dashboard's panels all query.
func TestDashboardRulesDocumentedAndTested(t *testing.T) {
	t.Parallel()
	alerts := readAlerts(t)
	if len(alerts) == 0 {
		t.Fatal("no alerts read from " + alertsFile)
	}
	runbooks, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	sections := markdownSections(t, string(runbooks))
	tests, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*alertname:\s*(\S+)\s*$`).FindAllStringSubmatch(string(tests), -1) {
		tested[m[1]] = true
	}
	seen := map[string]bool{}
	for _, a := range alerts {
		if seen[a.name] {
			t.Errorf("alert %s is defined twice", a.name)
		}
		seen[a.name] = true
		if !tested[a.name] {
			t.Errorf("alert %s has no test in %s", a.name, alertTestsFile)
		}
		anchor, ok := strings.CutPrefix(a.runbook, runbookBase)
		if !ok {
			t.Errorf("alert %s: runbook_url %q is not under %s", a.name, a.runbook, runbookBase)
			continue
		}
		body, ok := sections[anchor]
		if !ok {
			t.Errorf("alert %s: runbook anchor #%s is no heading of %s", a.name, anchor, runbooksFile)
			continue
		}
		if !strings.Contains(body, "`"+a.name+"`") {
			t.Errorf("alert %s: its runbook section #%s does not name it", a.name, anchor)
		}
	}
	for name := range tested {
		if !seen[name] {
			t.Errorf("%s tests alert %s, which %s does not define", alertTestsFile, name, alertsFile)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(string(runbooks), -1) {
		if _, ok := sections[m[1]]; !ok {
			t.Errorf("%s links to #%s, which is no heading", runbooksFile, m[1])
		}
	}
	// Each seed incident and drill has its section.
	for _, want := range []string{"incident-1-", "incident-2-", "incident-3-", "drill-1-", "drill-2-", "drill-3-", "deep-dive-8-"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(sections)), func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("%s has no section starting %q", runbooksFile, want)
		}
	}
	dashboardExprs(t) // fails on a panel without a query
}

// markdownSections maps each heading's anchor, as GitHub makes it, to the
// text under it up to the next heading.
func markdownSections(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var anchor string
	var body strings.Builder
	flush := func() {
		if anchor != "" {
			out[anchor] = body.String()
		}
		body.Reset()
	}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			flush()
			anchor = githubAnchor(strings.TrimLeft(line, "# "))
			if _, dup := out[anchor]; dup {
				t.Errorf("%s: two headings make anchor #%s", runbooksFile, anchor)
			}
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	flush()
	return out
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// alertRule is what the checks read of one alerting rule.
type alertRule struct {
	name, expr, runbook string
}

// readAlerts reads the alerting rules of alerts.yml: each `- alert:` item's
// expr (a plain scalar or a block scalar, `|` or `>`) and its
// runbook_url. It reads only the shape alerts.yml is written in, and fails
// on an alert where it finds no expr.
func readAlerts(t *testing.T) []alertRule {
	t.Helper()
	f, err := os.Open(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	var out []alertRule
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "- alert:"):
			out = append(out, alertRule{name: strings.TrimSpace(strings.TrimPrefix(line, "- alert:"))})
		case strings.HasPrefix(line, "expr:") && len(out) > 0:
			value := strings.TrimSpace(strings.TrimPrefix(line, "expr:"))
			if value == "|" || value == "|-" || value == ">" || value == ">-" {
				var block []string
				for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > indent(lines[i])) {
					i++
					block = append(block, strings.TrimSpace(lines[i]))
				}
				value = strings.Join(block, " ")
			}
			out[len(out)-1].expr = unquoteYAML(value)
		case strings.HasPrefix(line, "runbook_url:") && len(out) > 0:
			out[len(out)-1].runbook = unquoteYAML(strings.TrimSpace(strings.TrimPrefix(line, "runbook_url:")))
		}
	}
	for _, a := range out {
		if a.expr == "" || a.runbook == "" {
			t.Errorf("%s: alert %s: no expr or runbook_url read", alertsFile, a.name)
		}
	}
	return out
}

// unquoteYAML takes the quotes off a quoted YAML scalar.
func unquoteYAML(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		if s[0] == '"' {
			if u, err := strconv.Unquote(s); err == nil {
				return u
			}
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

// sourcedExpr is a PromQL expression and where it was read.
type sourcedExpr struct {
	where, expr string
}

func alertExprs(t *testing.T) []sourcedExpr {
	var out []sourcedExpr
	for _, a := range readAlerts(t) {
		out = append(out, sourcedExpr{alertsFile + " alert " + a.name, a.expr})
	}
	return out
}

// dashboardExprs reads every query of the dashboard: each panel's
// targets (rows' nested panels too) and each query variable, where
// Grafana's label_values(metric, label) is read as its metric selector.
func dashboardExprs(t *testing.T) []sourcedExpr {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Type    string  `json:"type"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []sourcedExpr
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" || p.Type == "text" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
			}
			for _, target := range p.Targets {
				if strings.TrimSpace(target.Expr) == "" {
					t.Errorf("%s: panel %q has an empty query", dashboardFile, p.Title)
				}
				out = append(out, sourcedExpr{fmt.Sprintf("%s panel %q", dashboardFile, p.Title), target.Expr})
			}
		}
	}
	walk(dash.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_]\w*)\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var query string
		if json.Unmarshal(v.Query, &query) != nil {
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("%s: variable %s: query %s: %v", dashboardFile, v.Name, v.Query, err)
			}
			query = q.Query
		}
		where := fmt.Sprintf("%s variable %s", dashboardFile, v.Name)
		if m := labelValues.FindStringSubmatch(query); m != nil {
			// The label must be on the metric: group by it.
			out = append(out, sourcedExpr{where, fmt.Sprintf("group by (%s) (%s)", m[2], m[1])})
			continue
		}
		out = append(out, sourcedExpr{where, query})
	}
	return out
}

// promExpr is what the checks need of a PromQL expression: the selectors
// (metric name and label matchers) and the labels it groups by.
type promExpr struct {
	where, source string
	selectors     []promSelector
	grouping      []string
}

type promSelector struct {
	metric   string
	matchers []promMatcher
}

type promMatcher struct {
	label, op, value string
}

// promFunctions are PromQL's functions and aggregations: a name followed
// by "(" must be one of them.
var promFunctions = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`sum min max avg count stddev stdvar topk bottomk quantile count_values group limitk limit_ratio
		rate irate increase delta idelta deriv predict_linear histogram_quantile histogram_count histogram_sum histogram_fraction
		changes resets abs ceil floor round clamp clamp_min clamp_max exp ln log2 log10 sqrt sgn
		time timestamp vector scalar sort sort_desc sort_by_label sort_by_label_desc label_replace label_join absent absent_over_time
		avg_over_time min_over_time max_over_time sum_over_time count_over_time last_over_time present_over_time
		quantile_over_time stddev_over_time stdvar_over_time mad_over_time
		day_of_week day_of_month day_of_year days_in_month hour minute month year`) {
		promFunctions[f] = true
	}
}

// promKeywords are PromQL's words that are neither functions nor metrics.
var promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true}

// promGrouping are the modifiers whose parenthesised list names labels.
var promGrouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

type promToken struct {
	kind byte // 'i' identifier, 's' string, 'n' number or duration, 'v' Grafana variable, 'p' punctuation
	text string
}

// lexPromQL splits expr into tokens; string tokens hold the unquoted value.
func lexPromQL(expr string) ([]promToken, error) {
	var out []promToken
	isIdent := func(r byte, first bool) bool {
		return r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (!first && r >= '0' && r <= '9')
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			var value strings.Builder
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' && j+1 < len(expr) {
					j++
				}
				value.WriteByte(expr[j])
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, promToken{'s', value.String()})
			i = j + 1
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				for j < len(expr) && expr[j] != '}' {
					j++
				}
				j++
			} else {
				for j < len(expr) && isIdent(expr[j], false) {
					j++
				}
			}
			out = append(out, promToken{'v', expr[i:min(j, len(expr))]})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9'):
			j := i
			for j < len(expr) && (isIdent(expr[j], false) || expr[j] == '.') {
				j++
			}
			out = append(out, promToken{'n', expr[i:j]})
			i = j
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			out = append(out, promToken{'i', expr[i:j]})
			i = j
		default:
			j := i + 1
			if j < len(expr) && strings.Contains("=~", string(expr[j])) && strings.Contains("=!<>", string(c)) {
				j++
			}
			out = append(out, promToken{'p', expr[i:j]})
			i = j
		}
	}
	return out, nil
}

// parsePromQL reads the selectors and grouping labels of expr. It is not a
// PromQL parser (promtool checks the rules' syntax); it knows enough to
// tell metric names from functions, keywords and label names.
func parsePromQL(expr string) (promExpr, error) {
	tokens, err := lexPromQL(expr)
	if err != nil {
		return promExpr{}, err
	}
	var out promExpr
	next := func(i int) promToken {
		if i+1 < len(tokens) {
			return tokens[i+1]
		}
		return promToken{}
	}
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		switch {
		case tok.kind == 'p' && tok.text == "[":
			for i < len(tokens) && tokens[i].text != "]" {
				i++
			}
		case tok.kind == 'p' && tok.text == "{":
			return out, fmt.Errorf("a selector without a metric name")
		case tok.kind != 'i':
		case promGrouping[tok.text]:
			if next(i).text != "(" {
				continue // group_left without labels
			}
			for i += 2; i < len(tokens) && tokens[i].text != ")"; i++ {
				if tokens[i].kind == 'i' {
					out.grouping = append(out.grouping, tokens[i].text)
				}
			}
		case next(i).text == "(" || (next(i).kind == 'i' && (next(i).text == "by" || next(i).text == "without")):
			if !promFunctions[tok.text] {
				return out, fmt.Errorf("unknown function %s", tok.text)
			}
		case promKeywords[tok.text]:
		default:
			sel := promSelector{metric: tok.text}
			if next(i).text == "{" {
				for i += 2; i < len(tokens) && tokens[i].text != "}"; i++ {
					if tokens[i].text == "," {
						continue
					}
					if i+2 >= len(tokens) || tokens[i].kind != 'i' || tokens[i+1].kind != 'p' || tokens[i+2].kind != 's' {
						return out, fmt.Errorf("cannot read the matchers of %s", tok.text)
					}
					sel.matchers = append(sel.matchers, promMatcher{tokens[i].text, tokens[i+1].text, tokens[i+2].text})
					i += 2
				}
			}
			out.selectors = append(out.selectors, sel)
		}
	}
	if len(out.selectors) == 0 {
		return out, fmt.Errorf("names no metric")
	}
	return out, nil
}

// TestDashboardPromQLReader checks the reader the metrics check relies on:
// metric names, matchers and grouping labels come out, and functions,
// keywords, durations and Grafana variables do not pass for metrics.
func TestDashboardPromQLReader(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr     string
		metrics  []string
		grouping []string
		matchers []promMatcher
		err      string
	}{
		{expr: `sum without (instance) (strata_replica_under_replicated_partitions) > 0`,
			metrics: []string{"strata_replica_under_replicated_partitions"}, grouping: []string{"instance"}},
		{expr: `histogram_quantile(0.99, sum by (le, api) (rate(strata_ingest_request_duration_seconds_bucket{job=~"$job", api=~"Produce|Fetch"}[$__rate_interval])))`,
			metrics: []string{"strata_ingest_request_duration_seconds_bucket"}, grouping: []string{"le", "api"},
			matchers: []promMatcher{{"job", "=~", "$job"}, {"api", "=~", "Produce|Fetch"}}},
		{expr: "a_total{x=\"1\"} / on (y) group_left b offset 5m and c > bool 2",
			metrics: []string{"a_total", "b", "c"}, grouping: []string{"y"}, matchers: []promMatcher{{"x", "=", "1"}}},
		{expr: `time() - max by (topic) (m{s!="Empty"} > 0)`, metrics: []string{"m"}, grouping: []string{"topic"},
			matchers: []promMatcher{{"s", "!=", "Empty"}}},
		{expr: `histogram_quantle(0.9, x)`, err: "unknown function histogram_quantle"},
		{expr: `{__name__="x"}`, err: "a selector without a metric name"},
		{expr: `vector(1)`, err: "names no metric"},
	} {
		got, err := parsePromQL(c.expr)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.expr, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		var metrics []string
		var matchers []promMatcher
		for _, s := range got.selectors {
			metrics = append(metrics, s.metric)
			matchers = append(matchers, s.matchers...)
		}
		if !slices.Equal(metrics, c.metrics) || !slices.Equal(got.grouping, c.grouping) || !slices.Equal(matchers, c.matchers) {
			t.Errorf("%s: metrics %v grouping %v matchers %v, want %v %v %v", c.expr, metrics, got.grouping, matchers, c.metrics, c.grouping, c.matchers)
		}
	}
}
