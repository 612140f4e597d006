package integration

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
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
type nullSink struct {
	ln         net.Listener
	topic      string
	partitions int32
	wg         sync.WaitGroup

	mu      sync.Mutex
	offsets map[int32]int64
	log     *os.File // nil: nothing is stored
	written int64    // bytes appended to log

	syncMu  sync.Mutex
	synced  int64 // bytes of log an fdatasync has covered
	syncing bool
	done    *sync.Cond
	syncErr error
}

func startNullSink(t testing.TB, address, topic string, partitions int32) *nullSink {
	return startSink(t, address, topic, partitions, nil)
}

// startDurableSink is a null sink that makes every produce durable in a
// file in dir before answering it.
func startDurableSink(t testing.TB, address, topic string, partitions int32, dir string) *nullSink {
	f, err := os.Create(filepath.Join(dir, "durable-sink"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return startSink(t, address, topic, partitions, f)
}

func startSink(t testing.TB, address, topic string, partitions int32, log *os.File) *nullSink {
	t.Helper()
	ln, err := net.Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	s := &nullSink{ln: ln, topic: topic, partitions: partitions, offsets: map[int32]int64{}, log: log}
	s.done = sync.NewCond(&s.syncMu)
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
	return s
}

// close stops listening and waits for the connections to end (the client
// must be closed first).
func (s *nullSink) close() {
	s.ln.Close()
	s.wg.Wait()
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

// waitDurable returns once an fdatasync of the log that began after its
// first end bytes were written has returned. The first waiter with no
// call in flight makes the call; those who come meanwhile wait for the
// next, which covers them all.
func (s *nullSink) waitDurable(end int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for s.synced < end && s.syncErr == nil {
		if s.syncing {
			s.done.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		s.mu.Lock()
		target := s.written
		s.mu.Unlock()
		err := unix.Fdatasync(int(s.log.Fd()))
		s.syncMu.Lock()
		s.syncing = false
		s.synced, s.syncErr = max(s.synced, target), err
		s.done.Broadcast()
	}
	return s.syncErr
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
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		if req.Acks == 0 {
			return nil, 0
		}
		if s.log == nil {
			return resp, 0
		}
		return resp, s.written
	}
	return nil, 0
}
