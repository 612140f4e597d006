package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaValue is record i's value in the sarama round trip.
func saramaValue(i int) []byte { return fmt.Appendf(nil, "sarama %d %x", i, i*7919) }

// TestSaramaRoundTrip runs sarama, the other Go client users have, against
// a strata server: its cluster admin creates a topic, its idempotent sync
// producer writes 300 snappy-compressed records with keys and headers, and
// a consumer group (sticky balance strategy) reads them back and commits.
// franz-go then reads the same records and checks every byte, and the
// committed offsets add up to exactly the records written.
func TestSaramaRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const topic = "sarama"
	admin, err := sarama.NewClusterAdmin([]string{s.kafka}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("sarama CreateTopic: %v", err)
	}
	admin.Close()
	saramaRoundTrip(t, []*server{s}, topic, "sarama-group")
}

// saramaConfig is the configuration of every sarama client of the round
// trip: idempotent, acks=all, snappy, and a sticky consumer group reading
// from the oldest offset.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "strata-sarama-test"
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Compression = sarama.CompressionSnappy
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
	return cfg
}

// saramaRoundTrip is the sarama round trip against topic, which exists,
// with every client bootstrapped from all of servers: the sync producer
// writes 300 records, the consumer group named group reads them back and
// commits, and sarama's consumer and then franz-go must find every byte at
// the partition and offset the producer was acknowledged, and the committed
// offsets add up to exactly the records written. It returns the records as
// acknowledged.
func saramaRoundTrip(t *testing.T, servers []*server, topic, group string) []testRecord {
	t.Helper()
	const count = 300
	brokers := kafkaAddresses(servers)
	cfg := saramaConfig()
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	messages := make([]*sarama.ProducerMessage, count)
	for i := range messages {
		messages[i] = &sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.ByteEncoder(saramaValue(i)),
			Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: fmt.Appendf(nil, "x%d", i)}},
		}
	}
	if err := producer.SendMessages(messages); err != nil {
		t.Fatalf("sarama SendMessages: %v", err)
	}
	producer.Close()
	produced := make([]testRecord, count)
	for i, m := range messages { // SendMessages set each one's partition and offset
		produced[i] = testRecord{partition: m.Partition, offset: m.Offset, key: fmt.Appendf(nil, "k%d", i), value: saramaValue(i),
			headers: []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "x%d", i)}}}
	}

	consumer, err := sarama.NewConsumerGroup(brokers, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	handler := &saramaCollector{want: count, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if err := consumer.Consume(ctx, []string{topic}, handler); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Errorf("sarama Consume: %v", err)
				return
			}
		}
	}()
	select {
	case <-handler.done:
	case <-ctx.Done():
		t.Fatalf("sarama consumed %d of %d records in a minute:\n%s", handler.consumed(), count, serverLogs(servers))
	}
	cancel()
	if err := consumer.Close(); err != nil { // commits the marked offsets
		t.Fatalf("sarama consumer close: %v", err)
	}
	for i, want := range produced {
		key := fmt.Sprintf("k%d", i)
		got, ok := handler.get(key)
		if !ok || string(got.Value) != string(saramaValue(i)) || len(got.Headers) != 1 || string(got.Headers[0].Value) != fmt.Sprintf("x%d", i) ||
			got.Partition != want.partition || got.Offset != want.offset {
			t.Fatalf("sarama read record %s as %+v (found %v), produced to partition %d offset %d", key, got, ok, want.partition, want.offset)
		}
	}

	checkSameRecords(t, produced, consumeAllSeeds(t, brokers, topic, count))
	fetched, err := kadm.NewClient(newClientSeeds(t, brokers)).FetchOffsets(context.Background(), group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	fetched.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != count {
		t.Fatalf("sarama's group committed offsets adding up to %d, want %d", committed, count)
	}
	return produced
}

// saramaCollector is a sarama consumer group handler that keeps every
// record by key and marks it consumed.
type saramaCollector struct {
	want int
	done chan struct{} // closed once want distinct keys were seen
	mu   sync.Mutex
	seen map[string]*sarama.ConsumerMessage
	full bool
}

func (c *saramaCollector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (c *saramaCollector) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *saramaCollector) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		c.mu.Lock()
		if c.seen == nil {
			c.seen = map[string]*sarama.ConsumerMessage{}
		}
		c.seen[string(m.Key)] = m
		if len(c.seen) == c.want && !c.full {
			c.full = true
			close(c.done)
		}
		c.mu.Unlock()
		session.MarkMessage(m, "")
	}
	return nil
}

func (c *saramaCollector) consumed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *saramaCollector) get(key string) (*sarama.ConsumerMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.seen[key]
	return m, ok
}
