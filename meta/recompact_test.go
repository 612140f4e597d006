package meta

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/segmentobject"
)

// recompactBase is a state to replace segments in: brokers 1 and 2, topic
// "orders" (one partition on 1,2, led by 1 at leader epoch 0) and segments
// 0, 1 and 2 committed on it at offsets 0..99, 100..199 and 200..299.
func recompactBase(t testing.TB) (*fsmHarness, CreateTopic) {
	t.Helper()
	h := newHarness(t)
	topic := topicCmd("orders", 1, 1, 2)
	h.mustApply(brokerCmd(1), brokerCmd(2), topic)
	for i := range 3 {
		c := segmentCopy(topic.ID, i, int64(i*100), int64(i*100+99))
		h.mustApply(c, CommitSegmentCopy{Topic: "orders", TopicID: topic.ID, SegmentID: c.SegmentID})
	}
	return h, topic
}

// replaceCmd is a BeginSegmentReplace on orders-0 at leader epoch 0 of
// segment n, replacing the given segments, with one leader epoch entry at
// base: the replaced run's first offset, unless a case wants it wrong.
func replaceCmd(topicID uuid.UUID, n int, base int64, replaces ...int) BeginSegmentReplace {
	c := BeginSegmentReplace{
		Topic: "orders", TopicID: topicID, SegmentID: segmentID(n),
		MaxTimestamp: 2000, SizeBytes: 1024, LeaderEpochs: []EpochEntry{{Epoch: 0, StartOffset: base}},
		ObjectKey: "orders/0/" + segmentID(n).String() + ".seg",
	}
	for _, r := range replaces {
		c.Replaces = append(c.Replaces, segmentID(r))
	}
	return c
}

func commitReplaceCmd(topicID uuid.UUID, n int, retireAtMs int64) CommitSegmentReplace {
	return CommitSegmentReplace{Topic: "orders", TopicID: topicID, SegmentID: segmentID(n), RetireAtMs: retireAtMs}
}

// leaderChange moves orders-0's leadership from broker 1 to 2: leader
// epoch 1.
var leaderChange = AlterPartition{Topic: "orders", Partition: 0, PartitionEpoch: 0, Leader: 2, ISR: []int32{1, 2}}

func ordersManifest(t testing.TB, h *fsmHarness) Manifest {
	t.Helper()
	m, ok := h.f.current().Manifest("orders", 0)
	if !ok {
		t.Fatal("no manifest for orders-0")
	}
	if err := checkManifest(&m); err != nil {
		t.Fatalf("manifest invariants: %v", err)
	}
	return m
}

func segmentOf(t testing.TB, m Manifest, n int) RemoteSegment {
	t.Helper()
	i := m.segmentIndex(segmentID(n))
	if i < 0 {
		t.Fatalf("segment %d is not in the manifest", n)
	}
	return m.Segments[i]
}

