package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kafkajsModules is where scripts/test-deps installs kafkajs.
const kafkajsModules = "../bin/kafkajs/node_modules"

// kafkajsValue is record i's value in testdata/kafkajs_roundtrip.js.
func kafkajsValue(i int) string { return strings.Repeat(fmt.Sprintf("value %d ü ✓ ", i), 1+i%7) }

// TestKafkajsRoundTrip runs kafkajs, the Node.js client, against a strata
// server: its admin client creates a topic, its idempotent producer writes
// 300 records with keys and headers, and a consumer group reads them back
// and commits (testdata/kafkajs_roundtrip.js checks every byte). franz-go
// then reads the same records and checks every byte again, and the
// committed offsets reach the end of every partition.
func TestKafkajsRoundTrip(t *testing.T) {
	t.Parallel()
	modules, err := filepath.Abs(kafkajsModules)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (make test installs it through scripts/test-deps)")
	}
	if _, err := os.Stat(filepath.Join(modules, "kafkajs")); err != nil {
		t.Skip("kafkajs is not installed in bin/kafkajs (make test installs it through scripts/test-deps)")
	}
	s := startServer(t)
	const topic, group, count = "kafkajs", "kafkajs-group", 300

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/kafkajs_roundtrip.js", s.kafka, topic, group, fmt.Sprint(count))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "KAFKAJS_NO_PARTITIONER_WARNING=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs round trip: %v\n%s\nserver log:\n%s", err, stderr.String(), s.log)
	}
	var summary struct{ Consumed, Committed int }
	if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil {
		t.Fatalf("kafkajs printed %q: %v", stdout.String(), err)
	}
	if summary.Consumed != count || summary.Committed != count {
		t.Fatalf("kafkajs consumed %d and committed %d of %d records", summary.Consumed, summary.Committed, count)
	}

	seen := map[string]bool{}
	for _, r := range consumeAll(t, s, topic, count) {
		var i int
		if _, err := fmt.Sscanf(string(r.key), "k%d", &i); err != nil || seen[string(r.key)] {
			t.Fatalf("partition %d offset %d: key %q is not one kafkajs wrote once", r.partition, r.offset, r.key)
		}
		seen[string(r.key)] = true
		if string(r.value) != kafkajsValue(i) || len(r.headers) != 1 || r.headers[0].Key != "h" || string(r.headers[0].Value) != fmt.Sprintf("x%d", i) {
			t.Fatalf("record %s as franz-go reads it: value %q, headers %v", r.key, r.value, r.headers)
		}
	}
}
