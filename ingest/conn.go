package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

// conn is one client connection. Three goroutines serve it:
//
//   - the reader (owned by serve, stopped by closing the socket or by drain)
//     reads frames, decodes them and queues them, up to ReadAheadRequests
//     ahead of the processor, so decoding the next request overlaps with
//     handling this one;
//   - the processor (the goroutine that runs serve) handles queued requests
//     one at a time, in order, and writes each reply before taking the
//     next, with one exception:
//   - the responder (owned by serve, stopped by closing responses) writes
//     the replies to produce requests. Appending a produce's batches is
//     quick; its acknowledgement waits for an fsync (or the followers).
//     The processor appends and hands the reply to the responder, which
//     waits for the acknowledgements and writes it, while the processor
//     appends the next produce request: the fsync of one request then
//     covers the appends of the next ones, where serially each request
//     paid an append and a whole fsync round before the next could start
//     (with five produce requests in flight, as idempotent clients send,
//     most of the latency was this queue). Replies stay in request order:
//     the responder takes them in order, and the processor waits for it to
//     finish before handling any other request, so everything but a
//     produce is handled after earlier requests are answered, as before.
//
// A protocol violation stops the reader; the processor answers what was
// queued before it, then closes the connection.
//
// Memory is bounded before it is allocated (see reserve): once a frame's
// size is read, the reader reserves that many bytes from the connection's
// own bound (socket.request.max.bytes for everything read and not yet
// answered) and from the broker's budgets (queued.max.requests,
// queued.max.request.bytes), and waits, not reading the socket, until they
// have room. TCP flow control then stops the client. (A produce frame
// read into a recycled buffer, framepool.go, holds up to twice its size:
// the budgets bound frame memory to twice what they count.) The processor
// gives the request slot back when it takes a request from the queue and
// the bytes once the request is answered (its reply written) or dropped.
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
	// stopReading is closed when the processor stops or the broker drains
	// the connection: a reader waiting for room in a budget gives up.
	stopReading chan struct{}
	stopOnce    sync.Once
	// held bounds the bytes of this connection's requests read and not yet
	// answered to socket.request.max.bytes.
	held *budget

	// responses carries produce replies awaiting acknowledgement to the
	// responder, in request order; outstanding counts those not yet
	// written, for the processor to wait on; responderDone is closed when
	// the responder ends. broken is set when the responder could not
	// write: the processor stops.
	responses     chan awaitedResponse
	outstanding   sync.WaitGroup
	responderDone chan struct{}
	broken        atomic.Bool
	// mutedUntil is when a client over its quota may be served again
	// (quotas.go); the processor alone reads and sets it.
	mutedUntil time.Time
	// listener is the listener the connection came in on; session, set
	// once a TLS handshake is done, who the client is (security.go).
	listener Listener
	session  *session
	// Before a SASL login the reader reads one request at a time (see
	// read): it sets lockstep before queueing a request, and the
	// processor, having answered it, clears it and signals answered.
	lockstep atomic.Bool
	answered chan struct{}
}

// awaitedResponse is a produce reply the responder waits for and writes.
type awaitedResponse struct {
	q     queuedRequest
	reply awaitedReply
}

// queuedRequest is what the reader hands the processor: a decoded request, an
// ApiVersions request with a version we cannot parse (answered at v0), or
// the protocol violation that ended the stream.
type queuedRequest struct {
	api         *api
	request     *request
	unsupported *requestHeader
	err         error
	// size is the frame's length, reserved from the connection's and the
	// broker's budgets (see conn.reserve) until the request is answered or
	// dropped; 0 for a violation found before the frame was reserved.
	size int64
	// recycled is a produce request's frame, which release gives back to
	// the broker's frame pool; nil for every other request.
	recycled []byte
}

