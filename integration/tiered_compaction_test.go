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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/segmentobject"
)

// Remote recompaction (offload/recompact.go) on a real process: a tiered
// compacted topic whose hot log keeps only its active segment, so that
// everything older is read from the bucket.

// The server's offload tasks run every taskInterval, and replaced objects
// stay in the bucket for retireDelay.
const (
	taskInterval = 500 * time.Millisecond
	retireDelay  = 2 * time.Second
)

// producerOpts make batches that fit a segment, uncompressed so that
// segments hold as many records as their size says.
var producerOpts = []kgo.Opt{
	kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchMaxBytes(32 << 10), kgo.ProducerBatchCompression(kgo.NoCompression()),
}

// tickKey is the key settle keeps updating: a record keeps coming, so
// segments keep sealing, uploading and making the bucket dirty enough for
// another pass.
const tickKey = "tick"

// tickInterval is how often settle ticks: more than segment.ms, so that
// each tick seals the segment of the one before and a pass follows each.
// A pass rewrites the run that holds the tombstones together with the
// segments uploaded since (the whole compacted log here fits in
// segment.bytes), so the run's newest record is always recent; tombstones
// still go, aged by their own batches (offload.TestRecompactionAgesTombstonesByTheirBatch
// is the rule's unit test; ticking faster than delete.retention.ms here
// would fail this test if they were aged by their segment).
const tickInterval = 250 * time.Millisecond

