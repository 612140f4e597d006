package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcatGroupSessionTimeout: kcat (librdkafka) and franz-go share a group
// with the eager range assignor; kcat consumes its partitions; once it stops
// heartbeating (SIGSTOP) the coordinator removes it after its session
// timeout and its partitions move to the other member.
func TestKcatGroupSessionTimeout(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (make test installs it through scripts/test-deps)")
	}
	s := groupServer(t)
	const topic, group, partitions = "kcat-group", "kcat-group", int32(6)
	createTopic(t, s, topic, partitions, nil)
	ch := newChanges()
	franz := newMemberLog("franz-go", ch)
	startConsumer(t, s, franz, group, topic, kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(10*time.Second))
	ch.waitFor(t, 30*time.Second, balanced(partitions, franz))

	cmd := exec.Command("kcat", "-b", s.kafka, "-G", group, "-J", "-q", "-u",
		"-X", "partition.assignment.strategy=range", "-X", "session.timeout.ms=1500",
		"-X", "heartbeat.interval.ms=100", "-X", "auto.offset.reset=earliest", topic)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		consumed = map[[2]int64]bool{}
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var m kcatMessage
			if json.Unmarshal(lines.Bytes(), &m) == nil {
				mu.Lock()
				consumed[[2]int64{int64(m.Partition), m.Offset}] = true
				mu.Unlock()
				ch.signal()
			}
		}
	}()
	stopped := false
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		if stopped {
			cmd.Process.Signal(syscall.SIGCONT)
		}
		cmd.Wait()
		<-read
	})

	// kcat joins: the group rebalances to three partitions each, and kcat
	// consumes every record produced to its three from then on.
	ch.waitFor(t, 30*time.Second, func() error {
		if owned, _ := franz.snapshot(); len(owned) != int(partitions)/2 {
			return fmt.Errorf("franz-go owns %v, want half of %d partitions", owned, partitions)
		}
		return nil
	})
	owned, _ := franz.snapshot()
	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var records []*kgo.Record
	for i := range 60 {
		records = append(records, &kgo.Record{Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "record %d", i)})
	}
	want := produceAll(t, producer, topic, records)
	ch.waitFor(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range want {
			if !slices.Contains(owned, r.partition) && !consumed[[2]int64{int64(r.partition), r.offset}] {
				return fmt.Errorf("kcat has not consumed %d@%d", r.partition, r.offset)
			}
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = true
	// A stopped kcat never leaves: only its session expiring moves its
	// partitions.
	ch.waitFor(t, 30*time.Second, balanced(partitions, franz))
}
