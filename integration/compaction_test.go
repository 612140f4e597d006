package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// endKey marks the last record a compaction test produces: it stays in the
// active segment, which is never cleaned, so a reader that reaches it has
// read the whole log.
const endKey = "end"

// compactedTopic creates a one-partition compacted topic with small
// segments that the cleaner takes at once, and tombstones that expire as
// soon as their segment is cleaned. It is not tiered, so the hot log's
// cleaner alone compacts it: on a tiered topic that cleaner keeps
// tombstones for the bucket's recompaction to remove (TestTieredCompaction).
func compactedTopic(t *testing.T, s *server, topic string) {
	t.Helper()
	createTopic(t, s, topic, 1, map[string]*string{
		"cleanup.policy":            kadmString("compact"),
		"remote.storage.enable":     kadmString("false"),
		"segment.bytes":             kadmString("1024"),
		"min.cleanable.dirty.ratio": kadmString("0.01"),
		"delete.retention.ms":       kadmString("0"),
	})
}

// produceKeyed produces records one at a time, acks=all, and returns
// their offsets.
func produceKeyed(t *testing.T, cl *kgo.Client, topic string, keys []string, values []*string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	offsets := make([]int64, len(keys))
	for i := range keys {
		r := &kgo.Record{Topic: topic, Key: []byte(keys[i])}
		if values[i] != nil {
			r.Value = []byte(*values[i])
		}
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", keys[i], err)
		}
		offsets[i] = res[0].Record.Offset
	}
	return offsets
}

// produceUpdates produces n updates over keys k0 to k9, then a tombstone
// of k9, 40 updates of key pad (to fill segments past them); then, once
// settle returns (the cleaners have mapped all that), 40 more pads, then
// the end marker. The second pads give the cleaner a pass after the one
// that first maps the tombstone, which keeps it (Kafka's cleaner too
// drops a tombstone only in a later pass than the one that first cleans
// it). It returns every record by offset, the value each key should end
// with, and the offsets.
func produceUpdates(t *testing.T, cl *kgo.Client, topic string, n int, settle func()) (produced map[int64]testRecord, want map[string]string, offsets []int64) {
	t.Helper()
	var keys []string
	var values []*string
	for i := range n {
		key := fmt.Sprintf("k%d", i%10)
		keys, values = append(keys, key), append(values, kadmString(fmt.Sprintf("%s-v%d", key, i)))
	}
	keys, values = append(keys, "k9"), append(values, nil) // a tombstone
	for i := range 40 {
		keys, values = append(keys, "pad"), append(values, kadmString(strconv.Itoa(i)))
	}
	offsets = produceKeyed(t, cl, topic, keys, values)
	settle()
	var later []string
	var laterValues []*string
	for i := range 40 {
		later, laterValues = append(later, "pad"), append(laterValues, kadmString(strconv.Itoa(40+i)))
	}
	later, laterValues = append(later, endKey), append(laterValues, kadmString("."))
	offsets = append(offsets, produceKeyed(t, cl, topic, later, laterValues)...)
	keys, values = append(keys, later...), append(values, laterValues...)
	produced, want = map[int64]testRecord{}, map[string]string{}
	for i, o := range offsets {
		r := testRecord{offset: o, key: []byte(keys[i])}
		if values[i] != nil {
			r.value = []byte(*values[i])
			want[keys[i]] = *values[i]
		} else {
			delete(want, keys[i])
		}
		produced[o] = r
	}
	return produced, want, offsets
}

// cleanerCaughtUp waits until each server's cleaner (its backoff 100 ms,
// as the compaction tests start them) has mapped every sealed segment it
// may clean. Its dirty-bytes gauge is set each time a thread looks for
// work, so a reading taken three backoffs after the last append is of a
// look after it.
func cleanerCaughtUp(t *testing.T, servers ...*server) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	for _, s := range servers {
		waitForMetrics(t, s, "the cleaner caught up", func(m metricSamples) bool {
			return m.sum("strata_cleaner_dirty_bytes") == 0
		})
	}
}

// readThroughEnd reads the partition from offset with a fresh franz-go
// consumer until the end marker.
func readThroughEnd(t *testing.T, s *server, topic string, from kgo.Offset, opts ...kgo.Opt) []testRecord {
	t.Helper()
	return readUntil(t, s, topic, from, func(r *kgo.Record) bool { return string(r.Key) == endKey }, opts...)
}

