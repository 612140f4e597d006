package meta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
)

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// replay applies a log to a fresh state machine, grouping entries into
// ApplyBatch calls of the given sizes (cycled), and returns its snapshot
// as written by Persist.
func replay(t testing.TB, log [][]byte, groups ...int) []byte {
	t.Helper()
	h := newHarness(t)
	for i, g := 0, 0; i < len(log); g++ {
		size := 1
		if len(groups) > 0 {
			size = groups[g%len(groups)]
		}
		end := min(i+size, len(log))
		h.applyRaw(log[i:end]...)
		i = end
	}
	if err := h.f.err(); err != nil {
		t.Fatalf("replay stopped: %v", err)
	}
	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !sink.closed || sink.cancelled {
		t.Fatal("Persist did not close the sink")
	}
	return sink.Bytes()
}

func TestReplayIsDeterministic(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		log := scenarioLog(t, seed, 300)
		first := replay(t, log)
		if second := replay(t, log); !bytes.Equal(first, second) {
			t.Fatalf("seed %d: replaying the same log twice gave different snapshots", seed)
		}
		if grouped := replay(t, log, 7, 1, 32); !bytes.Equal(first, grouped) {
			t.Fatalf("seed %d: applying in other batch groupings gave a different snapshot", seed)
		}
	}
}

func TestSnapshotRestoreGivesEqualState(t *testing.T) {
	t.Parallel()
	snap := replay(t, scenarioLog(t, 4, 300))
	h := newHarness(t)
	if err := h.f.Restore(readCloser(snap)); err != nil {
		t.Fatal(err)
	}
	if again := snapshotBytes(t, h.f.current()); !bytes.Equal(snap, again) {
		t.Fatal("snapshot of the restored state differs")
	}
	orig, err := readSnapshot(bufio.NewReader(bytes.NewReader(snap)))
	if err != nil {
		t.Fatal(err)
	}
	assertSameState(t, orig, h.f.current())
}

// assertSameState compares two states through the public accessors.
func assertSameState(t testing.TB, a, b *State) {
	t.Helper()
	same := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("%s differ:\n%+v\n%+v", what, x, y)
		}
	}
	same("indexes", a.Index(), b.Index())
	same("cluster ids", a.ClusterID(), b.ClusterID())
	same("brokers", a.Brokers(), b.Brokers())
	same("topics", a.Topics(), b.Topics())
	same("groups", a.Groups(), b.Groups())
	for _, topic := range a.Topics() {
		same("partitions of "+topic.Name, a.Partitions(topic.Name), b.Partitions(topic.Name))
		for p := range topic.Partitions {
			ma, _ := a.Manifest(topic.Name, p)
			mb, _ := b.Manifest(topic.Name, p)
			same("manifests", ma, mb)
		}
	}
	for _, g := range a.Groups() {
		same("offsets of "+g, a.GroupOffsets(g), b.GroupOffsets(g))
	}
	same("client quotas", a.ClientQuotas(), b.ClientQuotas())
	for _, broker := range append([]Broker{{}}, a.Brokers()...) {
		name := ""
		if broker.Epoch != 0 {
			name = strconv.Itoa(int(broker.ID))
		}
		same("configs of broker "+name, a.BrokerConfigs(name), b.BrokerConfigs(name))
	}
}

// smallSnapshot is a snapshot with a record of every kind, small enough to
// cut or corrupt at every byte.
func smallSnapshot(t testing.TB) []byte {
	h, _ := preconditionBase(t)
	return snapshotBytes(t, h.f.current())
}

func TestTruncatedSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	snap := smallSnapshot(t)
	for n := 0; n < len(snap); n++ {
		if _, err := readSnapshot(bufio.NewReader(bytes.NewReader(snap[:n]))); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(snap), err)
		}
	}
	if _, err := readSnapshot(bufio.NewReader(bytes.NewReader(append(snap, 0)))); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestCorruptSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	snap := smallSnapshot(t)
	r := rand.New(rand.NewPCG(6, 6))
	for i := range snap {
		bad := bytes.Clone(snap)
		bad[i] ^= byte(1 + r.IntN(255))
		if _, err := readSnapshot(bufio.NewReader(bytes.NewReader(bad))); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
}

