package ingest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

// hotFetchBytes is how much one benchmark topic holds: enough to exceed
// the socket buffers many times, small enough for the page cache.
const hotFetchBytes = 256 << 20

// cpuSeconds is the process's user plus system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// loopbackSink is a loopback TCP connection whose far end reads and
// discards what is sent, and says when it has read a given number of
// bytes: a raw pass ends when its bytes have arrived, as a broker pass
// ends when its client has read the last response. The far end's
// goroutine stops when the benchmark ends.
type loopbackSink struct {
	socket *net.TCPConn
	expect chan int64 // bytes the far end is to read next
	read   chan error // one per expect: nil once they have been read
}

func newLoopbackSink(b *testing.B) *loopbackSink {
	b.Helper()
	server, client := connectedPair(b, false)
	sink := &loopbackSink{socket: server.(*net.TCPConn), expect: make(chan int64), read: make(chan error, 1)}
	go func() {
		buf := make([]byte, 1<<20)
		for left := range sink.expect {
			var err error
			for left > 0 && err == nil {
				var n int
				n, err = client.Read(buf[:min(int64(len(buf)), left)])
				left -= int64(n)
			}
			sink.read <- err
		}
	}()
	b.Cleanup(func() { close(sink.expect) })
	return sink
}

// rawCopy is one of the limits the broker is measured against: the
// segment files copied to a loopback socket by raw sendfile or raw
// pread+write, with no Fetch around them. Its passes are timed together
// as the broker's are: all the bytes over all the time.
type rawCopy struct {
	copy    FetchCopy
	sink    *loopbackSink
	bytes   int64
	elapsed time.Duration
	cpu     float64 // process CPU seconds
}

func newRawCopy(b *testing.B, copy FetchCopy) *rawCopy {
	return &rawCopy{copy: copy, sink: newLoopbackSink(b)}
}

// pass copies every file once, until the far end has read them.
func (r *rawCopy) pass(b *testing.B, files []section) {
	b.Helper()
	raw, err := r.sink.socket.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var length int64
	for _, s := range files {
		length += s.length
	}
	start, cpu := time.Now(), cpuSeconds()
	r.sink.expect <- length
	for _, s := range files {
		if r.copy == FetchCopySendfile {
			err = sendfileSection(raw, s, func(int) {})
		} else {
			err = preadSection(r.sink.socket, s, func(int) {})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := <-r.sink.read; err != nil {
		b.Fatal(err)
	}
	r.bytes += length
	r.elapsed += time.Since(start)
	r.cpu += cpuSeconds() - cpu
}

func (r *rawCopy) bytesPerSecond() float64 { return float64(r.bytes) / r.elapsed.Seconds() }

func (r *rawCopy) cpuPerGiB() float64 { return r.cpu / (float64(r.bytes) / (1 << 30)) }

// fillTopic writes hotFetchBytes of 1 KiB-record batches (about 1 MiB each)
// to one partition of a new topic and returns the partition.
func fillTopic(b *testing.B, broker *Broker) *replica.Partition {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := broker.createTopic(ctx, topicSpec{name: "hot", partitions: 1, replicationFactor: 1}, false); err != nil {
		b.Fatal(err)
	}
	p, err := broker.partitions.Leader(broker.meta.State(), "hot", 0)
	if err != nil {
		b.Fatal(err)
	}
	records := make([]record.Record, 1000)
	for i := range records {
		records[i] = record.Record{Value: make([]byte, 1024)}
	}
	template, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		b.Fatal(err)
	}
	var last replica.AppendOutcome
	for written := 0; written < hotFetchBytes; written += len(template) {
		batch, err := record.Check(append([]byte(nil), template...))
		if err != nil {
			b.Fatal(err)
		}
		if last, err = p.Append([]record.Batch{batch}, replica.AcksAll); err != nil {
			b.Fatal(err)
		}
	}
	if err := last.WaitAck(ctx); err != nil {
		b.Fatal(err)
	}
	return p
}

// segmentSections returns each segment file of p as one section.
func segmentSections(b *testing.B, p *replica.Partition) []section {
	b.Helper()
	var out []section
	for _, seg := range p.Log().Segments() {
		f, err := os.Open(fmt.Sprintf("%s/%020d.log", p.Log().Dir(), seg.BaseOffset))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		out = append(out, section{file: f, length: seg.Size})
	}
	return out
}

// BenchmarkHotFetch serves a fully written topic to a Fetch loop over
// loopback TCP, with sendfile and with pread+write, beside the machine's
// limits measured in the same run: the same segment files copied to a
// loopback socket by raw sendfile and raw pread+write. Each of the b.N
// passes copies the files once by each raw path, then fetches them once
// through the broker, so all three see the same machine; every figure is
// the mean over the b.N passes (all the bytes over all the time), the
// broker's and the limits' alike. Reported: MB/s, cpu-s/GiB (the whole
// process: broker and client), limit-MB/s (the faster raw path) and
// x-limit (the broker's share of it).
func BenchmarkHotFetch(b *testing.B) {
	for _, copy := range []FetchCopy{FetchCopySendfile, FetchCopyPread} {
		b.Run(string(copy), func(b *testing.B) {
			broker := newTestBroker(b, func(c *Config) { c.FetchCopy = copy })
			p := fillTopic(b, broker)
			files := segmentSections(b, p)
			sendfile, pread := newRawCopy(b, FetchCopySendfile), newRawCopy(b, FetchCopyPread)

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go broker.Serve(ln)
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			end := p.HighWatermark()

			b.SetBytes(hotFetchBytes)
			b.ResetTimer()
			var served int64
			var elapsed time.Duration
			var cpu float64
			for range b.N {
				b.StopTimer()
				sendfile.pass(b, files)
				pread.pass(b, files)
				b.StartTimer()
				start, before := time.Now(), cpuSeconds()
				served += fetchAll(b, conn, end)
				elapsed += time.Since(start)
				cpu += cpuSeconds() - before
			}
			b.StopTimer()
			rate := float64(served) / elapsed.Seconds()
			limit := max(sendfile.bytesPerSecond(), pread.bytesPerSecond())
			b.ReportMetric(cpu/(float64(served)/(1<<30)), "cpu-s/GiB")
			b.ReportMetric(limit/1e6, "limit-MB/s")
			b.ReportMetric(rate/limit, "x-limit")
			b.ReportMetric(sendfile.bytesPerSecond()/1e6, "raw-sendfile-MB/s")
			b.ReportMetric(pread.bytesPerSecond()/1e6, "raw-pread-MB/s")
			b.ReportMetric(sendfile.cpuPerGiB(), "raw-sendfile-cpu-s/GiB")
			b.ReportMetric(pread.cpuPerGiB(), "raw-pread-cpu-s/GiB")
		})
	}
}

// fetchAll reads partition 0 of "hot" from offset 0 to end with Fetch v12
// requests of up to 32 MiB, discarding the records, and returns the record
// bytes received.
func fetchAll(b *testing.B, conn net.Conn, end int64) int64 {
	var received int64
	buf := make([]byte, 1<<20)
	for offset, id := int64(0), int32(0); offset < end; id++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes, req.SessionEpoch = 32<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "hot"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 32<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if _, err := conn.Write(encodeRequest(req, id)); err != nil {
			b.Fatal(err)
		}
		records, next, err := readFetchDiscarding(conn, buf)
		if err != nil {
			b.Fatal(err)
		}
		if next <= offset {
			b.Fatalf("fetch at %d made no progress", offset)
		}
		received += records
		offset = next
	}
	return received
}

