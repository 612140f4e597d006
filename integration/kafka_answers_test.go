package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestKafkaAnswers: the answers Kafka clients rely on (issue 9, point 6),
// each against a real server with franz-go.
func TestKafkaAnswers(t *testing.T) {
	s := startServer(t, "--group.initial.rebalance.delay.ms", "0", "--auto.create.topics.enable=true")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))

	t.Run("consumer offsets is an internal topic", func(t *testing.T) {
		createTopic(t, s, "answers-plain", 1, nil)
		all, err := admin.ListTopicsWithInternal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		internal, ok := all["__consumer_offsets"]
		if !ok || !internal.IsInternal || internal.Err != nil || len(internal.Partitions) != 50 {
			t.Fatalf("__consumer_offsets as Metadata lists it: %+v (present %v)", internal, ok)
		}
		for _, p := range internal.Partitions {
			if p.Leader != 1 || p.Err != nil {
				t.Fatalf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
			}
		}
		if plain := all["answers-plain"]; plain.IsInternal {
			t.Fatal("an ordinary topic is listed as internal")
		}
		listed, err := admin.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if listed.Has("__consumer_offsets") || !listed.Has("answers-plain") {
			t.Fatalf("kadm's non-internal listing: %v", listed.Names())
		}
	})

	t.Run("a regex consumer skips it", func(t *testing.T) {
		createTopic(t, s, "answers-rx-a", 1, nil)
		createTopic(t, s, "answers-rx-b", 1, nil)
		producer := newClient(t, s)
		for _, topic := range []string{"answers-rx-a", "answers-rx-b"} {
			if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		// ".*" matches __consumer_offsets too; franz-go must leave it out
		// because Metadata marks it internal.
		consumer := newClient(t, s, kgo.ConsumeTopics(".*"), kgo.ConsumeRegex(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(10*time.Millisecond))
		got := map[string]bool{}
		for !got["answers-rx-a"] || !got["answers-rx-b"] {
			fetches := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed from %v: %v", got, err)
			}
			fetches.EachRecord(func(r *kgo.Record) { got[r.Topic] = true })
		}
		topics := consumer.GetConsumeTopics()
		if slices.Contains(topics, "__consumer_offsets") || !slices.Contains(topics, "answers-rx-a") {
			t.Fatalf("the regex consumer consumes %v", topics)
		}
		if got["__consumer_offsets"] {
			t.Fatal("the regex consumer read __consumer_offsets")
		}
	})

	t.Run("users cannot produce to, create or delete it", func(t *testing.T) {
		producer := newClient(t, s)
		err := producer.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
		}
		created, err := admin.CreateTopic(ctx, 1, 1, nil, "__consumer_offsets")
		if err == nil {
			err = created.Err
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Fatalf("create __consumer_offsets: %v, want TOPIC_ALREADY_EXISTS", err)
		}
		deleted, err := admin.DeleteTopic(ctx, "__consumer_offsets")
		if err == nil {
			err = deleted.Err
		}
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Fatalf("delete __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
		}
	})

	t.Run("names colliding once dot reads as underscore are refused", func(t *testing.T) {
		createTopic(t, s, "answers.dotted", 1, nil)
		created, err := admin.CreateTopic(ctx, 1, 1, nil, "answers_dotted")
		if err == nil {
			err = created.Err
		}
		if !errors.Is(err, kerr.InvalidTopicException) || !strings.Contains(created.ErrMessage, "Topic 'answers_dotted' collides with existing topic: answers.dotted") {
			t.Fatalf("create answers_dotted: %v (%q), want INVALID_TOPIC_EXCEPTION naming answers.dotted", err, created.ErrMessage)
		}
	})

	t.Run("a group whose last member left stays Empty and deletable", func(t *testing.T) {
		createTopic(t, s, "answers-group", 1, nil)
		producer := newClient(t, s)
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "answers-group", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		consumer, err := kgo.NewClient(kgo.SeedBrokers(s.kafka), kgo.ConsumerGroup("answers-g"), kgo.ConsumeTopics("answers-group"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n == 0; {
			fetches := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatal(err)
			}
			n += fetches.NumRecords()
		}
		if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		consumer.Close() // leaves the group: its last member

		described, err := admin.DescribeGroups(ctx, "answers-g")
		if err != nil {
			t.Fatal(err)
		}
		if g := described["answers-g"]; g.Err != nil || g.State != "Empty" || len(g.Members) != 0 {
			t.Fatalf("described after the last member left: %+v", g)
		}
		listed, err := admin.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := listed["answers-g"]; !ok || g.State != "Empty" {
			t.Fatalf("listed after the last member left: %+v (present %v)", g, ok)
		}
		deleted, err := admin.DeleteGroup(ctx, "answers-g")
		if err == nil {
			err = deleted.Err
		}
		if err != nil {
			t.Fatalf("delete the Empty group: %v", err)
		}
		offsets, err := admin.FetchOffsets(ctx, "answers-g")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := offsets.Lookup("answers-group", 0); ok {
			t.Fatalf("offsets after the delete: %+v", offsets)
		}
		again, err := admin.DeleteGroup(ctx, "answers-g")
		if err == nil {
			err = again.Err
		}
		if !errors.Is(err, kerr.GroupIDNotFound) {
			t.Fatalf("delete it again: %v, want GROUP_ID_NOT_FOUND", err)
		}
	})

	t.Run("the first produce after auto-creation succeeds", func(t *testing.T) {
		firstProduceAfterAutoCreate(ctx, t, s)
	})
}

