package ingest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/internal/metatest"
)

// newTestBroker starts a broker on an in-process single-voter metadata
// node, both in t's temporary directory, and stops them when t ends.
func newTestBroker(t testing.TB, configure func(*Config)) *Broker {
	return newTestBrokerWith(t, configure, nil)
}

// newTestBrokerWith is newTestBroker with the metadata seam wrapped.
func newTestBrokerWith(t testing.TB, configure func(*Config), wrap func(Metadata) Metadata) *Broker {
	t.Helper()
	return newTestBrokerTiering(t, configure, wrap, nil)
}

// newTestBrokerTiering is newTestBrokerWith with tiered storage.
func newTestBrokerTiering(t testing.TB, configure func(*Config), wrap func(Metadata) Metadata, tiering *Tiering) *Broker {
	t.Helper()
	dir := t.TempDir()
	node := metatest.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "partitions")
	cfg.Listeners[0].Address = "127.0.0.1:9092"
	cfg.Groups.InitialRebalanceDelay = 0
	if configure != nil {
		configure(&cfg)
	}
	var md Metadata = node
	if wrap != nil {
		md = wrap(node)
	}
	cleaner, err := compact.New(compact.DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cleaner.Start()
	t.Cleanup(cleaner.Close) // after the broker's shutdown, registered below
	b, err := New(cfg, Deps{Meta: md, Tiering: tiering, Cleaner: cleaner})
	if err != nil {
		t.Fatal(err)
	}
	// Every test's produce requests check that nothing reads a frame
	// after it is recycled (framepool.go).
	b.frames.poison = true
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return b
}

// testClient talks to one connection of a broker over an in-memory pipe.
type testClient struct {
	t    testing.TB
	conn net.Conn
	next int32
}

// connect serves one new connection of b over a pipe.
func connect(t testing.TB, b *Broker) *testClient {
	t.Helper()
	client, server := net.Pipe()
	c := newConn(b, server, b.config.Listeners[0])
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.serve(context.Background())
	}()
	t.Cleanup(func() {
		client.Close()
		<-done
	})
	return &testClient{t: t, conn: client}
}

// encodeRequest frames req at its version with correlation id.
func encodeRequest(req kmsg.Request, correlationID int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// request sends req at version and decodes the response at that version.
func (c *testClient) request(req kmsg.Request, version int16) kmsg.Response {
	c.t.Helper()
	req.SetVersion(version)
	c.next++
	if _, err := c.conn.Write(encodeRequest(req, c.next)); err != nil {
		c.t.Fatalf("writing %s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	frame, err := readResponseFrame(c.conn)
	if err != nil {
		c.t.Fatalf("reading the %s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.next {
		c.t.Fatalf("correlation id %d, want %d", got, c.next)
	}
	resp := req.ResponseKind()
	body := frame[4:]
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		if body[0] != 0 {
			c.t.Fatalf("response header has %d tagged fields", body[0])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding the %s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

func readResponseFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r, frame)
	return frame, err
}