// TestTieredCompaction: a compacted topic tiers by default, and remote
// recompaction rewrites its segments in the bucket. 200 keys updated 50
// times (with tombstones, some followed by a new value) shrink in the
// bucket to fewer segments and bytes than were uploaded; a franz-go
// consumer reading from offset 0, all of it served from the bucket, finds
// each live key once, with its latest value at its original offset, and no
// tombstone once delete.retention.ms has passed. Then the server is killed
// with SIGKILL six times while a pass swaps segments in, after a wave of
// updates each time; after the last restart the log reads the same way
// (franz-go and kcat), and once the retire delay has passed every segment
// object in the bucket is one its manifest names, and every object it
// names is there.
func TestTieredCompaction(t *testing.T) {
	t.Parallel()
	s := startServer(t,
		"--remote.log.manager.task.interval.ms", strconv.FormatInt(taskInterval.Milliseconds(), 10),
		"--remote-retire-delay", retireDelay.String(),
		"--log.cleaner.backoff.ms", "100")
	const topic = "tiered-changelog"
	// Tiered by default. 64 KiB segments, sealed after 500 ms by the next
	// append, deleted from the hot disk once tiered; a pass as soon as 1%
	// of the bucket is dirty; tombstones expire a second after their
	// segment's newest record.
	createTopic(t, s, topic, 1, map[string]*string{
		"cleanup.policy":            kadmString("compact"),
		"segment.bytes":             kadmString(strconv.Itoa(64 << 10)),
		"segment.ms":                kadmString("500"),
		"local.retention.bytes":     kadmString("0"),
		"local.retention.ms":        kadmString("0"),
		"min.cleanable.dirty.ratio": kadmString("0.01"),
		"delete.retention.ms":       kadmString("1000"),
	})
	b := tieredBucketOf(t, s, topic)
	model := newCompactionModel()
	rng := rand.New(rand.NewPCG(11, 12))

	// 200 keys × 50 versions of about 200 bytes, then tombstones for keys
	// 180 to 199, of which 180 to 189 get a value again: 190 to 199 stay
	// deleted to the end.
	var records []*kgo.Record
	for v := range 50 {
		for k := range 200 {
			records = append(records, compactionUpdate(k, fmt.Sprintf("v%d", v)))
		}
	}
	for k := 180; k < 200; k++ {
		records = append(records, &kgo.Record{Key: []byte(compactionKey(k))})
	}
	for k := 180; k < 190; k++ {
		records = append(records, compactionUpdate(k, "revived"))
	}
	cl := newClient(t, s, producerOpts...)
	model.add(produceAll(t, cl, topic, records))
	dataEnd := model.last
	producedBytes := model.bytes

	model.settle(t, s, cl, topic, "the first pass", func() (bool, string) {
		m := scrapeMetrics(t, s)
		man := b.manifest(t)
		uploaded := m.sum("strata_offload_uploaded_segments_total")
		done := m.sum("strata_offload_recompacted_records_total") > 0 && recompactedBytes(m, "written") > 0 &&
			recompactedDeletes(m) > 0 && man != nil &&
			tieredEnd(man) >= dataEnd && float64(len(man.Segments)) < uploaded && manifestLogBytes(man) < producedBytes/10
		return done, fmt.Sprintf("%v records recompacted; %v segments uploaded; %s", m.sum("strata_offload_recompacted_records_total"), uploaded, describeManifest(man))
	})
	model.settle(t, s, cl, topic, "the log compacted in the bucket, tombstones expired", func() (bool, string) {
		return model.compacted(t, model.read(t, s, topic))
	})
	// All of it from the bucket: the hot log starts past the data.
	if earliest, local := listOffset(t, cl, topic, -2), listOffset(t, cl, topic, -4); earliest != 0 || local <= dataEnd {
		t.Fatalf("earliest offset %d, earliest local %d: want 0, and the hot log past the data's end %d", earliest, local, dataEnd)
	}

	// kill -9 while passes swap segments in. Each round produces a wave of
	// updates (keys 0 to 179, five versions each, then a tombstone for a
	// tenth of them, which the next wave revives) and kills the server
	// during the pass that follows: in even rounds a few milliseconds
	// after the pass has read its first run, in odd rounds as soon as a
	// replacement object is in the bucket and its manifest does not name
	// it yet (between the PUT and the publish that follows the commit).
	abandoned, outcomes := 0, map[string]int{}
	for round := range 6 {
		var wave []*kgo.Record
		for v := range 5 {
			for k := range 180 {
				wave = append(wave, compactionUpdate(k, fmt.Sprintf("r%d-v%d", round, v)))
			}
		}
		for k := round; k < 180; k += 10 {
			wave = append(wave, &kgo.Record{Key: []byte(compactionKey(k))})
		}
		cl := newClient(t, s, producerOpts...)
		before := recompactedBytes(scrapeMetrics(t, s), "read")
		model.add(produceAll(t, cl, topic, wave))
		watch := b.watchReplacements(t)
		// Polled every millisecond or so: a pass takes tens of them. A
		// tick now and then seals the wave's last segment, and makes
		// another pass due.
		var caught string // in odd rounds, the replacement's name
		ready := func() bool {
			if round%2 == 0 {
				return recompactedBytes(scrapeMetrics(t, s), "read") > before
			}
			var ok bool
			caught, ok = watch.next(t)
			return ok
		}
		lastTick := time.Now()
		for deadline := lastTick.Add(30 * time.Second); !ready(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no recompaction pass to kill within 30 s of the wave\n%s", round, lastLines(s.log.String(), 60))
			}
			if time.Since(lastTick) > tickInterval {
				model.tick(t, cl, topic)
				lastTick = time.Now()
			}
		}
		what := "replacement " + caught + " stored and not published"
		if round%2 == 0 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			what = "pass begun"
		}
		s.kill()
		cl.Close()
		abandoned += strings.Count(s.log.String(), "offload: abandoning unfinished upload")
		t.Logf("round %d: killed at %s, after %d swaps", round, what, strings.Count(s.log.String(), "offload: segments recompacted"))
		s.restart()
		if round%2 == 1 {
			// Killed before its commit was durable, the replacement is
			// abandoned and its object deleted; after, the manifest is
			// republished with it, unless the first pass replaces it
			// again (then it is deleted once retired).
			published := false
			pollUntil(t, s, 10*time.Second, "the caught replacement deleted or published", func() (bool, string) {
				man := b.manifest(t)
				_, err := os.Stat(filepath.Join(b.root, b.prefix, caught))
				published = published || slices.ContainsFunc(man.Segments, func(s offload.ManifestSegment) bool { return s.Key == b.prefix+caught })
				return published || os.IsNotExist(err), caught + " in the bucket, not in the manifest"
			})
			abandonedIt := slices.ContainsFunc(strings.Split(s.log.String(), "\n"), func(line string) bool {
				return strings.Contains(line, "offload: abandoning unfinished upload") && strings.Contains(line, caught)
			})
			switch {
			case abandonedIt && published:
				t.Fatalf("round %d: replacement %s abandoned after the restart, and published", round, caught)
			case abandonedIt:
				outcomes["abandoned"]++
			default:
				outcomes["committed"]++
			}
		}
	}
	t.Logf("replacements caught stored and not published, by what came of them after the restart: %v", outcomes)

	// The orphan sweep ran when the partition was added at the restart;
	// replacements a kill left unfinished are abandoned by the next pass.
	cl = newClient(t, s, producerOpts...)
	model.settle(t, s, cl, topic, "the log compacted after the kills", func() (bool, string) {
		return model.compacted(t, model.read(t, s, topic))
	})
	abandoned += strings.Count(s.log.String(), "offload: abandoning unfinished upload")
	t.Logf("%d unfinished uploads or replacements abandoned after the kills", abandoned)

	// No more ticks: once the last tick's segment is uploaded and
	// recompacted, no upload and no pass, and the objects replaced are
	// deleted once retired. An orphan would stay.
	time.Sleep(3 * taskInterval)
	pollUntil(t, s, retireDelay+10*time.Second, "every segment object in the bucket named by its manifest", func() (bool, string) {
		man := b.manifest(t)
		unnamed, missing := b.orphans(t, man)
		if len(missing) > 0 {
			t.Fatalf("the bucket manifest names objects the bucket does not hold: %v", missing)
		}
		return len(unnamed) == 0, fmt.Sprintf("objects no manifest entry names: %v", unnamed)
	})
	man := b.manifest(t)
	if err := checkManifestShape(man, b.prefix, false); err != nil {
		t.Fatalf("bucket manifest: %v\n%+v", err, man.Segments)
	}
	// The log reads the same to franz-go and kcat, all of it but the tail
	// of ticks from the bucket.
	read := model.read(t, s, topic)
	if done, state := model.compacted(t, read); !done {
		t.Fatalf("after settling: %s", state)
	}
	lastData := model.lastNotTick()
	if earliest, local := listOffset(t, cl, topic, -2), listOffset(t, cl, topic, -4); earliest != 0 || local <= lastData {
		t.Fatalf("earliest offset %d, earliest local %d: want 0, and the hot log past the data's end %d", earliest, local, lastData)
	}
	// kcat (librdkafka) from offset 0, across the bucket's emptied
	// batches, and franz-go again after it, in case a pass came between.
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Log("kcat is not installed (make test installs it through scripts/test-deps): not read with kcat")
	} else {
		var kcatRead []testRecord
		var stderr string
		for range 3 {
			kcatRead, stderr = readKcat(t, s, topic)
			model.checkRecords(t, kcatRead)
			if read = model.read(t, s, topic); sameRecordOffsets(kcatRead, read) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if !sameRecordOffsets(kcatRead, read) {
			t.Fatalf("kcat -o 0 read offsets %v, franz-go %v\nkcat: %s", offsetsOf(kcatRead), offsetsOf(read), stderr)
		}
	}
	// A batch job reads the recompacted objects straight from the bucket
	// (strata export: the manifest, then the objects) as a consumer does.
	exported := exportAll(t, "file://"+b.root, topic)
	model.checkRecords(t, exported)
	var fromBucket []testRecord
	for _, r := range read {
		if r.offset < man.NextOffset() {
			fromBucket = append(fromBucket, r)
		}
	}
	if !sameRecordOffsets(exported, fromBucket) {
		t.Fatalf("strata export read offsets %v, franz-go %v below the tiered end %d", offsetsOf(exported), offsetsOf(fromBucket), man.NextOffset())
	}
	if spools, _ := filepath.Glob(filepath.Join(s.dataDir, "strata-recompact-*")); len(spools) > 0 {
		t.Errorf("recompaction spool files left in the data directory: %v", spools)
	}
}

