package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// durabilityModes are the two ways the produce benchmarks run: fsync
// before ack (the default), and a topic with flush.ms set, which flushes
// periodically instead.
var durabilityModes = []struct {
	name    string
	configs map[string]*string
}{
	{"fsync-before-ack", nil},
	{"no-fsync", map[string]*string{"flush.ms": kadmString("1000")}},
}

// produceBenchRecords is how many 1 KiB records measure the null sink.
const produceBenchRecords = 200_000

// benchProducer is the one client configuration every produce figure uses:
// franz-go's idempotent producer, acks=all, 5 ms linger, no compression.
func benchProducer(b *testing.B, address string) *kgo.Client {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(address), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// producePeak produces n 1 KiB records as fast as the client takes them and
// returns the acknowledged bytes per second.
func producePeak(b testing.TB, cl *kgo.Client, n int) float64 {
	b.Helper()
	value := make([]byte, 1024)
	// Produce blocks while the client's buffer is full, for ever if the
	// broker refuses every produce (openLoopValues).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var failed error
	var mu sync.Mutex
	start := time.Now()
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	flushAcknowledged(b, cl)
	elapsed := time.Since(start).Seconds()
	if failed != nil {
		b.Fatal(failed)
	}
	return float64(n*len(value)) / elapsed
}

// BenchmarkProduce measures one franz-go producer (1 KiB records, 8
// partitions, acks=all, linger 5 ms, no compression) against a strata
// server, with fsync before ack (the default) and without (a topic with
// flush.ms set, which flushes periodically instead), beside the limit
// measured in the same run: a null sink on the same port with the same
// client. Reported: MB/s, limit-MB/s, x-limit, and the open-loop p99
// (openLoop: from each record's scheduled send) at half the peak rate,
// with the rate acknowledged meanwhile (half-peak-acked-MB/s: below half
// of MB/s, the client could not keep up and the p99 is its queue), and at
// a fixed 100 MB/s.
func BenchmarkProduce(b *testing.B) {
	for _, mode := range durabilityModes {
		b.Run(mode.name, func(b *testing.B) {
			address := freePort(b)
			limit := sinkPeak(b, address)
			s := startServerAt(b, address)
			createTopic(b, s, "bench", 8, mode.configs)
			cl := benchProducer(b, address)
			defer cl.Close()
			producePeak(b, cl, 10_000) // connections, producer id, metadata
			b.SetBytes(1024)
			b.ResetTimer()
			rate := producePeak(b, cl, b.N)
			b.StopTimer()
			half := openLoop(b, []*kgo.Client{cl}, rate/2, 2*time.Second)
			b.ReportMetric(limit/1e6, "limit-MB/s")
			b.ReportMetric(rate/limit, "x-limit")
			b.ReportMetric(millis(half.p99), "p99-ms-at-half-peak")
			b.ReportMetric(half.acked/1e6, "half-peak-acked-MB/s")
			// And at a fixed 100 MB/s, which the paced client sustains here
			// in both modes, so the figure is the broker's.
			fixed := openLoop(b, []*kgo.Client{cl}, 100e6, 2*time.Second)
			b.ReportMetric(millis(fixed.p99), "p99-ms-at-100MB/s")
		})
	}
}
