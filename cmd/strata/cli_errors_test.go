package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// runCLI runs the CLI in process and returns its exit code and outputs.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, &env{stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr}, args)
	return code, stdout.String(), stderr.String()
}

// TestHelpGoesToStdout asks for help at every level: the top, each group,
// each command. All of it is on standard output with exit 0; a group named
// alone prints its help too, but exits 2.
func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "strata topic create NAME") {
			t.Errorf("strata %s: exit %d, stderr %q, stdout %q", args, code, stderr, stdout)
		}
	}
	if code, stdout, _ := runCLI(t, ""); code != exitBadArgs || !strings.Contains(stdout, "Usage:") {
		t.Errorf("strata alone: exit %d, stdout %q; want the usage and exit 2", code, stdout)
	}
	for _, group := range commandGroups() {
		code, stdout, stderr := runCLI(t, "", group)
		if code != exitBadArgs || stderr != "" || !strings.Contains(stdout, "Usage: strata "+group+" COMMAND") {
			t.Errorf("strata %s: exit %d, stderr %q, stdout %q; want its help on stdout and exit 2", group, code, stderr, stdout)
		}
		for _, args := range [][]string{{group, "-h"}, {group, "--help"}, {"help", group}} {
			code, stdout, stderr := runCLI(t, "", args...)
			if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage: strata "+group+" COMMAND") {
				t.Errorf("strata %s: exit %d, stderr %q, stdout %q", args, code, stderr, stdout)
			}
		}
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(words, "-h"), append(words, "--help"), append([]string{"help"}, words...)} {
			code, stdout, stderr := runCLI(t, "", args...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: strata "+c.name+" ") || !strings.Contains(stdout, "-json") {
				t.Errorf("strata %s: exit %d, stderr %q, stdout %q; want its usage, with -json, on stdout", args, code, stderr, stdout)
			}
		}
	}
	if code, _, stderr := runCLI(t, "", "topic", "bogus"); code != exitBadArgs || !strings.Contains(stderr, `unknown command "topic bogus"`) {
		t.Errorf("strata topic bogus: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "help", "bogus"); code != exitBadArgs || !strings.Contains(stderr, `no command "bogus"`) {
		t.Errorf("strata help bogus: exit %d, stderr %q", code, stderr)
	}
}

// TestJSONErrorsOnEveryCommand gives every command --json and a flag it
// does not have: the error is one JSON object on stderr, naming the
// command, with exit 2.
func TestJSONErrorsOnEveryCommand(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		code, stdout, stderr := runCLI(t, "", append(strings.Fields(c.name), "--json", "--no-such-flag")...)
		var got errorJSON
		if err := json.Unmarshal([]byte(stderr), &got); err != nil || strings.Count(stderr, "\n") != 1 {
			t.Errorf("strata %s --json --no-such-flag: stderr %q is not one JSON object: %v", c.name, stderr, err)
			continue
		}
		if code != exitBadArgs || got.ExitCode != exitBadArgs || got.Command != c.name || !strings.Contains(got.Error, "no-such-flag") ||
			!strings.Contains(got.Hint, "strata "+c.name+" -h") || stdout != "" {
			t.Errorf("strata %s --json --no-such-flag: exit %d, %+v, stdout %q", c.name, code, got, stdout)
		}
	}
}

// TestCLIRefusesBadValues covers the command lines the CLI used to accept
// and then did something else with. None of them reaches a broker:
// --bootstrap points nowhere, so a command that got that far would fail
// with exit 1, not 2.
func TestCLIRefusesBadValues(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--bootstrap", "127.0.0.1:1", "--timeout", "1s"}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"produce", ""}, "hello\n", "topic name is empty"},
		{[]string{"produce", "a/b"}, "hello\n", `has '/' at byte 1`},
		{[]string{"produce", "t", "--partition", "4294967296"}, "hello\n", "--partition 4294967296 is out of range"},
		{[]string{"produce", "t", "--partition", "-2"}, "hello\n", "--partition -2: give a partition number"},
		{[]string{"consume", ".."}, "", `".." is not allowed`},
		{[]string{"consume", "t", "--max", "-1"}, "", "--max -1"},
		{[]string{"topic", "create", "x", "--partitions", "4294967297"}, "", "--partitions 4294967297 is out of range"},
		{[]string{"topic", "create", "x", "--partitions", "0"}, "", "at least 1 partition"},
		{[]string{"topic", "create", "x", "--replication-factor", "40000"}, "", "--replication-factor 40000 is out of range"},
		{[]string{"topic", "create", strings.Repeat("x", 250)}, "", "is 250 characters long: at most 249"},
		{[]string{"topic", "alter", "x", "--partitions", "4294967297"}, "", "--partitions 4294967297 is out of range"},
		{[]string{"topic", "describe", "ok", ""}, "", "topic name is empty"},
		{[]string{"topic", "list", "--under-replicated", "--unavailable"}, "", "--under-replicated and --unavailable are separate reports: give one of them (run `strata topic list` once per report"},
		{[]string{"topic", "list", "--under-min-isr", "--at-min-isr", "--under-replicated"}, "", "--under-replicated and --under-min-isr and --at-min-isr are separate reports"},
		{[]string{"topic", "list", "orders", "--under-replicated"}, "", "topic list takes flags only, not \"orders\" (`strata topic describe NAME` shows one topic)"},
		{[]string{"topic", "delete", "x y"}, "", `has ' ' at byte 1`},
		{[]string{"group", "list", "--state", "Stable,Bogus"}, "", `--state "Bogus": no such group state; the states are Empty, Stable, PreparingRebalance, CompletingRebalance, Dead`},
		{[]string{"tier", "status", ""}, "", "topic name is empty"},
	} {
		args := append(tc.args, nowhere...)
		if tc.args[0] == "tier" {
			args = append(tc.args, "--admin", "127.0.0.1:1", "--timeout", "1s")
		}
		code, stdout, stderr := runCLI(t, tc.stdin, args...)
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("strata %q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "10", "--to", "5"}, "--from 10 is not before --to 5"},
		{[]string{"--from", "5", "--to", "5"}, "--from 5 is not before --to 5"},
		{[]string{"--from", "-5"}, "--from -5: give an offset"},
		{[]string{"--to", "-5"}, "--to -5: give an offset"},
		{[]string{"--partition", "4294967296"}, "--partition 4294967296: want 0 to 2147483647"},
		{[]string{"--key-prefix", "a//b"}, `--key-prefix: "a//b" has a leading, trailing or doubled '/'`},
	} {
		args := append([]string{"export", "--bucket", "file://" + t.TempDir(), "--topic", "t"}, tc.args...)
		code, _, stderr := runCLI(t, "", args...)
		if code != exitBadArgs || !strings.Contains(stderr, tc.want) {
			t.Errorf("strata %q: exit %d, stderr %q; want exit 2 saying %q", args, code, stderr, tc.want)
		}
	}
}

