package meta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// The forwarding RPC carries what must run on the leader — proposals, read
// index requests, broker heartbeats and join requests — from any node to it.
// It runs on the mux's second protocol (first byte 0x02). Each connection
// carries one request at a time:
//
//	frame    = u32 length | payload          (length <= 32 MiB)
//	request  = op u8 | uvarint timeout_ms | body
//	response = uvarint code | uvarint n | n bytes of message | body
//
// code is 0 for success or an error's wire code (errors.go); the body
// follows only on success. Bodies, by op:
//
//	propose     req:  uvarint count, count x (uvarint n, command envelope)
//	            resp: uvarint count, count x (uvarint index, varint epoch,
//	                  uvarint code, uvarint n, message)
//	            index 0 means that command was not committed.
//	read index  req:  empty; resp: uvarint index
//	heartbeat   req:  varint broker id, varint broker epoch; resp: empty
//	join        req:  uvarint n, node id, uvarint n, address; resp: empty
//
// A node that is not the leader answers ErrNotLeader without acting; the
// caller retries with the leader it learns from Raft.
const (
	opPropose   byte = 1
	opReadIndex byte = 2
	opHeartbeat byte = 3
	opJoin      byte = 4

	maxFrameBytes = 32 << 20
	// forwardDialTimeout bounds connecting to the leader.
	forwardDialTimeout = 2 * time.Second
	// forwardDefaultTimeout bounds a call whose context has no deadline.
	forwardDefaultTimeout = 30 * time.Second
	// maxIdlePerAddr is how many idle connections the client keeps per node.
	maxIdlePerAddr = 4
)

func writeFrame(w io.Writer, payload []byte) error {
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(payload)), uint32(len(payload)))
	_, err := w.Write(append(frame, payload...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrameBytes {
		return nil, fmt.Errorf("meta: forwarding frame of %d bytes exceeds %d", n, maxFrameBytes)
	}
	// Grow with the bytes that arrive rather than trusting the length.
	var payload bytes.Buffer
	if _, err := io.CopyN(&payload, r, int64(n)); err != nil {
		return nil, err
	}
	return payload.Bytes(), nil
}

// wireReader decodes a body; the first error sticks.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("meta: malformed forwarding message")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("meta: malformed forwarding message")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errors.New("meta: malformed forwarding message")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendError(b []byte, err error) []byte {
	b = binary.AppendUvarint(b, errorCode(err))
	if err == nil {
		return appendString(b, "")
	}
	return appendString(b, err.Error())
}

// forwardServer answers forwarding RPCs on the leader. Goroutines: one
// accept loop and one per connection; close stops and waits for them.
type forwardServer struct {
	node     *Node
	listener net.Listener
	logger   *slog.Logger
	wg       sync.WaitGroup
	mu       struct {
		sync.Mutex
		conns  map[net.Conn]struct{}
		closed bool
	}
}

func newForwardServer(n *Node, listener net.Listener) *forwardServer {
	s := &forwardServer{node: n, listener: listener, logger: n.logger}
	s.mu.conns = make(map[net.Conn]struct{})
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

func (s *forwardServer) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return // the mux listener fails only once closed
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.mu.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(conn)
	}
}

func (s *forwardServer) serveConn(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.mu.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	for {
		req, err := readFrame(conn)
		if err != nil {
			return
		}
		if err := writeFrame(conn, s.handle(req)); err != nil {
			return
		}
	}
}

// handle answers one request.
func (s *forwardServer) handle(req []byte) []byte {
	if len(req) == 0 {
		return appendError(nil, fmt.Errorf("%w: empty forwarding request", ErrInvalidCommand))
	}
	r := &wireReader{b: req[1:]}
	timeout := time.Duration(r.uvarint()) * time.Millisecond
	if r.err != nil || timeout <= 0 {
		return appendError(nil, fmt.Errorf("%w: bad forwarding request header", ErrInvalidCommand))
	}
	ctx, cancel := context.WithTimeout(s.node.ctx, timeout)
	defer cancel()
	switch req[0] {
	case opPropose:
		cmds, err := decodeBatchBody(r.b)
		if err != nil {
			return appendError(nil, err)
		}
		results, err := s.node.proposeAsLeader(ctx, cmds)
		if err != nil {
			return appendError(nil, err)
		}
		out := binary.AppendUvarint(appendError(nil, nil), uint64(len(results)))
		for _, res := range results {
			out = binary.AppendUvarint(out, res.index)
			out = binary.AppendVarint(out, res.epoch)
			out = appendError(out, res.err)
		}
		return out
	case opReadIndex:
		index, err := s.node.leaderReadIndex(ctx)
		if err != nil {
			return appendError(nil, err)
		}
		return binary.AppendUvarint(appendError(nil, nil), index)
	case opHeartbeat:
		id, epoch := r.varint(), r.varint()
		if r.err != nil {
			return appendError(nil, fmt.Errorf("%w: %v", ErrInvalidCommand, r.err))
		}
		return appendError(nil, s.node.leaderHeartbeat(int32(id), epoch))
	case opJoin:
		id, addr := r.string(), r.string()
		if r.err != nil {
			return appendError(nil, fmt.Errorf("%w: %v", ErrInvalidCommand, r.err))
		}
		return appendError(nil, s.node.leaderAddNonvoter(ctx, id, addr))
	default:
		return appendError(nil, fmt.Errorf("%w: forwarding op %d", ErrInvalidCommand, req[0]))
	}
}