// readKcat reads partition 0 of topic from offset 0 to its end with kcat,
// and returns the records with kcat's standard error.
func readKcat(t *testing.T, s *server, topic string) ([]testRecord, string) {
	t.Helper()
	out, stderr, err := runKcat(t, time.Minute, "", "-C", "-b", s.kafka, "-t", topic, "-o", "0", "-e", "-q", "-f", "%o %k %s\n")
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, stderr)
	}
	var read []testRecord
	for line := range strings.Lines(out) {
		fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
		offset, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || len(fields) != 3 {
			t.Fatalf("kcat printed %q", line)
		}
		read = append(read, testRecord{offset: offset, key: []byte(fields[1]), value: []byte(fields[2])})
	}
	return read, stderr
}

// compactionKey names key k.
func compactionKey(k int) string { return fmt.Sprintf("key%03d", k) }

// compactionModel is what a compacted topic must read as: every
// acknowledged record by offset, and each key's latest offset.
type compactionModel struct {
	produced map[int64]testRecord
	latest   map[string]int64
	last     int64 // the highest offset acknowledged
	bytes    int64 // keys and values acknowledged
	ticks    int
}

func newCompactionModel() *compactionModel {
	return &compactionModel{produced: map[int64]testRecord{}, latest: map[string]int64{}, last: -1}
}

// compactionUpdate makes a record of key k with a value of 200 bytes.
func compactionUpdate(k int, version string) *kgo.Record {
	key := compactionKey(k)
	value := key + "-" + version + "-"
	return &kgo.Record{Key: []byte(key), Value: []byte(value + strings.Repeat("x", 200-len(value)))}
}

