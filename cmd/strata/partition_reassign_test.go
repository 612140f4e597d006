package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// FuzzReadPlan feeds arbitrary bytes to the reassignment plan reader: it
// never panics, refuses what it refuses as a usage error (exit 2, a line
// naming the problem), and a plan it accepts writes out and reads back
// the same.
func FuzzReadPlan(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3]}]}`))
	f.Add([]byte(`{"version":2,"partitions":[]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, err := readPlan(&env{stdin: bytes.NewReader(data), stdout: io.Discard, stderr: io.Discard}, "-")
		if err != nil {
			if !errors.Is(err, errUsage) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("refused with %q, want one usage line", err)
			}
			return
		}
		again, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		reread, err := readPlan(&env{stdin: bytes.NewReader(again)}, "-")
		if err != nil || !reflect.DeepEqual(plan, reread) {
			t.Fatalf("an accepted plan did not read back: %v\n%+v\n%+v", err, plan, reread)
		}
	})
}

// TestReadPlanRefusals: what a plan may not say, each refused naming it.
func TestReadPlanRefusals(t *testing.T) {
	for plan, want := range map[string]string{
		`{"version":2,"partitions":[]}`:                                             "only version 1",
		`{"version":1,"partitions":[]}`:                                             "no partitions",
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`: "lists broker 1 twice",
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`: "t-0 is listed twice",
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`:                       `log directory "/data"`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"extra":true}]}`:                               "not a reassignment plan",
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`:                                             "has no replicas",
	} {
		_, err := readPlan(&env{stdin: strings.NewReader(plan)}, "-")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error containing %q", plan, err, want)
		}
	}
}
