package integration

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// TestKill9UnderLoadAt512Partitions: one server, a topic of 512
// partitions with fsync before ack (the default), idempotent acks=all
// producers spreading records over every partition and a consumer group
// reading all the while; the server is killed with SIGKILL mid-load and
// restarted. Every acknowledged record is read back once, at its
// acknowledged offset, in producer order, and nothing a consumer saw
// vanished (internal/ledger).
func TestKill9UnderLoadAt512Partitions(t *testing.T) {
	t.Parallel()
	s := kill9UnderLoadAt512Partitions(t)
	m := scrapeMetrics(t, s)
	if bytes, retirements := m.value(t, "strata_disk_journal_bytes_total"), m.value(t, "strata_disk_journal_retirements_total"); bytes != 0 || retirements != 0 {
		t.Errorf("without a journal the broker reports %v journal bytes and %v retirements, want 0", bytes, retirements)
	}
}

// TestKill9UnderLoadAt512PartitionsJournaled is the same with the disk
// journal on, in files of 1 MiB so that several fill and retire during
// the load: the restart replays the files the kill left.
func TestKill9UnderLoadAt512PartitionsJournaled(t *testing.T) {
	t.Parallel()
	s := kill9UnderLoadAt512Partitions(t, "--disk-journal-bytes", "1048576")
	if !regexp.MustCompile(`replayed the disk journal of the last run.* entries=[1-9]`).MatchString(s.log.String()) {
		t.Fatal("the restart replayed no journal entries the kill left")
	}
	// The restarted process's own count: the records acknowledged since
	// it started, a few bytes each in each of 512 partitions a round,
	// went through the journal.
	if bytes := scrapeMetrics(t, s).value(t, "strata_disk_journal_bytes_total"); bytes == 0 {
		t.Error("the journal reports no bytes written after 2,000 records were acknowledged through it")
	}
}

func kill9UnderLoadAt512Partitions(t *testing.T, flags ...string) *server {
	s := startServer(t, flags...)
	const topic = "wide"
	createTopic(t, s, topic, 512, nil)
	seeds := []string{s.kafka}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	led, load := startLedgerLoad(t, seeds, topic, time.Millisecond)
	eventually(t, "2,000 records acknowledged and 1,000 consumed before the kill", func() bool {
		sum := led.Summary(nil)
		return sum.Acked >= 2000 && sum.Consumed >= 1000
	})
	s.kill()
	before := led.Summary(nil).Acked
	s.restart()
	eventually(t, "2,000 more acknowledged after the restart", func() bool { return led.Summary(nil).Acked >= before+2000 })
	checkLedger(ctx, t, led, load, seeds, topic, before+2000)
	return s
}