// close stops accepting, closes every connection and waits.
func (s *forwardServer) close() {
	s.listener.Close()
	s.mu.Lock()
	s.mu.closed = true
	for conn := range s.mu.conns {
		conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// errNotSent marks a forwarding call that certainly did not reach the
// server's handler, so retrying it cannot apply anything twice.
type errNotSent struct{ err error }

func (e *errNotSent) Error() string { return "meta: forwarding: " + e.err.Error() }
func (e *errNotSent) Unwrap() error { return ErrNoLeader }

// forwardClient makes forwarding calls, keeping a few idle connections per
// node. It starts no goroutines.
type forwardClient struct {
	// dial connects to a node's meta address (mux.dial).
	dial func(address string, protocol byte, timeout time.Duration) (net.Conn, error)
	mu   struct {
		sync.Mutex
		idle   map[string][]net.Conn
		closed bool
	}
}

func newForwardClient() *forwardClient {
	c := &forwardClient{}
	c.mu.idle = make(map[string][]net.Conn)
	return c
}

// call sends one request and returns the response body. A failure before the
// request was fully written is an *errNotSent; a failure after it wraps
// ErrOutcomeUnknown, since the server may have acted.
func (c *forwardClient) call(ctx context.Context, addr string, op byte, body []byte) ([]byte, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(forwardDefaultTimeout)
	}
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return nil, &errNotSent{context.DeadlineExceeded}
	}
	conn, err := c.get(addr, min(timeout, forwardDialTimeout))
	if err != nil {
		return nil, &errNotSent{err}
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := append([]byte{op}, binary.AppendUvarint(nil, uint64(max(timeout.Milliseconds(), 1)))...)
	if err := writeFrame(conn, append(req, body...)); err != nil {
		conn.Close()
		return nil, &errNotSent{err}
	}
	resp, err := readFrame(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: waiting for %s: %v", ErrOutcomeUnknown, addr, err)
	}
	r := &wireReader{b: resp}
	code, msg := r.uvarint(), r.string()
	if r.err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %s sent a malformed response", ErrOutcomeUnknown, addr)
	}
	c.put(addr, conn)
	if err := errorFromWire(code, msg); err != nil {
		return nil, err
	}
	return r.b, nil
}

// get returns a live idle connection to addr, or dials one.
func (c *forwardClient) get(addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	for idle := c.mu.idle[addr]; len(idle) > 0; idle = c.mu.idle[addr] {
		conn := idle[len(idle)-1]
		c.mu.idle[addr] = idle[:len(idle)-1]
		if connAlive(conn) {
			c.mu.Unlock()
			return conn, nil
		}
		conn.Close()
	}
	c.mu.Unlock()
	return c.dial(addr, muxForward, timeout)
}

// connAlive reports whether an idle connection is still open: a read with
// an expired deadline times out on a live one, and fails at once on one the
// server closed. Checking before reuse keeps a restarted server's stale
// connections from turning requests into unknown outcomes.
func connAlive(conn net.Conn) bool {
	_ = conn.SetReadDeadline(time.Now())
	var b [1]byte
	_, err := conn.Read(b[:])
	_ = conn.SetReadDeadline(time.Time{})
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

func (c *forwardClient) put(addr string, conn net.Conn) {
	_ = conn.SetDeadline(time.Time{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed || len(c.mu.idle[addr]) >= maxIdlePerAddr {
		conn.Close()
		return
	}
	c.mu.idle[addr] = append(c.mu.idle[addr], conn)
}

// close closes the idle connections; later calls fail with ErrClosed.
func (c *forwardClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closed = true
	for _, conns := range c.mu.idle {
		for _, conn := range conns {
			conn.Close()
		}
	}
	c.mu.idle = nil
}

// propose forwards commands to the leader at addr.
func (c *forwardClient) propose(ctx context.Context, addr string, cmds [][]byte) ([]proposalResult, error) {
	body, err := c.call(ctx, addr, opPropose, appendBatchBody(nil, cmds))
	if err != nil {
		return nil, err
	}
	r := &wireReader{b: body}
	count := r.uvarint()
	if r.err != nil || count != uint64(len(cmds)) {
		return nil, fmt.Errorf("%w: %s answered %d results for %d commands", ErrOutcomeUnknown, addr, count, len(cmds))
	}
	results := make([]proposalResult, count)
	for i := range results {
		results[i].index = r.uvarint()
		results[i].epoch = r.varint()
		code, msg := r.uvarint(), r.string()
		results[i].err = errorFromWire(code, msg)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %s sent malformed results", ErrOutcomeUnknown, addr)
	}
	return results, nil
}

func (c *forwardClient) readIndex(ctx context.Context, addr string) (uint64, error) {
	body, err := c.call(ctx, addr, opReadIndex, nil)
	if err != nil {
		return 0, err
	}
	r := &wireReader{b: body}
	index := r.uvarint()
	return index, r.err
}

func (c *forwardClient) heartbeat(ctx context.Context, addr string, id int32, epoch int64) error {
	_, err := c.call(ctx, addr, opHeartbeat, binary.AppendVarint(binary.AppendVarint(nil, int64(id)), epoch))
	return err
}

func (c *forwardClient) join(ctx context.Context, addr, id, advertise string) error {
	_, err := c.call(ctx, addr, opJoin, appendString(appendString(nil, id), advertise))
	return err
}
