package offload

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/internal/syncbuf"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// Shared test fixtures: one metadata node for the whole package (each test
// makes its own topic), versitygw started by the first test that needs it,
// hot logs on tmpfs, a clock moved by hand, and a store wrapper that counts
// and fails calls.

const brokerID = 1

var shared struct {
	metaOnce sync.Once
	meta     *meta.Node
	metaDir  string
	metaErr  error

	gwOnce sync.Once
	gw     *objstoretest.VersityGW
	gwErr  error

	topics atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.meta != nil {
		shared.meta.Close()
		os.RemoveAll(shared.metaDir)
	}
	if shared.gw != nil {
		shared.gw.Stop()
	}
	os.Exit(code)
}

// testMeta returns the package's one-voter metadata node with broker 1
// registered, starting it on first use.
func testMeta(t testing.TB) *meta.Node {
	t.Helper()
	shared.metaOnce.Do(func() { shared.meta, shared.metaDir, shared.metaErr = startMeta() })
	if shared.metaErr != nil {
		t.Fatalf("starting meta: %v", shared.metaErr)
	}
	return shared.meta
}

func startMeta() (*meta.Node, string, error) {
	dir, err := os.MkdirTemp(fastDir(), "offload-meta-")
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, dir, err
	}
	cfg := meta.DefaultConfig()
	cfg.NodeID = "offload-test"
	cfg.Listener = l
	cfg.BindAddr = l.Addr().String()
	cfg.DataDir = dir
	cfg.HeartbeatTimeout = 200 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	// The tests do not heartbeat: the broker must never be fenced.
	cfg.BrokerSessionTimeout = 24 * time.Hour
	node, err := meta.Open(cfg)
	if err != nil {
		return nil, dir, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = node.WaitReady(ctx)
	if err == nil {
		_, err = node.Propose(ctx, meta.RegisterBroker{ID: brokerID, Listeners: []meta.Listener{
			{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}})
	}
	if err != nil {
		node.Close()
		return nil, dir, err
	}
	return node, dir, nil
}

// versityGW returns the package's versitygw with a bucket, starting it on
// first use. A test that needs it fails when it cannot start.
func versityGW(t testing.TB) *objstoretest.VersityGW {
	t.Helper()
	shared.gwOnce.Do(func() {
		ctx := context.Background()
		shared.gw, shared.gwErr = objstoretest.StartVersityGW(ctx)
		if shared.gwErr == nil {
			shared.gwErr = shared.gw.CreateBucket(ctx, testBucket)
		}
	})
	if shared.gwErr != nil {
		t.Fatalf("the S3 tests need versitygw (make test-deps): %v", shared.gwErr)
	}
	return shared.gw
}

const testBucket = "offload-test"

// fastDir is tmpfs when there is one: the hot logs and meta fsync a lot,
// which the tests need to be correct, not durable.
func fastDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

func tempDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp(fastDir(), pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// createTopic creates a one-partition topic led by the test broker and
// returns it.
func createTopic(t testing.TB, node *meta.Node, configs map[string]string) meta.Topic {
	t.Helper()
	name := fmt.Sprintf("t%d", shared.topics.Add(1))
	_, err := node.Propose(t.Context(), meta.CreateTopic{ID: uuid.New(), Name: name, Replicas: [][]int32{{brokerID}}, Configs: configs})
	if err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	topic, _ := node.State().Topic(name)
	return topic
}

// fakeClock is a Clock the test moves by hand.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeTimer{at: c.now.Add(d), c: ch})
	return ch
}

// Advance moves the clock and fires the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	c.waiters = kept
}

// timers reports how many timers wait on the clock.
func (c *fakeClock) timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// waitFor polls cond until it holds, failing the test after ten seconds
// with what the optional explain functions say.
func waitFor(t testing.TB, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var more []string
			for _, e := range explain {
				more = append(more, e())
			}
			t.Fatalf("timed out waiting for %s\n%s", what, strings.Join(more, "\n"))
		}
		time.Sleep(time.Millisecond)
	}
}

// countingStore wraps a store, counting PUTs by key and failing the calls
// its hooks say.
type countingStore struct {
	objstore.Store
	mu   sync.Mutex
	puts map[string]int
	// failPut, if set, is asked before each Put; a non-nil error fails it.
	failPut func(ctx context.Context, key string) error
	// failGet likewise for Get.
	failGet func(key string) error
}

func newCountingStore(s objstore.Store) *countingStore {
	return &countingStore{Store: s, puts: map[string]int{}}
}

func (s *countingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.mu.Lock()
	s.puts[key]++
	fail := s.failPut
	s.mu.Unlock()
	if fail != nil {
		if err := fail(ctx, key); err != nil {
			return err
		}
	}
	return s.Store.Put(ctx, key, r, size)
}