func TestRestoreOfCorruptSnapshotStopsAndKeepsState(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	before := h.f.current()
	snap := replay(t, scenarioLog(t, 7, 40))
	err := h.f.Restore(readCloser(snap[:len(snap)/2]))
	if !errors.Is(err, ErrCorruptSnapshot) || !errors.Is(h.f.err(), ErrCorruptSnapshot) {
		t.Fatalf("restore: %v, fatal: %v", err, h.f.err())
	}
	if h.f.current() != before {
		t.Fatal("a failed restore replaced the state")
	}
}

// Structurally wrong snapshots with a correct CRC: the reader checks
// meaning, not just bytes.
func TestInconsistentSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	rec := func(kind byte, body string) []byte {
		return append([]byte{kind, byte(len(body))}, body...)
	}
	build := func(records ...[]byte) []byte {
		var b bytes.Buffer
		b.WriteString(snapshotMagic)
		b.Write([]byte{0, snapshotVersion})
		for _, r := range records {
			b.Write(r)
		}
		b.WriteByte(recordTrailer)
		b.Write([]byte{0, 0, 0, 0, 0, 0, 0, byte(len(records))})
		sum := crcOf(b.Bytes())
		b.Write(sum)
		return b.Bytes()
	}
	header := rec(recordHeader, `{"index":5,"cluster_id":"c","next_broker_epoch":3}`)
	topic := rec(recordTopic, `{"id":"6ba7b812-9dad-11d1-80b4-00c04fd430c8","name":"t","partitions":1}`)
	cases := map[string][]byte{
		"no header":                   build(),
		"header not first":            build(topic, header),
		"two headers":                 build(header, header),
		"partition without topic":     build(header, rec(recordPartition, `{"topic":"t","partition":0,"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0}`)),
		"topic missing partitions":    build(header, topic),
		"broker epoch not handed out": build(header, rec(recordBroker, `{"id":1,"epoch":9,"listeners":[]}`)),
		"unknown field":               build(rec(recordHeader, `{"index":5,"cluster_id":"c","next_broker_epoch":3,"x":1}`)),
		"unknown record kind":         build(header, rec(9, `{}`)),
		"kinds out of order":          build(header, topic, rec(recordBroker, `{"id":1,"epoch":1,"listeners":[]}`)),
		"bad topic config":            build(header, rec(recordTopic, `{"id":"6ba7b812-9dad-11d1-80b4-00c04fd430c8","name":"t","partitions":1,"configs":{"nope":"1"}}`)),
	}
	if _, err := readSnapshot(bufio.NewReader(bytes.NewReader(build(header)))); err != nil {
		t.Fatalf("the valid base case failed: %v", err)
	}
	for name, snap := range cases {
		if _, err := readSnapshot(bufio.NewReader(bytes.NewReader(snap))); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func crcOf(b []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, castagnoli))
}

// The golden snapshot pins format version 1: if this test fails, the
// encoding changed, and old snapshots would no longer read back the same.
// Bump snapshotVersion instead. STRATA_UPDATE_FIXTURES=1 rewrites the
// fixture and the fuzz seed corpora.
func TestGoldenSnapshot(t *testing.T) {
	log := scenarioLog(t, 1, 200)
	got := replay(t, log)
	golden := filepath.Join("testdata", "snapshot-v1.golden")
	if os.Getenv("STRATA_UPDATE_FIXTURES") != "" {
		writeFixtures(t, golden, got, log)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the scenario's snapshot no longer matches testdata/snapshot-v1.golden: the snapshot format changed")
	}
	st, err := readSnapshot(bufio.NewReader(bytes.NewReader(want)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, st), want) {
		t.Fatal("the golden snapshot does not re-encode to itself")
	}
}

func writeFixtures(t *testing.T, golden string, snap []byte, log [][]byte) {
	if err := os.WriteFile(golden, snap, 0o644); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][][]byte{
		"FuzzDecodeSnapshot": {snap, snap[:len(snap)/2], replay(t, scenarioLog(t, 2, 5))},
		"FuzzDecodeCommand":  log[:40],
	}
	for target, inputs := range seeds {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(in)))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := readSnapshot(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error without ErrCorruptSnapshot: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes to a snapshot that decodes to the
		// same bytes again.
		once := snapshotBytes(t, st)
		st2, err := readSnapshot(bufio.NewReader(bytes.NewReader(once)))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !bytes.Equal(once, snapshotBytes(t, st2)) {
			t.Fatal("encoding is not a fixed point")
		}
	})
}
