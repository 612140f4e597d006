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
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// nullSink is the produce benchmarks' limit: a Kafka listener that answers
// ApiVersions, Metadata, InitProducerId and Produce and says every produce
// succeeded. It measures what the client, the loopback network and the
// protocol cost by themselves. A connection's answers are written by a
// goroutine of their own, so requests in flight overlap as they do on the
// broker.
//
// A durable sink (startDurableSink) also does the least a broker that
// fsyncs before acknowledging must do: it appends every produce's record
// bytes to one file and answers once an fdatasync begun after the append
// has returned, one call covering every append made before it began
// (group commit). No per-partition files, indexes or checksums: its
// latency at a load is the bound for fsync before ack on this machine,
// with this client.
//
// A partition-files sink (startPartitionFilesSink) is the bound for a
// broker that keeps each partition in files of its own, as strata and
// Kafka do: it appends each partition's record bytes to that partition's
// file (a request's partitions spread over GOMAXPROCS goroutines, as the
// broker spreads them) and answers once a syncfs of the directory's file
// system begun after the appends has returned. With thousands of
// partitions every request then writes to thousands of files, and each
// syncfs writes their last pages and inodes out: the cost of the layout
// itself, with nothing of the broker's.
//
// A replicated sink (startReplicatedSink) is the bound for RF 3 with fsync
// before ack: a durable sink, the leader, that also sends each produce's
// record bytes over loopback TCP to followers (sinkFollower), each of
// which appends them to a file of its own, makes them durable by group
// commit and tells the leader how far; the leader answers once its file
// and every follower's hold the produce. Three copies on one disk, three
// fdatasyncs and the hops between, pushed as soon as they arrive: none
// of a broker's indexes, checksums or fetch round trips.
type nullSink struct {
	ln         net.Listener
	topic      string
	partitions int32
	wg         sync.WaitGroup

	mu      sync.Mutex
	offsets map[int32]int64
	log     *os.File   // the durable sink's one file; nil otherwise
	files   []*os.File // the partition-files sink's, by partition; nil otherwise
	dir     *os.File   // the partition-files sink's directory, for syncfs
	written int64      // bytes appended to log or files

	// The replicated sink's: its followers (set before it listens), the
	// records of the produce being appended, on their way to them, and
	// the leader's own group commit.
	replicas []net.Conn
	forward  []byte
	commits  *groupCommit
	closing  sync.Once

	syncMu    sync.Mutex
	synced    int64   // bytes of log an fdatasync has covered
	replicaAt []int64 // bytes each follower holds, by replicas' index
	syncing   bool
	done      *sync.Cond
	syncErr   error // the first failure; never cleared
}

func startNullSink(t testing.TB, address, topic string, partitions int32) *nullSink {
	return startSink(t, address, topic, partitions, nil)
}

// startDurableSink is a null sink that makes every produce durable in a
// file in dir before answering it.
func startDurableSink(t testing.TB, address, topic string, partitions int32, dir string) *nullSink {
	return startSink(t, address, topic, partitions, durableSinkFile(t, dir))
}

// durableSinkFile is a durable sink's file in dir, closed when the test
// ends.
func durableSinkFile(t testing.TB, dir string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "durable-sink"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// startPartitionFilesSink is a null sink that writes every partition's
// records to a file of its own in dir and makes them durable with one
// syncfs before answering.
func startPartitionFilesSink(t testing.TB, address, topic string, partitions int32, dir string) *nullSink {
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*os.File, partitions)
	t.Cleanup(func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		d.Close()
	})
	for p := range files {
		if files[p], err = os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", topic, p))); err != nil {
			t.Fatal(err)
		}
	}
	s := newSink(topic, partitions, nil)
	s.files, s.dir = files, d
	s.listen(t, address)
	return s
}

func startSink(t testing.TB, address, topic string, partitions int32, log *os.File) *nullSink {
	s := newSink(topic, partitions, log)
	s.listen(t, address)
	return s
}

