package ingest

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceAppendsWhileEarlierAcksAreAwaited queues, on one connection,
// two produce requests and then a metadata request, through handlers that
// stand in for the real ones so the first acknowledgement can be held: the
// second produce must be handled (appended) while the first waits for its
// acknowledgement, the metadata request only once both are answered, and
// the answers must come back in request order.
func TestProduceAppendsWhileEarlierAcksAreAwaited(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	client, server := net.Pipe()
	c := newConn(b, server, b.config.Listeners[0])
	served := make(chan struct{})
	go func() {
		defer close(served)
		c.serve(context.Background())
	}()
	defer func() {
		client.Close()
		<-served
	}()

	firstAck := make(chan struct{})
	releaseFirst := sync.OnceFunc(func() { close(firstAck) })
	defer releaseFirst() // before the connection closes, should the test fail
	var secondHandled, firstAcked, secondAcked, metadataTooEarly atomic.Bool
	produce := func(handled func(), wait func()) *api {
		return &api{key: kmsg.Produce.Int16(), name: "Produce", handle: func(context.Context, *Broker, *request) (reply, error) {
			handled()
			return awaitedReply{reply: replyWith(kmsg.NewPtrProduceResponse()), wait: wait}, nil
		}}
	}
	first := produce(func() {}, func() {
		<-firstAck
		firstAcked.Store(true)
	})
	second := produce(func() { secondHandled.Store(true) }, func() { secondAcked.Store(true) })
	metadata := &api{key: kmsg.Metadata.Int16(), name: "Metadata", handle: func(context.Context, *Broker, *request) (reply, error) {
		if !firstAcked.Load() || !secondAcked.Load() {
			metadataTooEarly.Store(true)
		}
		return replyWith(kmsg.NewPtrMetadataResponse()), nil
	}}
	for i, a := range []*api{first, second, metadata} {
		req := &request{header: requestHeader{key: a.key, correlationID: int32(100 + i)}, received: time.Now()}
		if !c.push(queuedRequest{api: a, request: req}) {
			t.Fatal("the processor stopped")
		}
	}

	waitFor(t, "the second produce to be handled while the first awaits its acknowledgement", secondHandled.Load)
	releaseFirst()
	for i := range 3 {
		frame, err := readResponseFrame(client)
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != int32(100+i) {
			t.Fatalf("answer %d has correlation id %d, want %d", i, got, 100+i)
		}
	}
	if metadataTooEarly.Load() {
		t.Fatal("the metadata request was handled before the produce requests ahead of it were answered")
	}
}