// readUntil reads the partition from offset with a fresh franz-go
// consumer until it has read a record last says is the last.
func readUntil(t *testing.T, s *server, topic string, from kgo.Offset, last func(*kgo.Record) bool, opts ...kgo.Opt) []testRecord {
	t.Helper()
	cl := newClient(t, s, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(from)}, opts...)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []testRecord
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d records and not the last: %v", len(out), err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		done := false
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, testRecord{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value})
			done = done || last(r)
		})
		if done {
			return out
		}
	}
}

// compactedView checks records read from a compacted log against what was
// produced: each record is the one produced at its offset, offsets rise,
// and no key appears twice below the end marker. It returns the value of
// each key read.
func compactedView(t *testing.T, produced map[int64]testRecord, read []testRecord) map[string]string {
	t.Helper()
	seen := map[string]string{}
	last := int64(-1)
	for _, r := range read {
		want, ok := produced[r.offset]
		if !ok || string(want.key) != string(r.key) || string(want.value) != string(r.value) {
			t.Fatalf("offset %d reads %q=%q, produced %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		if r.offset <= last {
			t.Fatalf("offset %d after %d", r.offset, last)
		}
		last = r.offset
		seen[string(r.key)] = string(r.value)
	}
	return seen
}

// TestCompactedTopicEndToEnd: a compacted topic keeps the latest record of
// each key at its original offset, and a tombstone removes its key once
// delete.retention.ms has passed, for franz-go and kcat consumers reading
// from the start (gaps in the offsets) and from a committed offset inside
// a removed range; a compacted topic tiers by default, a tiered topic may
// become compacted, and a compacted one whose bucket holds segments cannot
// stop tiering; all of it survives kill -9.
func TestCompactedTopicEndToEnd(t *testing.T) {
	s := startServer(t, "--log.cleaner.backoff.ms", "100")
	const topic = "changelog"
	compactedTopic(t, s, topic)
	cl := newClient(t, s)

	produced, want, offsets := produceUpdates(t, cl, topic, 400, func() { cleanerCaughtUp(t, s) })

	var live []testRecord
	eventually(t, "the log compacted to the latest record per key, the tombstone gone", func() bool {
		live = readThroughEnd(t, s, topic, kgo.NewOffset().AtStart())
		got := compactedView(t, produced, live)
		// The pads after the tombstone fill segments past the keyed
		// updates; the last of them, in the active segment, which is
		// never cleaned, may keep older versions.
		return keyedRecords(live) == 9 && sameValues(got, want)
	})
	// Of the 401 keyed records (the tombstone among them) 9 are left. A
	// pass counts what it did when it ends, after its swaps are visible.
	waitForMetrics(t, s, "the cleaner's records, bytes and passes counted", func(m metricSamples) bool {
		return m.sum("strata_cleaner_records_removed_total") >= 401-9 && m.sum("strata_cleaner_bytes_written_total") > 0 &&
			m.value(t, "strata_cleaner_passes_total", "result", "ok") > 0
	})

	// kcat from the start, and from inside a removed range.
	removed := offsets[5] // k5's sixth version: superseded
	if slices.ContainsFunc(live, func(r testRecord) bool { return r.offset == removed }) {
		t.Fatalf("offset %d was not removed", removed)
	}
	// The cleaner may still be at work on the pads: kcat's read and a
	// franz-go read taken just after it agree once it is done.
	for _, from := range []int64{0, removed} {
		eventually(t, fmt.Sprintf("kcat -o %d reads what franz-go reads", from), func() bool {
			out := kcat(t, "", "-C", "-b", s.kafka, "-t", topic, "-o", strconv.FormatInt(from, 10), "-e", "-q", "-f", "%o %k %s\n")
			var read []testRecord
			for line := range strings.Lines(out) {
				fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
				offset, err := strconv.ParseInt(fields[0], 10, 64)
				if err != nil || len(fields) != 3 {
					t.Fatalf("kcat printed %q", line)
				}
				read = append(read, testRecord{offset: offset, key: []byte(fields[1]), value: []byte(fields[2])})
			}
			compactedView(t, produced, read)
			return sameRecordOffsets(read, liveFrom(readThroughEnd(t, s, topic, kgo.NewOffset().AtStart()), from))
		})
	}

	// A group whose committed offset lies in a removed range goes on from
	// the next live record.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kadm.NewClient(cl)
	commit := kadm.Offsets{}
	commit.AddOffset(topic, 0, removed, -1)
	if resp, err := admin.CommitOffsets(ctx, "compacted-group", commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	group := readThroughEnd(t, s, topic, kgo.NewOffset().AtStart(), kgo.ConsumerGroup("compacted-group"))
	if len(group) == 0 || group[0].offset <= removed {
		t.Fatalf("the group read offsets %v, want only offsets past %d", offsetsOf(group), removed)
	}
	for key, value := range compactedView(t, produced, group) {
		if want[key] != value {
			t.Fatalf("the group read %s=%q, want %q", key, value, want[key])
		}
	}

	// DeleteRecords needs the delete policy, as in Kafka.
	deleted, err := admin.DeleteRecords(ctx, commit)
	if err != nil {
		t.Fatal(err)
	}
	if err := deleted.Error(); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("DeleteRecords on a compact-only topic: %v, want POLICY_VIOLATION", err)
	}

	// Tiered by default, and explicitly.
	createTopic(t, s, "compacted-default", 1, map[string]*string{"cleanup.policy": kadmString("compact")})
	configs, err := admin.DescribeTopicConfigs(ctx, "compacted-default")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On("compacted-default", nil)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rc.Configs, func(c kadm.Config) bool { return c.Key == "remote.storage.enable" }); i < 0 || rc.Configs[i].MaybeValue() != "true" {
		t.Fatalf("remote.storage.enable of a compacted topic: %v, want true", rc.Configs)
	}
	createTopic(t, s, "tiered-compacted", 1, map[string]*string{"cleanup.policy": kadmString("compact"), "remote.storage.enable": kadmString("true")})

	// A tiered topic whose bucket holds segments may become compacted;
	// then it cannot stop tiering: its tombstones must reach the bucket,
	// whose recompaction removes them with the older versions of their
	// keys.
	createTopic(t, s, "tiered", 1, map[string]*string{"segment.bytes": kadmString("4096")})
	alterTiered := func(name, value string) (string, error) {
		alter, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: kadmString(value)}}, "tiered")
		if err != nil {
			return "", err
		}
		return alter[0].ErrMessage, alter[0].Err
	}
	tieredKeys := make([]string, 40)
	tieredValues := make([]*string, 40)
	for i := range tieredKeys {
		tieredKeys[i], tieredValues[i] = strconv.Itoa(i), kadmString(strings.Repeat("x", 1000))
	}
	produceKeyed(t, cl, "tiered", tieredKeys, tieredValues)
	eventually(t, "a segment of the tiered topic in the bucket", func() bool { return listOffset(t, cl, "tiered", -5) >= 0 })
	if _, err := alterTiered("cleanup.policy", "compact"); err != nil {
		t.Fatalf("a tiered topic with segments in the bucket made compacted: %v", err)
	}
	if msg, err := alterTiered("remote.storage.enable", "false"); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(msg, "remote.storage.enable") {
		t.Fatalf("tiering turned off on a compacted topic with segments in the bucket: %v %q, want INVALID_CONFIG naming remote.storage.enable", err, msg)
	}
	// Copying turned off strands them in the hot log the same way.
	if msg, err := alterTiered("remote.log.copy.disable", "true"); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(msg, "remote.log.copy.disable") {
		t.Fatalf("copying turned off on a compacted topic with segments in the bucket: %v %q, want INVALID_CONFIG naming remote.log.copy.disable", err, msg)
	}
	configs, err = admin.DescribeTopicConfigs(ctx, "tiered")
	if err == nil {
		rc, err = configs.On("tiered", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if want := map[string]string{"cleanup.policy": "compact", "remote.storage.enable": "true"}[c.Key]; want != "" && c.MaybeValue() != want {
			t.Fatalf("after the alters %s=%q, want %q", c.Key, c.MaybeValue(), want)
		}
	}

	// The rewritten segments are what a restart after kill -9 finds.
	s.kill()
	s.restart()
	after := readThroughEnd(t, s, topic, kgo.NewOffset().AtStart())
	if got := compactedView(t, produced, after); !sameValues(got, want) || keyedRecords(after) != 9 {
		t.Fatalf("after kill -9 the log reads %v in %d keyed records, want %v in 9", got, keyedRecords(after), want)
	}
}

