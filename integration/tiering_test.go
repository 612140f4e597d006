package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/record"
)

// tierTestBytes is how much TestTiering* produce: 200 MiB, or
// STRATA_TIER_TEST_MIB MiB. At 200 MiB the bucket holds about a hundred
// segments per partition; each test takes about ten seconds here.
func tierTestBytes(t testing.TB) int {
	t.Helper()
	mib := 200
	if v := os.Getenv("STRATA_TIER_TEST_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			t.Fatalf("STRATA_TIER_TEST_MIB=%q: want a number of MiB, at least 4", v)
		}
		mib = n
	}
	return mib << 20
}

// TestTieringFileBucket runs the tiering scenario against the default
// bucket: a directory in the server's data directory.
func TestTieringFileBucket(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tieringScenario(t, s, "file://"+s.dataDir+"/bucket", nil)
}

// TestTieringVersityGW runs the tiering scenario against an S3 bucket on
// versitygw, the credentials passed as the AWS environment variables.
func TestTieringVersityGW(t *testing.T) {
	t.Parallel()
	gw := startVersityGW(t)
	env := bucketEnv(gw)
	url := objstoretest.S3URL(gw.Endpoint, testBucket, "cluster")
	s := startServerEnv(t, freePort(t), env, "--bucket", url)
	tieringScenario(t, s, url, env)
}

// tieringScenario produces to a topic of two partitions (so that one Fetch
// reads two partitions from the bucket) with small segments and a small
// local retention, waits until the local log start moves, then reads
// everything back from offset 0 with franz-go (the old offsets come from
// the bucket), checks ListOffsets' -2, -4 and -5 and the tier status, and
// does it again after a restart. bucketURL and env are the bucket as
// `strata export` reaches it.
func tieringScenario(t *testing.T, s *server, bucketURL string, env []string) {
	const topic = "tiered"
	createTopic(t, s, topic, 2, map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
		"segment.ms":            kadmString("2000"),
		"local.retention.bytes": kadmString(strconv.Itoa(2 << 20)),
	})
	records := tierRecords(tierTestBytes(t))
	producer := newClient(t, s, kgo.ProducerLinger(5*time.Millisecond))
	produced := produceAll(t, producer, topic, records)
	var end int64 // partition 0's
	for _, r := range produced {
		if r.partition == 0 {
			end++
		}
	}

	// Poll: offload has no event a client can wait on.
	cl := newClient(t, s)
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for listOffset(t, cl, topic, -4) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the local log start offset did not move within a minute:\n%s", s.log)
		}
		<-tick.C
	}

	earliest, local, tiered, latest := listOffset(t, cl, topic, -2), listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -5), listOffset(t, cl, topic, -1)
	t.Logf("offsets: earliest %d, earliest local %d, latest tiered %d, latest %d", earliest, local, tiered, latest)
	switch {
	case earliest != 0:
		t.Errorf("ListOffsets -2 = %d, want 0 (the remote log start)", earliest)
	case local <= 0 || local > end:
		t.Errorf("ListOffsets -4 = %d, want in (0, %d]", local, end)
	case tiered < local-1 || tiered >= end:
		t.Errorf("ListOffsets -5 = %d, want in [%d, %d): the bucket holds everything below the local start", tiered, local-1, end)
	case latest != end:
		t.Errorf("ListOffsets -1 = %d, want %d", latest, end)
	}
	checkTierStatus(t, s, topic, local)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table, err := s.strata(ctx, "", "tier", "status", topic)
	if err == nil && !strings.Contains(table, "LOCAL-START") {
		err = fmt.Errorf("no table header in %q", table)
	}
	if err != nil {
		t.Fatalf("strata tier status: %v", err)
	}
	if lines := strings.Count(strings.TrimSpace(table), "\n"); lines != 2 {
		t.Errorf("strata tier status %s printed %d partition rows, want 2:\n%s", topic, lines, table)
	}
	// topic describe: each tier's size.
	out, err := s.strata(ctx, "", "topic", "describe", topic, "--json")
	var described []struct {
		Partitions []struct {
			LocalBytes  int64 `json:"local_bytes"`
			TieredBytes int64 `json:"tiered_bytes"`
		} `json:"partitions"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &described)
	}
	if err != nil || len(described) != 1 {
		t.Fatalf("strata topic describe: %v\n%s", err, out)
	}
	for i, p := range described[0].Partitions {
		if p.LocalBytes <= 0 || p.TieredBytes <= 0 {
			t.Errorf("partition %d: %d bytes local, %d tiered; want both known and some in each tier", i, p.LocalBytes, p.TieredBytes)
		}
	}

	checkSameRecords(t, produced, consumeAll(t, s, topic, len(produced)))
	// The bucket's calls are on /metrics: the uploads' puts and the
	// remote reads' gets, all of them successes.
	calls := map[string]float64{}
	for _, sample := range scrapeMetrics(t, s) {
		if sample.name == "strata_objstore_requests_total" {
			calls[sample.labels["operation"]+" "+sample.labels["outcome"]] += sample.value
		}
	}
	if calls["put success"] == 0 || calls["get success"]+calls["get_suffix success"] == 0 {
		t.Errorf("strata_objstore_requests_total by operation and outcome: %v; want successful puts and gets", calls)
	}

	s.stop()
	s.restart()
	checkSameRecords(t, produced, consumeAll(t, s, topic, len(produced)))
	if got := listOffset(t, newClient(t, s), topic, -2); got != 0 {
		t.Errorf("after a restart ListOffsets -2 = %d, want 0", got)
	}
	checkExport(t, bucketURL, env, topic, produced, tiered+1)
}

// tierRecords makes records of 8 to 24 KiB of random bytes, n bytes in
// all.
func tierRecords(n int) []*kgo.Record {
	rng := rand.New(rand.NewPCG(7, 8))
	src := rand.NewChaCha8([32]byte{1})
	var out []*kgo.Record
	for total := 0; total < n; {
		value := make([]byte, 8<<10+rng.IntN(16<<10))
		src.Read(value)
		out = append(out, &kgo.Record{Key: []byte(strconv.Itoa(len(out))), Value: value})
		total += len(value)
	}
	return out
}

// listOffset asks for partition 0's offset at one of ListOffsets' special
// timestamps.
func listOffset(t testing.TB, cl *kgo.Client, topic string, timestamp int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets %d: %v", timestamp, err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %d: %v", timestamp, err)
	}
	return p.Offset
}

// checkTierStatus reads the admin endpoint behind `strata tier status`.
func checkTierStatus(t testing.TB, s *server, topic string, localStart int64) {
	t.Helper()
	resp, err := adminHTTP.Get("http://" + s.admin + "/v1/tier/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Partitions []struct {
			Topic               string    `json:"topic"`
			LocalLogStartOffset int64     `json:"local_log_start_offset"`
			HighestTieredOffset int64     `json:"highest_tiered_offset"`
			LastUpload          time.Time `json:"last_upload"`
		} `json:"partitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("tier status: %v", err)
	}
	for _, p := range doc.Partitions {
		if p.Topic != topic {
			continue
		}
		if p.LocalLogStartOffset < localStart || p.HighestTieredOffset < localStart-1 || p.LastUpload.IsZero() {
			t.Errorf("tier status %+v: want local start >= %d, tiered end >= %d, an upload", p, localStart, localStart-1)
		}
		return
	}
	t.Errorf("tier status has no partition of %s: %+v", topic, doc)
}

