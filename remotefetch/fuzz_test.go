package remotefetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// The fuzz targets feed untrusted bytes to the code that reads them: the
// scanner and its callers (collect, firstAtOrAfter, plan) over a segment
// whose log and offset index are arbitrary bytes, cut into blocks of an
// arbitrary size; and the bucket manifest decoder. Blocks come straight
// from memory rather than through the Reader's caches: the caches' and
// loads' background goroutines (ristretto's among them) would make coverage
// depend on scheduling, and the fuzzer would spend its time minimizing
// inputs that only look new. The tests above cover the same paths through
// the whole Reader.

// FuzzScanLog: whatever the log, no read panics, and a read returns only
// batches that verify, in order, inside the segment, starting with the one
// that holds the offset asked for.
func FuzzScanLog(f *testing.F) {
	log := tinyLog(f, 6)
	index := binary.BigEndian.AppendUint32(nil, 4) // offset 4 at the third batch
	index = binary.BigEndian.AppendUint32(index, uint32(2*len(log)/6))
	f.Add(log, index, uint8(12), uint16(100), uint16(200))
	f.Add(log[:len(log)/2], []byte(nil), uint8(12), uint16(64), uint16(0))
	flipped := bytes.Clone(log)
	flipped[len(flipped)/3] ^= 1
	f.Add(flipped, index, uint8(12), uint16(1000), uint16(1))
	f.Add([]byte{0}, []byte(nil), uint8(1), uint16(1), uint16(1))
	f.Fuzz(func(t *testing.T, log, offsetIndex []byte, span uint8, blockSize, maxBytes uint16) {
		if len(log) == 0 || span == 0 || blockSize == 0 {
			return
		}
		var object bytes.Buffer
		_, err := segmentobject.Write(&object, segmentobject.Source{
			NextOffset: int64(span), Log: bytes.NewReader(log), LogSize: int64(len(log)),
			OffsetIndex: offsetIndex[:len(offsetIndex)/8*8],
			Epochs:      []segmentobject.EpochEntry{{Epoch: testEpoch}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ix, err := segmentobject.ParseTail(object.Bytes(), int64(object.Len()))
		if err != nil {
			return // an index segmentobject refuses never reaches a scanner
		}
		seg := segmentobject.ManifestSegment{Key: "fuzz", EndOffset: int64(span) - 1, MaxTimestamp: ix.Footer.MaxTimestamp, LogBytes: int64(len(log))}
		pool := &blockPool{size: int64(blockSize)}
		blocks := func(_ context.Context, t target, _ *stream) (*block, error) {
			start := t.id.index * int64(blockSize)
			end := min(start+int64(blockSize), int64(len(log)))
			b := pool.get(end - start)
			copy(b.data, log[start:end])
			newChecker(b, start, ix).filled(len(b.data))
			return b, nil
		}
		scan := func(offset int64) *scanner {
			pos, base, err := ix.StartPosition(offset)
			if err != nil {
				t.Fatal(err)
			}
			return &scanner{blocks: blocks, blockSize: int64(blockSize), seg: seg, ix: ix, pos: pos, wantBase: base, blockIndex: -1}
		}
		for offset := int64(0); offset < int64(span); offset++ {
			s := scan(offset)
			res, err := collect(t.Context(), s, offset, int(maxBytes))
			s.close()
			if err != nil && len(res.Records) == 0 {
				continue
			}
			batches, headers, err := record.Split(res.Records)
			if err != nil || len(batches) == 0 {
				t.Fatalf("read at %d returned bytes that do not verify: %v", offset, err)
			}
			last := headers[len(headers)-1]
			if headers[0].NextOffset() <= offset || last.NextOffset() != res.NextOffset || res.NextOffset > int64(span) {
				t.Fatalf("read at %d returned batches [%d, %d), next %d", offset, headers[0].BaseOffset, last.NextOffset(), res.NextOffset)
			}
			res.Release()
			if targets := plan(segmentobject.Manifest{Segments: []segmentobject.ManifestSegment{seg}}, 0, ix, s.pos, int64(blockSize), 2); len(targets) > 3 {
				t.Fatalf("plan made %d targets, want at most 3", len(targets))
			}
		}
		s := scan(0)
		_, _, _ = firstAtOrAfter(t.Context(), s, 0, 0, 1<<16)
		s.close()
	})
}

// tinyLog is a log of n small batches from offset 0, two records each:
// seeds small enough that the fuzzer's minimizing stays quick.
func tinyLog(tb testing.TB, n int) []byte {
	var log []byte
	for i := range n {
		b, err := record.Build(record.BuildOptions{FirstTimestamp: int64(1000 * i), ProducerID: -1, BaseSequence: -1},
			[]record.Record{{Value: []byte{byte(i)}}, {TimestampDelta: 1, Key: []byte("k"), Value: []byte{byte(i), 1}}})
		if err != nil {
			tb.Fatal(err)
		}
		record.SetBaseOffset(b, int64(2*i))
		log = append(log, b...)
	}
	return log
}

// FuzzBucketManifest: whatever the bytes, decoding does not panic, and a
// manifest it accepts is valid and is the partition's that was asked for.
// (segmentobject's FuzzParseManifest checks the lookups on what parses.)
func FuzzBucketManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"topic":"t","topic_id":"00000000-0000-0000-0000-000000000000","partition":0,"log_start_offset":3,` +
		`"segments":[{"key":"k","base_offset":0,"end_offset":9,"max_timestamp":5,"log_bytes":100,"tail_bytes":200,"leader_epochs":[{"epoch":1,"start_offset":0}]}]}`))
	f.Add([]byte(`{"version":1,"topic":"t","partition":0,"segments":[{"key":"a","base_offset":0,"end_offset":9223372036854775807}]}`))
	f.Add([]byte(`{}`))
	part := Partition{Topic: "t", TopicID: uuid.Nil}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeBucketManifest(data, part)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		if m.Topic != part.Topic || m.TopicID != part.TopicID || m.Partition != part.Index {
			t.Fatalf("accepted %s-%d (%s) for %s", m.Topic, m.Partition, m.TopicID, part)
		}
	})
}
