package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// replicatedSinkConfig configures startReplicatedSink.
type replicatedSinkConfig struct {
	followers int
	// gate, when set, holds each follower acknowledgement until a value is
	// received from it (tests only).
	gate <-chan struct{}
}

// startReplicatedSink is a durable sink in dir that replicates every
// produce to followers of its own (files replica-1, replica-2, ... in
// dir) and answers once all of them hold it durably: the bound for a
// replicated topic with fsync before ack whose every in-sync replica
// acknowledges (acks=all). Each copy is made durable by a group commit
// of its own (an fdatasync covering every write before it began).
func startReplicatedSink(t testing.TB, address, topic string, partitions int32, dir string, cfg replicatedSinkConfig) *nullSink {
	t.Helper()
	s := newSink(topic, partitions, durableSinkFile(t, dir))
	s.commits = newGroupCommit(s.log)
	s.replicas, s.replicaAt = make([]net.Conn, cfg.followers), make([]int64, cfg.followers)
	for i := range s.replicas {
		s.replicas[i] = startSinkFollower(t, filepath.Join(dir, fmt.Sprintf("replica-%d", i+1)), cfg)
	}
	for i, c := range s.replicas {
		s.wg.Go(func() { s.hearFollower(i, c) })
	}
	s.wg.Go(func() {
		err := s.commits.run(func(synced int64) error {
			s.syncMu.Lock()
			defer s.syncMu.Unlock()
			s.synced = max(s.synced, synced)
			s.done.Broadcast()
			return nil
		})
		if err != nil {
			s.fail(err)
		}
	})
	s.listen(t, address)
	return s
}

// replicateLocked tells the leader's group commit the log grew by the
// records a produce appended (s.forward), then sends them to every
// follower as one frame, their length and then the bytes. s.mu is held,
// so each follower receives the log's bytes in the log's order.
func (s *nullSink) replicateLocked() {
	if len(s.forward) == 0 {
		return
	}
	s.commits.wrote(len(s.forward))
	size := binary.BigEndian.AppendUint32(nil, uint32(len(s.forward)))
	for i, c := range s.replicas {
		frame := net.Buffers{size, s.forward}
		if _, err := frame.WriteTo(c); err != nil {
			s.fail(fmt.Errorf("send to follower %d: %w", i+1, err))
		}
	}
	s.forward = s.forward[:0]
}

// groupCommit makes a file durable as it grows, for the replicated
// sink's leader and followers alike: an fdatasync as soon as bytes were
// written since the last one began, covering all of them.
type groupCommit struct {
	f       *os.File
	mu      sync.Mutex
	more    *sync.Cond // written grew, or close was called
	written int64
	closed  bool
}

func newGroupCommit(f *os.File) *groupCommit {
	g := &groupCommit{f: f}
	g.more = sync.NewCond(&g.mu)
	return g
}

// wrote counts n more bytes written to the file.
func (g *groupCommit) wrote(n int) {
	g.mu.Lock()
	g.written += int64(n)
	g.more.Signal()
	g.mu.Unlock()
}

// close ends run.
func (g *groupCommit) close() {
	g.mu.Lock()
	g.closed = true
	g.more.Broadcast()
	g.mu.Unlock()
}

// run syncs the file whenever it grew and tells done how many bytes the
// sync covered, until close is called (nil) or a sync or done fails.
func (g *groupCommit) run(done func(synced int64) error) error {
	var synced int64
	for {
		g.mu.Lock()
		for g.written == synced && !g.closed {
			g.more.Wait()
		}
		target, closed := g.written, g.closed
		g.mu.Unlock()
		if closed {
			return nil
		}
		if err := unix.Fdatasync(int(g.f.Fd())); err != nil {
			return err
		}
		synced = target
		if err := done(synced); err != nil {
			return err
		}
	}
}

// hearFollower takes follower i's acknowledgements from c (how many bytes
// of the log it holds, as a big-endian int64) until c closes.
func (s *nullSink) hearFollower(i int, c net.Conn) {
	var at [8]byte
	for {
		if _, err := io.ReadFull(c, at[:]); err != nil {
			s.fail(fmt.Errorf("follower %d: %w", i+1, err))
			return
		}
		s.syncMu.Lock()
		s.replicaAt[i] = int64(binary.BigEndian.Uint64(at[:]))
		s.done.Broadcast()
		s.syncMu.Unlock()
	}
}

// fail fails every produce still waiting, and every later one.
func (s *nullSink) fail(err error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.failLocked(err)
}