func (s *countingStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	s.mu.Lock()
	fail := s.failGet
	s.mu.Unlock()
	if fail != nil {
		if err := fail(key); err != nil {
			return nil, err
		}
	}
	return s.Store.Get(ctx, key, offset, length)
}

func (s *countingStore) putCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[key]
}

func (s *countingStore) setFailPut(f func(ctx context.Context, key string) error) {
	s.mu.Lock()
	s.failPut = f
	s.mu.Unlock()
}

// keys lists every key in a store.
func keys(t testing.TB, s objstore.Store) []string {
	t.Helper()
	var out []string
	for info, err := range s.List(t.Context(), "") {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		out = append(out, info.Key)
	}
	return out
}

// harness is one partition: a topic in the shared meta, a hot log, a store
// and a Manager over them.
type harness struct {
	t testing.TB
	// tb fails the consistency checks: t, or a property test's rapid.T.
	tb     fataler
	clock  *fakeClock
	meta   *meta.Node
	topic  meta.Topic
	store  *countingStore
	dir    string
	log    *hotlog.Log
	sealed atomic.Int64 // sealed segments seen
	// onSealed, if set, runs on each Sealed event (a broker calls Notify).
	onSealed atomic.Pointer[func()]
	cfg      Config
	mgr      *Manager
	logs     *syncbuf.Buffer // the Manager's logs

	// hwm, when >= 0, is the high watermark; -1 follows the log end.
	segmentBytes int64
	hwm          atomic.Int64
	epoch        atomic.Int32
	rng          *rand.Rand
	// appended holds every batch appended, by base offset.
	appended map[int64][]byte
}

type harnessOptions struct {
	topicConfigs map[string]string
	store        objstore.Store // nil: a fresh file:// store
	clock        Clock          // nil: the harness's fake clock
	tweak        func(*Config)
	segmentBytes int64  // the hot log's segment.bytes; 0: 16 KiB
	logDir       string // where the hot log lives; "": tmpfs
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	h := &harness{
		t: t, tb: t, clock: newFakeClock(), meta: testMeta(t),
		logs: &syncbuf.Buffer{},
		rng:  rand.New(rand.NewPCG(uint64(len(t.Name())), 7)), appended: map[int64][]byte{},
	}
	h.hwm.Store(-1)
	h.topic = createTopic(t, h.meta, o.topicConfigs)
	base := o.store
	if base == nil {
		var err error
		base, err = objstore.Open(t.Context(), "file://"+tempDir(t, "offload-store-"), objstore.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
	}
	h.store = newCountingStore(base)
	h.cfg = DefaultConfig()
	h.cfg.Clock = h.clock
	if o.clock != nil {
		// The hot log keeps the fake clock, for local retention; record
		// timestamps start from the Manager's time, for remote retention.
		h.cfg.Clock = o.clock
		h.clock.now = o.clock.Now()
	}
	h.cfg.Rand = rand.New(rand.NewPCG(1, 2))
	h.cfg.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.cfg.Registerer = prometheus.NewRegistry()
	if o.tweak != nil {
		o.tweak(&h.cfg)
	}
	h.dir = o.logDir
	if h.dir == "" {
		h.dir = tempDir(t, "offload-log-")
	}
	h.segmentBytes = cmp.Or(o.segmentBytes, 16<<10)
	h.openLog()
	h.startManager(nil)
	t.Cleanup(h.close)
	return h
}

// close closes the Manager and the hot log; it may be called again.
func (h *harness) close() {
	h.mgr.Close()
	h.log.Close()
}

func (h *harness) logged() string {
	return h.logs.String()
}

// openLog opens the hot log the way a broker opens a tiered partition's.
func (h *harness) openLog() {
	h.t.Helper()
	c := hotlog.DefaultConfig()
	c.SegmentBytes = h.segmentBytes
	c.IndexIntervalBytes = 1024
	c.SegmentIndexBytes = 4 << 10
	c.Clock = h.clock
	c.RetentionMs, c.RetentionBytes = LocalRetention(h.topic)
	c.CanDelete = LocalDeletionHook(h.meta.State, h.topic.Name, 0, func() (int64, int64) { return h.log.Retention() })
	c.Events.Sealed = func(hotlog.SegmentInfo) {
		h.sealed.Add(1)
		if f := h.onSealed.Load(); f != nil {
			(*f)()
		}
	}
	l, err := hotlog.Open(h.dir, c)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := l.AssignEpoch(0, l.LogEndOffset()); err != nil {
		h.t.Fatal(err)
	}
	h.log = l
}

// startManager starts a new Manager over the partition, stopping the pass
// at the step crash names.
func (h *harness) startManager(crash func(step) error) {
	h.t.Helper()
	if h.mgr != nil {
		h.mgr.Close()
	}
	mgr, err := New(h.cfg, h.meta, h.store)
	if err != nil {
		h.t.Fatal(err)
	}
	mgr.crashAt = crash
	if err := mgr.Add(h.partition()); err != nil {
		h.t.Fatal(err)
	}
	h.mgr = mgr
}

// partition is the harness's partition, as a broker hands it over.
func (h *harness) partition() Partition {
	return Partition{
		Topic: h.topic.Name, TopicID: h.topic.ID, Partition: 0, Log: h.log,
		HighWatermark: func() int64 {
			if w := h.hwm.Load(); w >= 0 {
				return w
			}
			return h.log.LogEndOffset()
		},
		LeaderEpoch: func() int32 { return h.epoch.Load() },
	}
}

// append appends n batches of one record of size bytes, timestamped now,
// and waits until they are durable.
func (h *harness) append(n, size int) {
	h.t.Helper()
	for range n {
		value := make([]byte, size+8)
		for i := 0; i < size; i += 8 {
			binary.LittleEndian.PutUint64(value[i:], h.rng.Uint64())
		}
		value = value[:size]
		ts := h.clock.Now().UnixMilli()
		b, err := record.Build(record.BuildOptions{FirstTimestamp: ts, ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: value}})
		if err != nil {
			h.t.Fatal(err)
		}
		h.appendBatch(b)
	}
}