// readFetchDiscarding reads one v12 Fetch response for a single partition,
// skipping the record bytes without decoding them, and returns their size
// and the offset after the last batch.
func readFetchDiscarding(conn net.Conn, buf []byte) (int64, int64, error) {
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return 0, 0, err
	}
	remaining := int64(binary.BigEndian.Uint32(size[:]))
	// Header: correlation id, tags; body up to the records: throttle, error,
	// session, topics (1), name, partitions (1), partition, error, high
	// watermark, last stable, log start, aborted (null), preferred replica.
	head := 4 + 1 + 4 + 2 + 4 + 1 + 1 + 3 + 1 + 4 + 2 + 8 + 8 + 8 + 1 + 4
	if _, err := io.ReadFull(conn, buf[:head]); err != nil {
		return 0, 0, err
	}
	remaining -= int64(head)
	var (
		length uint64
		n      int
		varint [binary.MaxVarintLen32]byte
	)
	for i := range varint {
		if _, err := io.ReadFull(conn, varint[i:i+1]); err != nil {
			return 0, 0, err
		}
		remaining--
		if length, n = binary.Uvarint(varint[:i+1]); n > 0 {
			break
		}
	}
	records := int64(length) - 1
	var next int64
	for left := records; left > 0; {
		if _, err := io.ReadFull(conn, buf[:record.HeaderSize]); err != nil {
			return 0, 0, err
		}
		h, err := record.ParseHeader(buf[:record.HeaderSize])
		if err != nil {
			return 0, 0, err
		}
		next = h.NextOffset()
		rest := int64(h.Size() - record.HeaderSize)
		for rest > 0 {
			m, err := conn.Read(buf[:min(int64(len(buf)), rest)])
			if err != nil {
				return 0, 0, err
			}
			rest -= int64(m)
		}
		left -= int64(h.Size())
	}
	remaining -= records
	if _, err := io.ReadFull(conn, buf[:remaining]); err != nil {
		return 0, 0, err
	}
	return records, next, nil
}