// keyedRecords counts the records of keys k0 to k9.
func keyedRecords(records []testRecord) int {
	n := 0
	for _, r := range records {
		if strings.HasPrefix(string(r.key), "k") {
			n++
		}
	}
	return n
}

func sameValues(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// liveFrom is the records at or above offset.
func liveFrom(records []testRecord, offset int64) []testRecord {
	i, _ := slices.BinarySearchFunc(records, offset, func(r testRecord, o int64) int { return int(r.offset - o) })
	return records[i:]
}

func offsetsOf(records []testRecord) []int64 {
	out := make([]int64, len(records))
	for i, r := range records {
		out[i] = r.offset
	}
	return out
}

func sameRecordOffsets(a, b []testRecord) bool {
	return slices.Equal(offsetsOf(a), offsetsOf(b))
}

// TestCompactionRefusedWithoutCleaner: a broker started with
// log.cleaner.enable=false refuses to create a compacted topic or to make
// one compacted, rather than keep every version of every key, and says so
// of a compacted topic created before.
func TestCompactionRefusedWithoutCleaner(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	compactedTopic(t, s, "made-before")
	s.stop()
	s.extra = append(s.extra, "--log.cleaner.enable=false")
	s.start()
	eventually(t, "a word of the compacted topic left uncleaned", func() bool {
		return strings.Contains(s.log.String(), "is not compacted: this broker runs with log.cleaner.enable=false")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClient(t, s))
	resp, err := admin.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadmString("compact")}, "refused")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, "log.cleaner.enable=false") {
		t.Fatalf("a compacted topic without a cleaner: %v %q, want INVALID_CONFIG naming log.cleaner.enable", err, resp.ErrMessage)
	}
	createTopic(t, s, "plain", 1, map[string]*string{"remote.storage.enable": kadmString("false")})
	alter, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadmString("compact,delete")}}, "plain")
	if err == nil {
		err = alter[0].Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("making a topic compacted without a cleaner: %v, want INVALID_CONFIG", err)
	}
}