func TestSegmentReplaceSwapsAtomically(t *testing.T) {
	t.Parallel()
	h, topic := recompactBase(t)
	before := ordersManifest(t, h)
	readableBefore := before.Committed()

	h.mustApply(replaceCmd(topic.ID, 10, 100, 1, 2))
	m := ordersManifest(t, h)
	got := segmentOf(t, m, 10)
	want := RemoteSegment{
		ID: segmentID(10), State: SegmentCopying, BaseOffset: 100, EndOffset: 299,
		MaxTimestamp: 2000, SizeBytes: 1024, LeaderEpochs: []EpochEntry{{Epoch: 0, StartOffset: 100}},
		ObjectKey: "orders/0/" + segmentID(10).String() + ".seg", Replaces: []uuid.UUID{segmentID(1), segmentID(2)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("begun replacement\n%+v\nwant\n%+v", got, want)
	}
	if len(m.Segments) != 4 {
		t.Fatalf("%d segments after the begin, want 4", len(m.Segments))
	}
	for _, n := range []int{0, 1, 2} {
		if s, old := segmentOf(t, m, n), segmentOf(t, before, n); !reflect.DeepEqual(s, old) {
			t.Fatalf("the begin changed segment %d: %+v, was %+v", n, s, old)
		}
	}
	if readable := m.Committed(); !reflect.DeepEqual(readable, readableBefore) {
		t.Fatalf("a copying replacement is readable:\n%+v\nwas\n%+v", readable, readableBefore)
	}

	h.mustApply(commitReplaceCmd(topic.ID, 10, 1234))
	m = ordersManifest(t, h)
	readable := m.Committed()
	if err := readable.Validate(); err != nil {
		t.Fatalf("committed manifest after the swap: %v", err)
	}
	var ids []uuid.UUID
	for _, s := range readable.Segments {
		ids = append(ids, s.ID)
	}
	if wantIDs := []uuid.UUID{segmentID(0), segmentID(10)}; !slices.Equal(ids, wantIDs) {
		t.Fatalf("readable segments %v, want %v", ids, wantIDs)
	}
	first, last := readableBefore.Segments[0], readableBefore.Segments[len(readableBefore.Segments)-1]
	if r := readable.Segments; r[0].BaseOffset != first.BaseOffset || r[len(r)-1].EndOffset != last.EndOffset || r[1].BaseOffset != r[0].EndOffset+1 {
		t.Fatalf("readable offsets %d..%d, %d..%d; want %d..%d without a gap",
			r[0].BaseOffset, r[0].EndOffset, r[1].BaseOffset, r[1].EndOffset, first.BaseOffset, last.EndOffset)
	}
	for offset := int64(100); offset <= 299; offset += 50 {
		if s, ok := m.Find(offset); !ok || s.ID != segmentID(10) {
			t.Fatalf("Find(%d) = %v %v, want the replacement", offset, s.ID, ok)
		}
	}
	if s := segmentOf(t, m, 10); s.State != SegmentCommitted || len(s.Replaces) != 0 || s.RetireAtMs != 0 {
		t.Fatalf("committed replacement %+v: want committed, no Replaces, no RetireAtMs", s)
	}
	for _, n := range []int{1, 2} {
		if s := segmentOf(t, m, n); s.State != SegmentDeleting || s.RetireAtMs != 1234 {
			t.Fatalf("replaced segment %d is %s retiring at %d, want deleting at 1234", n, s.State, s.RetireAtMs)
		}
	}
	if s := segmentOf(t, m, 0); s.State != SegmentCommitted || s.RetireAtMs != 0 {
		t.Fatalf("segment 0, not replaced, is %+v", s)
	}
	if m.RemoteLogStartOffset != before.RemoteLogStartOffset {
		t.Fatalf("the swap moved the remote log start offset from %d to %d", before.RemoteLogStartOffset, m.RemoteLogStartOffset)
	}

	swapped := contentBytes(t, h.f.current())
	if err := h.apply(commitReplaceCmd(topic.ID, 10, 9999))[0]; err != nil {
		t.Fatalf("committing the replacement again: %v", err)
	}
	if !bytes.Equal(swapped, contentBytes(t, h.f.current())) {
		t.Fatal("committing the replacement again changed the state")
	}
}

// TestSegmentReplaceAcrossTheRemoteLogStart: DeleteRecords put the remote
// log start inside segment 1, which stays readable from there; a run that
// starts with it may be replaced, one wholly below the start may not.
func TestSegmentReplaceAcrossTheRemoteLogStart(t *testing.T) {
	t.Parallel()
	h, topic := recompactBase(t)
	h.mustApply(MoveRemoteLogStart{Topic: "orders", TopicID: topic.ID, Offset: 150})
	if err := h.apply(replaceCmd(topic.ID, 9, 0, 0))[0]; !errors.Is(err, ErrInvalidSegment) {
		t.Fatalf("replacing segment 0, wholly below the start 150: %v, want ErrInvalidSegment", err)
	}
	h.mustApply(replaceCmd(topic.ID, 10, 100, 1, 2), commitReplaceCmd(topic.ID, 10, 1234))
	m, _ := h.f.current().Manifest("orders", 0)
	if got, ok := m.Find(150); !ok || got.ID != segmentID(10) {
		t.Fatalf("offset 150 found in %v (%v), want the replacement", got.ID, ok)
	}
}

func TestSegmentReplaceRefuses(t *testing.T) {
	t.Parallel()
	// Each case starts from recompactBase plus: segment 3 copying at
	// 300..399 (a plain upload), segment 4 an abandoned upload at 400..499
	// (deleting), and segment 10 a copying replacement of 1 and 2.
	extra := func(topicID uuid.UUID) []Command {
		return []Command{
			segmentCopy(topicID, 3, 300, 399),
			segmentCopy(topicID, 4, 400, 499),
			BeginSegmentDelete{Topic: "orders", TopicID: topicID, SegmentID: segmentID(4)},
			replaceCmd(topicID, 10, 100, 1, 2),
		}
	}
	withEpochs := func(c BeginSegmentReplace, epochs ...EpochEntry) BeginSegmentReplace {
		c.LeaderEpochs = epochs
		return c
	}
	deleteCmd := func(topicID uuid.UUID, n int) BeginSegmentDelete {
		return BeginSegmentDelete{Topic: "orders", TopicID: topicID, SegmentID: segmentID(n)}
	}
	cases := []struct {
		name  string
		setup func(topicID uuid.UUID) []Command
		cmd   func(topicID uuid.UUID) Command
		want  error
	}{
		{"replaces nothing", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100) }, ErrInvalidSegment},
		{"replaces an unknown segment", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100, 1, 99) }, ErrUnknownSegment},
		{"replaces a copying segment", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 200, 2, 3) }, ErrSegmentState},
		{"replaces a copying replacement", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100, 10) }, ErrSegmentState},
		{"replaces an abandoned upload", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 400, 4) }, ErrSegmentState},
		{"replaces a segment retention is deleting",
			func(id uuid.UUID) []Command { return []Command{deleteCmd(id, 0)} },
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 0, 0, 1) }, ErrSegmentState},
		{"replaces a run with a gap", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 0, 0, 2) }, ErrInvalidSegment},
		{"replaces a run out of order", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100, 1, 0) }, ErrInvalidSegment},
		{"replaces a segment twice", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100, 1, 1) }, ErrInvalidSegment},
		{"replaces a run below the remote log start",
			func(id uuid.UUID) []Command { return []Command{deleteCmd(id, 2)} },
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 0, 0, 1) }, ErrInvalidSegment},
		{"leader epochs start after the base", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 150, 1, 2) }, ErrInvalidSegment},
		{"leader epochs start before the base", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 0, 1, 2) }, ErrInvalidSegment},
		{"leader epochs past the end", nil,
			func(id uuid.UUID) Command {
				return withEpochs(replaceCmd(id, 11, 100, 1, 2), EpochEntry{Epoch: 0, StartOffset: 100}, EpochEntry{Epoch: 1, StartOffset: 300})
			}, ErrInvalidSegment},
		{"leader epochs not growing", nil,
			func(id uuid.UUID) Command {
				return withEpochs(replaceCmd(id, 11, 100, 1, 2), EpochEntry{Epoch: 1, StartOffset: 100}, EpochEntry{Epoch: 1, StartOffset: 150})
			}, ErrInvalidSegment},
		{"no object key", nil,
			func(id uuid.UUID) Command { c := replaceCmd(id, 11, 100, 1, 2); c.ObjectKey = ""; return c }, ErrInvalidSegment},
		{"no segment id", nil,
			func(id uuid.UUID) Command { c := replaceCmd(id, 11, 100, 1, 2); c.SegmentID = uuid.Nil; return c }, ErrInvalidSegment},
		{"begin at a stale leader epoch",
			func(uuid.UUID) []Command { return []Command{leaderChange} },
			func(id uuid.UUID) Command { return replaceCmd(id, 11, 100, 1, 2) }, ErrFencedLeaderEpoch},
		{"begin at a future leader epoch", nil,
			func(id uuid.UUID) Command { c := replaceCmd(id, 11, 100, 1, 2); c.LeaderEpoch = 1; return c }, ErrFencedLeaderEpoch},
		{"id of a committed segment", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 0, 100, 1, 2) }, ErrSegmentExists},
		{"id of a replaced segment", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 1, 100, 1, 2) }, ErrSegmentExists},
		{"id of a copying upload", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 3, 100, 1, 2) }, ErrSegmentExists},
		{"id of a copying replacement", nil,
			func(id uuid.UUID) Command { return replaceCmd(id, 10, 100, 1, 2) }, ErrSegmentExists},
		{"begin without topic id", nil,
			func(uuid.UUID) Command { return replaceCmd(uuid.Nil, 11, 100, 1, 2) }, ErrInvalidCommand},
		{"commit a plain upload", nil,
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 3, 1234) }, ErrSegmentState},
		{"commit an abandoned upload", nil,
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 4, 1234) }, ErrSegmentState},
		{"commit an unknown segment", nil,
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 99, 1234) }, ErrUnknownSegment},
		{"commit an abandoned replacement",
			func(id uuid.UUID) []Command { return []Command{deleteCmd(id, 10)} },
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrSegmentState},
		{"commit after a replaced segment was marked deleting",
			func(id uuid.UUID) []Command { return []Command{deleteCmd(id, 2)} },
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrSegmentState},
		{"commit after the first replaced segment was marked deleting",
			func(id uuid.UUID) []Command { return []Command{deleteCmd(id, 1)} },
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrSegmentState},
		{"commit after a replaced segment is gone",
			func(id uuid.UUID) []Command {
				return []Command{deleteCmd(id, 2), FinishSegmentDelete{Topic: "orders", TopicID: id, SegmentID: segmentID(2)}}
			},
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrUnknownSegment},
		{"commit after another replacement took the run",
			func(id uuid.UUID) []Command {
				return []Command{replaceCmd(id, 11, 100, 1, 2), commitReplaceCmd(id, 11, 1000)}
			},
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrSegmentState},
		{"commit at a stale leader epoch",
			func(uuid.UUID) []Command { return []Command{leaderChange} },
			func(id uuid.UUID) Command { return commitReplaceCmd(id, 10, 1234) }, ErrFencedLeaderEpoch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, topic := recompactBase(t)
			h.mustApply(extra(topic.ID)...)
			if tc.setup != nil {
				h.mustApply(tc.setup(topic.ID)...)
			}
			before := contentBytes(t, h.f.current())
			cmd := tc.cmd(topic.ID)
			err := h.apply(cmd)[0]
			if !errors.Is(err, tc.want) {
				t.Fatalf("%T %+v: got %v, want %v", cmd, cmd, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "meta: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if after := contentBytes(t, h.f.current()); !bytes.Equal(before, after) {
				t.Fatal("a refused command changed the state")
			}
			if h.f.err() != nil {
				t.Fatalf("a refused command stopped the state machine: %v", h.f.err())
			}
		})
	}
}

