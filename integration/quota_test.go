package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClientQuotasHoldNoisyTenants: with quotas set by `strata config
// alter --client-id` (AlterClientQuotas), a producer flat out under
// producer_byte_rate gets that rate within 20% while another client's
// producer, sharing the broker, is not held back; and a consumer under
// consumer_byte_rate reads at that rate within 20%; a client held to 0.1%
// of a request handler's time makes far fewer requests than one without. The
// broker reports the throttling it does.
func TestClientQuotasHoldNoisyTenants(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "quotas"
	admin := kadm.NewClient(newClient(t, s))
	if _, err := admin.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	const quota = 1 << 20
	for _, args := range [][]string{
		{"config", "alter", "--client-id", "noisy", "--set", "producer_byte_rate=1048576"},
		{"config", "alter", "--client-id", "reader", "--set", "consumer_byte_rate=1048576"},
	} {
		if out, err := s.strata(ctx, "", args...); err != nil {
			t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// Both produce flat out for 8 s; rates count what is acknowledged from
	// 2 s on, past the first second's budget a quota grants at once. A
	// request's bytes are charged whole, so a client waits in steps of its
	// request size over the rate: requests of at most 192 KiB keep the
	// steps small beside the window.
	produced := func(clientID string, bytes *atomic.Int64, from time.Time, until time.Time, wg *sync.WaitGroup) {
		defer wg.Done()
		cl := newClient(t, s, kgo.ClientID(clientID), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond),
			kgo.ProducerBatchMaxBytes(64<<10))
		value := make([]byte, 1024)
		for i := range value {
			value[i] = byte(rand.IntN(256))
		}
		for time.Now().Before(until) {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
				if now := time.Now(); err == nil && !now.Before(from) && now.Before(until) {
					bytes.Add(int64(len(r.Value)))
				}
			})
		}
		cl.PurgeTopicsFromClient(topic) // what is still buffered is not waited for
	}
	start := time.Now()
	from, until := start.Add(2*time.Second), start.Add(8*time.Second)
	var noisy, quiet atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go produced("noisy", &noisy, from, until, &wg)
	go produced("quiet", &quiet, from, until, &wg)
	wg.Wait()
	seconds := until.Sub(from).Seconds()
	noisyRate, quietRate := float64(noisy.Load())/seconds, float64(quiet.Load())/seconds
	t.Logf("producer_byte_rate %d B/s: noisy produced %.0f B/s, quiet (no quota) %.0f B/s", quota, noisyRate, quietRate)
	if noisyRate < 0.8*quota || noisyRate > 1.2*quota {
		t.Fatalf("the producer under a %d B/s quota produced %.0f B/s: outside ±20%%", quota, noisyRate)
	}
	if quietRate < 4*quota {
		t.Fatalf("the producer without a quota got only %.0f B/s beside the throttled one", quietRate)
	}

	reader := newClient(t, s, kgo.ClientID("reader"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(192<<10), kgo.FetchMaxPartitionBytes(64<<10))
	var read int64
	readFrom := time.Now().Add(2 * time.Second)
	readUntil := readFrom.Add(5 * time.Second)
	for time.Now().Before(readUntil) {
		fetches := reader.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		if time.Now().Before(readFrom) {
			continue
		}
		fetches.EachRecord(func(r *kgo.Record) { read += int64(len(r.Value)) })
	}
	readRate := float64(read) / 5
	t.Logf("consumer_byte_rate %d B/s: the reader read %.0f B/s", quota, readRate)
	if readRate < 0.8*quota || readRate > 1.2*quota {
		t.Fatalf("the consumer under a %d B/s quota read %.0f B/s: outside ±20%%", quota, readRate)
	}
	// request_percentage: a client allowed 0.1% of one handler's time (a
	// millisecond a second) makes far fewer requests than one without a
	// quota, in the same time, however busy the machine.
	if out, err := s.strata(ctx, "", "config", "alter", "--client-id", "chatty", "--set", "request_percentage=0.1"); err != nil {
		t.Fatalf("setting request_percentage: %v\n%s", err, out)
	}
	requests := func(clientID string) int {
		cl := newClient(t, s, kgo.ClientID(clientID))
		n := 0
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); n++ {
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	chatty, free := requests("chatty"), requests("free")
	t.Logf("Metadata requests in 2 s: %d under request_percentage=0.1, %d without a quota", chatty, free)
	if chatty*3 > free {
		t.Fatalf("a client held to 0.1%% of a handler made %d requests, one without a quota %d", chatty, free)
	}
	m := scrapeMetrics(t, s)
	if m.sum("strata_ingest_throttled_requests_total") == 0 {
		t.Fatal("strata_ingest_throttled_requests_total counts no throttled request")
	}
}
