package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// Positions in a v2 batch header that the fuzz target mends or edits.
const (
	fuzzPosLeaderEpoch = 12
	fuzzPosCRC         = 17
	fuzzPosAttributes  = 21
	fuzzPosNumRecords  = 57
	fuzzPosLastDelta   = 23
)

// mendCRC gives a batch a correct CRC-32C, so what the fuzzer changes is
// what is inside.
func mendCRC(b []byte) {
	if len(b) >= record.HeaderSize {
		binary.BigEndian.PutUint32(b[fuzzPosCRC:], crc32.Checksum(b[fuzzPosAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	}
}

// FuzzProduceValidated produces arbitrary batches, with their CRC mended,
// to a real broker: whatever is acknowledged, a consumer can read back
// (Fetch, then record.Records), byte for byte as sent but for the fields
// the leader stamps, and the log end moves by exactly its record count;
// whatever is refused gets a record error code and moves nothing.
func FuzzProduceValidated(f *testing.F) {
	b := newTestBroker(f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var topics [2]meta.Topic
	for i, configs := range []map[string]string{nil, {"cleanup.policy": "compact,delete"}} {
		t, _, err := b.createTopic(ctx, topicSpec{name: []string{"plain", "compacted"}[i], partitions: 1, replicationFactor: 1, configs: configs}, false)
		if err != nil {
			f.Fatal(err)
		}
		topics[i] = t
	}
	records := []record.Record{
		{Key: []byte("k"), Value: []byte("v"), Headers: []record.RecordHeader{{Key: "h", Value: []byte("x")}}},
		{Key: []byte("k2"), Value: bytes.Repeat([]byte("value "), 100)},
	}
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		good, err := record.Build(record.BuildOptions{Codec: codec, FirstTimestamp: 1, ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(good, false)
		f.Add(good, true)
		lying := bytes.Clone(good)
		binary.BigEndian.PutUint32(lying[fuzzPosNumRecords:], math.MaxInt32)
		binary.BigEndian.PutUint32(lying[fuzzPosLastDelta:], math.MaxInt32-1)
		f.Add(lying, false)
		flagged := bytes.Clone(good)
		flagged[fuzzPosAttributes+1] ^= byte(record.CodecGzip)
		f.Add(flagged, false)
	}
	f.Fuzz(func(t *testing.T, batch []byte, compacted bool) {
		batch = bytes.Clone(batch)
		mendCRC(batch)
		topic := topics[0]
		if compacted {
			topic = topics[1]
		}
		c := connect(t, b)
		before := fetchAt(t, c, topic, 0).HighWatermark
		resp := c.request(produceRequest(topic, 0, bytes.Clone(batch)), 9).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			switch kerr.ErrorForCode(p.ErrorCode) {
			case kerr.CorruptMessage, kerr.InvalidRecord, kerr.MessageTooLarge, kerr.TransactionalIDAuthorizationFailed,
				kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerEpoch:
			default:
				t.Fatalf("refused with %v: %v", kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
			}
			if after := fetchAt(t, c, topic, 0).HighWatermark; after != before {
				t.Fatalf("refused (%v), yet the log end moved from %d to %d", kerr.ErrorForCode(p.ErrorCode), before, after)
			}
			return
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			t.Fatalf("acknowledged a batch without a header: %v", err)
		}
		fetched := fetchAt(t, c, topic, p.BaseOffset)
		if fetched.HighWatermark != p.BaseOffset+int64(h.NumRecords) {
			t.Fatalf("acknowledged %d records at %d, the log ends at %d", h.NumRecords, p.BaseOffset, fetched.HighWatermark)
		}
		stored := fetched.RecordBatches
		sh, err := record.ParseHeader(stored)
		if err != nil || sh.BaseOffset != p.BaseOffset || sh.Size() > len(stored) {
			t.Fatalf("fetch at %d: header %+v, %v", p.BaseOffset, sh, err)
		}
		stored = stored[:sh.Size()]
		if !bytes.Equal(stored[fuzzPosLeaderEpoch+4:], batch[fuzzPosLeaderEpoch+4:]) || len(stored) != len(batch) {
			t.Fatal("the batch read back differs from the one acknowledged")
		}
		got, err := record.Records(stored, record.MaxDecompressedBytes)
		if err != nil {
			t.Fatalf("acknowledged, but a consumer cannot read it: %v", err)
		}
		if len(got) != int(h.NumRecords) {
			t.Fatalf("acknowledged %d records, a consumer reads %d", h.NumRecords, len(got))
		}
		for i, r := range got {
			if compacted && r.Key == nil {
				t.Fatalf("a compacted topic took record %d without a key", i)
			}
		}
	})
}

// fetchAt fetches partition 0 of topic from offset, without waiting.
func fetchAt(t *testing.T, c *testClient, topic meta.Topic, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchFromStart(topic, 4<<20)
	req.Topics[0].Partitions[0].FetchOffset = offset
	p := c.request(req, 12).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch at %d: %v", offset, kerr.ErrorForCode(p.ErrorCode))
	}
	return p
}
