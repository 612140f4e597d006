package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testRecord is what a test produced and expects back.
type testRecord struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
	headers   []kgo.RecordHeader
}

// randomRecords makes n records with binary keys, values and headers.
func randomRecords(rng *rand.Rand, n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		key := make([]byte, rng.IntN(32))
		value := make([]byte, rng.IntN(4096))
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		r := &kgo.Record{Key: key, Value: value}
		if i%3 == 0 {
			r.Key = nil
		}
		for h := range rng.IntN(3) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d", h), Value: value[:min(len(value), h*5)]})
		}
		out[i] = r
	}
	return out
}

func newClient(t testing.TB, s *server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClientSeeds(t, []string{s.kafka}, opts...)
}

// newClientSeeds is newClient with several seed brokers.
func newClientSeeds(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, s *server, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))
	resp, err := admin.CreateTopic(ctx, partitions, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// produceAll produces records with cl and returns them as acknowledged,
// with their partitions and offsets.
func produceAll(t testing.TB, cl *kgo.Client, topic string, records []*kgo.Record) []testRecord {
	t.Helper()
	return acknowledged(t, produce(cl, topic, records))
}

// produce produces records and waits for their results; safe to call from
// any goroutine.
func produce(cl *kgo.Client, topic string, records []*kgo.Record) kgo.ProduceResults {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range records {
		r.Topic = topic
	}
	return cl.ProduceSync(ctx, records...)
}

// acknowledged fails the test on any produce error and returns the records
// with their partitions and offsets.
func acknowledged(t testing.TB, results kgo.ProduceResults) []testRecord {
	t.Helper()
	if err := results.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	out := make([]testRecord, len(results))
	for i, res := range results {
		r := res.Record
		out[i] = testRecord{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value, headers: r.Headers}
	}
	return out
}

// consumeAll reads every record of topic from the start until it has want
// records, failing on anything unexpected.
func consumeAll(t testing.TB, s *server, topic string, want int) []testRecord {
	t.Helper()
	return consumeAllSeeds(t, []string{s.kafka}, topic, want)
}

// consumeAllSeeds is consumeAll through several seed brokers.
func consumeAllSeeds(t testing.TB, seeds []string, topic string, want int) []testRecord {
	t.Helper()
	cl := newClientSeeds(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []testRecord
	for len(out) < want {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), want, err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, testRecord{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value, headers: r.Headers})
		})
	}
	return out
}

// checkSameRecords compares produced and consumed records by partition and
// offset, every byte of keys, values and headers.
func checkSameRecords(t testing.TB, produced, consumed []testRecord) {
	t.Helper()
	if len(consumed) != len(produced) {
		t.Fatalf("consumed %d records, produced %d", len(consumed), len(produced))
	}
	byPosition := map[[2]int64]testRecord{}
	for _, r := range produced {
		byPosition[[2]int64{int64(r.partition), r.offset}] = r
	}
	for _, got := range consumed {
		want, ok := byPosition[[2]int64{int64(got.partition), got.offset}]
		if !ok {
			t.Fatalf("consumed partition %d offset %d, which was never acknowledged", got.partition, got.offset)
		}
		if !bytes.Equal(got.key, want.key) || !bytes.Equal(got.value, want.value) || (got.key == nil) != (want.key == nil) {
			t.Fatalf("partition %d offset %d: key/value differ (key %x vs %x)", got.partition, got.offset, got.key, want.key)
		}
		if len(got.headers) != len(want.headers) {
			t.Fatalf("partition %d offset %d: %d headers, want %d", got.partition, got.offset, len(got.headers), len(want.headers))
		}
		for i := range got.headers {
			if got.headers[i].Key != want.headers[i].Key || !bytes.Equal(got.headers[i].Value, want.headers[i].Value) {
				t.Fatalf("partition %d offset %d: header %d differs", got.partition, got.offset, i)
			}
		}
	}
	// Offsets are dense per partition.
	perPartition := map[int32][]int64{}
	for _, r := range consumed {
		perPartition[r.partition] = append(perPartition[r.partition], r.offset)
	}
	for p, offsets := range perPartition {
		slices.Sort(offsets)
		for i, o := range offsets {
			if o != int64(i) {
				t.Fatalf("partition %d: offsets %v are not dense from 0", p, offsets)
			}
		}
	}
}

// TestFranzGoIdempotentZstdRoundTrip produces with franz-go's default
// idempotent producer and zstd, from several goroutines, and consumes
// everything back.
func TestFranzGoIdempotentZstdRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "events", 4, nil)
	franzRoundTrip(t, []string{s.kafka}, "events")
}

// franzRoundTrip produces 2,000 random records to topic through seeds with
// franz-go's idempotent acks=all producer and zstd, from four goroutines,
// and consumes everything back, checking every byte, partition and offset.
// It returns the records as acknowledged.
func franzRoundTrip(t *testing.T, seeds []string, topic string) []testRecord {
	t.Helper()
	producer := newClientSeeds(t, seeds, kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(2*time.Millisecond))
	rng := rand.New(rand.NewPCG(1, 2))
	results := make([]kgo.ProduceResults, 4)
	var wg sync.WaitGroup
	for i := range results {
		records := randomRecords(rng, 500)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = produce(producer, topic, records)
		}()
	}
	wg.Wait()
	var produced []testRecord
	for _, r := range results {
		produced = append(produced, acknowledged(t, r)...)
	}
	checkSameRecords(t, produced, consumeAllSeeds(t, seeds, topic, len(produced)))
	return produced
}

// kafkaAddresses is the Kafka listener of each of servers.
func kafkaAddresses(servers []*server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.kafka
	}
	return out
}

// serverLogs is the output of each of servers so far, for a failure.
func serverLogs(servers []*server) string {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "--- strata server at %s:\n%s", s.kafka, s.log)
	}
	return b.String()
}
