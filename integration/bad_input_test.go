package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// rawConn speaks the Kafka protocol by hand, to send what no client would.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	next int32
}

func dialRaw(t testing.TB, s *server) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", s.kafka)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, conn: conn}
}

// frame encodes req at version as a request frame.
func (c *rawConn) frame(req kmsg.Request, version int16) []byte {
	req.SetVersion(version)
	c.next++
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.next))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// roundTrip sends req and decodes its response.
func (c *rawConn) roundTrip(req kmsg.Request, version int16) kmsg.Response {
	c.t.Helper()
	if _, err := c.conn.Write(c.frame(req, version)); err != nil {
		c.t.Fatal(err)
	}
	body, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading the response to %s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	resp := req.ResponseKind()
	headerLen := 4
	if resp.IsFlexible() && req.Key() != 18 {
		headerLen = 5
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.next {
		c.t.Fatalf("response correlation id %d, want %d", got, c.next)
	}
	if err := resp.ReadFrom(body[headerLen:]); err != nil {
		c.t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

func (c *rawConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.conn, body)
	return body, err
}

// expectClosed checks that the broker closes the connection without
// answering.
func (c *rawConn) expectClosed(what string) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	body, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("%s: the broker answered (%d bytes) instead of closing the connection", what, len(body))
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		c.t.Fatalf("%s: want the connection closed, got %v", what, err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func produceRequest(topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func logEnd(t testing.TB, c *rawConn, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req, 7).(*kmsg.ListOffsetsResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// TestBadInput sends what a broken or hostile client might and checks that
// each gets Kafka's error code, or a closed connection, and that the log is
// unchanged.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--socket.request.max.bytes", "1048576")
	createTopic(t, s, "guarded", 1, map[string]*string{"max.message.bytes": kadmString("4096")})
	c := dialRaw(t, s)
	good, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	produceCode := func(topic string, partition int32, records []byte) int16 {
		t.Helper()
		resp := c.roundTrip(produceRequest(topic, partition, records), 12).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produceCode("guarded", 0, append([]byte(nil), good...)); code != 0 {
		t.Fatalf("a good batch: %v", kerr.ErrorForCode(code))
	}
	end := logEnd(t, c, "guarded")

	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 0xff
	big, err := record.Build(record.BuildOptions{FirstTimestamp: 1, ProducerID: -1, BaseSequence: -1},
		[]record.Record{{Value: make([]byte, 8192)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		records   []byte
		want      *kerr.Error
	}{
		{"bad CRC", "guarded", 0, badCRC, kerr.CorruptMessage},
		{"truncated batch", "guarded", 0, good[:len(good)-3], kerr.CorruptMessage},
		// Kafka counts batches before checking them: two are INVALID_RECORD
		// (one batch per partition), even when the second is corrupt.
		{"good batch followed by a bad one", "guarded", 0, append(append([]byte(nil), good...), badCRC...), kerr.InvalidRecord},
		{"two good batches", "guarded", 0, append(append([]byte(nil), good...), good...), kerr.InvalidRecord},
		{"good batch followed by part of one", "guarded", 0, append(append([]byte(nil), good...), good[:len(good)-3]...), kerr.CorruptMessage},
		{"batch above max.message.bytes", "guarded", 0, big, kerr.MessageTooLarge},
		{"unknown topic", "no-such-topic", 0, append([]byte(nil), good...), kerr.UnknownTopicOrPartition},
		{"unknown partition", "guarded", 7, append([]byte(nil), good...), kerr.UnknownTopicOrPartition},
	} {
		if code := produceCode(tc.topic, tc.partition, tc.records); code != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
		if got := logEnd(t, c, "guarded"); got != end {
			t.Fatalf("%s: log end moved from %d to %d", tc.name, end, got)
		}
	}

	// A config name Kafka does not have.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "configured", 1, 1
	cc := kmsg.NewCreateTopicsRequestTopicConfig()
	cc.Name, cc.Value = "retention.millis", kmsg.StringPtr("1000")
	ct.Configs = append(ct.Configs, cc)
	create.Topics = append(create.Topics, ct)
	if code := c.roundTrip(create, 7).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.InvalidConfig.Code {
		t.Fatalf("unknown config name: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}

	// An ApiVersions version we do not answer gets the v0 answer with
	// UNSUPPORTED_VERSION and our versions.
	unsupported := c.frame(kmsg.NewPtrApiVersionsRequest(), 99)
	if _, err := c.conn.Write(unsupported); err != nil {
		t.Fatal(err)
	}
	body, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	versions := kmsg.NewPtrApiVersionsResponse()
	versions.Version = 0
	if err := versions.ReadFrom(body[4:]); err != nil || versions.ErrorCode != kerr.UnsupportedVersion.Code || len(versions.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v99: %v, code %d, %d keys", err, versions.ErrorCode, len(versions.ApiKeys))
	}

	// Protocol violations close the connection.
	violations := []struct {
		name  string
		bytes []byte
	}{
		{"unsupported Produce version", dialRaw(t, s).frame(produceRequest("guarded", 0, good), 99)},
		{"unknown API key", []byte{0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0, 0}},
		{"frame larger than socket.request.max.bytes", []byte{0, 0x20, 0, 0, 0, 0, 0, 0}},
		{"negative frame size", []byte{0xff, 0xff, 0xff, 0xf0}},
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: strata\r\n\r\n")},
		{"truncated produce body", func() []byte {
			f := dialRaw(t, s).frame(produceRequest("guarded", 0, good), 9)
			f = f[:len(f)-20]
			binary.BigEndian.PutUint32(f, uint32(len(f)-4))
			return f
		}()},
	}
	for _, v := range violations {
		vc := dialRaw(t, s)
		if _, err := vc.conn.Write(v.bytes); err != nil {
			t.Fatal(err)
		}
		vc.expectClosed(v.name)
	}
	if got := logEnd(t, dialRaw(t, s), "guarded"); got != end {
		t.Fatalf("log end moved from %d to %d", end, got)
	}
}
