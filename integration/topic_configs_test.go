package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// storedCodecs fetches partition 0 of topic from offset 0 as raw batches
// and returns each batch's codec, as the broker stores it.
func storedCodecs(t *testing.T, s *server, topic string) []record.Codec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, s)
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	md, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	_, headers, err := record.Split(p.RecordBatches)
	if err != nil {
		t.Fatalf("the fetched batches: %v", err)
	}
	codecs := make([]record.Codec, len(headers))
	for i, h := range headers {
		codecs[i] = h.Attributes.Compression()
	}
	return codecs
}

// TestCompressionType: compression.type names the codec batches are stored
// in; a batch sent in another is recompressed on the broker, and producer
// (the default) keeps each batch as sent. Consumers read the same records
// either way.
func TestCompressionType(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, tc := range []struct {
		topicCodec string // compression.type
		sent       kgo.CompressionCodec
		want       record.Codec
	}{
		{"producer", kgo.Lz4Compression(), record.CodecLZ4},
		{"zstd", kgo.NoCompression(), record.CodecZstd},
		{"gzip", kgo.SnappyCompression(), record.CodecGzip},
		{"uncompressed", kgo.ZstdCompression(), record.CodecNone},
		{"lz4", kgo.Lz4Compression(), record.CodecLZ4},
	} {
		topic := "compression-" + tc.topicCodec
		createTopic(t, s, topic, 1, map[string]*string{"compression.type": kadmString(tc.topicCodec)})
		cl := newClient(t, s, kgo.ProducerBatchCompression(tc.sent), kgo.DefaultProduceTopic(topic))
		var produced []testRecord
		for i := range 20 {
			// Compressible: franz-go sends a batch uncompressed when
			// compressing does not shrink it.
			value := []byte(strconv.Itoa(i) + strings.Repeat(" repeated", 100))
			res := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value})
			if err := res.FirstErr(); err != nil {
				t.Fatal(err)
			}
			produced = append(produced, testRecord{offset: res[0].Record.Offset, key: []byte(strconv.Itoa(i)), value: value})
		}
		for _, codec := range storedCodecs(t, s, topic) {
			if codec != tc.want {
				t.Fatalf("compression.type=%s: a batch is stored as %v, want %v", tc.topicCodec, codec, tc.want)
			}
		}
		consumed := consumeAll(t, s, topic, len(produced))
		checkSameRecords(t, produced, consumed)
	}
}

// configEvidence is how the suite shows a topic config is honoured: the
// tests that fail if it were ignored (package.TestName), or a value the
// broker refuses with INVALID_CONFIG.
type configEvidence struct {
	tests  []string
	refuse string
}

