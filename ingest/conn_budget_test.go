package ingest

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// The tests here speak to connections over net.Pipe, which has no buffer:
// a client's Write returns only once the broker's reader has read every
// byte of it. So "the reader read this frame" is an event the test sees,
// and a reader that stops reading leaves the client's next Write blocked.

// budgetTestFrameLimit is socket.request.max.bytes in these tests: one
// filler frame fits under it, two do not.
const budgetTestFrameLimit = 64 << 10

// budgetTest is a broker with an empty topic that long polls wait on and a
// topic that filler produce requests append to.
type budgetTest struct {
	t      *testing.T
	broker *Broker
	// waker produces to empty, on a connection of its own, to end the long
	// polls.
	waker *handlerTest
	empty meta.Topic
	sink  meta.Topic
}

func newBudgetTest(t *testing.T, configure func(*Config)) *budgetTest {
	b := newTestBroker(t, func(c *Config) {
		c.MaxRequestBytes = budgetTestFrameLimit
		if configure != nil {
			configure(c)
		}
	})
	waker := &handlerTest{t: t, broker: b, client: connect(t, b), name: "empty"}
	bt := &budgetTest{t: t, broker: b, waker: waker, empty: waker.topic(1, nil)}
	bt.sink = (&handlerTest{t: t, broker: b, client: waker.client, name: "sink"}).topic(1, nil)
	return bt
}

// pipeConn is one connection served over a pipe, with its conn for the
// test to look at.
type pipeConn struct {
	t      *testing.T
	client net.Conn
	conn   *conn
	next   int32
	served chan struct{}
}

func (bt *budgetTest) dial() *pipeConn {
	client, server := net.Pipe()
	pc := &pipeConn{t: bt.t, client: client, conn: newConn(bt.broker, server, bt.broker.config.Listeners[0]), served: make(chan struct{})}
	go func() {
		defer close(pc.served)
		pc.conn.serve(context.Background())
	}()
	bt.t.Cleanup(pc.close)
	return pc
}

// close ends the connection and waits for its processor to return.
func (pc *pipeConn) close() {
	pc.client.Close()
	<-pc.served
}

// frame encodes req with the connection's next correlation id.
func (pc *pipeConn) frame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	pc.next++
	return encodeRequest(req, pc.next)
}

// send writes one frame; it returns once the broker has read all of it.
func (pc *pipeConn) send(frame []byte) {
	pc.t.Helper()
	if _, err := pc.client.Write(frame); err != nil {
		pc.t.Fatal(err)
	}
}

// longPoll sends a fetch that waits ten minutes for a record on empty.
func (bt *budgetTest) longPoll(pc *pipeConn) int64 {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 600_000, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = bt.empty.Name, bt.empty.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := pc.frame(req, 12)
	pc.send(frame)
	return int64(len(frame) - frameSizeBytes)
}

// filler is a produce request to sink of about 40 KiB: one record with a
// value of that size, a valid batch. It returns the frame and the size the
// broker reserves for it.
func (bt *budgetTest) filler(pc *pipeConn) ([]byte, int64) {
	bt.t.Helper()
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Value: make([]byte, 40<<10)}})
	if err != nil {
		bt.t.Fatal(err)
	}
	frame := pc.frame(produceRequest(bt.sink, 0, batch), 9)
	return frame, int64(len(frame) - frameSizeBytes)
}

// wake ends every long poll on empty with one record.
func (bt *budgetTest) wake() {
	bt.waker.produce(bt.empty, 1)
}

// waitFor waits until cond holds. The states waited for (a reader parked
// on a budget, a fetch registered) have no event of their own, so this
// yields until they are seen; the deadline only turns a hang into a
// failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		runtime.Gosched()
	}
}

// watchers is how many fetches wait on empty.
func (bt *budgetTest) watchers() int {
	p, _ := bt.broker.partitions.Leader(bt.broker.meta.State(), bt.empty.Name, 0)
	return p.Waiting()
}