// appendBatch appends one built batch, waits until it is durable and
// returns its offset.
func (h *harness) appendBatch(b []byte) int64 {
	h.t.Helper()
	batch, err := record.Check(b)
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := h.log.Append(batch)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := res.WaitAck(h.t.Context()); err != nil {
		h.t.Fatal(err)
	}
	h.appended[res.FirstOffset] = bytes.Clone(b)
	return res.FirstOffset
}

// roll seals the active segment and waits until it is sealed on disk and
// below the recovery point's segment, where compaction may rewrite it.
func (h *harness) roll() {
	h.t.Helper()
	want := h.sealed.Load() + 1
	if err := h.log.Roll(); err != nil {
		h.t.Fatal(err)
	}
	waitFor(h.t, "the rolled segment to be sealed", func() bool { return h.sealed.Load() >= want })
	// The checkpoint that makes the rolled segment rewritable (compaction)
	// follows the seal.
	segments := h.log.Segments()
	rolled := segments[len(segments)-2].BaseOffset
	waitFor(h.t, "the recovery point to pass the rolled segment", func() bool { return h.log.RewritableEnd() > rolled })
}

// segments makes n sealed segments of about a segment's worth each.
func (h *harness) segments(n int) {
	h.t.Helper()
	for range n {
		h.append(6, 2000)
		h.roll()
	}
}

func (h *harness) sync() error { return h.mgr.Sync(h.t.Context()) }

func (h *harness) mustSync() {
	h.t.Helper()
	if err := h.sync(); err != nil {
		h.t.Fatalf("Sync: %v", err)
	}
}

func (h *harness) manifest() meta.Manifest {
	m, _ := h.meta.State().Manifest(h.topic.Name, 0)
	return m
}

