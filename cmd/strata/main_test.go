package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestFindCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		name     string
		rest     []string
		resolved bool
	}{
		{[]string{"topic", "create", "orders", "--partitions", "3"}, "topic create", []string{"orders", "--partitions", "3"}, true},
		{[]string{"server", "--listen", ":1"}, "server", []string{"--listen", ":1"}, true},
		{[]string{"cluster", "status"}, "cluster status", []string{}, true},
		{[]string{"topic"}, "", nil, false},
		{[]string{"nonsense"}, "", nil, false},
	} {
		cmd, rest, ok := findCommand(tc.args)
		if ok != tc.resolved || cmd.name != tc.name || (ok && strings.Join(rest, " ") != strings.Join(tc.rest, " ")) {
			t.Errorf("findCommand(%q) = %q %q %v", tc.args, cmd.name, rest, ok)
		}
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	partitions := fs.Int("partitions", 1, "")
	positional, err := parseFlags(fs, []string{"orders", "--partitions", "3", "more", "--", "--literal"})
	if err != nil || *partitions != 3 || strings.Join(positional, " ") != "orders more --literal" {
		t.Fatalf("parseFlags: %v, partitions %d, positional %q", err, *partitions, positional)
	}
	if _, err := parseFlags(fs, []string{"--nope"}); !errors.Is(err, errUsage) {
		t.Fatalf("unknown flag: %v, want a usage error", err)
	}
}

func TestConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "strata.conf")
	os.WriteFile(path, []byte("# comment\nlisten = 127.0.0.1:19092\nnum.partitions=6\n\nadmin-listen = 127.0.0.1:19644\n"), 0o644)
	var c serverConfig
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	c.register(fs)
	if _, err := parseFlags(fs, []string{"--config", path, "--admin-listen", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := applyFile(fs, c.configFile); err != nil {
		t.Fatal(err)
	}
	if c.listen != "127.0.0.1:19092" || c.numPartitions != 6 || c.adminListen != "127.0.0.1:1" {
		t.Fatalf("after the file: listen %q, num.partitions %d, admin %q (the flag must win)", c.listen, c.numPartitions, c.adminListen)
	}
	os.WriteFile(path, []byte("retention = forever\n"), 0o644)
	err := applyFile(fs, path)
	if err == nil || !strings.Contains(err.Error(), ":1: unknown setting \"retention\"") {
		t.Fatalf("unknown setting: %v", err)
	}
}

func TestExplainIsOneLineWithTheFix(t *testing.T) {
	t.Parallel()
	err := kafkaError(`topic "x"`, kerr.TopicAlreadyExists, "meta: topic already exists:\n\"x\"")
	got := explain(err)
	if strings.Contains(got, "\n") || !strings.Contains(got, "TOPIC_ALREADY_EXISTS") || !strings.Contains(got, "strata topic delete") {
		t.Fatalf("explain = %q", got)
	}
}

func TestUnreachableBrokerNamesTheFix(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr},
		[]string{"topic", "list", "--bootstrap", "127.0.0.1:1", "--timeout", "2s"})
	if code != 1 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--bootstrap") {
		t.Fatalf("exit %d, stderr %q: want exit 1 and one line naming --bootstrap", code, stderr.String())
	}
}
