package integration

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestExportMemoryDoesNotGrowWithThePartition exports at least 288 MiB
// of a partition from the bucket inside a memory cgroup of 256 MiB.
// `strata export` reads each block once, so it needs the block in hand and
// the ones read ahead, whatever the partition's size; with a broker's
// block cache (512 MiB) it kept every block it read, and an export of 360
// MB peaked at 383 MB of RSS, which this limit kills.
func TestExportMemoryDoesNotGrowWithThePartition(t *testing.T) {
	t.Parallel()
	const limit = 256 << 20
	cgroup := memoryCgroup(t, limit)
	s := startServer(t)
	const topic = "exported"
	createTopic(t, s, topic, 1, map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(8 << 20)),
		"remote.storage.enable": kadmString("true"),
	})
	const recordBytes, total = 64 << 10, 320 << 20
	value := make([]byte, recordBytes)
	rand.NewChaCha8([32]byte{3}).Read(value) // incompressible, so stored at full size
	records := make([]*kgo.Record, total/recordBytes)
	for i := range records {
		records[i] = &kgo.Record{Value: value}
	}
	acknowledged(t, produce(newClient(t, s, kgo.ProducerBatchCompression(kgo.NoCompression())), topic, records))

	// Wait until the bucket holds more than the cgroup's limit (the active
	// segment never uploads; poll, as offload has no event to wait on).
	cl := newClient(t, s)
	need := int64(288<<20) / recordBytes
	deadline := time.Now().Add(2 * time.Minute)
	tiered := listOffset(t, cl, topic, -5)
	for ; tiered+1 < need; tiered = listOffset(t, cl, topic, -5) {
		if time.Now().After(deadline) {
			t.Fatalf("the bucket holds offsets to %d after two minutes, want %d:\n%s", tiered, need-1, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	export := []string{strataBinary, "export", "--bucket", "file://" + s.dataDir + "/bucket",
		"--topic", topic, "--partition", "0", "--to", strconv.FormatInt(tiered+1, 10), "--format", "raw"}
	// The shell joins the cgroup, then becomes the export.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `echo $$ > "$1" && shift && exec "$@"`, "sh",
		filepath.Join(cgroup, "cgroup.procs")}, export...)...)
	var stderr bytes.Buffer
	counted := &countingWriter{}
	cmd.Stdout, cmd.Stderr = counted, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v (in a cgroup of %d bytes; memory.oom_control: %s): %s",
			export, err, limit, cgroupFile(cgroup, "memory.oom_control"), stderr.String())
	}
	// Raw batches: each record's value and a few dozen bytes of framing.
	if want := (tiered + 1) * recordBytes; counted.n < want {
		t.Fatalf("export wrote %d bytes for offsets [0, %d], want at least %d", counted.n, tiered, want)
	}
	// The export ran in the cgroup: its reads were charged to it.
	peak := cgroupFile(cgroup, "memory.max_usage_in_bytes")
	if n, err := strconv.ParseInt(peak, 10, 64); err != nil || n == 0 {
		t.Fatalf("the cgroup's peak usage is %q: the export did not run in it", peak)
	}
}

// countingWriter counts what is written to it and keeps none of it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
