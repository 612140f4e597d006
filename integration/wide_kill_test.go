package integration

import (
	"context"
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
	s := startServer(t)
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
}
