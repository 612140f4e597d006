package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestPipelinedProduceMemoryBudget is the memory attack of issue 9 against
// a real server, scaled down: on each of several raw connections a fetch
// long-polls an empty topic, and behind it many produce requests of nearly
// socket.request.max.bytes are pipelined. Before the budgets the broker
// read eight of them ahead per connection whatever their size. Now each
// connection holds at most socket.request.max.bytes of requests, and all of
// them together at most queued.max.request.bytes; the rest stays in the
// clients' sockets. The server's peak RSS must stay within its RSS before
// the attack plus the budget plus an allowance, and once the polls are
// answered every request is answered and the broker serves a new client.
func TestPipelinedProduceMemoryBudget(t *testing.T) {
	t.Parallel()
	const (
		frameLimit  = 4 << 20
		budgetBytes = 16 << 20
		conns       = 8
		perConn     = 10
		// fillerValue makes each produce frame just under frameLimit: one
		// connection holds its long poll and one filler, and four fillers
		// fit in the budget with room left for small requests.
		fillerValue = 3<<20 + 512<<10
	)
	s := startServer(t,
		"--socket.request.max.bytes", strconv.Itoa(frameLimit),
		"--queued.max.request.bytes", strconv.Itoa(budgetBytes))
	const empty = "budget-empty"
	createTopic(t, s, empty, 1, nil)
	pid := s.cmd.Process.Pid
	before := procStatusKiB(t, pid, "VmHWM")

	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Value: make([]byte, fillerValue)}})
	if err != nil {
		t.Fatal(err)
	}
	attackers := make([]*rawConn, conns)
	sent := 0
	for i := range attackers {
		c := dialRaw(t, s)
		c.conn.SetDeadline(time.Now().Add(5 * time.Minute))
		attackers[i] = c
		if _, err := c.conn.Write(c.frame(longPollRequest(empty), 12)); err != nil {
			t.Fatal(err)
		}
		// The produce frames go to a topic that does not exist, so
		// answering them costs no disk; they are read, and held, all the
		// same.
		var stream []byte
		for range perConn {
			stream = append(stream, c.frame(produceRequest("budget-nosuch", 0, batch), 9)...)
		}
		sent += len(stream)
		go c.conn.Write(stream)
	}

	// Every reader stops: those that read one filler on their connection's
	// bound, the others on the broker's budget.
	m := waitForMetrics(t, s, "every reader blocked", func(m metricSamples) bool {
		return m.sum("strata_ingest_readers_blocked") == conns
	})
	queued := m.value(t, "strata_ingest_queued_request_bytes")
	if queued > budgetBytes {
		t.Fatalf("%v bytes queued, over the %d budget", queued, budgetBytes)
	}
	if m.value(t, "strata_ingest_readers_blocked", "setting", "queued.max.request.bytes") == 0 {
		t.Fatal("no reader blocked on queued.max.request.bytes: the attack did not reach the broker's budget")
	}
	// allowance is what the process may hold besides the queued requests:
	// frames already answered but not yet collected (Go collects when the
	// heap reaches twice what was live after the last collection, GOGC=100,
	// so up to the budget again) and freed pages the runtime has not yet
	// returned to the kernel (up to the budget once more), plus 32 MiB for
	// decoding and the runtime. The attack sends 280 MiB.
	const allowance = 2*budgetBytes + 32<<20
	limitKiB := before + (budgetBytes+allowance)>>10
	if peak := procStatusKiB(t, pid, "VmHWM"); peak > limitKiB {
		t.Fatalf("peak RSS %d KiB while the readers wait, over %d KiB (%d KiB before the attack, budget %d KiB, allowance %d KiB)",
			peak, limitKiB, before, budgetBytes>>10, allowance>>10)
	}
	t.Logf("readers blocked with %.0f bytes queued of %d sent; peak RSS %d KiB, %d KiB before",
		queued, sent, procStatusKiB(t, pid, "VmHWM"), before)

	// A record on the empty topic answers the polls; then every filler is
	// read and answered in order.
	cl := newClient(t, s)
	produceAll(t, cl, empty, []*kgo.Record{{Value: []byte("wake")}})
	done := make(chan error, conns)
	for _, c := range attackers {
		go func() { done <- readFillerReplies(c, perConn) }()
	}
	for range conns {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	peak := procStatusKiB(t, pid, "VmHWM")
	if peak > limitKiB {
		t.Fatalf("peak RSS %d KiB after answering %d MiB of produce requests, over %d KiB (%d KiB before)",
			peak, sent>>20, limitKiB, before)
	}
	t.Logf("every request answered; peak RSS %d KiB", peak)

	// The broker is healthy: the budget drains, and a new client reads the
	// record that woke the polls.
	waitForMetrics(t, s, "the budget drained", func(m metricSamples) bool {
		return m.value(t, "strata_ingest_queued_request_bytes") == 0 && m.sum("strata_ingest_readers_blocked") == 0
	})
	got := consumeAll(t, s, empty, 1)
	if string(got[0].value) != "wake" {
		t.Fatalf("consumed %q, want the record that woke the polls", got[0].value)
	}
}

