package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// Positions in a v2 batch header (record/doc.go draws them).
const (
	batchPosLength     = 8
	batchPosCRC        = 17
	batchPosAttributes = 21
	batchPosLastDelta  = 23
	batchPosProducerID = 43
	batchPosSequence   = 53
	batchPosCount      = 57
)

// zigzag is Kafka's varint encoding of v.
func zigzag(v int64) []byte { return binary.AppendVarint(nil, v) }

// lengthPrefixed is a record field: its length, then its bytes; nil is null.
func lengthPrefixed(b []byte) []byte {
	if b == nil {
		return zigzag(-1)
	}
	return append(zigzag(int64(len(b))), b...)
}

// recordBytes is a hand-built record: attributes and timestamp delta 0,
// the offset delta, and fields as given (key, value, header count,
// headers), prefixed with its true length.
func recordBytes(offsetDelta int64, fields ...[]byte) []byte {
	body := append([]byte{0}, zigzag(0)...)
	body = append(body, zigzag(offsetDelta)...)
	for _, f := range fields {
		body = append(body, f...)
	}
	return append(zigzag(int64(len(body))), body...)
}

// handBatch wraps stored (the records, compressed already if codec says
// so) in a v2 header claiming count records, with a correct CRC.
func handBatch(codec record.Codec, count int32, stored []byte) []byte {
	b := make([]byte, record.HeaderSize, record.HeaderSize+len(stored))
	b = append(b, stored...)
	be := binary.BigEndian
	be.PutUint32(b[batchPosLength:], uint32(len(b)-12))
	b[16] = record.Magic
	be.PutUint16(b[batchPosAttributes:], uint16(codec))
	be.PutUint32(b[batchPosLastDelta:], uint32(count-1))
	be.PutUint64(b[batchPosProducerID:], math.MaxUint64) // -1: no producer id
	be.PutUint32(b[batchPosSequence:], math.MaxUint32)
	be.PutUint32(b[batchPosCount:], uint32(count))
	fixCRC(b)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[batchPosCRC:], crc32.Checksum(b[batchPosAttributes:], crc32.MakeTable(crc32.Castagnoli)))
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdCompressed(t testing.TB, b []byte) []byte {
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

// TestMalformedBatches sends, over one raw connection, each batch with a
// correct CRC but lying insides that a broken or hostile producer can
// send: each is refused with Kafka's code and a message naming the
// problem, and moves nothing; a good batch after each lands. Then kcat, a
// franz-go consumer and `strata consume` read the partition end to end and
// see exactly the good records.
func TestMalformedBatches(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "malformed", 1, nil)
	createTopic(t, s, "malformed-compacted", 1, map[string]*string{"cleanup.policy": kadmString("compact")})
	c := dialRaw(t, s)

	good := recordBytes(0, lengthPrefixed([]byte("k")), lengthPrefixed([]byte("v")), zigzag(0))
	oneRecord, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1}, []record.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	relabelled := func(b []byte, edit func([]byte)) []byte {
		b = bytes.Clone(b)
		edit(b)
		fixCRC(b)
		return b
	}
	type lie struct {
		name    string
		topic   string
		batch   []byte
		want    *kerr.Error
		message string // in the error message
		record  int32  // the record named in ErrorRecords, -1 for none
	}
	lies := []lie{
		{"record length lies", "malformed",
			handBatch(record.CodecNone, 1, append(zigzag(40), good[1:]...)),
			kerr.InvalidRecord, "record 0: record length 40 exceeds the 8 bytes left in the batch", 0},
		{"value length lies", "malformed",
			handBatch(record.CodecNone, 2, append(bytes.Clone(good), recordBytes(1, lengthPrefixed(nil), zigzag(900), []byte("twelve bytes"), zigzag(0))...)),
			kerr.InvalidRecord, "record 1: value length 900 exceeds the 13 bytes left", 1},
		{"gzip-flagged body that is not compressed", "malformed",
			relabelled(oneRecord, func(b []byte) { b[batchPosAttributes+1] = byte(record.CodecGzip) }),
			kerr.InvalidRecord, "records are not valid gzip", -1},
		{"zstd-flagged body that is not compressed", "malformed",
			relabelled(oneRecord, func(b []byte) { b[batchPosAttributes+1] = byte(record.CodecZstd) }),
			kerr.InvalidRecord, "records are not valid zstd", -1},
		{"count of 2^31-1 over one record", "malformed",
			relabelled(oneRecord, func(b []byte) {
				binary.BigEndian.PutUint32(b[batchPosCount:], math.MaxInt32)
				binary.BigEndian.PutUint32(b[batchPosLastDelta:], math.MaxInt32-1)
			}),
			kerr.InvalidRecord, "record 1: the batch holds 1 records, its header says 2147483647", 1},
		{"key length lies inside gzip", "malformed",
			handBatch(record.CodecGzip, 2, gzipped(t, append(bytes.Clone(good), recordBytes(1, zigzag(60), []byte("k"), lengthPrefixed(nil), zigzag(0))...))),
			kerr.InvalidRecord, "record 1: key length 60 exceeds the 3 bytes left", 1},
		{"header count lies inside zstd", "malformed",
			handBatch(record.CodecZstd, 1, zstdCompressed(t, recordBytes(0, lengthPrefixed(nil), lengthPrefixed(nil), zigzag(5000), lengthPrefixed([]byte("h")), lengthPrefixed(nil)))),
			kerr.InvalidRecord, "record 0: header count 5000 does not fit the 3 bytes left", 0},
		{"offset deltas out of order", "malformed",
			handBatch(record.CodecNone, 2, append(bytes.Clone(good), recordBytes(7, lengthPrefixed(nil), lengthPrefixed(nil), zigzag(0))...)),
			kerr.InvalidRecord, "record 1: offset delta 7, want 1", 1},
		{"bytes after the last record", "malformed",
			handBatch(record.CodecNone, 1, append(bytes.Clone(good), 0, 0, 0, 0)),
			kerr.InvalidRecord, "record 0: 4 bytes after the last record", 0},
		{"count below the records present", "malformed",
			handBatch(record.CodecNone, 1, append(bytes.Clone(good), recordBytes(1, lengthPrefixed(nil), lengthPrefixed(nil), zigzag(0))...)),
			kerr.InvalidRecord, "bytes after the last record", 0},
		{"compressed stream cut short", "malformed",
			func() []byte { gz := gzipped(t, good); return handBatch(record.CodecGzip, 1, gz[:len(gz)-5]) }(),
			kerr.InvalidRecord, "unexpected EOF", -1},
		{"control batch from a client", "malformed",
			relabelled(oneRecord, func(b []byte) { b[batchPosAttributes+1] = 0x20 }),
			kerr.InvalidRecord, "clients may not write control batches", -1},
		{"base offset set by the producer", "malformed",
			relabelled(oneRecord, func(b []byte) { record.SetBaseOffset(b, 99) }),
			kerr.InvalidRecord, "base offset 99", -1},
		{"record without a key on a compacted topic", "malformed-compacted",
			handBatch(record.CodecNone, 1, recordBytes(0, lengthPrefixed(nil), lengthPrefixed([]byte("v")), zigzag(0))),
			kerr.InvalidRecord, "record 0: null key on a compacted topic", 0},
		{"bad CRC", "malformed",
			func() []byte { b := bytes.Clone(oneRecord); b[len(b)-1] ^= 0xff; return b }(),
			kerr.CorruptMessage, "crc", -1},
	}

	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	var wantValues []string
	for i, l := range lies {
		before := logEnd(t, c, l.topic)
		resp := c.roundTrip(produceRequest(l.topic, 0, l.batch), 12).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != l.want.Code {
			t.Fatalf("%s: %v (%v), want %v", l.name, kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage, l.want)
		}
		if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, l.message) {
			t.Fatalf("%s: message %v, want it to say %q", l.name, p.ErrorMessage, l.message)
		}
		if l.record >= 0 && (len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != l.record) {
			t.Fatalf("%s: error records %+v, want record %d", l.name, p.ErrorRecords, l.record)
		}
		if got := logEnd(t, c, l.topic); got != before {
			t.Fatalf("%s: refused, yet the log end moved from %d to %d", l.name, before, got)
		}

		value := fmt.Sprintf("good %d", i)
		goodBatch, err := record.Build(record.BuildOptions{Codec: codecs[i%len(codecs)], FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
			[]record.Record{{Key: []byte("k"), Value: []byte(value)}})
		if err != nil {
			t.Fatal(err)
		}
		p = c.roundTrip(produceRequest("malformed", 0, goodBatch), 12).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(len(wantValues)) {
			t.Fatalf("the good batch after %q: %v at offset %d, want offset %d", l.name, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, len(wantValues))
		}
		wantValues = append(wantValues, value)
	}
	if end := logEnd(t, c, "malformed-compacted"); end != 0 {
		t.Fatalf("the compacted topic ends at %d, want 0", end)
	}

	// kcat reads to the end (-e) and exits; it would hang on a partition
	// whose log end lies.
	out := kcat(t, "", "-b", s.kafka, "-C", "-t", "malformed", "-p", "0", "-o", "beginning", "-e", "-J", "-q")
	var kcatValues []string
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		var m kcatMessage
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			t.Fatalf("kcat -C -J line %q: %v", scanner.Text(), err)
		}
		if m.Offset != int64(len(kcatValues)) || m.Payload == nil {
			t.Fatalf("kcat read offset %d (payload %v) after %d records", m.Offset, m.Payload, len(kcatValues))
		}
		kcatValues = append(kcatValues, *m.Payload)
	}
	if strings.Join(kcatValues, ",") != strings.Join(wantValues, ",") {
		t.Fatalf("kcat read %q, want %q", kcatValues, wantValues)
	}

	var franzValues []string
	for i, r := range consumeAll(t, s, "malformed", len(wantValues)) {
		if r.offset != int64(i) {
			t.Fatalf("franz-go read offset %d as record %d", r.offset, i)
		}
		franzValues = append(franzValues, string(r.value))
	}
	if strings.Join(franzValues, ",") != strings.Join(wantValues, ",") {
		t.Fatalf("franz-go read %q, want %q", franzValues, wantValues)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := s.strata(ctx, "", "consume", "malformed", "--partition", "0")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(cli), "\n"); strings.Join(got, ",") != strings.Join(wantValues, ",") {
		t.Fatalf("strata consume printed %q, want %q", got, wantValues)
	}
}
