package integration

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nullSink is the produce benchmark's limit: a Kafka listener that answers
// ApiVersions, Metadata, InitProducerId and Produce, says every produce
// succeeded, and stores nothing. It measures what the client, the loopback
// network and the protocol cost by themselves.
type nullSink struct {
	ln         net.Listener
	topic      string
	partitions int32
	wg         sync.WaitGroup

	mu      sync.Mutex
	offsets map[int32]int64
}

func startNullSink(t testing.TB, address, topic string, partitions int32) *nullSink {
	t.Helper()
	ln, err := net.Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	s := &nullSink{ln: ln, topic: topic, partitions: partitions, offsets: map[int32]int64{}}
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

func (s *nullSink) serve(conn net.Conn) {
	defer conn.Close()
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
		resp := s.answer(req)
		if resp == nil {
			continue
		}
		out := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, uint32(correlation))
		if resp.IsFlexible() && key != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func (s *nullSink) answer(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []struct{ key, min, max int16 }{{0, 3, 12}, {3, 0, 12}, {18, 0, 4}, {22, 0, 5}} {
			v := kmsg.NewApiVersionsResponseApiKey()
			v.ApiKey, v.MinVersion, v.MaxVersion = k.key, k.min, k.max
			resp.ApiKeys = append(resp.ApiKeys, v)
		}
		return resp
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
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 1, 0
		return resp
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
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		if req.Acks == 0 {
			return nil
		}
		return resp
	}
	return nil
}
