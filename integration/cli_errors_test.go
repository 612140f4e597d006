package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cliResult is one run of the strata binary.
type cliResult struct {
	code           int
	stdout, stderr string
}

// strataExit runs the CLI against s and returns its exit code and outputs,
// for tests of what it refuses.
func (s *server) strataExit(ctx context.Context, stdin string, args ...string) cliResult {
	s.t.Helper()
	cmd := exec.CommandContext(ctx, strataBinary, args...)
	cmd.Env = append(os.Environ(), "STRATA_BOOTSTRAP="+s.kafka, "STRATA_ADMIN="+s.admin)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		s.t.Fatalf("strata %s: %v", strings.Join(args, " "), err)
	}
	return cliResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// TestCLIErrorsAgainstAServer runs, against a real server, each command
// line issue 9 found answered with success: each now fails, with exit 2
// for what the CLI refuses itself and 1 for what the broker refuses, and
// one line saying why; the topics the bad lines named were not created.
func TestCLIErrorsAgainstAServer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"hello\n", []string{"produce", ""}, 2, "topic name is empty"},
		{"", []string{"topic", "create", "overflow", "--partitions", "4294967297"}, 2, "--partitions 4294967297 is out of range"},
		{"", []string{"tier", "status", "nosuch"}, 1, `no topic "nosuch"`},
		{"", []string{"group", "list", "--state", "Bogus"}, 2, "the states are Empty, Stable, PreparingRebalance, CompletingRebalance, Dead"},
		{"", []string{"group", "describe", "missing"}, 1, `group "missing" does not exist`},
		{"", []string{"topic"}, 2, ""},
	} {
		r := s.strataExit(ctx, tc.stdin, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("strata %q: exit %d, stderr %q; want exit %d and a line saying %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if r := s.strataExit(ctx, "", "topic"); !strings.Contains(r.stdout, "strata topic create NAME") {
		t.Errorf("strata topic printed %q on stdout, want the group's help", r.stdout)
	}

	// A count that fits is the broker's to judge; whatever it answers, the
	// CLI prints the count asked for and not create's wrong hint (alter's
	// "above the current one").
	if r := s.strataExit(ctx, "", "topic", "create", "huge", "--partitions", "1000000"); r.code != 1 || !strings.Contains(r.stderr, "1000000") || strings.Contains(r.stderr, "above the current one") {
		t.Errorf("topic create --partitions 1000000: exit %d, stderr %q", r.code, r.stderr)
	}
	out, err := s.strata(ctx, "", "topic", "list", "--json")
	if err != nil || strings.Contains(out, "overflow") || strings.Contains(out, "huge") {
		t.Errorf("topic list after the refused creates: %v %s", err, out)
	}

	// With --json the error is a JSON object on stderr.
	r := s.strataExit(ctx, "", "tier", "status", "nosuch", "--json")
	var jsonErr struct {
		Command  string `json:"command"`
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &jsonErr); err != nil || r.code != 1 || jsonErr.Command != "tier status" || jsonErr.ExitCode != 1 || !strings.Contains(jsonErr.Error, "404") {
		t.Errorf("tier status nosuch --json: exit %d, stderr %q: %v", r.code, r.stderr, err)
	}

	// The admin endpoints: 404 for what the broker does not know, 400 for
	// a query parameter an endpoint does not take, and the topic filter
	// honoured.
	createTopic(t, s, "kept", 2, nil)
	createTopic(t, s, "other", 1, nil)
	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/v1/groups/missing/lag", http.StatusNotFound, `group "missing"`},
		{"/v1/tier/status?topic=nosuch", http.StatusNotFound, `no topic "nosuch"`},
		{"/v1/tier/status?topic=", http.StatusBadRequest, "not empty"},
		{"/v1/tier/status?partition=0", http.StatusBadRequest, `unknown query parameter "partition"`},
		{"/v1/cluster/status?x=1", http.StatusBadRequest, `unknown query parameter "x"`},
	} {
		status, body := httpGet(t, "http://"+s.admin+c.path)
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", c.path, status, body, c.status, c.body)
		}
	}
	// Poll: a new partition joins offload's status when it opens, with no
	// event a client can wait on.
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		status, body := httpGet(t, "http://"+s.admin+"/v1/tier/status?topic=kept")
		var doc struct {
			Partitions []struct {
				Topic string `json:"topic"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil || status != http.StatusOK {
			t.Fatalf("tier status ?topic=kept: %d %s (%v)", status, body, err)
		}
		for _, p := range doc.Partitions {
			if p.Topic != "kept" {
				t.Fatalf("tier status ?topic=kept lists %q: %s", p.Topic, body)
			}
		}
		if len(doc.Partitions) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tier status ?topic=kept has %d partitions after a minute, want 2: %s", len(doc.Partitions), body)
		}
		<-tick.C
	}
}

// TestCLIExportRange tiers a few segments and asks `strata export` for
// offsets the bucket does not hold: past its end, and a --from not before
// --to. Both fail, naming the range the bucket holds.
func TestCLIExportRange(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const topic = "exported"
	createTopic(t, s, topic, 1, map[string]*string{"segment.bytes": kadmString(strconv.Itoa(1 << 20))})
	produceAll(t, newClient(t, s, kgo.ProducerLinger(5*time.Millisecond)), topic, tierRecords(3<<20))
	cl := newClient(t, s)
	// Poll: offload has no event a client can wait on.
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for listOffset(t, cl, topic, -5) < 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no segment tiered within a minute:\n%s", s.log)
		}
		<-tick.C
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bucket := []string{"export", "--bucket", "file://" + s.dataDir + "/bucket", "--topic", topic, "--partition", "0"}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--from", "1000000000"}, 1, "--from 1000000000 is past the end of the bucket: exported-0's tiered offsets are 0 to "},
		{[]string{"--from", "10", "--to", "5"}, 2, "--from 10 is not before --to 5"},
	} {
		r := s.strataExit(ctx, "", append(bucket, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("strata export %q: exit %d, stdout %q, stderr %q; want exit %d saying %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
		}
	}
	if r := s.strataExit(ctx, "", append(bucket, "--to", "1")...); r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("strata export --to 1: exit %d, stdout %d bytes, stderr %q; want the one record", r.code, len(r.stdout), r.stderr)
	}
}

// TestServerRefusesABusyOrForeignDataDir starts a second server on a data
// directory a running one holds, then the first's directory with another
// --node-id, then a server on ports taken: each fails at once, naming the
// other process, both ids, or the flag to change.
func TestServerRefusesABusyOrForeignDataDir(t *testing.T) {
	t.Parallel()
	first := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := func(args ...string) cliResult {
		t.Helper()
		return first.strataExit(ctx, "", append([]string{"server", "--listen", freePort(t), "--admin-listen", freePort(t), "--meta-listen", freePort(t), "--schema.registry.listen", freePort(t)}, args...)...)
	}

	r := serve("--data", first.dataDir)
	pid := strconv.Itoa(first.cmd.Process.Pid)
	if r.code != 1 || !strings.Contains(r.stderr, "data directory in use: pid "+pid+" ("+strataBinary+" server") || !strings.Contains(r.stderr, "another --data") {
		t.Errorf("second server on the same --data: exit %d, stderr %q; want it to name pid %s and its command line", r.code, r.stderr, pid)
	}

	for _, taken := range []struct{ flag, addr string }{{"listen", first.kafka}, {"admin-listen", first.admin}, {"meta-listen", first.meta}} {
		r := serve("--data", t.TempDir(), "--"+taken.flag, taken.addr)
		if r.code != 1 || !strings.Contains(r.stderr, "--"+taken.flag+" "+taken.addr+": address already in use") || !strings.Contains(r.stderr, "pick another port with --"+taken.flag) {
			t.Errorf("--%s taken: exit %d, stderr %q", taken.flag, r.code, r.stderr)
		}
	}

	first.stop()
	r = serve("--data", first.dataDir, "--node-id", "2")
	if r.code != 1 || !strings.Contains(r.stderr, "first started with --node-id 1, and this start gives --node-id 2") || !strings.Contains(r.stderr, "restart with --node-id 1") {
		t.Errorf("restart with another --node-id: exit %d, stderr %q", r.code, r.stderr)
	}
	// The refusal changed nothing: the directory starts with its own id.
	first.restart()
}

// adminHTTP is the client the tests and benchmarks read a server's admin
// endpoints with: a wedged endpoint fails the read within a minute (a
// profile takes 10 s) instead of hanging a benchmark, which runs without
// the test binary's alarm.
var adminHTTP = &http.Client{Timeout: time.Minute}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := adminHTTP.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestVersionOfTheBinary reads the build information of the binary users
// run: the module path and the Go version it was built with, and both
// spellings of the command agree.
func TestVersionOfTheBinary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, strataBinary, "version", "--json").Output()
	var v struct {
		Module    string `json:"module"`
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if err == nil {
		err = json.Unmarshal(out, &v)
	}
	if err != nil || v.Module != "github.com/stratalog/strata" || !strings.HasPrefix(v.GoVersion, "go") || v.Version == "" {
		t.Fatalf("strata version --json: %v %s", err, out)
	}
	text, err1 := exec.CommandContext(ctx, strataBinary, "version").Output()
	flag, err2 := exec.CommandContext(ctx, strataBinary, "--version").Output()
	if err1 != nil || err2 != nil || string(text) != string(flag) || !strings.Contains(string(text), v.GoVersion) {
		t.Fatalf("strata version %q (%v) and --version %q (%v) differ or lack %s", text, err1, flag, err2, v.GoVersion)
	}
}