func newConn(b *Broker, socket net.Conn, l Listener) *conn {
	c := &conn{
		broker:      b,
		socket:      socket,
		listener:    l,
		answered:    make(chan struct{}, 1),
		remote:      socket.RemoteAddr().String(),
		queue:       make(chan queuedRequest, b.config.ReadAheadRequests),
		done:        make(chan struct{}),
		readerDone:  make(chan struct{}),
		stopReading: make(chan struct{}),
		held:        newBudget(int64(b.config.MaxRequestBytes)),
		// As deep as the read-ahead: together they bound what a client
		// has in flight on one connection, and the bytes are bounded by
		// held, since a request's bytes are released once it is answered.
		responses:     make(chan awaitedResponse, b.config.ReadAheadRequests),
		responderDone: make(chan struct{}),
	}
	c.session = newSession(l, c.remote, socket)
	c.log = b.log.With("remote", c.remote)
	c.writer = newResponseWriter(socket, b.config.FetchCopy, func(n int) { b.metrics.bytesOut.Add(float64(n)) })
	return c
}

// tlsHandshakeTimeout bounds a TLS handshake, so a client that connects
// and says nothing holds a connection slot only so long.
const tlsHandshakeTimeout = 10 * time.Second

// serve runs the connection until the peer goes away, a protocol violation,
// a write failure, or drain; it closes the socket before returning. A TLS
// connection shakes hands first, so the session knows the client's
// certificate.
func (c *conn) serve(ctx context.Context) {
	if tc, ok := c.socket.(*tls.Conn); ok {
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.broker.metrics.tlsHandshakeFailures.Inc()
			c.log.Info("closing connection: TLS handshake failed", "reason", err)
			c.socket.Close()
			return
		}
	}
	c.session = newSession(c.listener, c.remote, c.socket)
	go func() {
		defer close(c.readerDone)
		defer close(c.queue)
		c.read()
	}()
	go c.respond()
	defer func() {
		close(c.responses)
		<-c.responderDone
		close(c.done)
		c.stopReader()
		c.socket.Close()
		<-c.readerDone
		// Anything still queued is dropped with the connection.
		for q := range c.queue {
			c.dequeued(q)
			c.release(q)
		}
	}()
	for q := range c.queue {
		c.dequeued(q)
		if c.broken.Load() {
			c.release(q)
			return
		}
		if err := c.answer(ctx, q); err != nil {
			return
		}
		if c.lockstep.CompareAndSwap(true, false) {
			c.answered <- struct{}{}
		}
	}
}

// respond is the responder goroutine's loop: it waits for each produce
// reply's acknowledgements and writes it. After a failed write it only
// releases what is left; the socket is closed, so the reader stops and
// the processor sees broken.
func (c *conn) respond() {
	defer close(c.responderDone)
	for a := range c.responses {
		a.reply.wait()
		if !c.broken.Load() {
			if err := c.writeReply(a.q, a.reply.reply); err != nil {
				c.broken.Store(true)
				c.logClosing(err)
				c.socket.Close()
			}
		}
		a.reply.release()
		c.release(a.q)
		c.outstanding.Done()
	}
}

// answer handles one queued item and gives its bytes back once it is
// answered, unless the responder now has it; an error, already logged,
// closes the connection.
func (c *conn) answer(ctx context.Context, q queuedRequest) error {
	if q.err != nil {
		c.broker.metrics.protocolErrors.Inc()
		c.log.Info("closing connection", "reason", q.err)
		c.release(q)
		return q.err
	}
	handedOff, err := c.process(ctx, q)
	if !handedOff {
		c.release(q)
	}
	if err != nil {
		c.logClosing(err)
	}
	return err
}

// logClosing says why the connection is being closed after a failed
// request or write.
func (c *conn) logClosing(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.log.Info("closing connection: the client did not read a response in time",
			"timeout", c.broker.config.ConnectionsMaxIdle, "reason", err)
		return
	}
	c.log.Info("closing connection", "reason", err)
}

// drain stops reading new requests; queued ones are still answered.
func (c *conn) drain() {
	c.draining.Store(true)
	c.stopReader()
	c.socket.SetReadDeadline(time.Now())
}

// stopReader makes a reader waiting for budget give up.
func (c *conn) stopReader() {
	c.stopOnce.Do(func() { close(c.stopReading) })
}

// errReaderStopped ends the reader while it waits for budget: the
// processor stopped or the broker is draining.
var errReaderStopped = errors.New("ingest: reader stopped")