// add notes acknowledged records, in offset order.
func (m *compactionModel) add(records []testRecord) {
	for _, r := range records {
		m.produced[r.offset] = r
		if o, ok := m.latest[string(r.key)]; !ok || r.offset > o {
			m.latest[string(r.key)] = r.offset
		}
		m.last = max(m.last, r.offset)
		m.bytes += int64(len(r.key) + len(r.value))
	}
}

// lastNotTick is the highest offset acknowledged of a key other than the
// tick's.
func (m *compactionModel) lastNotTick() int64 {
	last := int64(-1)
	for key, o := range m.latest {
		if key != tickKey {
			last = max(last, o)
		}
	}
	return last
}

// read reads the partition from offset 0 through the last record
// acknowledged.
func (m *compactionModel) read(t *testing.T, s *server, topic string) []testRecord {
	t.Helper()
	last := m.last
	return readUntil(t, s, topic, kgo.NewOffset().AtStart(), func(r *kgo.Record) bool { return r.Offset >= last })
}

// checkRecords fails the test unless every record read is the one
// acknowledged at its offset, in rising order.
func (m *compactionModel) checkRecords(t *testing.T, read []testRecord) {
	t.Helper()
	last := int64(-1)
	for _, r := range read {
		want, ok := m.produced[r.offset]
		if !ok || string(want.key) != string(r.key) || string(want.value) != string(r.value) {
			t.Fatalf("offset %d reads %q=%.20q, produced %q=%.20q", r.offset, r.key, r.value, want.key, want.value)
		}
		if r.offset <= last {
			t.Fatalf("offset %d after %d", r.offset, last)
		}
		last = r.offset
	}
}

// compacted checks a read from offset 0 against the model. It fails the
// test on what no compaction can excuse: a record that is not the one
// acknowledged at its offset, offsets out of order, a key whose latest
// value is missing, or a key whose latest record is a tombstone read with
// a value after it. It reports whether the read is fully compacted: no
// key but the tick's read twice, and no tombstone; else why not.
func (m *compactionModel) compacted(t *testing.T, read []testRecord) (bool, string) {
	t.Helper()
	m.checkRecords(t, read)
	lastRead := map[string]int64{}
	count := map[string]int{}
	tombstones := 0
	for _, r := range read {
		lastRead[string(r.key)] = r.offset
		count[string(r.key)]++
		if r.value == nil {
			tombstones++
		}
	}
	for key, latest := range m.latest {
		got, ok := lastRead[key]
		switch {
		case m.produced[latest].value != nil && (!ok || got != latest):
			t.Fatalf("%s: latest value at offset %d, the last read at %d (read %v)", key, latest, got, ok)
		case m.produced[latest].value == nil && ok && got != latest:
			// A tombstone removed while the versions before it are
			// still read: the key is back.
			t.Fatalf("%s: deleted at offset %d, and read at %d with no tombstone after", key, latest, got)
		}
	}
	var twice []string
	for key, n := range count {
		if n > 1 && key != tickKey {
			twice = append(twice, key)
		}
	}
	slices.Sort(twice)
	if len(twice) > 0 || tombstones > 0 {
		return false, fmt.Sprintf("%d records read, %d tombstones; keys read more than once: %v", len(read), tombstones, twice)
	}
	return true, ""
}

// tick produces the next update of the tick key, of 1 KiB, more than 1%
// of the compacted bucket: its segment, once sealed by the next tick and
// uploaded, makes a pass due.
func (m *compactionModel) tick(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	m.ticks++
	value := fmt.Sprintf("tick-%d-", m.ticks)
	m.add(produceAll(t, cl, topic, []*kgo.Record{{Key: []byte(tickKey), Value: []byte(value + strings.Repeat("t", 1024-len(value)))}}))
}

// settle ticks every tickInterval until cond holds, failing the test after 40
// seconds with what cond last said.
func (m *compactionModel) settle(t *testing.T, s *server, cl *kgo.Client, topic, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		m.tick(t, cl, topic)
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached within 40 s: %s; last seen: %s\nserver log:\n%s", what, state, lastLines(s.log.String(), 60))
		}
		time.Sleep(tickInterval)
	}
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.SplitAfter(text, "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "")
}

// recompactedBytes is the bytes of the kind ("read" or "written") that
// remote recompaction has counted in this process.
func recompactedBytes(m metricSamples, kind string) float64 {
	v, _ := m.find("strata_offload_recompacted_bytes_total", "kind", kind)
	return v
}