// checkExport runs `strata export` on the bucket, with no broker involved,
// for partition 0's offsets [0, to) as JSON, [to/2, to) as raw batches and
// then from a time, and checks the records against what was produced. to
// must be tiered.
func checkExport(t *testing.T, bucketURL string, env []string, topic string, produced []testRecord, to int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) []byte {
		cmd := exec.CommandContext(ctx, strataBinary, append([]string{"export", "--bucket", bucketURL, "--topic", topic, "--partition", "0"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		defer func() { t.Logf("strata export %s: %v", args, time.Since(began)) }()
		if err := cmd.Run(); err != nil {
			t.Fatalf("strata export %s: %v: %s", args, err, stderr.String())
		}
		return stdout.Bytes()
	}
	byOffset := map[int64]testRecord{} // partition 0's
	for _, r := range produced {
		if r.partition == 0 {
			byOffset[r.offset] = r
		}
	}
	type exported struct {
		Offset      int64   `json:"offset"`
		Timestamp   int64   `json:"timestamp"`
		Key         *string `json:"key"`
		Value       *string `json:"value"`
		ValueBase64 []byte  `json:"value_base64"`
	}
	parse := func(out []byte) []exported {
		var got []exported
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e exported
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("export line %q: %v", sc.Text(), err)
			}
			got = append(got, e)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// Every record below to, each checked against what was produced. (to
	// bounds it: uploads may still move the tiered end.)
	all := parse(run("--to", strconv.FormatInt(to, 10)))
	if int64(len(all)) != to || len(all) == 0 {
		t.Fatalf("export --to %d returned %d records, want %d", to, len(all), to)
	}
	for i, e := range all {
		want := byOffset[e.Offset]
		value := e.ValueBase64
		if e.Value != nil {
			value = []byte(*e.Value)
		}
		if e.Offset != int64(i) || e.Key == nil || *e.Key != string(want.key) || !bytes.Equal(value, want.value) {
			t.Fatalf("export record %d (offset %d) differs from what was produced at offset %d", i, e.Offset, i)
		}
	}
	from := to / 2
	raw := run("--from", strconv.FormatInt(from, 10), "--to", strconv.FormatInt(to, 10), "--format", "raw")
	var next int64 = -1
	for len(raw) > 0 {
		h, err := record.ParseHeader(raw)
		if err == nil && h.Size() > len(raw) {
			err = fmt.Errorf("a batch of %d bytes, %d left", h.Size(), len(raw))
		}
		if err == nil {
			_, err = record.Validate(raw[:h.Size()])
		}
		if err != nil {
			t.Fatalf("export --format raw: batch after offset %d: %v", next, err)
		}
		if next == -1 && h.BaseOffset > from || next != -1 && h.BaseOffset != next {
			t.Fatalf("export --format raw: batch at %d after %d (from %d)", h.BaseOffset, next, from)
		}
		next, raw = h.NextOffset(), raw[h.Size():]
	}
	if next < to {
		t.Fatalf("export --format raw ended at %d, want at least %d", next, to)
	}

	mid := all[len(all)/2]
	fromTime := parse(run("--from-time", strconv.FormatInt(mid.Timestamp, 10), "--to", strconv.FormatInt(to, 10)))
	if len(fromTime) == 0 || fromTime[0].Offset > mid.Offset || fromTime[len(fromTime)-1].Offset != to-1 {
		t.Fatalf("export --from-time %d returned offsets from %v", mid.Timestamp, fromTime[:min(1, len(fromTime))])
	}
}
