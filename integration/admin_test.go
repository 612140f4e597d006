package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKadmAdmin drives the admin APIs the way operators' tools do, through
// kadm: create (with configs, validate-only, bad configs), describe and
// alter configs, list offsets by every special timestamp and by time,
// delete records, delete topics.
func TestKadmAdmin(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))

	retention := "3600000"
	created, err := admin.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &retention, "remote.storage.enable": kadmString("false")}, "admin")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	if created.NumPartitions != 2 || created.ReplicationFactor != 1 || configValue(created.Configs["retention.ms"]) != retention {
		t.Fatalf("create answered %+v", created)
	}

	bogus := "1"
	for name, configs := range map[string]map[string]*string{
		"unknown name": {"retention.mss": &bogus},
		"bad value":    {"retention.ms": kadmString("soon")},
	} {
		r, _ := admin.CreateTopic(ctx, 1, 1, configs, "bad-config")
		if !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("%s: create answered %v, want INVALID_CONFIG", name, r.Err)
		}
	}
	if r, _ := admin.CreateTopic(ctx, 1, 1, nil, "admin"); !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating an existing topic: %v, want TOPIC_ALREADY_EXISTS", r.Err)
	}
	if r, _ := admin.CreateTopic(ctx, 1, 3, nil, "too-many-replicas"); !errors.Is(r.Err, kerr.InvalidReplicationFactor) || !strings.Contains(r.ErrMessage, "3 replicas with 1 live brokers") {
		t.Fatalf("replication factor 3 on one broker: %v %q, want INVALID_REPLICATION_FACTOR naming the live brokers", r.Err, r.ErrMessage)
	}
	validated, err := admin.ValidateCreateTopics(ctx, 5, 1, nil, "only-validated")
	if err != nil || validated["only-validated"].Err != nil {
		t.Fatalf("validate-only create: %v %v", err, validated["only-validated"].Err)
	}
	listed, err := admin.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listed.Has("only-validated") || listed.Has("bad-config") || !listed.Has("admin") {
		t.Fatalf("topics after validate-only and failed creates: %v", listed.Names())
	}

	// Configs.
	described, err := admin.DescribeTopicConfigs(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := described.On("admin", nil)
	seen := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		seen[c.Key] = c
	}
	if c := seen["retention.ms"]; c.MaybeValue() != retention || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms described as %+v", c)
	}
	if c := seen["cleanup.policy"]; c.MaybeValue() != "delete" || c.Source.String() != "DEFAULT_CONFIG" {
		t.Fatalf("cleanup.policy described as %+v", c)
	}
	altered, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadmString("2048")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadmString("compact")},
	}, "admin")
	if err != nil || altered[0].Err != nil {
		t.Fatalf("incremental alter: %v %v", err, altered[0].Err)
	}
	described, _ = admin.DescribeTopicConfigs(ctx, "admin")
	rc, _ = described.On("admin", nil)
	for _, c := range rc.Configs {
		seen[c.Key] = c
	}
	if configValue(seen["max.message.bytes"]) != "2048" || seen["retention.ms"].Source.String() != "DEFAULT_CONFIG" || configValue(seen["cleanup.policy"]) != "delete,compact" {
		t.Fatalf("after alter: max.message.bytes %q, retention.ms %v, cleanup.policy %q",
			configValue(seen["max.message.bytes"]), seen["retention.ms"].Source, configValue(seen["cleanup.policy"]))
	}
	bad, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: kadmString("1")}}, "admin")
	if err != nil || !errors.Is(bad[0].Err, kerr.InvalidConfig) {
		t.Fatalf("altering an unknown config: %v %v, want INVALID_CONFIG", err, bad[0].Err)
	}
	state, err := admin.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadmString("1000")}}, "admin")
	if err != nil || state[0].Err != nil {
		t.Fatalf("non-incremental alter: %v %v", err, state[0].Err)
	}
	described, _ = admin.DescribeTopicConfigs(ctx, "admin")
	rc, _ = described.On("admin", nil)
	for _, c := range rc.Configs {
		if c.Source.String() == "DYNAMIC_TOPIC_CONFIG" && c.Key != "retention.ms" {
			t.Fatalf("AlterConfigs kept %s; it replaces the whole set", c.Key)
		}
	}

	// Offsets: write 10 records with known timestamps to partition 0.
	producer := newClient(t, s, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_700_000_000_000)
	var records []*kgo.Record
	for i := range 10 {
		records = append(records, &kgo.Record{Partition: 0, Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	produceAll(t, producer, "admin", records)
	checkOffset := func(what string, listed kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := listed.Lookup("admin", 0)
		if !ok || o.Err != nil || o.Offset != want {
			t.Fatalf("%s: %+v, want offset %d", what, o, want)
		}
	}
	ends, err := admin.ListEndOffsets(ctx, "admin")
	checkOffset("latest", ends, err, 10)
	starts, err := admin.ListStartOffsets(ctx, "admin")
	checkOffset("earliest", starts, err, 0)
	maxTS, err := admin.ListMaxTimestampOffsets(ctx, "admin")
	checkOffset("max timestamp", maxTS, err, 9)
	local, err := admin.ListLocalLogStartOffsets(ctx, "admin")
	checkOffset("earliest local", local, err, 0)
	tiered, err := admin.ListLatestRemoteOffsets(ctx, "admin")
	checkOffset("latest tiered", tiered, err, -1)
	after, err := admin.ListOffsetsAfterMilli(ctx, base.Add(4500*time.Millisecond).UnixMilli(), "admin")
	checkOffset("after 4.5 s", after, err, 5)

	// Delete records, then topics.
	deleted, err := admin.DeleteRecords(ctx, kadm.Offsets{"admin": {0: {Topic: "admin", Partition: 0, At: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := deleted.Lookup("admin", 0); d.Err != nil || d.LowWatermark != 4 {
		t.Fatalf("delete records: %+v", d)
	}
	starts, err = admin.ListStartOffsets(ctx, "admin")
	checkOffset("earliest after delete records", starts, err, 4)
	if d, _ := admin.DeleteRecords(ctx, kadm.Offsets{"admin": {0: {Topic: "admin", Partition: 0, At: 99}}}); !errors.Is(d["admin"][0].Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete records past the high watermark: %v, want OFFSET_OUT_OF_RANGE", d["admin"][0].Err)
	}

	gone, err := admin.DeleteTopics(ctx, "admin")
	if err != nil || gone["admin"].Err != nil {
		t.Fatalf("delete topic: %v %v", err, gone["admin"].Err)
	}
	if again, _ := admin.DeleteTopics(ctx, "admin"); !errors.Is(again["admin"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", again["admin"].Err)
	}
	recreated, err := admin.CreateTopic(ctx, 1, 1, nil, "admin")
	if err != nil || recreated.Err != nil {
		t.Fatalf("re-creating a deleted topic: %v %v", err, recreated.Err)
	}
	ends, err = admin.ListEndOffsets(ctx, "admin")
	checkOffset("latest of the re-created topic", ends, err, 0)
}

func kadmString(s string) *string { return &s }

func configValue(c kadm.Config) string { return c.MaybeValue() }
