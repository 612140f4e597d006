package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestExportMemoryDoesNotGrowWithThePartition exports a partition of 320
// MiB in the bucket from inside a memory cgroup of 256 MiB. `strata
// export` reads each block once, so it needs the block in hand and the
// ones read ahead, whatever the partition's size; with a broker's block
// cache (512 MiB) it kept every block it read, and an export of 360 MB
// peaked at 383 MB of RSS, which this limit kills.
func TestExportMemoryDoesNotGrowWithThePartition(t *testing.T) {
	t.Parallel()
	cgroup := memoryCgroup(t, 256<<20)
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
	export := fmt.Sprintf("%s export --bucket file://%s/bucket --topic %s --partition 0 --to %d --format raw",
		strataBinary, s.dataDir, topic, tiered+1)
	// The shell joins the cgroup, then becomes the export.
	cmd := exec.CommandContext(ctx, "sh", "-c", "echo $$ > "+filepath.Join(cgroup, "cgroup.procs")+" && exec "+export)
	var stderr bytes.Buffer
	counted := &countingWriter{}
	cmd.Stdout, cmd.Stderr = counted, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v (in a cgroup of %d bytes; memory.oom_control: %s): %s",
			export, err, 256<<20, strings.ReplaceAll(readCgroupFile(t, cgroup, "memory.oom_control"), "\n", ", "), stderr.String())
	}
	// Raw batches: each record's value and a few dozen bytes of framing.
	if want := (tiered + 1) * recordBytes; counted.n < want {
		t.Fatalf("export wrote %d bytes for offsets [0, %d], want at least %d", counted.n, tiered, want)
	}
}

// memoryCgroup creates a cgroup (v1 memory controller) limited to limit
// bytes, without swap, and removes it when the test ends; it skips the
// test, saying why, where it cannot.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	const root = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		t.Skipf("needs the cgroup v1 memory controller at %s to bound a process's memory: %v", root, err)
	}
	dir, err := os.MkdirTemp(root, "strata-test-")
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("needs root to create a memory cgroup: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the cgroup: %v", err)
		}
	})
	for _, f := range []struct{ name, value string }{
		{"memory.limit_in_bytes", strconv.FormatInt(limit, 10)},
		{"memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10)}, // absent without swap accounting
		{"memory.swappiness", "0"},
	} {
		file, err := os.OpenFile(filepath.Join(dir, f.name), os.O_WRONLY, 0)
		if err == nil {
			_, err = file.WriteString(f.value)
			err = errors.Join(err, file.Close())
		}
		if err != nil && !(f.name == "memory.memsw.limit_in_bytes" && errors.Is(err, os.ErrNotExist)) {
			t.Fatalf("cgroup %s: %v", f.name, err)
		}
	}
	return dir
}

func readCgroupFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// countingWriter counts what is written to it and keeps none of it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