// TestKill9DuringCleaning: a producer keeps updating 50 keys of a
// compacted topic while the cleaner, slowed by its I/O throttle so that its
// passes take seconds, rewrites segments, and the broker is killed with
// SIGKILL five times at random moments. After the last restart the log
// reads through without error, every key's last acknowledged version is
// there at its offset (or a later version of it), every record read is one
// produced at that offset, and, once the broker is stopped, no rewrite's
// files are left on disk.
func TestKill9DuringCleaning(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--log.cleaner.backoff.ms", "50", "--log.cleaner.io.max.bytes.per.second", "200000")
	const topic = "crash-cleaned"
	compactedTopic(t, s, topic)
	rng := rand.New(rand.NewPCG(5, 6))
	produced := map[int64]testRecord{}
	lastAcked := map[string]int64{}
	n := 0
	produce := func(count int) {
		cl := newClient(t, s, kgo.RecordRetries(3), kgo.RecordDeliveryTimeout(5*time.Second))
		defer cl.Close()
		for range count {
			key := fmt.Sprintf("key%02d", rng.IntN(50))
			value := fmt.Sprintf("%s-%d", key, n)
			n++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)})
			cancel()
			if res.FirstErr() != nil {
				return // the broker is down
			}
			o := res[0].Record.Offset
			produced[o] = testRecord{offset: o, key: []byte(key), value: []byte(value)}
			lastAcked[key] = o
		}
	}
	produce(600)
	waitForMetrics(t, s, "a cleaning pass", func(m metricSamples) bool { return m.sum("strata_cleaner_bytes_read_total") > 0 })
	for round := range 5 {
		pause := time.Duration(200+rng.IntN(1500)) * time.Millisecond // rng is the producer's once it runs
		done := make(chan struct{})
		go func() {
			defer close(done)
			produce(2000)
		}()
		time.Sleep(pause)
		s.kill()
		// An idempotent record in flight waits for the broker rather
		// than time out, so the producer finishes once it is back.
		s.restart()
		<-done
		t.Logf("round %d: %d records acknowledged so far", round, len(produced))
	}
	cl := newClient(t, s)
	produceKeyed(t, cl, topic, []string{endKey}, []*string{kadmString(".")})
	read := readThroughEnd(t, s, topic, kgo.NewOffset().AtStart())
	latest := map[string]int64{}
	for _, r := range read {
		if want, ok := produced[r.offset]; ok && (string(want.key) != string(r.key) || string(want.value) != string(r.value)) {
			t.Fatalf("offset %d reads %q=%q, produced %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		latest[string(r.key)] = r.offset
	}
	for key, acked := range lastAcked {
		if got, ok := latest[key]; !ok || got < acked {
			t.Fatalf("%s: last acknowledged at offset %d, the log's latest is %d (present %v)", key, acked, got, ok)
		}
	}
	// A pass under way has files of its own; once stopped, none may be
	// left, and none of the crashes' may have survived the restarts.
	s.stop()
	entries, err := os.ReadDir(filepath.Join(s.dataDir, "partitions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		files, _ := os.ReadDir(filepath.Join(s.dataDir, "partitions", e.Name()))
		for _, f := range files {
			if strings.HasSuffix(f.Name(), ".cleaned") || strings.HasSuffix(f.Name(), ".swap") {
				t.Fatalf("%s/%s left behind by a rewrite", e.Name(), f.Name())
			}
		}
	}
}

// TestReplicatedCompactedTopic: three brokers, a compacted topic with RF 3.
// Each replica cleans its own log; a follower stopped while the others
// take and clean most of the log catches up into the ISR from inside the
// leader's joined empty batches; after the leader is killed the new leader
// serves every key's latest value at its offset, takes writes, and the old
// leader, restarted, catches up into the ISR with its own cleaned log.
func TestReplicatedCompactedTopic(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3, "--log.cleaner.backoff.ms", "100", "--replica.lag.time.max.ms", "2000")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin := kadm.NewClient(newClientSeeds(t, kafkaAddresses(servers)))
	const topic = "replicated-changelog"
	// Not tiered, as compactedTopic's: the hot logs' cleaners alone
	// compact it, tombstones included.
	replicatedTopic(ctx, t, admin, topic, 1, map[string]*string{
		"cleanup.policy":            kadmString("compact"),
		"remote.storage.enable":     kadmString("false"),
		"segment.bytes":             kadmString("1024"),
		"min.cleanable.dirty.ratio": kadmString("0.01"),
		"delete.retention.ms":       kadmString("0"),
	})
	cl := newClientSeeds(t, kafkaAddresses(servers))

	// A follower stopped early falls behind while the others take and
	// clean the rest: its log end then lies inside what the leader's
	// cleaner joined into single empty batches, and it must catch up
	// from there.
	early := produceKeyed(t, cl, topic, []string{"k0", "k1", "k2", "k3", "k4"}, []*string{kadmString("a"), kadmString("b"), kadmString("c"), kadmString("d"), kadmString("e")})
	lagging := servers[leaderOf(ctx, t, admin, topic, 0)%3]
	lagging.pause()
	var inSync []*server
	for _, s := range servers {
		if s != lagging {
			inSync = append(inSync, s)
		}
	}
	produced, want, _ := produceUpdates(t, cl, topic, 300, func() { cleanerCaughtUp(t, inSync...) })
	for i, o := range early {
		produced[o] = testRecord{offset: o, key: []byte(fmt.Sprintf("k%d", i)), value: []byte{byte('a' + i)}}
	}
	for _, s := range servers {
		if s == lagging {
			continue
		}
		waitForMetrics(t, s, "the replicas in the ISR cleaned", func(m metricSamples) bool {
			return m.sum("strata_cleaner_records_removed_total") >= 300-9 && m.sum("strata_cleaner_dirty_bytes") == 0
		})
	}
	lagging.resume()
	waitPartitions(ctx, t, admin, topic, "the stopped follower back in the ISR", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 3
	})

	leader := leaderOf(ctx, t, admin, topic, 0)
	victim := servers[leader-1]
	victim.kill()
	waitPartitions(ctx, t, admin, topic, "a new leader", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && p.Leader != leader
	})
	survivor := servers[leader%3]
	read := readThroughEnd(t, survivor, topic, kgo.NewOffset().AtStart())
	if got := compactedView(t, produced, read); !sameValues(got, want) {
		t.Fatalf("the new leader serves %v, want %v", got, want)
	}
	more := produceKeyed(t, cl, topic, []string{"k0", endKey}, []*string{kadmString("k0-after"), kadmString("..")})
	produced[more[0]] = testRecord{offset: more[0], key: []byte("k0"), value: []byte("k0-after")}
	produced[more[1]] = testRecord{offset: more[1], key: []byte(endKey), value: []byte("..")}
	want["k0"], want[endKey] = "k0-after", ".."
	victim.restart()
	waitPartitions(ctx, t, admin, topic, "the restarted broker back in the ISR", func(p kadm.PartitionDetail) bool {
		return p.Leader >= 0 && slices.Contains(p.ISR, leader)
	})
	if _, err := admin.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every key's latest value from whichever broker leads", func() bool {
		read := readUntil(t, survivor, topic, kgo.NewOffset().AtStart(), func(r *kgo.Record) bool { return r.Offset >= more[1] })
		got := compactedView(t, produced, read)
		return sameValues(got, want)
	})
}

