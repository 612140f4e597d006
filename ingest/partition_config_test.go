package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/hotlog"
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
	h.broker.partitions.WaitReconciled(ctx, h.broker.meta.State().Index())
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
	opened, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}

	h.alterTopic(topic.Name, map[string]string{"segment.bytes": "1024", "retention.ms": "3600000"})
	p, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p != opened {
		t.Fatal("changing segment.bytes and retention.ms reopened the partition")
	}
	if c := p.LogConfig(); c.SegmentBytes != 1024 || c.RetentionMs != 3600000 {
		t.Fatalf("log settings %+v after the change", c)
	}
	before := len(p.Log().Segments())
	for range 3 {
		h.produce(topic, 40) // about 1 KiB each: every one rolls
	}
	if got := len(p.Log().Segments()); got < before+2 {
		t.Fatalf("%d segments after three ~1 KiB produces with segment.bytes 1024, had %d: the new size was not applied", got, before)
	}

	h.alterTopic(topic.Name, map[string]string{"flush.ms": "1000"})
	reopened, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if reopened == p || reopened.LogConfig().Durability != hotlog.SyncPeriodically {
		t.Fatalf("setting flush.ms did not reopen the partition with periodic flushing")
	}
}