// recompactedDeletes is the segments remote recompaction has replaced in
// this process.
func recompactedDeletes(m metricSamples) float64 {
	v, _ := m.find("strata_offload_remote_deletes_total", "reason", "recompacted")
	return v
}

// tieredBucket is partition 0 of a topic in a server's default bucket, a
// directory (file://<data>/bucket).
type tieredBucket struct {
	root   string // the bucket's directory
	prefix string // the partition's key prefix
}

func tieredBucketOf(t *testing.T, s *server, topic string) tieredBucket {
	t.Helper()
	id := topicUUID(t, s, topic)
	return tieredBucket{root: filepath.Join(s.dataDir, "bucket"), prefix: segmentobject.PartitionPrefix("", topic, id, 0)}
}

// manifest reads the partition's manifest.json; nil before the first.
func (b tieredBucket) manifest(t *testing.T) *offload.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.root, b.prefix, segmentobject.ManifestName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	man, err := offload.ParseManifest(data)
	if err != nil {
		t.Fatalf("manifest.json: %v\n%s", err, data)
	}
	return man
}

// orphans lists the partition's directory: the segment objects (*.seg)
// man does not name, and the keys man names that have no object.
func (b tieredBucket) orphans(t *testing.T, man *offload.Manifest) (unnamed, missing []string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.root, b.prefix))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	if man != nil {
		for _, s := range man.Segments {
			named[s.Key] = true
		}
	}
	stored := map[string]bool{}
	for _, e := range entries {
		if key := b.prefix + e.Name(); strings.HasSuffix(e.Name(), ".seg") {
			stored[key] = true
			if !named[key] {
				unnamed = append(unnamed, e.Name())
			}
		}
	}
	for key := range named {
		if !stored[key] {
			missing = append(missing, key)
		}
	}
	return unnamed, missing
}

// replacementWatch spots a segment object that remote recompaction has
// stored and the manifest does not name yet: one not there when the watch
// began, never named by a manifest the watch read (as a replaced object
// awaiting deletion was, unless it came and went between two reads), with
// the base offset of a segment the manifest names (the first of the run
// it replaces; an upload's starts past the manifest's end).
type replacementWatch struct {
	b     tieredBucket
	known map[string]bool
}

func (b tieredBucket) watchReplacements(t *testing.T) *replacementWatch {
	t.Helper()
	w := &replacementWatch{b: b, known: map[string]bool{}}
	entries, err := os.ReadDir(filepath.Join(b.root, b.prefix))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w.known[e.Name()] = true
	}
	return w
}

// next returns the name of such an object, if there is one.
func (w *replacementWatch) next(t *testing.T) (string, bool) {
	t.Helper()
	man := w.b.manifest(t)
	if man == nil {
		return "", false
	}
	bases := map[int64]bool{}
	for _, s := range man.Segments {
		w.known[strings.TrimPrefix(s.Key, w.b.prefix)] = true
		bases[s.BaseOffset] = true
	}
	unnamed, _ := w.b.orphans(t, man)
	for _, name := range unnamed {
		if base, _, ok := parseSegmentKey(w.b.prefix, w.b.prefix+name); ok && !w.known[name] && bases[base] {
			return name, true
		}
	}
	return "", false
}

// tieredEnd is the last offset a manifest's segments hold, -1 if none.
func tieredEnd(man *offload.Manifest) int64 {
	if man == nil || len(man.Segments) == 0 {
		return -1
	}
	return man.Segments[len(man.Segments)-1].EndOffset
}

func manifestLogBytes(man *offload.Manifest) int64 {
	var n int64
	for _, s := range man.Segments {
		n += s.LogBytes
	}
	return n
}

func describeManifest(man *offload.Manifest) string {
	if man == nil {
		return "no bucket manifest"
	}
	return fmt.Sprintf("bucket manifest: %d segments, %d log bytes, offsets [%d, %d]", len(man.Segments), manifestLogBytes(man), man.LogStartOffset, tieredEnd(man))
}

// exportAll runs `strata export` over partition 0 of topic in the bucket,
// all of its tiered offsets, as JSON, and returns the records.
func exportAll(t *testing.T, bucketURL, topic string) []testRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, strataBinary, "export", "--bucket", bucketURL, "--topic", topic, "--partition", "0", "--format", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("strata export: %v: %s", err, stderr.String())
	}
	var out []testRecord
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Offset int64   `json:"offset"`
			Key    *string `json:"key"`
			Value  *string `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		r := testRecord{offset: e.Offset}
		if e.Key != nil {
			r.key = []byte(*e.Key)
		}
		if e.Value != nil {
			r.value = []byte(*e.Value)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
