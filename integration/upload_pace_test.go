package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUploadPaceIsHonoured: with remote.log.manager.copy.max.bytes.per.second
// at 1 MiB/s, the bytes a server has uploaded never run ahead of the pace
// (its 1 MiB burst, plus 1 MiB for every second since the first record
// was sent, plus each object's small indexes), though 6 MiB of sealed
// segments wait; unpaced, they all go within a second or two. And a pace
// below the slowest an upload may go is refused at start, naming the flag,
// as is a task interval that is not positive (it used to be ignored).
func TestUploadPaceIsHonoured(t *testing.T) {
	t.Parallel()
	const pace = 1 << 20
	s := startServer(t, "--remote.log.manager.copy.max.bytes.per.second", strconv.Itoa(pace), "--remote.log.manager.task.interval.ms", "200")
	createTopic(t, s, "paced", 1, map[string]*string{
		"remote.storage.enable": kadmString("true"),
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
	})
	cl := newClient(t, s)
	start := time.Now()
	produceAll(t, cl, "paced", tierRecords(7<<20))
	const overhead = 256 << 10 // the indexes and footers of a few 1 MiB segments
	uploadsKeepTo(t, s, start, pace, pace+overhead, 6<<20)
	refusedAtStart(t, s, "--remote.log.manager.copy.max.bytes.per.second 5: want 0 (no cap) or at least 1048576",
		"--remote.log.manager.copy.max.bytes.per.second", "5")
	refusedAtStart(t, s, "--remote.log.manager.task.interval.ms 0: want a positive number",
		"--remote.log.manager.task.interval.ms", "0")
}

// uploadsKeepTo waits until s has uploaded total bytes, failing if its
// uploads ever ran ahead of slack plus rate bytes for every second since
// start.
func uploadsKeepTo(t *testing.T, s *server, start time.Time, rate, slack, total float64) {
	t.Helper()
	waitForMetrics(t, s, fmt.Sprintf("%.0f bytes uploaded", total), func(m metricSamples) bool {
		uploaded := m.sum("strata_offload_uploaded_bytes_total")
		if allowed := slack + rate*time.Since(start).Seconds(); uploaded > allowed {
			t.Fatalf("%.0f bytes uploaded %v after the first record, more than %.0f bytes/s allow (%.0f)", uploaded, time.Since(start), rate, allowed)
		}
		return uploaded >= total
	})
}

// refusedAtStart starts strata server with args and wants it refused:
// exit status 2, want in its standard error.
func refusedAtStart(t *testing.T, s *server, want string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := s.strataExit(ctx, "", append([]string{"server", "--data", t.TempDir(), "--listen", freePort(t), "--admin-listen", freePort(t), "--meta-listen", freePort(t), "--schema.registry.listen", freePort(t)}, args...)...)
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("strata server %v: exit %d, stderr %q; want exit 2 and %q", args, r.code, r.stderr, want)
	}
}

// TestUploadDrainPacesByBacklog: with --remote-upload-drain 2s, uploads read
// at most the backlog (bytes sealed and not yet uploaded) over 2 s, at
// least 4 MiB/s (four upload slots at the 1 MiB/s an upload may go at
// least): 32 MiB sealed at once are never uploaded faster than 16 MiB/s,
// where unpaced they go at the disk's speed, and they all arrive. A
// negative drain is refused at start, naming the flag.
func TestUploadDrainPacesByBacklog(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--remote-upload-drain", "2s", "--remote.log.manager.task.interval.ms", "200")
	createTopic(t, s, "drained", 1, map[string]*string{
		"remote.storage.enable": kadmString("true"),
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
	})
	cl := newClient(t, s)
	start := time.Now()
	produceAll(t, cl, "drained", tierRecords(33<<20))
	const most = 16 << 20    // 32 MiB over 2 s: the fastest the backlog allows
	const overhead = 1 << 20 // the indexes and footers of 32 segments
	uploadsKeepTo(t, s, start, most, 1<<20+overhead, 32<<20)
	refusedAtStart(t, s, "--remote-upload-drain -1s: want 0 (off) or a positive duration", "--remote-upload-drain", "-1s")
}
