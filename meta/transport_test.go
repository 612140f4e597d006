package meta

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

func TestMuxRoutesByFirstByte(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(l, l.Addr().String(), nil, slog.New(slog.DiscardHandler))
	defer m.close()
	if m.raft.Addr().String() != l.Addr().String() {
		t.Fatalf("advertised %v", m.raft.Addr())
	}
	for _, tc := range []struct {
		protocol byte
		accept   *muxListener
	}{{muxRaft, m.raft}, {muxForward, m.forward}} {
		client, err := m.dial(l.Addr().String(), tc.protocol, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		server, err := tc.accept.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("protocol %d: read %q, %v", tc.protocol, buf, err)
		}
		client.Close()
		server.Close()
	}

	// An unknown protocol byte gets the connection closed.
	bad, err := m.dial(l.Addr().String(), 0x7f, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = bad.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bad.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("unknown protocol: %v", err)
	}
	bad.Close()

	// Raft's stream layer dials through the mux too.
	conn, err := raftLayer{m.raft}.Dial("127.0.0.1:1", 100*time.Millisecond)
	if err == nil {
		conn.Close()
		t.Fatal("dialled a closed port")
	}
}

func TestMuxCloseStopsAccept(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(l, l.Addr().String(), nil, slog.New(slog.DiscardHandler))
	// A connection that never sends its protocol byte must not hold up
	// close.
	idle, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	m.close()
	if _, err := m.forward.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept after close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		t.Fatal("the listener is still open")
	}
}

// With PeerTLS the port speaks only mutual TLS: a peer with a
// certificate the server's verification admits gets through; one without
// a certificate, with another CA's, or whose principal is refused does
// not, and neither does a plaintext dialler.
func TestMuxMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := tlstest.Write(t, dir, "127.0.0.1")
	other := tlstest.Write(t, t.TempDir(), "127.0.0.1")
	files := tlsfiles.Files{CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore, CAFile: pki.CAFile}
	server, err := tlsfiles.NewServer(files, tlsfiles.ClientAuthRequired, nil)
	if err != nil {
		t.Fatal(err)
	}
	refusedCert, refusedKey := pki.Client("intruder")
	admit := func(cs tls.ConnectionState) error {
		if tlsfiles.Principal(cs) == "User:CN=intruder" {
			return errors.New("not a broker")
		}
		return nil
	}
	client := func(f tlsfiles.Files) *PeerTLS {
		c, err := tlsfiles.Client(f, "")
		if err != nil {
			t.Fatal(err)
		}
		return &PeerTLS{Client: c}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(l, l.Addr().String(), &PeerTLS{Server: server.ConfigVerifying(admit), Client: client(files).Client}, slog.New(slog.DiscardHandler))
	defer m.close()

	// A peer: its write reaches the raft listener.
	conn, err := m.dial(l.Addr().String(), muxRaft, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := m.raft.Accept()
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(accepted, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("a peer's bytes: %q, %v", buf, err)
	}
	conn.Close()
	accepted.Close()

	refused := map[string]*mux{
		"no client certificate":    {clientTLS: client(tlsfiles.Files{CAFile: pki.CAFile}).Client},
		"another CA's":             {clientTLS: client(tlsfiles.Files{CertFile: other.ServerKeystore, KeyFile: other.ServerKeystore, CAFile: pki.CAFile}).Client},
		"a principal not admitted": {clientTLS: client(tlsfiles.Files{CertFile: refusedCert, KeyFile: refusedKey, CAFile: pki.CAFile}).Client},
		"plaintext":                {},
	}
	for name, dialer := range refused {
		conn, err := dialer.dial(l.Addr().String(), muxForward, 5*time.Second)
		if err != nil {
			continue // refused in the handshake
		}
		// TLS 1.3 finishes the client's side first: the refusal shows on
		// the first read.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: the connection was served", name)
		}
		conn.Close()
	}
	select {
	case c := <-m.forward.conns:
		c.Close()
		t.Fatal("a refused dialler reached the forwarding listener")
	default:
	}
}
