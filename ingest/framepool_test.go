package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

func TestFramePoolSizeClasses(t *testing.T) {
	t.Parallel()
	var p framePool
	const limit = 100 << 20 // socket.request.max.bytes's default
	for _, tc := range []struct {
		n, limit, wantCap int
	}{
		{8, limit, 8},             // small frames are allocated to size
		{2 << 10, limit, 2 << 10}, // the largest that is not pooled
		{2<<10 + 1, limit, 4 << 10},
		{32 << 10, limit, 32 << 10},
		{32<<10 + 1, limit, 64 << 10},
		{64 << 10, limit, 64 << 10},
		{64<<10 + 1, limit, 128 << 10},
		{1 << 20, limit, 1 << 20},
		{32 << 20, limit, 32 << 20},
		{32<<20 + 1, limit, 32<<20 + 1}, // past the largest class: allocated to size
		// A buffer never outgrows the frame size limit.
		{40 << 10, 50 << 10, 40 << 10},
		{1200 << 10, 1536 << 10, 1200 << 10},
		{1200 << 10, 2 << 20, 2 << 20},
	} {
		frame := p.get(tc.n, tc.limit)
		if len(frame) != tc.n || cap(frame) != tc.wantCap {
			t.Errorf("get(%d) under a limit of %d: len %d cap %d, want len %d cap %d",
				tc.n, tc.limit, len(frame), cap(frame), tc.n, tc.wantCap)
		}
		p.put(frame)
	}
	// A buffer whose capacity is no class's is never pooled: only get's
	// own buffers go back.
	p.poison = true
	odd := make([]byte, 100<<10)
	p.put(odd)
	if odd[0] != 0 {
		t.Fatal("put took a buffer of a capacity no class has")
	}
}

// TestRecycledProduceFramesKeepTheirRecords pipelines produce requests
// large enough for pooled frames on one connection, with every recycled
// frame overwritten as it goes back to the pool (the test broker poisons
// them), and reads the partition back: a frame recycled while its request
// still used it would have stored, or answered, poisoned bytes.
func TestRecycledProduceFramesKeepTheirRecords(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	if !b.frames.poison {
		t.Fatal("the test broker does not poison recycled frames")
	}
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "recycled"}
	topic := h.topic(1, nil)
	const requests = 40
	var batches [][]byte
	for i := range requests {
		var records []record.Record
		for j := range 64 + i*8 { // 64 to 376 records of 1 KiB: pooled frames of several classes
			records = append(records, record.Record{Value: bytes.Repeat([]byte(fmt.Sprintf("%d.%d;", i, j)), 1024)[:1024]})
		}
		batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, batch)
	}

	written := make(chan error, 1)
	go func() {
		for i, batch := range batches {
			req := produceRequest(topic, 0, append([]byte(nil), batch...))
			req.SetVersion(9)
			if _, err := h.client.conn.Write(encodeRequest(req, int32(1000+i))); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	var want []byte
	for i, batch := range batches {
		frame, err := readResponseFrame(h.client.conn)
		if err != nil {
			t.Fatal(err)
		}
		if id := int32(binary.BigEndian.Uint32(frame)); id != int32(1000+i) {
			t.Fatalf("answer %d has correlation id %d", i, id)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if err := resp.ReadFrom(frame[5:]); err != nil { // id and the flexible header's tags
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		wantCode(t, fmt.Sprintf("produce %d", i), p.ErrorCode, nil)
		record.SetBaseOffset(batch, p.BaseOffset)
		want = append(want, batch...)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}

	var got []byte
	for len(got) < len(want) {
		header, err := record.ParseHeader(want[len(got):])
		if err != nil {
			t.Fatal(err)
		}
		p := h.client.request(fetchRequest(topic, header.BaseOffset, 64<<20), 13).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("fetch from %d: %v, %d bytes", header.BaseOffset, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
		}
		got = append(got, p.RecordBatches...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes that differ from the %d produced", len(got), len(want))
	}
}
