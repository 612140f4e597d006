package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// segmentFile writes content to a temporary file and opens it for reading.
func segmentFile(t testing.TB, content []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// drawFetchReply draws a response at version with partitions whose records
// are sections of file, and returns the same response as kmsg would hold it
// with the records in memory.
func drawFetchReply(t *rapid.T, version int16, file *os.File, content []byte) (*fetchReply, *kmsg.FetchResponse) {
	ours := &fetchReply{
		version:        version,
		throttleMillis: rapid.Int32Range(0, 1000).Draw(t, "throttle"),
		errorCode:      rapid.SampledFrom([]int16{0, 0, 70}).Draw(t, "error"),
		sessionID:      rapid.Int32Range(0, 5).Draw(t, "session"),
	}
	theirs := kmsg.NewPtrFetchResponse()
	theirs.Version = version
	if version >= 1 {
		theirs.ThrottleMillis = ours.throttleMillis
	}
	if version >= 7 {
		theirs.ErrorCode, theirs.SessionID = ours.errorCode, ours.sessionID
	} else {
		ours.errorCode, ours.sessionID = 0, 0
	}
	flexible := version >= 12
	for ti := range rapid.IntRange(0, 3).Draw(t, "topics") {
		name := rapid.StringMatching(`[a-z]{1,12}`).Draw(t, "name")
		var id [16]byte
		id[0], id[15] = byte(ti+1), 0xab
		ot := fetchReplyTopic{name: name, id: id}
		tt := kmsg.NewFetchResponseTopic()
		tt.Topic, tt.TopicID = name, id
		for pi := range rapid.IntRange(0, 4).Draw(t, "partitions") {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.ErrorCode = rapid.SampledFrom([]int16{0, 0, 1, 3, 6}).Draw(t, "partitionError")
			p.HighWatermark = rapid.Int64Range(-1, 1<<40).Draw(t, "hwm")
			p.LastStableOffset = rapid.Int64Range(-1, 1<<40).Draw(t, "lso")
			p.LogStartOffset = rapid.Int64Range(-1, 1<<40).Draw(t, "lso")
			if rapid.Bool().Draw(t, "aborted") {
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 9}}
			}
			p.PreferredReadReplica = rapid.Int32Range(-1, 3).Draw(t, "preferred")
			if flexible && rapid.Bool().Draw(t, "tags") {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 4, 100
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 5
			}
			if flexible && rapid.Bool().Draw(t, "snapshot") {
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 1000, 2
			}
			op := fetchReplyPartition{FetchResponseTopicPartition: p}
			records := []byte{}
			for range rapid.IntRange(0, 3).Draw(t, "sections") {
				start := rapid.IntRange(0, len(content)).Draw(t, "start")
				end := rapid.IntRange(start, len(content)).Draw(t, "end")
				op.records = append(op.records, section{file: file, position: int64(start), length: int64(end - start)})
				records = append(records, content[start:end]...)
			}
			p.RecordBatches = records
			ot.partitions = append(ot.partitions, op)
			tt.Partitions = append(tt.Partitions, p)
		}
		ours.topics = append(ours.topics, ot)
		theirs.Topics = append(theirs.Topics, tt)
	}
	if flexible && rapid.Bool().Draw(t, "brokers") {
		rack := "rack-a"
		b := kmsg.FetchResponseBroker{NodeID: 1, Host: "127.0.0.1", Port: 9092, Rack: &rack}
		ours.brokers = []kmsg.FetchResponseBroker{b}
		theirs.Brokers = []kmsg.FetchResponseBroker{b}
	}
	return ours, theirs
}

// materialize builds the frame as it goes on the wire, reading each spliced
// section into it.
func materialize(t testing.TB, frame []byte, splices []splice) []byte {
	t.Helper()
	if err := finishFrame(frame, splices); err != nil {
		t.Fatal(err)
	}
	var out []byte
	from := 0
	for _, s := range splices {
		out = append(out, frame[from:s.at]...)
		buf := make([]byte, s.section.length)
		if _, err := s.section.file.ReadAt(buf, s.section.position); err != nil && s.section.length > 0 {
			t.Fatal(err)
		}
		out = append(out, buf...)
		from = s.at
	}
	return append(out, frame[from:]...)
}

