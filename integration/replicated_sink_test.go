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

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// startReplicatedSink is a durable sink in dir that replicates every
// produce to followers of its own (files replica-1, replica-2, ... in
// dir) and answers once all of them hold it: the bound for a replicated
// topic whose every in-sync replica acknowledges (acks=all). Durable,
// each copy is made durable by fdatasync first (fsync before ack, group
// commit on each); if not, each answers once written (periodic
// flushing).
func startReplicatedSink(t testing.TB, address, topic string, partitions int32, followers int, dir string, durable bool) *nullSink {
	s := startDurableSink(t, address, topic, partitions, dir)
	replicas := make([]net.Conn, followers)
	for i := range replicas {
		replicas[i] = startSinkFollower(t, filepath.Join(dir, fmt.Sprintf("replica-%d", i+1)), durable)
	}
	s.mu.Lock()
	s.replicas, s.noSync = replicas, !durable
	s.mu.Unlock()
	s.syncMu.Lock()
	s.replicaAt = make([]int64, followers)
	s.syncMu.Unlock()
	for i, c := range replicas {
		s.wg.Go(func() { s.hearFollower(i, c) })
	}
	return s
}

// replicate sends the records a produce appended (s.forward) to every
// follower as one frame, their length and then the bytes. s.mu is held,
// so each follower receives the log's bytes in the log's order.
func (s *nullSink) replicate() {
	if len(s.forward) == 0 {
		return
	}
	size := binary.BigEndian.AppendUint32(nil, uint32(len(s.forward)))
	for i, c := range s.replicas {
		frame := net.Buffers{size, s.forward}
		if _, err := frame.WriteTo(c); err != nil {
			s.failReplication(fmt.Errorf("send to follower %d: %w", i+1, err))
		}
	}
	s.forward = s.forward[:0]
}

// hearFollower takes follower i's acknowledgements from c (how many bytes
// of the log it holds, as a big-endian int64) until c closes.
func (s *nullSink) hearFollower(i int, c net.Conn) {
	var at [8]byte
	for {
		if _, err := io.ReadFull(c, at[:]); err != nil {
			s.failReplication(fmt.Errorf("follower %d: %w", i+1, err))
			return
		}
		s.syncMu.Lock()
		s.replicaAt[i] = int64(binary.BigEndian.Uint64(at[:]))
		s.done.Broadcast()
		s.syncMu.Unlock()
	}
}

// failReplication fails every produce still waiting, and every later one.
func (s *nullSink) failReplication(err error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.syncErr == nil {
		s.syncErr = err
	}
	s.done.Broadcast()
}

// startSinkFollower starts a replicated sink's follower appending to a
// file at path and returns the leader's end of its loopback connection.
// The follower acknowledges after each group commit (an fdatasync covering
// every frame received before it began) or, if not durable, after each
// frame it writes. It stops when the leader closes its end.
func startSinkFollower(t testing.TB, path string, durable bool) net.Conn {
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
	fl := &sinkFollower{conn: conn, log: f, durable: durable}
	fl.more = sync.NewCond(&fl.mu)
	var wg sync.WaitGroup
	wg.Go(fl.receive)
	if durable {
		wg.Go(fl.commit)
	}
	t.Cleanup(func() {
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
	durable bool

	mu      sync.Mutex
	more    *sync.Cond // written grew, or the leader left
	written int64
	closed  bool
}

// receive appends each frame the leader sends to the log; if not durable,
// it acknowledges each at once.
func (fl *sinkFollower) receive() {
	defer func() {
		fl.conn.Close()
		fl.mu.Lock()
		fl.closed = true
		fl.more.Broadcast()
		fl.mu.Unlock()
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
		fl.mu.Lock()
		fl.written += int64(n)
		written := fl.written
		fl.more.Signal()
		fl.mu.Unlock()
		if !fl.durable && fl.acknowledge(written) != nil {
			return
		}
	}
}

// commit makes what receive wrote durable, one fdatasync for everything
// written before it began, and acknowledges it.
func (fl *sinkFollower) commit() {
	var synced int64
	for {
		fl.mu.Lock()
		for fl.written == synced && !fl.closed {
			fl.more.Wait()
		}
		target, closed := fl.written, fl.closed
		fl.mu.Unlock()
		if closed {
			return
		}
		if err := unix.Fdatasync(int(fl.log.Fd())); err != nil {
			fl.conn.Close()
			return
		}
		synced = target
		if fl.acknowledge(synced) != nil {
			return
		}
	}
}

func (fl *sinkFollower) acknowledge(at int64) error {
	_, err := fl.conn.Write(binary.BigEndian.AppendUint64(nil, uint64(at)))
	return err
}

// The replicated sink is RF 3's bound only if it does what RF 3 must: a
// produce is answered only once every follower holds it, and each
// follower holds the leader's bytes in order.
func TestReplicatedSinkAnswersOnceEveryCopyHoldsTheRecords(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			dir := t.TempDir()
			address := freePort(t)
			sink := startReplicatedSink(t, address, "sink", 4, 2, dir, durable)
			cl, err := kgo.NewClient(kgo.SeedBrokers(address), kgo.DefaultProduceTopic("sink"),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				value := fmt.Appendf(nil, "value-%d", i)
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: value}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				for _, replica := range []string{"replica-1", "replica-2"} {
					b, err := os.ReadFile(filepath.Join(dir, replica))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Contains(b, value) {
						t.Fatalf("record %d answered before %s held it", i, replica)
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
		})
	}
}