// answers reads n replies in the background and checks their correlation
// ids follow from first; the channel closes once all are read.
func (pc *pipeConn) answers(first int32, n int) <-chan error {
	out := make(chan error, 1)
	go func() {
		defer close(out)
		for i := range int32(n) {
			frame, err := readResponseFrame(pc.client)
			if err != nil {
				out <- err
				return
			}
			if got := int32(binary.BigEndian.Uint32(frame)); got != first+i {
				out <- fmt.Errorf("reply %d has correlation id %d, want %d", i, got, first+i)
				return
			}
		}
	}()
	return out
}

// TestReaderStopsAtConnectionBound is the pipelined attack on one
// connection: a long poll waits at the head while produce requests follow.
// The reader reads the first filler (the poll and it fit in
// socket.request.max.bytes), then stops reading the socket, with the next
// frame's size read but nothing allocated for it; it resumes when the
// poll is answered, and every request is answered in order.
func TestReaderStopsAtConnectionBound(t *testing.T) {
	bt := newBudgetTest(t, nil)
	pc := bt.dial()
	fetchSize := bt.longPoll(pc)
	waitFor(t, "fetch waiting on the empty topic", func() bool { return bt.watchers() == 1 })

	const fillers = 4
	written := make(chan int, fillers)
	var fillerSize int64
	frames := make([][]byte, fillers)
	for i := range frames {
		frames[i], fillerSize = bt.filler(pc)
	}
	go func() {
		for i, frame := range frames {
			if _, err := pc.client.Write(frame); err != nil {
				return
			}
			written <- i
		}
	}()

	waitFor(t, "reader waiting for room on its connection", func() bool { return pc.conn.held.waiting() == 1 })
	// The reader is parked on the second filler's size: the first was read
	// whole (its Write returned), the second's Write cannot have.
	if got := len(written); got != 1 {
		t.Fatalf("%d filler frames read before the reader stopped, want 1", got)
	}
	if got, want := pc.conn.held.used(), fetchSize+fillerSize; got != want {
		t.Fatalf("connection holds %d bytes, want the poll's and one filler's, %d", got, want)
	}
	if got, want := bt.broker.queuedBytes.used(), fetchSize+fillerSize; got != want {
		t.Fatalf("broker budget holds %d bytes, want %d", got, want)
	}
	m := bt.broker.metrics
	if got := testutil.ToFloat64(m.readersBlocked.WithLabelValues("socket.request.max.bytes")); got != 1 {
		t.Fatalf("strata_ingest_readers_blocked{setting=socket.request.max.bytes} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.queuedRequestBytes); got != float64(fetchSize+fillerSize) {
		t.Fatalf("strata_ingest_queued_request_bytes = %v, want %d", got, fetchSize+fillerSize)
	}

	replies := pc.answers(1, 1+fillers)
	bt.wake()
	if err := <-replies; err != nil {
		t.Fatal(err)
	}
	if got := len(written); got != fillers {
		t.Fatalf("%d filler frames written, want %d", got, fillers)
	}
	pc.close()
	if got := bt.broker.queuedBytes.used(); got != 0 {
		t.Fatalf("broker budget holds %d bytes after the connection closed", got)
	}
	if got := testutil.ToFloat64(m.readersBlocked.WithLabelValues("socket.request.max.bytes")); got != 0 {
		t.Fatalf("strata_ingest_readers_blocked = %v after the reader resumed", got)
	}
}

// TestReadersStopAtBrokerBudget runs three connections, each with a long
// poll and then one filler, against a budget that holds two fillers: the
// third reader stops before allocating, and reads once the others'
// requests are answered.
func TestReadersStopAtBrokerBudget(t *testing.T) {
	const budgetBytes = 100 << 10
	bt := newBudgetTest(t, func(c *Config) { c.QueuedMaxRequestBytes = budgetBytes })
	conns := []*pipeConn{bt.dial(), bt.dial(), bt.dial()}
	var polls int64
	for _, pc := range conns {
		polls += bt.longPoll(pc)
	}
	waitFor(t, "three fetches waiting", func() bool { return bt.watchers() == 3 })

	var fillerSize int64
	for _, pc := range conns[:2] {
		var frame []byte
		frame, fillerSize = bt.filler(pc)
		pc.send(frame)
	}
	third, _ := bt.filler(conns[2])
	written := make(chan struct{})
	go func() {
		defer close(written)
		conns[2].client.Write(third)
	}()
	waitFor(t, "reader waiting for the broker budget", func() bool { return bt.broker.queuedBytes.waiting() == 1 })
	select {
	case <-written:
		t.Fatal("the third filler was read past the budget")
	default:
	}
	if got, want := bt.broker.queuedBytes.used(), polls+2*fillerSize; got != want || got > budgetBytes {
		t.Fatalf("broker budget holds %d bytes, want %d (limit %d)", got, want, budgetBytes)
	}
	if got := testutil.ToFloat64(bt.broker.metrics.readersBlocked.WithLabelValues("queued.max.request.bytes")); got != 1 {
		t.Fatalf("strata_ingest_readers_blocked{setting=queued.max.request.bytes} = %v, want 1", got)
	}
	// The third connection had room of its own: it is the broker's budget
	// that stopped it.
	if got := conns[2].conn.held.waiting(); got != 0 {
		t.Fatalf("the third reader waits on its connection's bound too (%d waiting)", got)
	}

	var replies []<-chan error
	for _, pc := range conns {
		replies = append(replies, pc.answers(1, 2))
	}
	bt.wake()
	for i, r := range replies {
		if err := <-r; err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	<-written
	for _, pc := range conns {
		pc.close()
	}
	if got := bt.broker.queuedBytes.used(); got != 0 {
		t.Fatalf("broker budget holds %d bytes after every connection closed", got)
	}
}

// TestReadersStopAtQueuedMaxRequests holds a connection's processor
// while small requests queue behind it: the client does not read the
// first reply, so the processor blocks writing it. With
// queued.max.requests 2 the reader queues two more and stops before the
// fourth, and reads it once the client reads its replies.
func TestReadersStopAtQueuedMaxRequests(t *testing.T) {
	bt := newBudgetTest(t, func(c *Config) { c.QueuedMaxRequests = 2 })
	pc := bt.dial()
	versions := func() []byte { return pc.frame(kmsg.NewPtrApiVersionsRequest(), 3) }
	for range 3 {
		pc.send(versions())
	}
	fourth := versions()
	written := make(chan struct{})
	go func() {
		defer close(written)
		pc.client.Write(fourth)
	}()
	waitFor(t, "reader waiting for a queued.max.requests slot", func() bool { return bt.broker.queuedRequests.waiting() == 1 })
	select {
	case <-written:
		t.Fatal("a fourth request was read past queued.max.requests")
	default:
	}
	if got := bt.broker.queuedRequests.used(); got != 2 {
		t.Fatalf("%d requests queued, want 2", got)
	}
	m := bt.broker.metrics
	if got := testutil.ToFloat64(m.queuedRequests); got != 2 {
		t.Fatalf("strata_ingest_queued_requests = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.readersBlocked.WithLabelValues("queued.max.requests")); got != 1 {
		t.Fatalf("strata_ingest_readers_blocked{setting=queued.max.requests} = %v, want 1", got)
	}
	if err := <-pc.answers(1, 4); err != nil {
		t.Fatal(err)
	}
	<-written
	pc.close()
	if got := bt.broker.queuedRequests.used(); got != 0 {
		t.Fatalf("%d requests still queued after the connection closed", got)
	}
}

// TestDrainStopsReaderWaitingForBudget drains a connection whose reader
// waits for room: the reader gives up without reading the frame, the
// requests already read are answered, and the connection closes holding
// nothing.
func TestDrainStopsReaderWaitingForBudget(t *testing.T) {
	bt := newBudgetTest(t, nil)
	pc := bt.dial()
	bt.longPoll(pc)
	waitFor(t, "fetch waiting on the empty topic", func() bool { return bt.watchers() == 1 })
	first, _ := bt.filler(pc)
	pc.send(first)
	second, _ := bt.filler(pc)
	go pc.client.Write(second)
	waitFor(t, "reader waiting for room on its connection", func() bool { return pc.conn.held.waiting() == 1 })

	replies := pc.answers(1, 2)
	pc.conn.drain()
	if err := <-replies; err != nil {
		t.Fatal(err)
	}
	if _, err := readResponseFrame(pc.client); err == nil {
		t.Fatal("the second filler was answered after drain")
	}
	<-pc.served
	if got := bt.broker.queuedBytes.used(); got != 0 {
		t.Fatalf("broker budget holds %d bytes after the drained connection closed", got)
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	never := make(chan struct{})
	t.Run("first fit", func(t *testing.T) {
		t.Parallel()
		b := newBudget(10)
		if !b.tryAcquire(8) {
			t.Fatal("8 of 10 refused")
		}
		large := make(chan bool)
		go func() { large <- b.acquire(10, never) }()
		waitFor(t, "large acquire waiting", func() bool { return b.waiting() == 1 })
		// A small acquire that fits goes ahead of the large one waiting.
		if !b.acquire(2, never) {
			t.Fatal("2 of the 2 left refused")
		}
		b.release(8)
		if b.waiting() != 1 {
			t.Fatal("10 granted with 2 held")
		}
		b.release(2)
		if !<-large {
			t.Fatal("large acquire gave up")
		}
		if got := b.used(); got != 10 {
			t.Fatalf("used %d, want 10", got)
		}
	})
	t.Run("stop gives up holding nothing", func(t *testing.T) {
		t.Parallel()
		b := newBudget(4)
		b.tryAcquire(4)
		stop := make(chan struct{})
		gaveUp := make(chan bool)
		go func() { gaveUp <- b.acquire(1, stop) }()
		waitFor(t, "acquire waiting", func() bool { return b.waiting() == 1 })
		close(stop)
		if <-gaveUp {
			t.Fatal("acquire took room after stop")
		}
		b.release(4)
		if got, waiting := b.used(), b.waiting(); got != 0 || waiting != 0 {
			t.Fatalf("used %d, %d waiting after the stopped acquire", got, waiting)
		}
	})
	t.Run("unbounded counts", func(t *testing.T) {
		t.Parallel()
		b := newBudget(-1)
		if !b.tryAcquire(1<<40) || !b.acquire(1<<40, never) || b.used() != 2<<40 {
			t.Fatalf("unbounded budget refused or miscounted: used %d", b.used())
		}
	})
}

func TestConfigValidateQueuedBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		configure func(*Config)
		want      string
	}{
		{"unbounded bytes, as Kafka's default", func(c *Config) { c.QueuedMaxRequestBytes = -1 }, ""},
		{"bytes equal to the frame limit", func(c *Config) { c.QueuedMaxRequestBytes = int64(c.MaxRequestBytes) }, ""},
		{"bytes below the frame limit", func(c *Config) { c.QueuedMaxRequestBytes = int64(c.MaxRequestBytes) - 1 },
			"queued.max.request.bytes 104857599 is below socket.request.max.bytes 104857600"},
		{"zero bytes", func(c *Config) { c.QueuedMaxRequestBytes = 0 }, "queued.max.request.bytes 0: want -1 (unbounded) or at least"},
		{"negative bytes", func(c *Config) { c.QueuedMaxRequestBytes = -2 }, "queued.max.request.bytes -2"},
		{"no requests", func(c *Config) { c.QueuedMaxRequests = 0 }, "queued.max.requests 0: want at least 1"},
		{"negative read-ahead", func(c *Config) { c.ReadAheadRequests = -1 }, "read-ahead requests -1"},
	} {
		c := DefaultConfig()
		tc.configure(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}