func (h *harness) committed() []meta.RemoteSegment {
	var out []meta.RemoteSegment
	for _, s := range h.manifest().Segments {
		if s.State == meta.SegmentCommitted {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) prefix() string {
	return segmentobject.PartitionPrefix("", h.topic.Name, h.topic.ID, 0)
}

// bucketManifest reads and parses the partition's manifest.json.
func (h *harness) bucketManifest() segmentobject.Manifest {
	h.t.Helper()
	rc, err := h.store.Store.Get(h.t.Context(), h.prefix()+segmentobject.ManifestName, 0, -1)
	if err != nil {
		h.t.Fatalf("reading the bucket manifest: %v", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		h.t.Fatal(err)
	}
	man, err := segmentobject.ParseManifest(data)
	if err != nil {
		h.t.Fatal(err)
	}
	return man
}

// checkConsistent checks the state a clean pass leaves: every manifest
// entry committed, the committed segments contiguous and holding every
// offset below the hot log's start, the bucket holding exactly their
// objects and a manifest.json that matches meta, and every object's bytes
// those that were appended.
func (h *harness) checkConsistent() {
	h.tb.Helper()
	man := h.manifest()
	want := []string{h.prefix() + segmentobject.ManifestName}
	for i, s := range man.Segments {
		if s.State != meta.SegmentCommitted {
			h.tb.Fatalf("segment %d (%d..%d) is %s after a clean pass", i, s.BaseOffset, s.EndOffset, s.State)
		}
		if i > 0 && s.BaseOffset != man.Segments[i-1].EndOffset+1 {
			h.tb.Fatalf("segments %d..%d and %d..%d are not contiguous", man.Segments[i-1].BaseOffset, man.Segments[i-1].EndOffset, s.BaseOffset, s.EndOffset)
		}
		want = append(want, s.ObjectKey)
		h.checkObject(s)
	}
	if start := h.log.LogStartOffset(); start > 0 && !covered(man, 0, start) {
		h.tb.Fatalf("offsets below the local start %d are not all tiered: %+v", start, man)
	}
	slices.Sort(want)
	if got := keys(h.t, h.store.Store); !slices.Equal(got, want) {
		h.tb.Fatalf("bucket holds %q, want %q", got, want)
	}
	bm := h.bucketManifest()
	if bm.Topic != h.topic.Name || bm.TopicID != h.topic.ID || bm.Partition != 0 ||
		bm.LogStartOffset != man.RemoteLogStartOffset || len(bm.Segments) != len(man.Segments) {
		h.tb.Fatalf("bucket manifest %+v does not match meta's %+v", bm, man)
	}
	for i, s := range bm.Segments {
		m := man.Segments[i]
		if s.ID != m.ID || s.Key != m.ObjectKey || s.BaseOffset != m.BaseOffset || s.EndOffset != m.EndOffset ||
			s.LogBytes != m.SizeBytes || s.MaxTimestamp != m.MaxTimestamp || !slices.Equal(s.LeaderEpochs, m.LeaderEpochs) {
			h.tb.Fatalf("bucket manifest segment %+v does not match meta's %+v", s, m)
		}
		info, err := h.store.Head(h.t.Context(), s.Key)
		if err != nil || info.Size != s.LogBytes+s.TailBytes {
			h.tb.Fatalf("object %s: %+v, %v; manifest says %d+%d bytes", s.Key, info, err, s.LogBytes, s.TailBytes)
		}
	}
}

// readObject reads a segment object back the way a reader will (one
// suffix read for the tail, then the log), checks its footer against the
// entry, and returns its index and batches.
func (h *harness) readObject(s meta.RemoteSegment) (*segmentobject.Index, [][]byte, []record.Header) {
	h.tb.Helper()
	ctx := h.t.Context()
	tail, size, err := objstore.ReadSuffix(ctx, h.store.Store, s.ObjectKey, 64<<10)
	if err != nil {
		h.tb.Fatalf("reading %s: %v", s.ObjectKey, err)
	}
	ix, err := segmentobject.ParseTail(tail, size)
	if err != nil {
		h.tb.Fatalf("%s: %v", s.ObjectKey, err)
	}
	if f := ix.Footer; f.BaseOffset != s.BaseOffset || f.NextOffset != s.EndOffset+1 || ix.LogLength() != s.SizeBytes {
		h.tb.Fatalf("%s: footer %+v does not match the entry %+v", s.ObjectKey, f, s)
	}
	logBytes := make([]byte, ix.LogLength())
	if err := objstore.ReadAt(ctx, h.store.Store, s.ObjectKey, logBytes, 0); err != nil {
		h.tb.Fatalf("%v", err)
	}
	batches, headers, err := record.Split(logBytes)
	if err != nil {
		h.tb.Fatalf("%s: %v", s.ObjectKey, err)
	}
	return ix, batches, headers
}

// checkObject reads a segment object back (readObject) and compares its
// batches with those appended.
func (h *harness) checkObject(s meta.RemoteSegment) {
	h.tb.Helper()
	_, batches, headers := h.readObject(s)
	next := s.BaseOffset
	for i, hd := range headers {
		want, ok := h.appended[hd.BaseOffset]
		if hd.BaseOffset != next || !ok {
			h.tb.Fatalf("%s: batch %d at offset %d, want %d", s.ObjectKey, i, hd.BaseOffset, next)
		}
		if !bytes.Equal(batches[i], want) { // both as the log stamped them
			h.tb.Fatalf("%s: batch at offset %d differs from the one appended", s.ObjectKey, hd.BaseOffset)
		}
		next = hd.NextOffset()
	}
	if next != s.EndOffset+1 {
		h.tb.Fatalf("%s: batches end at %d, the entry at %d", s.ObjectKey, next-1, s.EndOffset)
	}
}

// sealedSegments returns the hot log's sealed segments.
func (h *harness) sealedSegments() []hotlog.SegmentInfo {
	var out []hotlog.SegmentInfo
	for _, s := range h.log.Segments() {
		if s.Sealed {
			out = append(out, s)
		}
	}
	return out
}

// errCrash stands for a process dying at a protocol step.
var errCrash = errors.New("test: crashed")

// crashOnce stops the first pass that reaches at.
func crashOnce(at step) func(step) error {
	var done atomic.Bool
	return func(s step) error {
		if s == at && done.CompareAndSwap(false, true) {
			return errCrash
		}
		return nil
	}
}

// topicName makes t.Name() fit Kafka's topic name rules.
func topicName(t testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
}

// fataler is what the checks need of a *testing.T or *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}
