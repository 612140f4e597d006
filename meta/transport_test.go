package meta

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestMuxRoutesByFirstByte(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(l, l.Addr().String(), slog.New(slog.DiscardHandler))
	defer m.close()
	if m.raft.Addr().String() != l.Addr().String() {
		t.Fatalf("advertised %v", m.raft.Addr())
	}
	for _, tc := range []struct {
		protocol byte
		accept   *muxListener
	}{{muxRaft, m.raft}, {muxForward, m.forward}} {
		client, err := dialMux(l.Addr().String(), tc.protocol, time.Second)
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
	bad, err := dialMux(l.Addr().String(), 0x7f, time.Second)
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
	m := newMux(l, l.Addr().String(), slog.New(slog.DiscardHandler))
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