// topicConfigEvidence holds, for every topic config a broker describes,
// its evidence. A config described and missing here fails
// TestEveryTopicConfigIsHonouredOrRefused: a new config must come with a
// test that it has an effect, or be refused.
var topicConfigEvidence = map[string]configEvidence{
	"cleanup.policy":                          {tests: []string{"integration.TestCompactedTopicEndToEnd", "compact.TestCleanAgainstModel"}},
	"compression.type":                        {tests: []string{"integration.TestCompressionType", "record.TestRecompress"}},
	"confluent.key.schema.validation":         {tests: []string{"integration.TestSchemaValidationOnProduce", "registry.TestCheckBatch"}},
	"confluent.key.subject.name.strategy":     {refuse: "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
	"confluent.value.schema.validation":       {tests: []string{"integration.TestSchemaValidationOnProduce", "integration.TestSchemaRegistryClients", "registry.TestCheckBatch"}},
	"confluent.value.subject.name.strategy":   {refuse: "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
	"delete.retention.ms":                     {tests: []string{"compact.TestCleanAgainstModel", "integration.TestCompactedTopicEndToEnd"}},
	"file.delete.delay.ms":                    {tests: []string{"hotlog.TestDeletedSegmentWaitsOutFileDeleteDelay", "replica.TestEveryAcceptedLogConfigOpensALog"}},
	"flush.messages":                          {tests: []string{"hotlog.TestSyncPeriodicallyOnFlushMessages", "replica.TestEveryAcceptedLogConfigOpensALog"}},
	"flush.ms":                                {tests: []string{"ingest.TestTopicConfigChangesApplyToTheOpenLog"}},
	"follower.replication.throttled.replicas": {tests: []string{"integration.TestThrottleHoldsAReassignmentsCopyRate", "integration.TestClusterOperationsUnderLoad"}},
	"index.interval.bytes":                    {tests: []string{"hotlog.TestRollOnFullIndex", "replica.TestEveryAcceptedLogConfigOpensALog"}},
	"leader.replication.throttled.replicas":   {tests: []string{"integration.TestThrottleHoldsAReassignmentsCopyRate"}},
	"local.retention.bytes":                   {tests: []string{"offload.TestLocalRetention", "integration.TestEmptyReplicaStartsAtTheTieredBoundary"}},
	"local.retention.ms":                      {tests: []string{"offload.TestLocalRetention"}},
	"max.compaction.lag.ms":                   {tests: []string{"compact.TestMaxCompactionLag"}},
	"max.message.bytes":                       {tests: []string{"integration.TestBadInput"}},
	"message.timestamp.after.max.ms":          {tests: []string{"ingest.TestProduceTimestampBounds"}},
	"message.timestamp.before.max.ms":         {tests: []string{"ingest.TestProduceTimestampBounds"}},
	"message.timestamp.type":                  {tests: []string{"ingest.TestRetriedBatchGetsItsLogAppendTime"}},
	"min.cleanable.dirty.ratio":               {tests: []string{"compact.TestMinCleanableDirtyRatio"}},
	"min.compaction.lag.ms":                   {tests: []string{"compact.TestMinCompactionLag"}},
	"min.insync.replicas":                     {tests: []string{"integration.TestSlowFollowerLeavesTheISRAndRejoins"}},
	"preallocate":                             {tests: []string{"hotlog.TestPreallocate"}},
	"remote.log.copy.disable":                 {tests: []string{"offload.TestTieringDisabled"}},
	"remote.log.delete.on.disable":            {refuse: "true"},
	"remote.storage.enable":                   {tests: []string{"integration.TestTieredCompaction", "ingest.TestTieredPartitionsAndDiskPressure"}},
	"retention.bytes":                         {tests: []string{"offload.TestRemoteRetentionByBytes"}},
	"retention.ms":                            {tests: []string{"ingest.TestTopicConfigChangesApplyToTheOpenLog"}},
	"segment.bytes":                           {tests: []string{"ingest.TestTopicConfigChangesApplyToTheOpenLog"}},
	"segment.index.bytes":                     {tests: []string{"hotlog.TestRollOnFullIndex", "replica.TestEveryAcceptedLogConfigOpensALog"}},
	"segment.jitter.ms":                       {tests: []string{"hotlog.TestRollOnSegmentMsWithJitter", "replica.TestEveryAcceptedLogConfigOpensALog"}},
	"segment.ms":                              {tests: []string{"hotlog.TestRollOnSegmentMs", "integration.TestEmptyReplicaStartsAtTheTieredBoundary"}},
	"strata.schema.validation.decode":         {tests: []string{"integration.TestSchemaValidationOnProduce", "registry.TestCheckBatch", "registry.TestCheckBatchCompressed"}},
	"unclean.leader.election.enable":          {tests: []string{"integration.TestLeaderlessPartitionWaitsForItsISRUnlessUncleanElection"}},
}

// TestEveryTopicConfigIsHonouredOrRefused walks every config DescribeConfigs
// lists for a topic: each must have evidence, a refused value must be
// refused with INVALID_CONFIG naming the config, and each test named as
// evidence must exist in its package.
func TestEveryTopicConfigIsHonouredOrRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "configs", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))
	described, err := admin.DescribeTopicConfigs(ctx, "configs")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On("configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Configs) < 20 {
		t.Fatalf("only %d configs described", len(rc.Configs))
	}
	sources := map[string]string{} // package → its test files' text
	for _, c := range rc.Configs {
		ev, ok := topicConfigEvidence[c.Key]
		switch {
		case !ok:
			t.Errorf("%s is described, and nothing shows it is honoured or refused: add a test of its effect, or refuse it", c.Key)
		case ev.refuse != "":
			alter, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: c.Key, Value: kadmString(ev.refuse)}}, "configs")
			if err == nil {
				err = alter[0].Err
			}
			if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(alter[0].ErrMessage, c.Key) {
				t.Errorf("%s=%s: %v %q, want INVALID_CONFIG naming it", c.Key, ev.refuse, err, alter[0].ErrMessage)
			}
		default:
			for _, name := range ev.tests {
				pkg, test, _ := strings.Cut(name, ".")
				if _, read := sources[pkg]; !read {
					sources[pkg] = testSources(t, pkg)
				}
				if !strings.Contains(sources[pkg], "\nfunc "+test+"(t *testing.T)") {
					t.Errorf("%s: the evidence %s is no test of package %s", c.Key, test, pkg)
				}
			}
		}
	}
}

// testSources is the text of every _test.go file of package dir pkg.
func testSources(t *testing.T, pkg string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", pkg, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in package %s: %v", pkg, err)
	}
	var b strings.Builder
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