// TestQueuedMaxRequestBytesRefused starts servers with budgets they could
// not honour: each exits naming the setting.
func TestQueuedMaxRequestBytesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queued.max.request.bytes", "1048575", "--socket.request.max.bytes", "1048576"},
			"queued.max.request.bytes 1048575 is below socket.request.max.bytes 1048576"},
		{[]string{"--queued.max.request.bytes", "0"}, "queued.max.request.bytes 0: want -1 (unbounded) or at least"},
		{[]string{"--queued.max.requests", "0"}, "queued.max.requests 0: want at least 1"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		args := append([]string{"server", "--data", t.TempDir(), "--listen", freePort(t), "--admin-listen", freePort(t), "--meta-listen", freePort(t), "--schema.registry.listen", freePort(t)}, tc.args...)
		out, err := (&server{}).strata(ctx, "", args...)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("strata %s: %v (stdout %q), want a refusal saying %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}

// longPollRequest is a Fetch v12 of partition 0 of topic from offset 0
// that waits five minutes for a byte.
func longPollRequest(topic string) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 300_000, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// readFillerReplies reads the long poll's reply and then n produce replies,
// in request order, each refusing the unknown topic.
func readFillerReplies(c *rawConn, n int) error {
	for i := range int32(n + 1) {
		body, err := c.readFrame()
		if err != nil {
			return fmt.Errorf("reply %d: %w", i, err)
		}
		if got, want := int32(binary.BigEndian.Uint32(body)), c.next-int32(n)+i; got != want {
			return fmt.Errorf("reply %d has correlation id %d, want %d", i, got, want)
		}
		if i == 0 {
			continue
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		// Produce v9 is flexible: the correlation id and an empty tag
		// section head the body.
		if err := resp.ReadFrom(body[5:]); err != nil {
			return fmt.Errorf("reply %d: %w", i, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("reply %d: %v, want UNKNOWN_TOPIC_OR_PARTITION", i, kerr.ErrorForCode(code))
		}
	}
	return nil
}

// procStatusKiB reads a kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatusKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		name, rest, ok := strings.Cut(lines.Text(), ":")
		if !ok || name != field {
			continue
		}
		kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		if err != nil {
			t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
		}
		return kib
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// waitForMetrics scrapes /metrics until cond holds. The broker's state
// (readers blocked, the budget drained) has no event a test can wait on
// from outside the process; the minute only turns a hang into a failure.
func waitForMetrics(t *testing.T, s *server, what string, cond func(metricSamples) bool) metricSamples {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		m := scrapeMetrics(t, s)
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen on /metrics within a minute", what)
		}
		<-tick.C
	}
}

func scrapeMetrics(t *testing.T, s *server) metricSamples {
	t.Helper()
	return parseMetrics(t, scrape(t, s))
}

// sum adds every sample of name, whatever its labels.
func (m metricSamples) sum(name string) float64 {
	var total float64
	for _, s := range m {
		if s.name == name {
			total += s.value
		}
	}
	return total
}