// newSink is a sink not yet listening, writing to log if it is not nil.
func newSink(topic string, partitions int32, log *os.File) *nullSink {
	s := &nullSink{topic: topic, partitions: partitions, offsets: map[int32]int64{}, log: log}
	s.done = sync.NewCond(&s.syncMu)
	return s
}

// listen makes s take connections at address.
func (s *nullSink) listen(t testing.TB, address string) {
	t.Helper()
	ln, err := net.Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(conn)
			}()
		}
	}()
}

// close stops listening and waits for the connections to end (the client
// must be closed first), and for a replicated sink's own goroutines. A
// second call does nothing.
func (s *nullSink) close() {
	s.closing.Do(func() {
		s.ln.Close()
		if s.commits != nil {
			s.commits.close()
		}
		for _, c := range s.replicas {
			c.Close()
		}
		s.wg.Wait()
	})
}

// answer is one reply on its way to the client: written once the log's
// first durable bytes reach durable (0: at once).
type answer struct {
	out     []byte
	durable int64
}

func (s *nullSink) serve(conn net.Conn) {
	defer conn.Close()
	answers := make(chan answer, 64)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for a := range answers {
			if a.durable > 0 && s.waitDurable(a.durable) != nil {
				conn.Close()
				continue
			}
			if _, err := conn.Write(a.out); err != nil {
				conn.Close()
			}
		}
	}()
	defer func() {
		close(answers)
		<-writerDone
	}()
	var size [4]byte
	for {
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, frame); err != nil {
			return
		}
		r := kbin.Reader{Src: frame}
		key, version, correlation := r.Int16(), r.Int16(), r.Int32()
		r.NullableString()
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		if err := req.ReadFrom(r.Src); err != nil {
			return
		}
		resp, durable := s.answer(req)
		if resp == nil {
			continue
		}
		out := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, uint32(correlation))
		if resp.IsFlexible() && key != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		answers <- answer{out: out, durable: durable}
	}
}