// After a leader change the new epoch replaces; this also shows the
// refusal table's leader change really moves the epoch, so its stale-epoch
// cases fail for the reason they name.
func TestSegmentReplaceAfterLeaderChange(t *testing.T) {
	t.Parallel()
	h, topic := recompactBase(t)
	h.mustApply(leaderChange)
	if p, _ := h.f.current().Partition("orders", 0); p.LeaderEpoch != 1 {
		t.Fatalf("leader epoch %d after the leader change, want 1", p.LeaderEpoch)
	}
	begin := replaceCmd(topic.ID, 11, 100, 1, 2)
	begin.LeaderEpoch = 1
	commit := commitReplaceCmd(topic.ID, 11, 1)
	commit.LeaderEpoch = 1
	h.mustApply(begin, commit)
}

func TestSetRemoteCleaned(t *testing.T) {
	t.Parallel()
	h, topic := recompactBase(t)
	set := func(epoch int32, offset int64) SetRemoteCleaned {
		return SetRemoteCleaned{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, Previous: ordersManifest(t, h).CleanedOffset, Offset: offset}
	}
	before := ordersManifest(t, h)
	h.mustApply(set(0, 150))
	m := ordersManifest(t, h)
	if m.CleanedOffset != 150 {
		t.Fatalf("cleaned offset %d, want 150", m.CleanedOffset)
	}
	m.CleanedOffset = before.CleanedOffset
	if !reflect.DeepEqual(m, before) {
		t.Fatalf("SetRemoteCleaned changed more than the cleaned offset:\n%+v\nwas\n%+v", m, before)
	}

	refused := []struct {
		name string
		cmd  Command
		want error
	}{
		{"negative offset", set(0, -1), ErrInvalidCommand},
		{"future leader epoch", set(1, 200), ErrFencedLeaderEpoch},
		{"unknown partition", SetRemoteCleaned{Topic: "orders", TopicID: topic.ID, Partition: 1, Offset: 200}, ErrUnknownPartition},
		{"no topic id", SetRemoteCleaned{Topic: "orders", Offset: 200}, ErrInvalidCommand},
		{"wrong topic id", SetRemoteCleaned{Topic: "orders", TopicID: uuid.New(), Offset: 200}, ErrTopicIDMismatch},
		// Another pass moved the checkpoint since this one began.
		{"moved meanwhile", SetRemoteCleaned{Topic: "orders", TopicID: topic.ID, Previous: 100, Offset: 200}, ErrSegmentState},
	}
	check := func(name string, cmd Command, want error) {
		t.Helper()
		prior := contentBytes(t, h.f.current())
		if err := h.apply(cmd)[0]; !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", name, err, want)
		}
		if !bytes.Equal(prior, contentBytes(t, h.f.current())) {
			t.Fatalf("%s: a refused command changed the state", name)
		}
	}
	for _, tc := range refused {
		check(tc.name, tc.cmd, tc.want)
	}

	h.mustApply(leaderChange)
	check("stale leader epoch", set(0, 200), ErrFencedLeaderEpoch)
	if got := ordersManifest(t, h).CleanedOffset; got != 150 {
		t.Fatalf("cleaned offset %d after refusals, want 150", got)
	}
	h.mustApply(set(1, 200))
	if got := ordersManifest(t, h).CleanedOffset; got != 200 {
		t.Fatalf("cleaned offset %d, want 200", got)
	}
	h.mustApply(set(1, 0))
	if got := ordersManifest(t, h).CleanedOffset; got != 0 {
		t.Fatalf("cleaned offset %d after setting 0, want 0", got)
	}
}

