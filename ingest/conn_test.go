package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
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

// answeredWithoutWaiting sends req from a connection of its own and
// returns the answer, failing if the fetch registers a long poll with any
// of partitions first.
func answeredWithoutWaiting(t *testing.T, b *Broker, req *kmsg.FetchRequest, partitions ...*replica.Partition) *kmsg.FetchResponse {
	t.Helper()
	fetcher := connect(t, b)
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- fetcher.request(req, 13).(*kmsg.FetchResponse) }()
	for {
		select {
		case resp := <-answered:
			return resp
		default:
		}
		for _, p := range partitions {
			if p.Waiting() > 0 {
				t.Fatal("the fetch waits for new data though readable data meets its min bytes")
			}
		}
		runtime.Gosched()
	}
}

// TestFetchAnswersAtOnceWhenMoreIsReadable: as Kafka's DelayedFetch, a
// fetch whose first read left readable data behind is answered at once,
// and min bytes counts up to the response's budget only. Else it waited
// its whole max wait (10 minutes here): at every segment boundary of a
// consumer catching up, whenever fetch.max.bytes is below the consumer's
// min bytes, and when a batch did not fit the budget.
func TestFetchAnswersAtOnceWhenMoreIsReadable(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.FetchMaxBytes = 4096 })
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "readable"}
	leader := func(topic meta.Topic, partition int32) *replica.Partition {
		p, err := b.partitions.Leader(b.meta.State(), topic.Name, partition)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A read stops at its segment's end.
	segments := h.topic(1, map[string]string{"segment.bytes": "200"})
	var readable int
	for range 4 {
		readable += len(h.produce(segments, 3))
	}
	req := fetchFrom(segments, 0, 10*time.Minute)
	req.MinBytes = int32(readable - 10)
	if got := answeredWithoutWaiting(t, b, req, leader(segments, 0)).Topics[0].Partitions[0]; got.ErrorCode != 0 || len(got.RecordBatches) == 0 {
		t.Fatalf("at a segment boundary: code %d, %d bytes", got.ErrorCode, len(got.RecordBatches))
	}

	// fetch.max.bytes (4 KiB) below min bytes.
	h.name = "readable-many"
	many := h.topic(1, nil)
	for range 100 {
		h.produce(many, 3)
	}
	req = fetchFrom(many, 0, 10*time.Minute)
	req.MinBytes = 64 << 10
	if got := answeredWithoutWaiting(t, b, req, leader(many, 0)).Topics[0].Partitions[0]; len(got.RecordBatches) == 0 {
		t.Fatal("with the budget below min bytes: no records")
	}

	// The second partition's batch does not fit what the first left.
	h.name = "readable-two"
	two := h.topic(2, nil)
	small := h.produce(two, 1)
	resp := h.client.request(produceRequest(two, 1, h.batch(200)), 9).(*kmsg.ProduceResponse)
	wantCode(t, "produce", resp.Topics[0].Partitions[0].ErrorCode, nil)
	req = fetchFrom(two, 0, 10*time.Minute)
	second := req.Topics[0].Partitions[0]
	second.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, second)
	req.MaxBytes, req.MinBytes = int32(len(small)+100), int32(len(small)+50)
	got := answeredWithoutWaiting(t, b, req, leader(two, 0), leader(two, 1)).Topics[0].Partitions
	if len(got[0].RecordBatches) != len(small) || len(got[1].RecordBatches) != 0 {
		t.Fatalf("with a batch past the budget: %d and %d bytes, want %d and 0", len(got[0].RecordBatches), len(got[1].RecordBatches), len(small))
	}

	// All that is readable fits, short of min bytes: the fetch waits, but
	// for the budget (4 KiB), not for min bytes (64 KiB) it cannot return.
	h.name = "readable-wait"
	waits := h.topic(1, nil)
	have := len(h.produce(waits, 150))
	req = fetchFrom(waits, 0, 10*time.Minute)
	req.MinBytes = 64 << 10
	fetcher := connect(t, b)
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- fetcher.request(req, 13).(*kmsg.FetchResponse) }()
	waitForWatcher(t, leader(waits, 0))
	more := len(h.produce(waits, 150))
	if have >= 4096 || have+more < 4096 {
		t.Fatalf("batches of %d and %d bytes: the test wants the first below the 4 KiB budget, both above it", have, more)
	}
	if got := (<-answered).Topics[0].Partitions[0]; len(got.RecordBatches) < have {
		t.Fatalf("woken with %d bytes, want at least the first batch's %d", len(got.RecordBatches), have)
	}
}

// TestFetchAnswersAPartitionNamedTwiceOnce: as Kafka, a consumer's fetch
// naming a partition again gets one answer for it, in its first mention's
// place at its last mention's offset, so that a request of a million
// copies of one partition cannot cost a million reads and answers.
func TestFetchAnswersAPartitionNamedTwiceOnce(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "fetch-twice"}
	topic := h.topic(2, nil)
	h.produce(topic, 3)
	req := fetchFrom(topic, 0, 0)
	rt := req.Topics[0]
	other, again := rt.Partitions[0], rt.Partitions[0]
	other.Partition, again.FetchOffset = 1, 3
	rt.Partitions = append(rt.Partitions, other, again)
	req.Topics = append(req.Topics, rt)
	resp := h.client.request(req, 12).(*kmsg.FetchResponse)
	var answers []int32
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			answers = append(answers, p.Partition)
			if p.Partition == 0 && len(p.RecordBatches) != 0 {
				t.Fatalf("partition 0: %d bytes, want none: its last mention fetches at its end, 3", len(p.RecordBatches))
			}
		}
	}
	if !slices.Equal(answers, []int32{0, 1}) {
		t.Fatalf("answered partitions %v for a request naming 0, then 0, 1 and 0 again; want 0 and 1 once", answers)
	}
}