func TestGroupStatesMatchAnyCase(t *testing.T) {
	t.Parallel()
	got, err := parseGroupStates(" stable,EMPTY ,, preparingrebalance")
	if err != nil || strings.Join(got, ",") != "Stable,Empty,PreparingRebalance" {
		t.Fatalf("parseGroupStates = %q, %v", got, err)
	}
}

func TestCheckTopicName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"orders": true, "a.b_c-D9": true, strings.Repeat("x", 249): true, "...": true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false, "a b": false, "é": false, "a\x00": false,
	} {
		if err := checkTopicName("topic", name); (err == nil) != ok {
			t.Errorf("checkTopicName(%q) = %v, want ok %v", name, err, ok)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "strata ") || !strings.Contains(stdout, runtime.Version()) {
			t.Errorf("strata %s: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := runCLI(t, "", "version", "--json")
	var v buildVersion
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 || v.GoVersion != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH || v.Version == "" {
		t.Fatalf("strata version --json: exit %d, %q: %v", code, stdout, err)
	}
}

// TestServerPortConflictNamesTheFlag starts `strata server` in process with
// each of its three ports taken by a listener of the test: each failure
// names the flag to change. Nothing is served: the lock and the listeners
// come before the metadata node.
func TestServerPortConflictNamesTheFlag(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, flagName := range []string{"listen", "admin-listen", "meta-listen", "schema.registry.listen"} {
		args := []string{"server", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--meta-listen", "127.0.0.1:0", "--schema.registry.listen", "127.0.0.1:0", "--" + flagName, addr}
		code, _, stderr := runCLI(t, "", args...)
		want := "--" + flagName + " " + addr + ": address already in use"
		if code != exitFailed || !strings.Contains(stderr, want) || !strings.Contains(stderr, "pick another port with --"+flagName) {
			t.Errorf("%s taken: exit %d, stderr %q; want exit 1 saying %q and the fix", flagName, code, stderr, want)
		}
	}
	code, _, stderr := runCLI(t, "", "server", "--json", "--data", t.TempDir(), "--listen", addr)
	var got errorJSON
	if err := json.Unmarshal([]byte(stderr), &got); err != nil || code != exitFailed || !strings.Contains(got.Error, "--listen "+addr) {
		t.Errorf("server --json with --listen taken: exit %d, stderr %q (%v)", code, stderr, err)
	}
}

// TestClusterBrokerNeedsASharedBucket: a broker of a cluster (--meta-peers
// naming others) without --bucket is refused before anything starts,
// saying why and what to give; a single node keeps its default bucket.
func TestClusterBrokerNeedsASharedBucket(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "", "server", "--data", t.TempDir(), "--node-id", "1",
		"--meta-peers", "1=127.0.0.1:1,2=127.0.0.1:2,3=127.0.0.1:3")
	if code != exitBadArgs || !strings.Contains(stderr, "--bucket") || !strings.Contains(stderr, "give each the same --bucket") {
		t.Errorf("a cluster broker without --bucket: exit %d, stderr %q; want a usage error naming --bucket and the fix", code, stderr)
	}
	c := serverConfig{nodeID: 1}
	if err := c.checkSharedBucket([]meta.Peer{{ID: "1", Address: "127.0.0.1:1"}}); err != nil {
		t.Errorf("a single voter without --bucket: %v", err)
	}
}
