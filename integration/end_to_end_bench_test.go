package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkEndToEnd measures how long a record takes from its scheduled
// send to a consumer tailing the topic, open loop: three brokers, RF 3
// with fsync before ack, 8 partitions, one franz-go producer (1 KiB
// records, acks=all, linger 5 ms) on a clock at each rate, and one
// consumer reading from the start with Kafka's default fetch max wait
// (500 ms), so a fetch left waiting past the data it waits for shows as
// a tail of that size. A consumer sees a record once the high watermark
// passes it, so the end-to-end figure is the produce latency (beside it,
// from the same records) plus how soon a waiting fetch hears of it.
func BenchmarkEndToEnd(b *testing.B) {
	for range b.N {
		asTest(b, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			servers := startCluster(t, 3)
			admin := kadm.NewClient(newClientSeeds(t, kafkaAddresses(servers)))
			for _, rate := range []float64{1e6, 10e6} {
				name := formatRate(rate)
				topic := "e2e-" + name
				replicatedTopic(ctx, t, admin, topic, 8, nil)
				missed := func() (n float64) {
					for _, s := range servers {
						n += scrapeMetrics(t, s).sum("strata_ingest_fetch_wakes_missed_total")
					}
					return n
				}
				before := missed()
				r := endToEnd(t, kafkaAddresses(servers), topic, rate, 10*time.Second)
				// A fetch that waited out its max wait with data there:
				// the broker's side of a consumer's tail.
				b.ReportMetric(missed()-before, name+"-fetch-wakes-missed")
				b.ReportMetric(millis(r.produce.p50), name+"-produce-p50-ms")
				b.ReportMetric(millis(r.produce.p99), name+"-produce-p99-ms")
				b.ReportMetric(millis(r.produce.p999), name+"-produce-p99.9-ms")
				b.ReportMetric(millis(r.consumed.p50), name+"-e2e-p50-ms")
				b.ReportMetric(millis(r.consumed.p99), name+"-e2e-p99-ms")
				b.ReportMetric(millis(r.consumed.p999), name+"-e2e-p99.9-ms")
				b.ReportMetric(millis(r.slowest), name+"-e2e-max-ms")
				// The produce latency is the floor: a consumer sees a
				// record once it is acknowledged to acks=all.
				b.ReportMetric(float64(r.consumed.p99)/float64(r.produce.p99), name+"-e2e-p99-x-produce-p99")
			}
		})
	}
}

// formatRate names a rate in MB/s for a metric or a topic: "1MBps".
func formatRate(rate float64) string {
	return strconv.FormatFloat(rate/1e6, 'f', -1, 64) + "MBps"
}

// endToEndResult is what endToEnd measured: percentiles of the time from
// each record's scheduled send to its acknowledgement and to its
// consumption, and the slowest consumption.
type endToEndResult struct {
	produce, consumed openLoadResult
	slowest           time.Duration
}

// endToEnd produces 1 KiB records to topic on a clock at rate for
// duration, each carrying its scheduled send time, while a consumer reads
// the topic from the start, and returns both latencies of every record.
func endToEnd(t *testing.T, seeds []string, topic string, rate float64, duration time.Duration) endToEndResult {
	t.Helper()
	producer := newClientSeeds(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	consumer := newClientSeeds(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx := context.Background()
	// Warm up: metadata, the producer id, every partition's leader and the
	// consumer's first fetches, outside the measurement.
	warmup := make([]*kgo.Record, 64)
	for i := range warmup {
		warmup[i] = &kgo.Record{Value: make([]byte, openLoopRecordBytes)} // zero: not measured
	}
	if err := producer.ProduceSync(ctx, warmup...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	epoch := time.Now().Add(-time.Hour) // every measured record's time is positive

	var consumed []time.Duration
	var consumeErr error
	produced := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		want, read := -1, 0
		for want < 0 || read < want {
			pollCtx, cancel := context.WithTimeout(ctx, time.Second)
			fetches := consumer.PollFetches(pollCtx)
			cancel()
			now := time.Now()
			fetches.EachRecord(func(r *kgo.Record) {
				read++
				if at := binary.BigEndian.Uint64(r.Value); at != 0 {
					consumed = append(consumed, now.Sub(epoch.Add(time.Duration(at))))
				}
			})
			for _, err := range fetches.Errors() {
				if !errors.Is(err.Err, context.DeadlineExceeded) {
					consumeErr = err.Err
					return
				}
			}
			select {
			case want = <-produced:
			default:
			}
		}
	}()

	produce := openLoopValues(t, []*kgo.Client{producer}, rate, duration, func(scheduled time.Time) []byte {
		value := make([]byte, openLoopRecordBytes)
		binary.BigEndian.PutUint64(value, uint64(scheduled.Sub(epoch)))
		return value
	})
	produced <- produce.records + len(warmup)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the consumer had not read the %d records two minutes after the last was acknowledged", produce.records)
	}
	if consumeErr != nil {
		t.Fatal(consumeErr)
	}
	return endToEndResult{produce: produce, consumed: percentiles(consumed), slowest: slices.Max(consumed)}
}

// percentiles sorts latencies and returns their p50, p99 and p99.9.
func percentiles(latencies []time.Duration) openLoadResult {
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[int(float64(len(latencies)-1)*q)] }
	return openLoadResult{p50: at(0.5), p99: at(0.99), p999: at(0.999)}
}