// firstProduceAfterAutoCreate creates topics by Metadata, as producers do,
// while a second client asks Metadata about the same topic without
// creating it. Whichever first sees a leader produces to it at once, with
// no retry: a leader Metadata names must take the write (before the fix, it
// could still answer NOT_LEADER_OR_FOLLOWER).
func firstProduceAfterAutoCreate(ctx context.Context, t *testing.T, s *server) {
	creator, watcher := newClient(t, s), newClient(t, s)
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: []byte("first")}})
	if err != nil {
		t.Fatal(err)
	}
	produce := func(cl *kgo.Client, topic string, id [16]byte) error {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, id // by id from Produce v13
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = append([]byte(nil), batch...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	// leaderOf asks Metadata for topic and returns partition 0's leader and
	// the topic's id, or leader -1 with the partition's error while it has
	// none.
	leaderOf := func(cl *kgo.Client, topic string, create bool) (int32, [16]byte, error) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), create
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			return -1, [16]byte{}, err
		}
		mt := resp.Topics[0]
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return -1, mt.TopicID, err
		}
		if len(mt.Partitions) == 0 {
			return -1, mt.TopicID, errors.New("no partitions")
		}
		p := mt.Partitions[0]
		return p.Leader, mt.TopicID, kerr.ErrorForCode(p.ErrorCode)
	}
	for i := range 25 {
		topic := fmt.Sprintf("answers-auto-%d", i)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				leader, id, err := leaderOf(creator, topic, true)
				if err != nil && !errors.Is(err, kerr.LeaderNotAvailable) {
					errs[0] = err
					return
				}
				if err == nil && leader == 1 {
					errs[0] = produce(creator, topic, id)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				leader, id, err := leaderOf(watcher, topic, false)
				if err != nil && !errors.Is(err, kerr.LeaderNotAvailable) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
					errs[1] = err
					return
				}
				if err == nil && leader == 1 {
					errs[1] = produce(watcher, topic, id)
					return
				}
			}
		}()
		wg.Wait()
		for who, err := range errs {
			if err != nil {
				t.Fatalf("topic %s: the first produce by the %s: %v", topic, []string{"creator", "watcher"}[who], err)
			}
		}
	}
}

// TestOffsetsRetentionSetting: `strata server --offsets.retention.minutes`
// reaches the coordinator. A group whose last member left is Empty with its
// offsets, then, once the minute has passed and a check has run, Dead with
// none: the event is waited for, not timed (group/retention_test.go checks
// the rules on a logical clock).
func TestOffsetsRetentionSetting(t *testing.T) {
	s := startServer(t, "--group.initial.rebalance.delay.ms", "0",
		"--offsets.retention.minutes", "1", "--offsets.retention.check.interval.ms", "200")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createTopic(t, s, "retained", 1, nil)
	admin := kadm.NewClient(newClient(t, s))
	committed, err := admin.CommitOffsets(ctx, "retained-g", kadm.OffsetsFromRecords(kgo.Record{Topic: "retained", Partition: 0, Offset: 0}))
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		described, err := admin.DescribeGroups(ctx, "retained-g")
		if err != nil {
			t.Fatal(err)
		}
		return described["retained-g"].State
	}
	if s := state(); s != "Empty" {
		t.Fatalf("group with committed offsets is %s, want Empty", s)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for state() != "Dead" {
		select {
		case <-ctx.Done():
			t.Fatal("the group's offsets never expired")
		case <-tick.C:
		}
	}
	offsets, err := admin.FetchOffsets(ctx, "retained-g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := offsets.Lookup("retained", 0); ok {
		t.Fatalf("offsets after expiry: %+v", offsets)
	}
}
