package ingest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestProduceNamesTheBadRecord produces batches whose CRC is right but
// whose records lie: each is INVALID_RECORD with the record named in the
// error message and in ErrorRecords (v8+), and nothing is written.
func TestProduceNamesTheBadRecord(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "lying"}
	topic := h.topic(1, nil)
	h.name = "compacted"
	compacted := h.topic(1, map[string]string{"cleanup.policy": "compact"})

	// Three records; the third's value ("value 2") claims 50 bytes.
	lying := h.batch(3)
	at := bytes.LastIndex(lying, []byte("value 2"))
	if lying[at-1] != 7<<1 {
		t.Fatalf("the value length before %q is %#x", "value 2", lying[at-1])
	}
	lying[at-1] = 50 << 1
	mendCRC(lying)
	keyless, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1}, []record.Record{{Key: []byte("k"), Value: []byte("v")}, {Value: []byte("no key")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		records []byte
		index   int32
		message string
	}{
		{"value length lies", lying, 2, "record 2: value length 50 exceeds the 8 bytes left"},
		{"no key on a compacted topic", keyless, 1, "record 1: null key on a compacted topic"},
	} {
		target := topic
		if tc.name == "no key on a compacted topic" {
			target = compacted
		}
		resp := h.client.request(produceRequest(target, 0, tc.records), 9).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		wantCode(t, tc.name, p.ErrorCode, kerr.InvalidRecord)
		if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, tc.message) {
			t.Fatalf("%s: message %v, want %q", tc.name, p.ErrorMessage, tc.message)
		}
		if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != tc.index {
			t.Fatalf("%s: error records %+v, want record %d", tc.name, p.ErrorRecords, tc.index)
		}
		if end := fetchAt(t, h.client, target, 0).HighWatermark; end != 0 {
			t.Fatalf("%s: refused, yet the log ends at %d", tc.name, end)
		}
	}
	if p := h.client.request(produceRequest(topic, 0, h.batch(2)), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("a good batch after them: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// TestProduceTimestampBounds applies message.timestamp.before.max.ms and
// .after.max.ms to each record of a CreateTime topic, as Kafka does: a
// record outside is INVALID_TIMESTAMP, named in ErrorRecords, and nothing of
// its batch is written.
func TestProduceTimestampBounds(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "bounded"}
	topic := h.topic(1, map[string]string{"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "60000"})
	now := time.Now().UnixMilli()
	batch := func(first int64, deltas ...int64) []byte {
		var recs []record.Record
		for _, d := range deltas {
			recs = append(recs, record.Record{Value: []byte("v"), TimestampDelta: d})
		}
		out, err := record.Build(record.BuildOptions{FirstTimestamp: first, ProducerID: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		records []byte
		index   int32
		message string
	}{
		{"two hours old", batch(now-2*3600_000, 0), 0, "record 0: timestamp"},
		{"the third record an hour ahead", batch(now, 0, 1, 3600_000), 2, "ms ahead of the broker's clock"},
	} {
		p := h.client.request(produceRequest(topic, 0, tc.records), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		wantCode(t, tc.name, p.ErrorCode, kerr.InvalidTimestamp)
		if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, tc.message) || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != tc.index {
			t.Fatalf("%s: message %v, error records %+v, want record %d", tc.name, p.ErrorMessage, p.ErrorRecords, tc.index)
		}
	}
	if p := h.client.request(produceRequest(topic, 0, batch(now-1800_000, 0, 1800_000)), 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("records within the bounds: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}
