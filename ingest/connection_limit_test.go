package ingest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMaxConnectionsSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, setting, want int
		wantErr              string
	}{
		{limit: 1024, want: 192}, // the 256 for sockets less 64 for the bucket client
		{limit: 1024, setting: 192, want: 192},
		{limit: 1024, setting: 193, wantErr: "max.connections 193: the descriptor limit 1024 gives client sockets 192 descriptors"},
		{limit: 1 << 20, want: 1<<18 - 512}, // the bucket client's part is capped

		{limit: 1024, setting: -1, wantErr: "max.connections -1: want 0"},
	} {
		cfg := DefaultConfig()
		cfg.DescriptorLimit, cfg.MaxConnections = c.limit, c.setting
		err := cfg.Validate()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("limit %d, max.connections %d: Validate = %v, want %q", c.limit, c.setting, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		d, _ := cfg.descriptorBudget()
		if got := cfg.maxConnections(d); got != c.want {
			t.Errorf("limit %d, max.connections %d: in force %d, want %d", c.limit, c.setting, got, c.want)
		}
	}
}

// apiVersions sends an ApiVersions request on conn and reads its answer.
func apiVersions(t *testing.T, conn net.Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := conn.Write(encodeRequest(req, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := readResponseFrame(conn); err != nil {
		t.Fatal(err)
	}
}

func TestMaxConnectionsWaitsForASlot(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *Config) { c.MaxConnections = 2 })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b.Shutdown(ctx)
		if err := <-served; !errors.Is(err, ErrBrokerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	first, second := dial(), dial()
	apiVersions(t, first)
	apiVersions(t, second)
	// Both slots are taken, so the accept loop waits for one before it
	// accepts again; the third client stays in the listen backlog.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for b.connectionSlots.waits.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the accept loop never waited with max.connections open")
		case <-time.After(time.Millisecond):
		}
	}
	third := dial()
	b.mu.Lock()
	open := len(b.mu.conns)
	b.mu.Unlock()
	if open != 2 {
		t.Fatalf("%d connections open with max.connections 2", open)
	}
	first.Close()
	apiVersions(t, third) // answered once the first connection ended
}

// TestTheInterBrokerListenerIsNotLimited: with every max.connections slot
// held by an idle client, a follower still connects on an inter-broker
// listener apart from the clients' (KIP-402); before, it waited in the
// listen backlog as long as the clients held on (connections.max.idle.ms),
// and the partitions it follows fell out of their ISRs.
func TestTheInterBrokerListenerIsNotLimited(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, func(c *Config) {
		c.MaxConnections = 1
		c.Listeners = append(c.Listeners, Listener{Name: "REPLICATION", Protocol: Plaintext, Address: "127.0.0.1:9093"})
		c.InterBrokerListener = "REPLICATION"
	})
	listen := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- b.ServeListener(ln, name) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b.Shutdown(ctx)
			if err := <-served; !errors.Is(err, ErrBrokerClosed) {
				t.Errorf("ServeListener %s: %v", name, err)
			}
		})
		return ln.Addr().String()
	}
	clients, replication := listen(b.config.Listeners[0].Name), listen("REPLICATION")
	// A connection not accepted waits in the backlog: its answer times out.
	dial := func(addr string) net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	apiVersions(t, dial(clients)) // the one slot, held
	apiVersions(t, dial(replication))
	apiVersions(t, dial(replication))
}