// read is the reader goroutine's loop.
func (c *conn) read() {
	for {
		frame, err := c.readFrame()
		if err != nil {
			if errors.Is(err, errReaderStopped) || c.draining.Load() || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
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
		q.size = int64(len(frame))
		if q.api != nil && q.api.key == kmsg.Produce.Int16() {
			q.recycled = frame
		}
		// Before a SASL login, wait for each request's answer before
		// reading on: whether it logs the client in decides the next
		// frame's size limit (sasl.server.max.receive.size), so a client
		// that sends a large produce right after its login is not cut off.
		lockstep := !c.session.authenticated.Load()
		c.lockstep.Store(lockstep)
		if !c.push(q) {
			c.dequeued(q)
			c.release(q)
			return
		}
		if q.err != nil {
			return
		}
		if lockstep {
			select {
			case <-c.answered:
			case <-c.done:
				return
			}
		}
	}
}

// readFrame reads the next frame: its size, checked against
// socket.request.max.bytes, then, once that size is reserved, its bytes.
// On success the frame's size is reserved and the caller hands it on in a
// queuedRequest.
func (c *conn) readFrame() ([]byte, error) {
	idle := c.broker.config.ConnectionsMaxIdle
	c.socket.SetReadDeadline(time.Now().Add(idle))
	if c.draining.Load() {
		return nil, errReaderStopped
	}
	limit := c.session.frameLimit(c.broker.config.MaxRequestBytes, c.broker.config.Security.MaxReceiveBeforeAuth)
	n, err := readFrameSize(c.socket, limit)
	if err != nil {
		if errors.Is(err, ErrFrameTooLarge) && !c.session.authenticated.Load() {
			err = fmt.Errorf("%w (sasl.server.max.receive.size bounds frames before authentication)", err)
		}
		return nil, err
	}
	if !c.reserve(int64(n)) {
		return nil, errReaderStopped
	}
	reserved := queuedRequest{size: int64(n)}
	// Waiting for budget is not the client idling: its clock starts again
	// once the frame may be read. (Deadline before the draining check, as
	// above, so drain's deadline is never overwritten unseen.)
	c.socket.SetReadDeadline(time.Now().Add(idle))
	if c.draining.Load() {
		c.dequeued(reserved)
		c.release(reserved)
		return nil, errReaderStopped
	}
	frame, err := readFrameBody(c.socket, n, limit, &c.broker.frames)
	if err != nil {
		c.dequeued(reserved)
		c.release(reserved)
		return nil, err
	}
	return frame, nil
}

// reserve takes a frame of n bytes from the connection's bound and then
// from the broker's budgets for queued requests and their bytes, waiting,
// with the socket unread, while any of them is full. It reports false,
// holding nothing, if the reader was stopped first.
//
// A reader waits only for processors to answer requests, and a processor
// never waits for budget, so the wait ends: at the latest when the
// requests ahead finish (a long poll's max wait, a group's rebalance
// timeout, a reply's write deadline).
func (c *conn) reserve(n int64) bool {
	b := c.broker
	if !c.take(c.held, n, "socket.request.max.bytes") {
		return false
	}
	if !c.take(b.queuedRequests, 1, "queued.max.requests") {
		c.held.release(n)
		return false
	}
	if !c.take(b.queuedBytes, n, "queued.max.request.bytes") {
		b.queuedRequests.release(1)
		c.held.release(n)
		return false
	}
	b.metrics.queuedRequests.Inc()
	b.metrics.queuedRequestBytes.Add(float64(n))
	return true
}

// take acquires n from one budget, counting the time the reader is blocked
// on it under the setting that bounds it.
func (c *conn) take(from *budget, n int64, setting string) bool {
	if from.tryAcquire(n) {
		return true
	}
	m := c.broker.metrics
	m.readersBlocked.WithLabelValues(setting).Inc()
	start := time.Now()
	ok := from.acquire(n, c.stopReading)
	m.readBlocked.WithLabelValues(setting).Add(time.Since(start).Seconds())
	m.readersBlocked.WithLabelValues(setting).Dec()
	return ok
}

// dequeued gives back q's slot in queued.max.requests: the processor has
// taken it from the queue.
func (c *conn) dequeued(q queuedRequest) {
	if q.size == 0 {
		return
	}
	// The gauge first: a reader waiting for the slot counts itself in
	// once it has it, and the gauge must not hold both for a moment.
	c.broker.metrics.queuedRequests.Dec()
	c.broker.queuedRequests.release(1)
}

// release gives back q's bytes: it has been answered or dropped, and its
// frame is no longer referenced.
func (c *conn) release(q queuedRequest) {
	if q.recycled != nil {
		c.broker.frames.put(q.recycled)
	}
	if q.size == 0 {
		return
	}
	c.broker.metrics.queuedRequestBytes.Sub(float64(q.size)) // before the bytes, as in dequeued
	c.held.release(q.size)
	c.broker.queuedBytes.release(q.size)
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
	return queuedRequest{api: a, request: &request{header: header, body: body, received: time.Now(), readerDone: c.readerDone, remote: c.remote, session: c.session}}
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

// process answers one request, or hands its reply to the responder
// (handedOff). An error closes the connection.
func (c *conn) process(ctx context.Context, q queuedRequest) (handedOff bool, err error) {
	if q.api == nil || q.api.key != kmsg.Produce.Int16() {
		c.outstanding.Wait() // handled after every earlier request is answered
	}
	if q.unsupported != nil {
		return false, c.write(apiVersionsUnsupported(), q.unsupported.correlationID)
	}
	if err := c.session.admit(q.api.key); err != nil {
		c.broker.metrics.unauthenticated.Inc()
		return false, err
	}
	c.awaitMute(ctx)
	began := time.Now()
	r, err := q.api.handle(ctx, c.broker, q.request)
	if err != nil {
		return false, err
	}
	if throttle := c.chargeQuotas(q, r, time.Since(began)); throttle > 0 {
		if r != nil {
			r.throttle(throttleMillis(throttle))
		}
		c.mutedUntil = time.Now().Add(throttle)
	}
	if r == nil {
		c.broker.metrics.observe(q.api.name, q.request.received)
		return false, nil
	}
	if awaited, ok := r.(awaitedReply); ok {
		c.outstanding.Add(1)
		c.responses <- awaitedResponse{q: q, reply: awaited}
		return true, nil
	}
	defer r.release()
	if err := c.writeReply(q, r); err != nil {
		return false, err
	}
	return false, c.session.closing
}

// chargeQuotas counts a handled request, answered with r, against its
// client's quotas: the handler's time (less a long poll's wait) against
// request_percentage, a produce's request bytes against
// producer_byte_rate, a fetch's record bytes against consumer_byte_rate.
// It returns how long the client is over the most.
func (c *conn) chargeQuotas(q queuedRequest, r reply, took time.Duration) time.Duration {
	st := c.broker.meta.State()
	if !st.HasClientQuotas() || c.broker.quotaExempt(q.request) {
		return 0
	}
	clientID, user := q.request.header.clientID, q.request.quotaUser()
	throttle := c.broker.quotas.charge(st, meta.RequestPercentage, user, clientID, max(took-q.request.waited, 0).Seconds())
	if q.api.key == kmsg.Produce.Int16() {
		throttle = max(throttle, c.broker.quotas.charge(st, meta.ProducerByteRate, user, clientID, float64(q.size)))
	}
	if fetched, ok := r.(*fetchReply); ok {
		throttle = max(throttle, c.broker.quotas.charge(st, meta.ConsumerByteRate, user, clientID, float64(fetched.bytes())))
	}
	if throttle > 0 {
		c.broker.metrics.throttled.WithLabelValues(q.api.name).Inc()
	}
	return throttle
}

// awaitMute waits until a throttled client's time is up: the connection
// handles nothing more from it meanwhile, as a Kafka broker mutes the
// channel.
func (c *conn) awaitMute(ctx context.Context) {
	wait := time.Until(c.mutedUntil)
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	case <-c.readerDone:
	}
}

// writeReply writes q's reply and counts the request as answered.
func (c *conn) writeReply(q queuedRequest, r reply) error {
	if err := c.write(r, q.request.header.correlationID); err != nil {
		return err
	}
	c.broker.metrics.observe(q.api.name, q.request.received)
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
