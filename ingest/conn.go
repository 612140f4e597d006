package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// conn is one client connection. Two goroutines serve it:
//
//   - the reader (owned by serve, stopped by closing the socket or by drain)
//     reads frames, decodes them and queues them, up to MaxQueuedRequests
//     ahead of the processor, so decoding the next request overlaps with
//     handling this one;
//   - the processor (the goroutine that runs serve) handles queued requests
//     one at a time and writes each reply before taking the next, so replies
//     go out in request order without any reordering buffer.
//
// A protocol violation stops the reader; the processor answers what was
// queued before it, then closes the connection.
//
// Each reply must be written within connections.max.idle.ms (see write):
// a client that stops reading its socket would otherwise block the
// processor for ever, holding the hot log sections its fetch replies carry
// (which TruncateTo waits for) until the broker shuts down.
type conn struct {
	broker *Broker
	socket net.Conn
	remote string
	log    *slog.Logger
	writer *responseWriter

	queue chan queuedRequest
	// done is closed when the processor stops, so a reader blocked on a full
	// queue stops too.
	done chan struct{}
	// readerDone is closed when the reader stops (the peer closed, broke
	// the protocol, or the broker is draining): long polls answer at once,
	// since no further request can follow on this connection.
	readerDone chan struct{}
	draining   atomic.Bool
}

// queuedRequest is what the reader hands the processor: a decoded request, an
// ApiVersions request with a version we cannot parse (answered at v0), or
// the protocol violation that ended the stream.
type queuedRequest struct {
	api         *api
	request     *request
	unsupported *requestHeader
	err         error
}

func newConn(b *Broker, socket net.Conn) *conn {
	c := &conn{
		broker:     b,
		socket:     socket,
		remote:     socket.RemoteAddr().String(),
		queue:      make(chan queuedRequest, b.config.MaxQueuedRequests),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.log = b.log.With("remote", c.remote)
	c.writer = newResponseWriter(socket, b.config.FetchCopy, func(n int) { b.metrics.bytesOut.Add(float64(n)) })
	return c
}

// serve runs the connection until the peer goes away, a protocol violation,
// a write failure, or drain; it closes the socket before returning.
func (c *conn) serve(ctx context.Context) {
	go func() {
		defer close(c.readerDone)
		defer close(c.queue)
		c.read()
	}()
	defer func() {
		close(c.done)
		c.socket.Close()
		<-c.readerDone
		// Anything still queued is dropped with the connection.
		for range c.queue {
		}
	}()
	for q := range c.queue {
		if q.err != nil {
			c.broker.metrics.protocolErrors.Inc()
			c.log.Info("closing connection", "reason", q.err)
			return
		}
		if err := c.process(ctx, q); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.log.Info("closing connection: the client did not read a response in time",
					"timeout", c.broker.config.ConnectionsMaxIdle, "reason", err)
				return
			}
			c.log.Info("closing connection", "reason", err)
			return
		}
	}
}

// drain stops reading new requests; queued ones are still answered.
func (c *conn) drain() {
	c.draining.Store(true)
	c.socket.SetReadDeadline(time.Now())
}

// read is the reader goroutine's loop.
func (c *conn) read() {
	limit := c.broker.config.MaxRequestBytes
	for {
		c.socket.SetReadDeadline(time.Now().Add(c.broker.config.ConnectionsMaxIdle))
		if c.draining.Load() {
			return
		}
		frame, err := readFrame(c.socket, limit)
		if err != nil {
			if c.draining.Load() || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.log.Debug("closing idle connection")
				return
			}
			c.push(queuedRequest{err: err})
			return
		}
		c.broker.metrics.bytesIn.Add(float64(len(frame) + frameSizeBytes))
		q := c.decode(frame)
		if !c.push(q) || q.err != nil {
			return
		}
	}
}

// decode turns a frame into the processor's next item.
func (c *conn) decode(frame []byte) queuedRequest {
	header := peekHeader(frame)
	a, ok := lookupAPI(header.key, header.version)
	if !ok {
		if header.key == apiVersionsKey {
			return queuedRequest{unsupported: &header}
		}
		c.broker.metrics.unsupported.Inc()
		return queuedRequest{err: unsupportedError(header)}
	}
	body, header, err := decodeRequest(frame, header)
	if err != nil {
		return queuedRequest{err: err}
	}
	return queuedRequest{api: a, request: &request{header: header, body: body, received: time.Now(), readerDone: c.readerDone, remote: c.remote}}
}

// push queues q for the processor, giving up if the processor has stopped.
func (c *conn) push(q queuedRequest) bool {
	select {
	case c.queue <- q:
		return true
	case <-c.done:
		return false
	}
}

// process answers one request. An error closes the connection.
func (c *conn) process(ctx context.Context, q queuedRequest) error {
	if q.unsupported != nil {
		return c.write(apiVersionsUnsupported(), q.unsupported.correlationID)
	}
	req := q.request
	r, err := q.api.handle(ctx, c.broker, req)
	if err != nil {
		return err
	}
	if r == nil {
		c.broker.metrics.observe(q.api.name, req.received)
		return nil
	}
	defer r.release()
	if err := c.write(r, req.header.correlationID); err != nil {
		return err
	}
	c.broker.metrics.observe(q.api.name, req.received)
	return nil
}

// write sends one reply, which must reach the socket within
// connections.max.idle.ms; on a timeout the error wraps
// os.ErrDeadlineExceeded and the connection is closed.
//
// Why that setting and not a write timeout of its own: Kafka has no such
// broker setting. Its network processor closes a connection on which
// nothing has been read or written for connections.max.idle.ms, and a
// client that stops reading makes no progress, so that is how long Kafka
// lets a stalled response hold on; the same value keeps the two brokers'
// behaviour, and their configuration, alike. The deadline bounds the whole
// reply, not each chunk's progress as Kafka's idle check does: with the
// defaults (ten minutes, fetch.max.bytes 55 MiB) only a client reading
// slower than about 90 KiB/s is cut off mid-response.
//
// The deadline holds on every path the writer takes: conn.Write, and the
// sendmsg and sendfile loops, which run under syscall.RawConn.Write and so
// wait for the socket through the poller, which honours the deadline.
func (c *conn) write(r reply, correlationID int32) error {
	if err := c.socket.SetWriteDeadline(time.Now().Add(c.broker.config.ConnectionsMaxIdle)); err != nil {
		return err
	}
	return r.writeTo(c.writer, correlationID)
}