// TestCompactedTopicOtherClients: kafkajs and sarama, whose decoders differ
// from franz-go's and librdkafka's, read a compacted topic from the start,
// across its emptied batches, and see what franz-go sees.
func TestCompactedTopicOtherClients(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--log.cleaner.backoff.ms", "100")
	const topic = "changelog-clients"
	compactedTopic(t, s, topic)
	produced, want, _ := produceUpdates(t, newClient(t, s), topic, 200, func() { cleanerCaughtUp(t, s) })
	eventually(t, "the log compacted", func() bool {
		live := readThroughEnd(t, s, topic, kgo.NewOffset().AtStart())
		return keyedRecords(live) == 9 && sameValues(compactedView(t, produced, live), want)
	})
	for _, client := range []struct {
		name string
		read func(group string) []testRecord
	}{
		{"kafkajs", func(group string) []testRecord { return kafkajsReadCompacted(t, s, topic, group) }},
		{"sarama", func(string) []testRecord { return saramaReadCompacted(t, s, topic) }},
	} {
		attempt := 0
		eventually(t, client.name+" reads what franz-go reads", func() bool {
			attempt++
			read := client.read(fmt.Sprintf("%s-%d", client.name, attempt))
			compactedView(t, produced, read)
			return sameRecordOffsets(read, readThroughEnd(t, s, topic, kgo.NewOffset().AtStart()))
		})
	}
}

