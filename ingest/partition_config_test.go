package ingest

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

// alterTopic sets topic configs with IncrementalAlterConfigs and waits
// until the broker's partitions follow the change.
func (h *handlerTest) alterTopic(topic string, configs map[string]string) {
	h.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for name, value := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	wantCode(h.t, "alter "+topic, h.client.request(req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.broker.partitions.waitReconciled(ctx, h.broker.meta.State().Index())
	if ctx.Err() != nil {
		h.t.Fatalf("partitions did not follow the change to %s", topic)
	}
}

// TestTopicConfigChangesApplyToTheOpenLog: changing segment.bytes and
// retention.ms, as operators do routinely, reaches the open partition
// without closing it (Kafka applies them live: no NOT_LEADER blip, no
// producer state rebuilt from the log); switching the durability policy
// (flush.ms) reopens it.
func TestTopicConfigChangesApplyToTheOpenLog(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "live"}
	topic := h.topic(1, nil)
	h.produce(topic, 3)
	opened, err := b.partitions.get(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}

	h.alterTopic(topic.Name, map[string]string{"segment.bytes": "1024", "retention.ms": "3600000"})
	p, err := b.partitions.get(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p != opened {
		t.Fatal("changing segment.bytes and retention.ms reopened the partition")
	}
	if p.logConfig.segmentBytes != 1024 || p.logConfig.retentionMs != 3600000 {
		t.Fatalf("log settings %+v after the change", p.logConfig)
	}
	before := len(p.log.Segments())
	for range 3 {
		h.produce(topic, 40) // about 1 KiB each: every one rolls
	}
	if got := len(p.log.Segments()); got < before+2 {
		t.Fatalf("%d segments after three ~1 KiB produces with segment.bytes 1024, had %d: the new size was not applied", got, before)
	}

	h.alterTopic(topic.Name, map[string]string{"flush.ms": "1000"})
	reopened, err := b.partitions.get(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if reopened == p || !reopened.periodicFlush {
		t.Fatalf("setting flush.ms did not reopen the partition with periodic flushing")
	}
}

// TestEveryAcceptedLogConfigOpensALog: any value meta accepts for a hot
// log setting is one the hot log accepts too, tiered or not, so no valid
// topic config can leave a partition unable to open.
func TestEveryAcceptedLogConfigOpensALog(t *testing.T) {
	t.Parallel()
	names := []string{"segment.bytes", "segment.ms", "index.interval.bytes", "segment.index.bytes",
		"retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes", "flush.messages", "flush.ms"}
	values := []int64{math.MinInt64, -3, -2, -1, 0, 1, 4, 13, 14, 47, 48, 60, 61, 4096, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64}
	for _, name := range names {
		def, ok := meta.LookupTopicConfig(name)
		if !ok {
			t.Fatalf("meta does not know %s", name)
		}
		for _, v := range values {
			canonical, err := def.Validate(strconv.FormatInt(v, 10))
			if err != nil {
				continue
			}
			topic := meta.Topic{Name: "t", Configs: map[string]string{name: canonical}}
			for _, tiered := range []bool{false, true} {
				if err := logSettingsOf(topic, tiered).hotlogConfig().Validate(); err != nil {
					t.Errorf("%s = %s (tiered %v): meta accepts it, the hot log refuses it: %v", name, canonical, tiered, err)
				}
			}
		}
	}
}