// waitDurable returns once the log's first end bytes are held: an
// fdatasync of the log (a syncfs, for the partition-files sink) that began
// after they were written has returned, and for a replicated sink every
// follower has acknowledged them. The first waiter with no call in flight
// makes the call; those who come meanwhile wait for the next, which covers
// them all. A replicated sink's waiters only wait: its leader syncs as the
// log grows (its groupCommit), so the leader's fdatasync for one produce
// never waits for the followers to acknowledge the one before.
func (s *nullSink) waitDurable(end int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for !s.holdsLocked(end) && s.syncErr == nil {
		if s.syncing || s.replicas != nil {
			s.done.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		s.mu.Lock()
		target := s.written
		s.mu.Unlock()
		var err error
		if s.files != nil {
			err = unix.Syncfs(int(s.dir.Fd()))
		} else {
			err = unix.Fdatasync(int(s.log.Fd()))
		}
		s.syncMu.Lock()
		s.syncing = false
		s.synced = max(s.synced, target)
		s.failLocked(err)
	}
	return s.syncErr
}

// holdsLocked reports whether the log's first end bytes are held where
// waitDurable needs them. syncMu is held.
func (s *nullSink) holdsLocked(end int64) bool {
	return s.synced >= end && !slices.ContainsFunc(s.replicaAt, func(at int64) bool { return at < end })
}

// failLocked keeps err, if it is the first failure, and wakes every
// waiter either way (something they wait for may have changed). syncMu
// is held.
func (s *nullSink) failLocked(err error) {
	if s.syncErr == nil {
		s.syncErr = err
	}
	s.done.Broadcast()
}

// answer is the reply to req, and for a produce to a durable sink the
// log's length once its records are appended (the reply waits for that
// much to be durable).
func (s *nullSink) answer(req kmsg.Request) (kmsg.Response, int64) {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []struct{ key, min, max int16 }{{0, 3, 12}, {3, 0, 12}, {18, 0, 4}, {22, 0, 5}} {
			v := kmsg.NewApiVersionsResponseApiKey()
			v.ApiKey, v.MinVersion, v.MaxVersion = k.key, k.min, k.max
			resp.ApiKeys = append(resp.ApiKeys, v)
		}
		return resp, 0
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(s.ln.Addr().String())
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host = 1, host
		portNumber, _ := net.LookupPort("tcp", port)
		b.Port = int32(portNumber)
		resp.Brokers = append(resp.Brokers, b)
		resp.ControllerID = 1
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(s.topic)
		for p := range s.partitions {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.Replicas, mp.ISR = p, 1, []int32{1}, []int32{1}
			t.Partitions = append(t.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, t)
		return resp, 0
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 1, 0
		return resp, 0
	case *kmsg.ProduceRequest:
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, rt := range req.Topics {
			t := kmsg.NewProduceResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewProduceResponseTopicPartition()
				p.Partition, p.BaseOffset = rp.Partition, s.offsets[rp.Partition]
				// The count of records is in the batch header; one batch per
				// partition is what kgo sends.
				if len(rp.Records) >= 61 {
					s.offsets[rp.Partition] += int64(binary.BigEndian.Uint32(rp.Records[57:]))
				}
				if s.log != nil {
					n, err := s.log.Write(rp.Records)
					if err != nil {
						p.ErrorCode = kerr.KafkaStorageError.Code
					}
					s.written += int64(n)
					if s.replicas != nil {
						s.forward = append(s.forward, rp.Records[:n]...)
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		if s.files != nil {
			s.writePartitions(req, resp)
		}
		if s.replicas != nil {
			s.replicateLocked()
		}
		if req.Acks == 0 {
			return nil, 0
		}
		if s.log == nil && s.files == nil {
			return resp, 0
		}
		return resp, s.written
	}
	return nil, 0
}

// writePartitions appends each partition's records of req to its file,
// spread over GOMAXPROCS goroutines by partition number, and marks the
// partitions of resp whose write failed. s.mu is held.
func (s *nullSink) writePartitions(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	workers := runtime.GOMAXPROCS(0)
	var written atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i, rt := range req.Topics {
				for j, rp := range rt.Partitions {
					if rp.Partition < 0 || rp.Partition >= s.partitions || int(rp.Partition)%workers != w {
						continue
					}
					n, err := s.files[rp.Partition].Write(rp.Records)
					if err != nil {
						resp.Topics[i].Partitions[j].ErrorCode = kerr.KafkaStorageError.Code
					}
					written.Add(int64(n))
				}
			}
		})
	}
	wg.Wait()
	s.written += written.Load()
}

// The partition-files sink is a benchmark's bound only if it stores what
// a broker would: each partition's batches, in order, in its own file.
func TestPartitionFilesSinkKeepsEachPartitionInItsFile(t *testing.T) {
	const partitions = 4
	dir := t.TempDir()
	address := freePort(t)
	sink := startPartitionFilesSink(t, address, "sink", partitions, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(address), kgo.DefaultProduceTopic("sink"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		r := &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "value-%d-of-%d", i, i%partitions)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	sink.close()
	for p := range partitions {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("sink-%d.log", p)))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := p; i < 40; i += partitions {
			want = append(want, fmt.Sprintf("value-%d-of-%d", i, p))
		}
		// Uncompressed, a record's value is in the file as it was sent.
		if got := bytes.Count(b, []byte("value-")); got != len(want) {
			t.Errorf("partition %d holds %d values, want %d", p, got, len(want))
		}
		for _, v := range want {
			at := bytes.Index(b, []byte(v))
			if at < 0 {
				t.Fatalf("partition %d: %s missing or out of order", p, v)
			}
			b = b[at+len(v):]
		}
	}
}
