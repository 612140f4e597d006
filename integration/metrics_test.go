package integration

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestIngestMetrics produces and fetches over one raw connection, counting
// every byte it sends and receives, and checks the broker's strata_ingest_*
// series on /metrics against what it did: request counts and latency
// histograms per API, bytes in and out, the partitions gauge, the offsets
// of each partition and the fsync histogram. Only lower bounds are checked
// where the broker's own traffic (topic creation) also counts, and nothing
// is compared with the wall clock.
func TestIngestMetrics(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const topic = "metered"
	createTopic(t, s, topic, 2, nil)
	c := dialRaw(t, s)
	counted := &countingConn{Conn: c.conn}
	c.conn = counted

	// Produce: five requests to partition 0, three to partition 1, each one
	// batch of a few records.
	produceCalls := map[int32]int{0: 5, 1: 3}
	records := map[int32]int64{}
	batchBytes := map[int32]int{}
	for partition, calls := range produceCalls {
		for i := range calls {
			n := 1 + i%3
			var rs []record.Record
			for j := range n {
				rs = append(rs, record.Record{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(strings.Repeat("v", 100*(j+1)))})
			}
			batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, rs)
			if err != nil {
				t.Fatal(err)
			}
			p := c.roundTrip(produceRequest(topic, partition, batch), 12).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.BaseOffset != records[partition] {
				t.Fatalf("produce to partition %d: %v at offset %d, want offset %d", partition, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, records[partition])
			}
			records[partition] += int64(n)
			batchBytes[partition] += len(batch)
		}
	}

	// Fetch every partition from the start, twice.
	const fetchCalls = 4
	for i := range fetchCalls {
		partition := int32(i % 2)
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = partition, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := c.roundTrip(req, 12).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) != batchBytes[partition] {
			t.Fatalf("fetch of partition %d: %v, %d record bytes, want %d", partition, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches), batchBytes[partition])
		}
	}

	// The broker counts a request once its reply is written, and bytes out
	// as each write returns, so the client may read a reply before it is
	// counted. The connection answers in order: once a last request is
	// answered, everything before it has been counted. Bytes in are counted
	// as each request is read, so all of them are, the last one included.
	readBefore := counted.read
	c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 3)
	written := counted.written

	m := parseMetrics(t, scrape(t, s))
	requests := func(api string) float64 { return m.value(t, "strata_ingest_requests_total", "api", api) }
	totalProduces := produceCalls[0] + produceCalls[1]
	if got := requests("Produce"); got < float64(totalProduces) {
		t.Errorf("Produce requests %v, want at least %d", got, totalProduces)
	}
	if got := requests("Fetch"); got < fetchCalls {
		t.Errorf("Fetch requests %v, want at least %d", got, fetchCalls)
	}
	m.checkHistogram(t, "strata_ingest_request_duration_seconds", totalProduces, "api", "Produce")
	m.checkHistogram(t, "strata_ingest_request_duration_seconds", fetchCalls, "api", "Fetch")

	if got := m.value(t, "strata_ingest_bytes_in_total"); got < float64(written) {
		t.Errorf("bytes in %v, want at least the %d this client sent", got, written)
	}
	if got := m.value(t, "strata_ingest_bytes_out_total"); got < float64(readBefore) {
		t.Errorf("bytes out %v, want at least the %d this client read", got, readBefore)
	}
	if got := m.value(t, "strata_ingest_connections"); got < 1 {
		t.Errorf("connections %v, want at least this one", got)
	}

	if got := m.value(t, "strata_ingest_partitions"); got != 2 {
		t.Errorf("partitions %v, want the 2 of %s, the only topic", got, topic)
	}
	for partition, want := range records {
		labels := []string{"partition", strconv.Itoa(int(partition)), "topic", topic}
		if got := m.value(t, "strata_ingest_log_end_offset", labels...); got != float64(want) {
			t.Errorf("log end offset of partition %d: %v, want %d", partition, got, want)
		}
		// acks=-1: every produce was answered once durable, so the high
		// watermark had reached the log end.
		if got := m.value(t, "strata_ingest_high_watermark", labels...); got != float64(want) {
			t.Errorf("high watermark of partition %d: %v, want %d", partition, got, want)
		}
		if got := m.value(t, "strata_ingest_log_start_offset", labels...); got != 0 {
			t.Errorf("log start offset of partition %d: %v, want 0", partition, got)
		}
	}
	// Every produce waited for an fsync of its partition's log.
	m.checkHistogram(t, "strata_ingest_fsync_duration_seconds", 1)
	if got := m.value(t, "strata_disk_syncfs_failed"); got != 0 {
		t.Errorf("syncfs failed %v on a healthy disk, want 0", got)
	}
}

