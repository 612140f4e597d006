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

// kafkajsInstalled is the absolute path of the kafkajs modules for
// NODE_PATH; it skips the test when node or kafkajs is not installed.
func kafkajsInstalled(t *testing.T) string {
	t.Helper()
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
	return modules
}

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
	s := startServer(t)
	kafkajsRoundTrip(t, []*server{s}, "kafkajs", "kafkajs-group", false)
}

// kafkajsRoundTrip runs testdata/kafkajs_roundtrip.js bootstrapped from all
// of servers, its admin client creating topic unless existing, and checks
// what it printed: it consumed and committed all 300 records, and franz-go
// reads every one with the bytes kafkajs wrote, at the partition and offset
// kafkajs's consumer read it, which is where its producer was acknowledged:
// the records of each send to one partition follow each other from the
// base offset the send was acknowledged at. It returns the records as
// franz-go read them.
func kafkajsRoundTrip(t *testing.T, servers []*server, topic, group string, existing bool) []testRecord {
	t.Helper()
	modules := kafkajsInstalled(t)
	const count, perSend = 300, 50 // as the script sends them
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"testdata/kafkajs_roundtrip.js", strings.Join(kafkaAddresses(servers), ","), topic, group, fmt.Sprint(count)}
	if existing {
		args = append(args, "existing")
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "KAFKAJS_NO_PARTITIONER_WARNING=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs round trip: %v\n%s\nserver logs:\n%s", err, stderr.String(), serverLogs(servers))
	}
	type position struct {
		Partition int32
		Offset    int64
	}
	var summary struct {
		Consumed, Committed int
		Sends               [][]struct {
			Partition  int32
			BaseOffset int64
		}
		Positions map[string]position
	}
	if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil {
		t.Fatalf("kafkajs printed %q: %v", stdout.String(), err)
	}
	if summary.Consumed != count || summary.Committed != count {
		t.Fatalf("kafkajs consumed %d and committed %d of %d records", summary.Consumed, summary.Committed, count)
	}
	if len(summary.Sends) != count/perSend {
		t.Fatalf("kafkajs reports %d sends acknowledged, want %d", len(summary.Sends), count/perSend)
	}
	for n, acked := range summary.Sends {
		next := map[int32]int64{} // the offset the send's next record to the partition must be at
		for _, p := range acked {
			next[p.Partition] = p.BaseOffset
		}
		for i := n * perSend; i < (n+1)*perSend; i++ {
			at := summary.Positions[fmt.Sprintf("k%d", i)]
			want, ok := next[at.Partition]
			if !ok || at.Offset != want {
				t.Fatalf("kafkajs read record k%d at partition %d offset %d; its send was acknowledged at %+v", i, at.Partition, at.Offset, acked)
			}
			next[at.Partition]++
		}
	}

	consumed := consumeAllSeeds(t, kafkaAddresses(servers), topic, count)
	seen := map[string]bool{}
	for _, r := range consumed {
		var i int
		if _, err := fmt.Sscanf(string(r.key), "k%d", &i); err != nil || seen[string(r.key)] {
			t.Fatalf("partition %d offset %d: key %q is not one kafkajs wrote once", r.partition, r.offset, r.key)
		}
		seen[string(r.key)] = true
		if string(r.value) != kafkajsValue(i) || len(r.headers) != 1 || r.headers[0].Key != "h" || string(r.headers[0].Value) != fmt.Sprintf("x%d", i) {
			t.Fatalf("record %s as franz-go reads it: value %q, headers %v", r.key, r.value, r.headers)
		}
		if at := summary.Positions[string(r.key)]; at.Partition != r.partition || at.Offset != r.offset {
			t.Fatalf("record %s: franz-go reads it at partition %d offset %d, kafkajs at %d offset %d", r.key, r.partition, r.offset, at.Partition, at.Offset)
		}
	}
	return consumed
}