// TestFetchReplyMatchesKmsg checks the spliced encoding byte for byte
// against kmsg's own encoding of the same response, at every Fetch version
// the broker advertises, and that kmsg decodes it back.
func TestFetchReplyMatchesKmsg(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 64)
	file := segmentFile(t, content)
	for version := apis[fetchKey].minVersion; version <= apis[fetchKey].maxVersion; version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				ours, theirs := drawFetchReply(rt, version, file, content)
				frame, splices := ours.appendTo(nil, 42)
				got := materialize(t, frame, splices)

				want := appendResponseHeader(nil, 42, fetchKey, theirs.IsFlexible())
				want = theirs.AppendTo(want)
				binary.BigEndian.PutUint32(want, uint32(len(want)-4))
				if !bytes.Equal(got, want) {
					rt.Fatalf("v%d: encoding differs from kmsg\n got %x\nwant %x", version, got, want)
				}

				headerLen := 8
				if version >= 12 {
					headerLen = 9
				}
				decoded := kmsg.NewPtrFetchResponse()
				decoded.Version = version
				if err := decoded.ReadFrom(got[headerLen:]); err != nil {
					rt.Fatalf("kmsg cannot decode v%d: %v", version, err)
				}
				for i, topic := range decoded.Topics {
					for j, p := range topic.Partitions {
						if !bytes.Equal(p.RecordBatches, theirs.Topics[i].Partitions[j].RecordBatches) {
							rt.Fatalf("topic %d partition %d: records differ", i, j)
						}
					}
				}
			})
		})
	}
}

// TestResponseWriterCopyPaths writes the same spliced frame over loopback
// TCP with sendfile and with pread, and over a pipe (which has no socket),
// and checks the peer reads the same bytes.
func TestResponseWriterCopyPaths(t *testing.T) {
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	file := segmentFile(t, content)
	frame := appendResponseHeader(nil, 7, fetchKey, false)
	frame = append(frame, "head"...)
	at1 := len(frame)
	frame = append(frame, "middle"...)
	at2 := len(frame)
	frame = append(frame, "tail"...)
	splices := []splice{
		{at: at1, section: section{file: file, position: 5, length: 2<<20 + 3}},
		{at: at2, section: section{file: file, position: 1 << 20, length: 1<<20 + 11}},
	}
	want := materialize(t, append([]byte(nil), frame...), splices)

	for _, tc := range []struct {
		name string
		copy FetchCopy
		pipe bool
	}{
		{"sendfile", FetchCopySendfile, false},
		{"pread", FetchCopyPread, false},
		{"pipe", FetchCopySendfile, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := connectedPair(t, tc.pipe)
			received := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(client)
				received <- b
			}()
			var counted int
			w := newResponseWriter(server, tc.copy, func(n int) { counted += n })
			if err := w.writeFrame(append([]byte(nil), frame...), splices); err != nil {
				t.Fatal(err)
			}
			server.Close()
			got := <-received
			if !bytes.Equal(got, want) {
				t.Fatalf("peer read %d bytes, want %d (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
			}
			if counted != len(want) {
				t.Fatalf("counted %d bytes written, want %d", counted, len(want))
			}
		})
	}
}

// TestSendfileSectionPastEnd checks that a section the file no longer holds
// fails the write instead of sending a short frame.
func TestSendfileSectionPastEnd(t *testing.T) {
	file := segmentFile(t, []byte("short"))
	for _, copy := range []FetchCopy{FetchCopySendfile, FetchCopyPread} {
		server, client := connectedPair(t, false)
		go io.Copy(io.Discard, client)
		w := newResponseWriter(server, copy, func(int) {})
		frame := appendResponseHeader(nil, 1, fetchKey, false)
		err := w.writeFrame(frame, []splice{{at: len(frame), section: section{file: file, position: 2, length: 100}}})
		if err == nil {
			t.Fatalf("%s: writing a section past the end of its file succeeded", copy)
		}
	}
}

func connectedPair(t testing.TB, pipe bool) (net.Conn, net.Conn) {
	t.Helper()
	if pipe {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