// kafkajsReadCompacted reads topic from its start through the end marker
// with testdata/kafkajs_compacted.js, as consumer group group.
func kafkajsReadCompacted(t *testing.T, s *server, topic, group string) []testRecord {
	t.Helper()
	modules := kafkajsInstalled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/kafkajs_compacted.js", s.kafka, topic, group)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "KAFKAJS_NO_PARTITIONER_WARNING=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs reading a compacted topic: %v\n%s", err, stderr.String())
	}
	var read []struct {
		Offset int64
		Key    string
		Value  *string
	}
	if err := json.Unmarshal(stdout.Bytes(), &read); err != nil {
		t.Fatalf("kafkajs printed %q: %v", stdout.String(), err)
	}
	out := make([]testRecord, len(read))
	for i, r := range read {
		out[i] = testRecord{offset: r.Offset, key: []byte(r.Key)}
		if r.Value != nil {
			out[i].value = []byte(*r.Value)
		}
	}
	return out
}

// saramaReadCompacted reads partition 0 of topic from its start through
// the end marker with a sarama partition consumer.
func saramaReadCompacted(t *testing.T, s *server, topic string) []testRecord {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{s.kafka}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []testRecord
	timeout := time.After(time.Minute)
	for {
		select {
		case m := <-pc.Messages():
			out = append(out, testRecord{offset: m.Offset, key: m.Key, value: m.Value})
			if string(m.Key) == endKey {
				return out
			}
		case err := <-pc.Errors():
			t.Fatalf("sarama reading a compacted topic: %v", err)
		case <-timeout:
			t.Fatalf("sarama read %d records and no end marker in a minute", len(out))
		}
	}
}