// A partition that never tiered anything has no stored manifest; the
// checkpoint still sticks.
func TestSetRemoteCleanedWithoutSegments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	topic := topicCmd("orders", 1, 1)
	h.mustApply(brokerCmd(1), topic, SetRemoteCleaned{Topic: "orders", TopicID: topic.ID, Offset: 42})
	m := ordersManifest(t, h)
	if m.CleanedOffset != 42 || len(m.Segments) != 0 || m.Topic != "orders" || m.Partition != 0 {
		t.Fatalf("manifest %+v, want orders-0 with no segments, cleaned to 42", m)
	}
}

// Replaces, RetireAtMs and CleanedOffset survive a snapshot and restore,
// and the restored pending replacement still commits.
func TestSnapshotKeepsRecompaction(t *testing.T) {
	t.Parallel()
	h, topic := recompactBase(t)
	h.mustApply(
		replaceCmd(topic.ID, 10, 0, 0, 1), commitReplaceCmd(topic.ID, 10, 5000),
		replaceCmd(topic.ID, 11, 0, 10, 2),
		SetRemoteCleaned{Topic: "orders", TopicID: topic.ID, Offset: 250},
	)
	orig := ordersManifest(t, h)
	if orig.CleanedOffset != 250 || len(segmentOf(t, orig, 11).Replaces) != 2 || segmentOf(t, orig, 0).RetireAtMs != 5000 {
		t.Fatalf("the manifest to snapshot lacks the new fields: %+v", orig)
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
	restored := newHarness(t)
	if err := restored.f.Restore(readCloser(sink.Bytes())); err != nil {
		t.Fatal(err)
	}
	got := ordersManifest(t, restored)
	if !reflect.DeepEqual(got, orig) {
		t.Fatalf("restored manifest\n%+v\nwant\n%+v", got, orig)
	}
	if !bytes.Equal(snapshotBytes(t, restored.f.current()), sink.Bytes()) {
		t.Fatal("the restored state snapshots to other bytes")
	}
	decoded, err := readSnapshot(bufio.NewReader(bytes.NewReader(sink.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	assertSameState(t, decoded, restored.f.current())

	restored.mustApply(commitReplaceCmd(topic.ID, 11, 6000))
	m := ordersManifest(t, restored)
	readable := m.Committed()
	want := []segmentobject.ManifestSegment{{
		ID: segmentID(11), Key: "orders/0/" + segmentID(11).String() + ".seg", BaseOffset: 0, EndOffset: 299,
		MaxTimestamp: 2000, LogBytes: 1024, LeaderEpochs: []EpochEntry{{Epoch: 0, StartOffset: 0}},
	}}
	if !reflect.DeepEqual(readable.Segments, want) {
		t.Fatalf("after committing the restored replacement, readable\n%+v\nwant\n%+v", readable.Segments, want)
	}
	for n, retire := range map[int]int64{0: 5000, 1: 5000, 10: 6000, 2: 6000} {
		if s := segmentOf(t, m, n); s.State != SegmentDeleting || s.RetireAtMs != retire {
			t.Errorf("segment %d is %s retiring at %d, want deleting at %d", n, s.State, s.RetireAtMs, retire)
		}
	}
}