// countingConn counts the bytes read and written through it. It is used
// by one goroutine at a time.
type countingConn struct {
	net.Conn
	read, written int
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += n
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written += n
	return n, err
}

// metricSample is one line of the Prometheus text exposition.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

type metricSamples []metricSample

// parseMetrics reads the text exposition format: comment lines, then one
// `name{label="value",...} value` sample a line.
func parseMetrics(t *testing.T, text string) metricSamples {
	t.Helper()
	var out metricSamples
	lines := bufio.NewScanner(strings.NewReader(text))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseMetricSample(line)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out = append(out, s)
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseMetricSample(line string) (metricSample, error) {
	s := metricSample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, errors.New("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		line = line[1:]
		for !strings.HasPrefix(line, "}") {
			eq := strings.Index(line, `="`)
			if eq <= 0 {
				return s, errors.New("a label without a quoted value")
			}
			name := line[:eq]
			line = line[eq+2:]
			var value strings.Builder
			for {
				if line == "" {
					return s, errors.New("an unterminated label value")
				}
				ch := line[0]
				line = line[1:]
				if ch == '"' {
					break
				}
				if ch == '\\' && line != "" {
					ch, line = line[0], line[1:]
					if ch == 'n' {
						ch = '\n'
					}
				}
				value.WriteByte(ch)
			}
			s.labels[name] = value.String()
			line = strings.TrimPrefix(line, ",")
		}
		line = line[1:]
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, errors.New("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// value returns the sample of name whose labels are exactly labels (name,
// value pairs), failing the test if there is none.
func (m metricSamples) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	want := labelSet(labels)
	for _, s := range m {
		if s.name == name && len(s.labels) == len(want) && hasLabels(s, want) {
			return s.value
		}
	}
	t.Fatalf("/metrics has no %s%v", name, want)
	return 0
}

func hasLabels(s metricSample, want map[string]string) bool {
	for k, v := range want {
		if got, ok := s.labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// checkHistogram checks the histogram name with labels (name, value pairs)
// is well formed and has at least minCount observations: its buckets count
// up to _count, the +Inf bucket is _count, and the observations summed to
// more than nothing.
func (m metricSamples) checkHistogram(t *testing.T, name string, minCount int, labels ...string) {
	t.Helper()
	count := m.value(t, name+"_count", labels...)
	if count < float64(minCount) {
		t.Errorf("%s%v: %v observations, want at least %d", name, labels, count, minCount)
	}
	if sum := m.value(t, name+"_sum", labels...); sum <= 0 {
		t.Errorf("%s%v: sum %v, want more than 0", name, labels, sum)
	}
	want := labelSet(labels)
	type bucket struct{ le, count float64 }
	var buckets []bucket
	for _, s := range m {
		if s.name != name+"_bucket" || len(s.labels) != len(want)+1 || !hasLabels(s, want) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			t.Fatalf("%s%v: bucket le %q: %v", name, labels, s.labels["le"], err)
		}
		buckets = append(buckets, bucket{le, s.value})
	}
	if len(buckets) < 2 {
		t.Fatalf("%s%v: %d buckets", name, labels, len(buckets))
	}
	slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	for i := 1; i < len(buckets); i++ {
		if buckets[i].count < buckets[i-1].count {
			t.Errorf("%s%v: bucket le=%v has %v, fewer than le=%v's %v", name, labels, buckets[i].le, buckets[i].count, buckets[i-1].le, buckets[i-1].count)
		}
	}
	if last := buckets[len(buckets)-1]; !math.IsInf(last.le, 1) || last.count != count {
		t.Errorf("%s%v: last bucket le=%v holds %v, want +Inf holding the count %v", name, labels, last.le, last.count, count)
	}
}

// labelSet turns name, value pairs into a map.
func labelSet(pairs []string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}
