package remotefetch_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"os"

	"github.com/google/uuid"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/segmentobject"
)

// A batch job reads a partition's old offsets straight from the bucket:
// nothing but the store and the partition's name.
func ExampleOpenBucketReader() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "strata-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := objstore.Open(ctx, "file://"+dir, objstore.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	publishExamplePartition(ctx, store) // what offload does on a broker

	reader, err := remotefetch.OpenBucketReader(ctx, store, remotefetch.BucketLocation{Topic: "clicks", Partition: 0}, remotefetch.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer reader.Close()
	m := reader.Manifest()
	fmt.Printf("tiered offsets [%d, %d) in %d segment(s)\n", m.LogStartOffset, m.NextOffset(), len(m.Segments))

	const from = 1
	for batch, err := range reader.Batches(ctx, from, m.NextOffset()) {
		if err != nil {
			log.Fatal(err)
		}
		records, err := record.Records(batch.Bytes, 1<<20)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range records {
			if offset := batch.Header.BaseOffset + int64(r.OffsetDelta); offset >= from { // batches are whole
				fmt.Printf("offset %d: %s\n", offset, r.Value)
			}
		}
	}
	// Output:
	// tiered offsets [0, 4) in 1 segment(s)
	// offset 1: b
	// offset 2: c
	// offset 3: d
}

// publishExamplePartition uploads one segment object of two batches and
// the partition's manifest.json, as offload does after a commit.
func publishExamplePartition(ctx context.Context, store objstore.Store) {
	topicID := uuid.MustParse("6b1f0c6e-2d1c-4b59-9c71-3f2b8c2a9d10")
	var log bytes.Buffer
	for i, values := range [][]string{{"a", "b"}, {"c", "d"}} {
		var records []record.Record
		for _, v := range values {
			records = append(records, record.Record{Value: []byte(v)})
		}
		batch, err := record.Build(record.BuildOptions{FirstTimestamp: 1_700_000_000_000, ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			panic(err)
		}
		record.SetBaseOffset(batch, int64(2*i))
		log.Write(batch)
	}
	var object bytes.Buffer
	timeIndex := binary.BigEndian.AppendUint64(nil, 1_700_000_000_000)
	timeIndex = binary.BigEndian.AppendUint32(timeIndex, 0)
	footer, err := segmentobject.Write(&object, segmentobject.Source{
		BaseOffset: 0, NextOffset: 4, MaxTimestamp: 1_700_000_000_000,
		Log: bytes.NewReader(log.Bytes()), LogSize: int64(log.Len()), TimeIndex: timeIndex,
		Epochs: []segmentobject.EpochEntry{{Epoch: 0, StartOffset: 0}},
	})
	if err != nil {
		panic(err)
	}
	segmentID := uuid.MustParse("0e3a3c55-1f0e-4c8e-8d37-0f6f2a7d4b21")
	key := segmentobject.SegmentKey(segmentobject.PartitionPrefix("", "clicks", topicID, 0), 0, segmentID)
	manifest := segmentobject.Manifest{
		Version: segmentobject.ManifestVersion, Topic: "clicks", TopicID: topicID, Partition: 0,
		Segments: []segmentobject.ManifestSegment{{
			ID: segmentID, Key: key, BaseOffset: 0, EndOffset: 3, MaxTimestamp: footer.MaxTimestamp,
			LogBytes: int64(log.Len()), TailBytes: footer.TailSize(), LeaderEpochs: []segmentobject.EpochEntry{{Epoch: 0, StartOffset: 0}},
		}},
	}.Encode()
	for _, o := range []struct {
		key  string
		data []byte
	}{{key, object.Bytes()}, {segmentobject.ManifestKey("", "clicks", topicID, 0), manifest}} {
		if err := store.Put(ctx, o.key, bytes.NewReader(o.data), int64(len(o.data))); err != nil {
			panic(err)
		}
	}
}
