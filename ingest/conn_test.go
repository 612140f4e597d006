package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/replica"
)

func TestReadFrameRefusesBeforeAllocating(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		input []byte
		want  error
	}{
		{"larger than the limit", []byte{0x7f, 0xff, 0xff, 0xff}, ErrFrameTooLarge},
		{"negative", []byte{0x80, 0, 0, 0}, ErrFrameInvalid},
		{"smaller than a header", []byte{0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7}, ErrFrameInvalid},
	} {
		// The reader holds only the size: a frame read that allocated first
		// would fail with an EOF instead.
		_, err := readFrameSize(bytes.NewReader(tc.input), 1<<20)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	r := bytes.NewReader([]byte{0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8})
	n, err := readFrameSize(r, 8)
	if err != nil || n != 8 {
		t.Fatalf("a frame at the limit: %v, size %d", err, n)
	}
	frame, err := readFrameBody(r, n, 8, new(framePool))
	if err != nil || len(frame) != 8 {
		t.Fatalf("a frame at the limit: %v, %d bytes", err, len(frame))
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	bad := DefaultConfig()
	bad.Listeners[0].Address, bad.MaxRequestBytes, bad.FetchCopy = "nowhere", 10, "mmap"
	err := bad.Validate()
	for _, want := range []string{"listener PLAINTEXT: address", "socket.request.max.bytes", "fetch copy"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}

// TestPipelinedRequestsAnsweredInOrder writes many requests before reading
// any answer; the answers must come back in request order.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := newTestBroker(t, nil)
	c := connect(t, b)
	var stream []byte
	const n = 50
	for i := range int32(n) {
		var req kmsg.Request = kmsg.NewPtrApiVersionsRequest()
		if i%2 == 1 {
			req = kmsg.NewPtrMetadataRequest()
		}
		req.SetVersion(3)
		stream = append(stream, encodeRequest(req, 1000+i)...)
	}
	go c.conn.Write(stream)
	for i := range int32(n) {
		frame, err := readResponseFrame(c.conn)
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != 1000+i {
			t.Fatalf("answer %d has correlation id %d, want %d", i, got, 1000+i)
		}
	}
}

// TestFetchLongPollWakesOnProduce parks a fetch with a long max wait on an
// empty partition; a produce on another connection must end the wait with
// the new records, well before the max wait.
func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "long-poll"}
	topic := h.topic(1, nil)
	fetcher := connect(t, b)

	req := fetchFrom(topic, 0, 10*time.Minute)
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- fetcher.request(req, 13).(*kmsg.FetchResponse) }()
	// The fetch is registered once the partition has a watcher; no data
	// may answer it before then.
	p, _ := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	waitForWatcher(t, p)
	select {
	case resp := <-answered:
		t.Fatalf("the fetch answered before any produce: %+v", resp)
	default:
	}
	batch := h.produce(topic, 3)
	resp := <-answered
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.HighWatermark != 3 || !bytes.Equal(got.RecordBatches, batch) {
		t.Fatalf("woken fetch: code %d, high watermark %d, %d bytes", got.ErrorCode, got.HighWatermark, len(got.RecordBatches))
	}
}

// waitForWatcher waits until a fetch has registered with p. Registration
// has no event of its own, so this yields until it is seen; the deadline
// only turns a hang into a failure.
func waitForWatcher(t *testing.T, p *replica.Partition) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if p.Waiting() > 0 {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("no fetch registered with the partition within a minute")
}

// TestShutdownAnswersInFlightFetch parks a long poll, shuts the broker
// down, and checks the fetch is answered (not cut off) before the
// connection closes.
func TestShutdownAnswersInFlightFetch(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "drain"}
	topic := h.topic(1, nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := &testClient{t: t, conn: conn}

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 600_000, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic.Name
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- client.request(req, 12).(*kmsg.FetchResponse) }()
	p, _ := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	waitForWatcher(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	resp := <-answered
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("drained fetch answered with code %d", code)
	}
	if err := <-served; !errors.Is(err, ErrBrokerClosed) {
		t.Fatalf("Serve returned %v, want ErrBrokerClosed", err)
	}
}
