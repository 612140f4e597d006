package ingest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// TestStalledReaderIsDisconnected pipelines fetches of a partition over a
// real TCP connection and never reads the answers. The replies cannot all
// fit in the socket buffers, so the connection's processor blocks writing
// one of them; the write deadline (connections.max.idle.ms) must end that
// write and close the connection, without Shutdown's help, and the log
// sections the replies held must be released, so that a TruncateTo, which
// waits for older readers, returns. Both ways of copying record bytes are
// checked: sendfile runs under syscall.RawConn.Write, pread under
// net.Conn.Write.
func TestStalledReaderIsDisconnected(t *testing.T) {
	for _, copy := range []FetchCopy{FetchCopySendfile, FetchCopyPread} {
		t.Run(string(copy), func(t *testing.T) {
			b := newTestBroker(t, func(c *Config) {
				c.ConnectionsMaxIdle = 200 * time.Millisecond
				c.FetchCopy = copy
			})
			h := &handlerTest{t: t, broker: b, name: "stalled-" + string(copy)}
			topic := h.topic(1, nil)
			// The data goes in without a connection: with so short an idle
			// time, a slow fsync could close a producing connection.
			for range 4 {
				produceDirect(t, b, topic, bigBatch(t, 512<<10))
			}

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- b.Serve(ln) }()
			socket, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
			if err != nil {
				t.Fatal(err)
			}
			defer socket.Close()
			// A small receive window, and many more reply bytes (16 fetches
			// of 2 MiB) than loopback socket buffers hold, whatever the
			// kernel's autotuning does.
			if err := socket.SetReadBuffer(4 << 10); err != nil {
				t.Fatal(err)
			}
			// One answered request first: the broker is then serving the
			// connection, so waiting for its connections below cannot
			// return before this one has started.
			client := &testClient{t: t, conn: socket}
			client.request(kmsg.NewPtrApiVersionsRequest(), 3)
			var stream []byte
			for i := range int32(16) {
				stream = append(stream, encodeRequest(fetchFromStart(topic, 8<<20), 100+i)...)
			}
			if _, err := socket.Write(stream); err != nil {
				t.Fatal(err)
			}

			// The bound is generous: the deadline is 200ms, and without
			// one the connection never ends while the client is stalled.
			timer := time.NewTimer(30 * time.Second)
			defer timer.Stop()
			closed := make(chan struct{})
			go func() {
				b.connections.Wait()
				close(closed)
			}()
			select {
			case <-closed:
			case <-timer.C:
				t.Fatal("the connection is still open 30s after its client stopped reading: the stalled write was not timed out")
			}
			// TruncateTo waits until no reader holds a section of the log.
			p, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			truncated := make(chan error, 1)
			go func() { truncated <- p.Log().TruncateTo(0) }()
			select {
			case err := <-truncated:
				if err != nil {
					t.Fatalf("TruncateTo: %v", err)
				}
			case <-timer.C:
				t.Fatal("the connection closed but its log sections are still held")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-served; !errors.Is(err, ErrBrokerClosed) {
				t.Fatalf("Serve returned %v, want ErrBrokerClosed", err)
			}
		})
	}
}

// bigBatch is one batch of about size bytes, in 64 KiB records.
func bigBatch(t *testing.T, size int) []byte {
	t.Helper()
	var records []record.Record
	for range size / (64 << 10) {
		records = append(records, record.Record{Value: make([]byte, 64<<10)})
	}
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// produceDirect appends records to partition 0 of topic through the
// Produce handler, without a connection, and waits for the acknowledgement.
func produceDirect(t *testing.T, b *Broker, topic meta.Topic, records []byte) {
	t.Helper()
	req := produceRequest(topic, 0, records)
	req.SetVersion(9)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := handleProduce(ctx, b, &request{}, req)
	if err != nil {
		t.Fatal(err)
	}
	awaited := r.(awaitedReply)
	awaited.wait()
	p := awaited.reply.(messageReply).response.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	wantCode(t, "produce", p.ErrorCode, nil)
}

// fetchFromStart is a Fetch v12 of topic's partitions (partition 0 if none
// is named) from offset 0, up to maxBytes in all and for each.
func fetchFromStart(topic meta.Topic, maxBytes int32, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = maxBytes, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topic.ID
	if len(partitions) == 0 {
		partitions = []int32{0}
	}
	for _, i := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = i, maxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}
