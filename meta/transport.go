package meta

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One TCP listener per node carries two protocols. The dialler writes one
// byte first:
//
//	0x01  Raft (hashicorp/raft's NetworkTransport protocol follows)
//	0x02  the forwarding RPC (forward.go)
//
// The mux reads that byte and hands the connection to the matching virtual
// listener, so a node needs a single meta address, and Raft's transport is
// unchanged.
const (
	muxRaft    byte = 0x01
	muxForward byte = 0x02

	// muxSniffTimeout bounds how long a new connection may take to send its
	// first byte.
	muxSniffTimeout = 10 * time.Second
)

// mux owns the TCP listener. Goroutines: one accept loop, plus one
// short-lived goroutine per new connection that reads its first byte (bounded
// by muxSniffTimeout). close stops and waits for all of them.
type mux struct {
	listener net.Listener
	// clientTLS, when set, is how dial secures connections to peers
	// (Config.TLS); the listener then serves TLS too.
	clientTLS *tls.Config
	advertise net.Addr
	logger    *slog.Logger
	raft      *muxListener
	forward   *muxListener

	done chan struct{}
	wg   sync.WaitGroup
	mu   struct {
		sync.Mutex
		sniffing map[net.Conn]struct{}
	}
}

// stringAddr is an advertised address kept as written (a hostname stays a
// hostname), which Raft uses as this node's address.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

func newMux(listener net.Listener, advertise string, peerTLS *PeerTLS, logger *slog.Logger) *mux {
	m := &mux{listener: listener, advertise: stringAddr(advertise), logger: logger, done: make(chan struct{})}
	if peerTLS != nil {
		m.listener, m.clientTLS = tls.NewListener(listener, peerTLS.Server), peerTLS.Client
	}
	m.mu.sniffing = make(map[net.Conn]struct{})
	m.raft = m.newListener()
	m.forward = m.newListener()
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		conn, err := m.listener.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			m.logger.Warn("meta listener accept failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-m.done:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		m.mu.Lock()
		m.mu.sniffing[conn] = struct{}{}
		m.mu.Unlock()
		m.wg.Add(1)
		go m.route(conn)
	}
}

// route reads a connection's first byte and hands it to its listener. A
// TLS connection shakes hands in that read, within muxSniffTimeout; a peer
// without an acceptable certificate is closed there.
func (m *mux) route(conn net.Conn) {
	defer m.wg.Done()
	var first [1]byte
	_ = conn.SetReadDeadline(time.Now().Add(muxSniffTimeout))
	_, err := conn.Read(first[:])
	_ = conn.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.mu.sniffing, conn)
	m.mu.Unlock()
	if err != nil {
		if _, isTLS := conn.(*tls.Conn); isTLS && !errors.Is(err, io.EOF) {
			m.logger.Warn("meta listener: refused a connection: TLS handshake failed", "remote", conn.RemoteAddr(), "error", err)
		}
		conn.Close()
		return
	}
	var l *muxListener
	switch first[0] {
	case muxRaft:
		l = m.raft
	case muxForward:
		l = m.forward
	default:
		m.logger.Debug("meta listener: unknown protocol byte; closing", "byte", first[0], "remote", conn.RemoteAddr())
		conn.Close()
		return
	}
	select {
	case l.conns <- conn:
	case <-l.done:
		conn.Close()
	case <-m.done:
		conn.Close()
	}
}

// close closes the listener and every connection not yet handed off, and
// waits for the mux's goroutines.
func (m *mux) close() {
	close(m.done)
	m.listener.Close()
	m.mu.Lock()
	for conn := range m.mu.sniffing {
		conn.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// muxListener is a virtual net.Listener fed by the mux.
type muxListener struct {
	m         *mux
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func (m *mux) newListener() *muxListener {
	return &muxListener{m: m, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.conns:
		return conn, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *muxListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *muxListener) Addr() net.Addr { return l.m.advertise }

// raftLayer is the raft.StreamLayer over the mux.
type raftLayer struct{ *muxListener }

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.m.dial(string(address), muxRaft, timeout)
}

// dial connects to a node's meta address, over TLS when the port is
// secured, and selects a protocol.
func (m *mux) dial(address string, protocol byte, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	if m.clientTLS != nil {
		cfg := m.clientTLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(address)
		}
		tc := tls.Client(conn, cfg)
		_ = tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			tc.Close()
			return nil, fmt.Errorf("meta: TLS handshake with %s: %w", address, err)
		}
		_ = tc.SetDeadline(time.Time{})
		conn = tc
	}
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte{protocol}); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}
