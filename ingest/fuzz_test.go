package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
)

// fuzzFrameLimit is socket.request.max.bytes for the fuzzed broker.
const fuzzFrameLimit = 64 << 10

// scriptedConn is a connection whose peer sends script and then goes
// quiet: reads after the script return EOF. It records what the broker
// writes, how far it read, and whether it closed the connection.
type scriptedConn struct {
	mu      sync.Mutex
	script  []byte
	read    int
	written bytes.Buffer
	closed  bool
}

func newScriptedConn(script []byte) *scriptedConn {
	return &scriptedConn{script: script}
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.read == len(c.script) {
		return 0, io.EOF
	}
	n := copy(p, c.script[c.read:])
	c.read += n
	return n, nil
}

func (c *scriptedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.written.Write(p)
}

func (c *scriptedConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// smallTopics refuses topics of more than a few partitions, which fuzzed
// CreateTopics requests ask for, so that one input cannot spend the run
// opening thousands of logs.
type smallTopics struct{ Metadata }

func (m smallTopics) Propose(ctx context.Context, cmd meta.Command) (meta.Result, error) {
	if create, ok := cmd.(*meta.CreateTopic); ok && len(create.Replicas) > 8 {
		return meta.Result{}, fmt.Errorf("%w: fuzzing allows at most 8 partitions", meta.ErrInvalidPartitions)
	}
	return m.Metadata.Propose(ctx, cmd)
}

// scriptExpectation is what the broker must do with a script: answer these
// correlation ids in order, and read no further than readLimit (the end of
// the frame that breaks the protocol, or of its size prefix when the size
// itself is the violation).
type scriptExpectation struct {
	answers   []int32
	noAnswer  map[int]bool // positions in answers after an acks=0 produce
	readLimit int
}

// expectScript walks a script the way the protocol defines it.
func expectScript(script []byte) scriptExpectation {
	e := scriptExpectation{readLimit: len(script), noAnswer: map[int]bool{}}
	acksZeroSeen := false
	for pos := 0; pos+frameSizeBytes <= len(script); {
		size := int32(binary.BigEndian.Uint32(script[pos:]))
		if size < requestHeaderMinBytes || size > fuzzFrameLimit {
			e.readLimit = pos + frameSizeBytes
			return e
		}
		end := pos + frameSizeBytes + int(size)
		if end > len(script) {
			return e
		}
		frame := script[pos+frameSizeBytes : end]
		pos = end
		header := peekHeader(frame)
		if _, ok := lookupAPI(header.key, header.version); !ok {
			if header.key == apiVersionsKey {
				e.answers = append(e.answers, header.correlationID)
				continue
			}
			e.readLimit = end
			return e
		}
		req, _, err := decodeRequest(frame, header)
		if err != nil {
			e.readLimit = end
			return e
		}
		if produce, ok := req.(*kmsg.ProduceRequest); ok && produce.Acks == 0 {
			acksZeroSeen = true
			continue
		}
		if acksZeroSeen {
			e.noAnswer[len(e.answers)] = true
		}
		e.answers = append(e.answers, header.correlationID)
	}
	return e
}

// FuzzConn feeds arbitrary bytes to a broker connection. The broker must
// not panic; must not allocate for a frame past socket.request.max.bytes;
// must answer the well-formed requests in order; must close the connection
// at the first protocol violation, reading nothing after it; and may stop
// answering early only after an acks=0 produce (which closes the connection
// when it fails, as Kafka does).
func FuzzConn(f *testing.F) {
	b := newTestBrokerWith(f, func(c *Config) { c.MaxRequestBytes = fuzzFrameLimit }, func(m Metadata) Metadata { return smallTopics{m} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := b.createTopic(ctx, topicSpec{name: "fuzz", partitions: 2, replicationFactor: 1}, false); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		socket := newScriptedConn(script)
		c := newConn(b, socket, b.config.Listeners[0])
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		// Long polls end once the connection stops reading, so serving ends
		// soon after the script does.
		c.serve(context.Background())
		runtime.ReadMemStats(&after)

		if grown := after.TotalAlloc - before.TotalAlloc; grown > 64*fuzzFrameLimit+64*uint64(len(script)) {
			t.Fatalf("serving %d bytes allocated %d bytes", len(script), grown)
		}
		if !socket.closed {
			t.Fatal("the connection was not closed when serving ended")
		}
		want := expectScript(script)
		if socket.read > want.readLimit {
			t.Fatalf("read %d bytes; the protocol broke at %d and nothing after it may be read", socket.read, want.readLimit)
		}
		var got []int32
		out := socket.written.Bytes()
		for len(out) > 0 {
			if len(out) < 8 {
				t.Fatalf("%d stray bytes after the last response", len(out))
			}
			size := int(binary.BigEndian.Uint32(out))
			if size+4 > len(out) {
				t.Fatalf("response of %d bytes cut short at %d", size, len(out)-4)
			}
			got = append(got, int32(binary.BigEndian.Uint32(out[4:])))
			out = out[4+size:]
		}
		if len(got) > len(want.answers) {
			t.Fatalf("answered %v, want %v", got, want.answers)
		}
		for i, id := range got {
			if id != want.answers[i] {
				t.Fatalf("answer %d has correlation id %d, want %d (all: %v, want %v)", i, id, want.answers[i], got, want.answers)
			}
		}
		if len(got) < len(want.answers) && !want.noAnswer[len(got)] {
			t.Fatalf("answered %d of %d requests (%v, want %v) with no acks=0 produce to explain it", len(got), len(want.answers), got, want.answers)
		}
	})
}