// startSinkFollower starts a replicated sink's follower appending to a
// file at path and returns the leader's end of its loopback connection.
// The follower acknowledges after each group commit (an fdatasync
// covering every frame received before it began). It stops when the
// leader closes its end.
func startSinkFollower(t testing.TB, path string, cfg replicatedSinkConfig) net.Conn {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	leader, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	fl := &sinkFollower{conn: conn, log: f, commits: newGroupCommit(f), gate: cfg.gate, stop: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(fl.receive)
	wg.Go(func() {
		if fl.commits.run(fl.acknowledge) != nil {
			conn.Close()
		}
	})
	t.Cleanup(func() {
		close(fl.stop)
		leader.Close()
		wg.Wait()
		f.Close()
	})
	return leader
}

// sinkFollower is one follower of a replicated sink.
type sinkFollower struct {
	conn    net.Conn
	log     *os.File
	commits *groupCommit // syncs log and acknowledges what it covered
	gate    <-chan struct{}
	stop    chan struct{} // closed when the test ends
}

// receive appends each frame the leader sends to the log.
func (fl *sinkFollower) receive() {
	defer func() {
		fl.conn.Close()
		fl.commits.close()
	}()
	var size [4]byte
	var frame []byte
	for {
		if _, err := io.ReadFull(fl.conn, size[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		frame = slices.Grow(frame[:0], n)[:n]
		if _, err := io.ReadFull(fl.conn, frame); err != nil {
			return
		}
		if _, err := fl.log.Write(frame); err != nil {
			return
		}
		fl.commits.wrote(n)
	}
}

// acknowledge tells the leader the follower holds its first at bytes,
// once the gate, if any, lets it.
func (fl *sinkFollower) acknowledge(at int64) error {
	if fl.gate != nil {
		select {
		case <-fl.gate:
		case <-fl.stop:
			return net.ErrClosed
		}
	}
	_, err := fl.conn.Write(binary.BigEndian.AppendUint64(nil, uint64(at)))
	return err
}

// The replicated sink is RF 3's bound only if it does what RF 3 must: a
// produce is answered only once every follower has acknowledged it, and
// each follower holds the leader's bytes in order.
func TestReplicatedSinkAnswersOnceEveryFollowerHoldsTheRecords(t *testing.T) {
	dir := t.TempDir()
	address := freePort(t)
	gate := make(chan struct{})
	sink := startReplicatedSink(t, address, "sink", 4, dir, replicatedSinkConfig{followers: 2, gate: gate})
	defer sink.close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(address), kgo.DefaultProduceTopic("sink"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// underSyncMu is cond, looked at under the sink's syncMu.
	underSyncMu := func(cond func() bool) func() bool {
		return func() bool {
			sink.syncMu.Lock()
			defer sink.syncMu.Unlock()
			return cond()
		}
	}
	for i := range 5 {
		value := fmt.Appendf(nil, "value-%d", i)
		answered := make(chan error, 1)
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) { answered <- err })
		// With the followers' acknowledgements held, the leader syncs the
		// record; the produce then waits for them alone, and after one of
		// them for the other.
		var end int64
		eventually(t, "the leader syncs the record", underSyncMu(func() bool {
			sink.mu.Lock()
			end = sink.written
			sink.mu.Unlock()
			return end > 0 && sink.synced >= end && slices.Max(sink.replicaAt) < end
		}))
		for held := range 2 {
			if held == 1 {
				eventually(t, "a follower's acknowledgement lands", underSyncMu(func() bool { return slices.Max(sink.replicaAt) >= end }))
			}
			select {
			case err := <-answered:
				t.Fatalf("record %d answered (%v) with %d of 2 followers' acknowledgements", i, err, held)
			case <-time.After(50 * time.Millisecond): // an answer sent by mistake arrives in this time
			}
			select {
			case gate <- struct{}{}:
			case <-time.After(10 * time.Second):
				t.Fatalf("record %d: follower %d of 2 did not come to acknowledge it", i, held+1)
			}
		}
		select {
		case err := <-answered:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d not answered once both followers acknowledged it", i)
		}
		for _, replica := range []string{"replica-1", "replica-2"} {
			if b, err := os.ReadFile(filepath.Join(dir, replica)); err != nil || !bytes.Contains(b, value) {
				t.Fatalf("record %d answered, %s does not hold it (%v)", i, replica, err)
			}
		}
	}
	cl.Close()
	sink.close()
	leader, err := os.ReadFile(filepath.Join(dir, "durable-sink"))
	if err != nil {
		t.Fatal(err)
	}
	for _, replica := range []string{"replica-1", "replica-2"} {
		if b, _ := os.ReadFile(filepath.Join(dir, replica)); !bytes.Equal(b, leader) {
			t.Errorf("%s holds %d bytes unlike the leader's %d", replica, len(b), len(leader))
		}
	}
}
