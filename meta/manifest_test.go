package meta

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/segmentobject"
)

// segmentModel is the reference model of one remote segment.
type segmentModel struct {
	base, end int64
	state     SegmentState
}

// TestManifestStateMachine drives the manifest commands at random against a
// simple model: every command's outcome must match the model's, committed
// segments never overlap, and the remote log start offset never moves back.
// A segment may be committed across the start (DeleteRecords can move it
// inside a batch), never wholly below it.
func TestManifestStateMachine(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		topic := topicCmd("orders", 1, 1, 2)
		h.mustApply(brokerCmd(1), brokerCmd(2), topic)
		model := map[uuid.UUID]*segmentModel{}
		var ids []uuid.UUID
		var rlso, lastRLSO int64
		leaderEpoch := int32(0)
		partitionEpoch := int32(0)

		// pickEpoch is usually the current leader epoch, sometimes a
		// stale one, which must be refused.
		pickEpoch := func(rt *rapid.T) (int32, bool) {
			if leaderEpoch > 0 && rapid.IntRange(0, 9).Draw(rt, "stale") == 0 {
				return leaderEpoch - 1, false
			}
			return leaderEpoch, true
		}
		pickID := func(rt *rapid.T) uuid.UUID {
			if len(ids) == 0 || rapid.IntRange(0, 9).Draw(rt, "unknown") == 0 {
				return uuid.New()
			}
			return rapid.SampledFrom(ids).Draw(rt, "segment")
		}
		overlapsCommitted := func(id uuid.UUID, base, end int64) bool {
			for other, s := range model {
				if other != id && s.state == SegmentCommitted && base <= s.end && s.base <= end {
					return true
				}
			}
			return false
		}
		check := func(rt *rapid.T, cmd Command, want error) {
			got := h.apply(cmd)[0]
			if (want == nil) != (got == nil) || want != nil && !errors.Is(got, want) {
				rt.Fatalf("%T %+v: got %v, want %v", cmd, cmd, got, want)
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"begin copy": func(rt *rapid.T) {
				epoch, current := pickEpoch(rt)
				base := rapid.Int64Range(0, 60).Draw(rt, "base")
				end := base + rapid.Int64Range(-1, 15).Draw(rt, "length")
				id := uuid.New()
				if len(ids) > 0 && rapid.IntRange(0, 9).Draw(rt, "reuse") == 0 {
					id = rapid.SampledFrom(ids).Draw(rt, "reused")
				}
				cmd := BeginSegmentCopy{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, SegmentID: id,
					BaseOffset: base, EndOffset: end, SizeBytes: 1, ObjectKey: "k",
					LeaderEpochs: []EpochEntry{{Epoch: epoch, StartOffset: base}}}
				var want error
				switch {
				case !current:
					want = ErrFencedLeaderEpoch
				case end < base:
					want = ErrInvalidSegment
				case model[id] != nil:
					want = ErrSegmentExists
				case end < rlso:
					want = ErrInvalidSegment
				case overlapsCommitted(id, base, end):
					want = ErrSegmentOverlap
				}
				check(rt, cmd, want)
				if want == nil {
					model[id] = &segmentModel{base: base, end: end, state: SegmentCopying}
					ids = append(ids, id)
				}
			},
			"commit copy": func(rt *rapid.T) {
				epoch, current := pickEpoch(rt)
				id := pickID(rt)
				s := model[id]
				var want error
				switch {
				case !current:
					want = ErrFencedLeaderEpoch
				case s == nil:
					want = ErrUnknownSegment
				case s.state == SegmentCommitted:
				case s.state == SegmentDeleting:
					want = ErrSegmentState
				case s.end < rlso:
					want = ErrInvalidSegment
				case overlapsCommitted(id, s.base, s.end):
					want = ErrSegmentOverlap
				}
				check(rt, CommitSegmentCopy{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, SegmentID: id}, want)
				if want == nil {
					s.state = SegmentCommitted
				}
			},
			"begin delete": func(rt *rapid.T) {
				epoch, current := pickEpoch(rt)
				id := pickID(rt)
				s := model[id]
				var want error
				switch {
				case !current:
					want = ErrFencedLeaderEpoch
				case s == nil:
					want = ErrUnknownSegment
				}
				check(rt, BeginSegmentDelete{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, SegmentID: id}, want)
				if want == nil {
					if s.state == SegmentCommitted {
						rlso = max(rlso, s.end+1)
					}
					s.state = SegmentDeleting
				}
			},
			"finish delete": func(rt *rapid.T) {
				epoch, current := pickEpoch(rt)
				id := pickID(rt)
				s := model[id]
				var want error
				switch {
				case !current:
					want = ErrFencedLeaderEpoch
				case s == nil:
					want = ErrUnknownSegment
				case s.state != SegmentDeleting:
					want = ErrSegmentState
				}
				check(rt, FinishSegmentDelete{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, SegmentID: id}, want)
				if want == nil {
					delete(model, id)
					ids = slices.DeleteFunc(ids, func(x uuid.UUID) bool { return x == id })
				}
			},
			"move start": func(rt *rapid.T) {
				epoch, current := pickEpoch(rt)
				offset := rapid.Int64Range(-1, 80).Draw(rt, "offset")
				var want error
				switch {
				case !current:
					want = ErrFencedLeaderEpoch
				case offset < 0:
					want = ErrInvalidCommand
				}
				check(rt, MoveRemoteLogStart{Topic: "orders", TopicID: topic.ID, LeaderEpoch: epoch, Offset: offset}, want)
				if want == nil {
					rlso = max(rlso, offset)
				}
			},
			"leader change": func(rt *rapid.T) {
				p, _ := h.f.current().Partition("orders", 0)
				next := int32(1)
				if p.Leader == 1 {
					next = 2
				}
				check(rt, AlterPartition{Topic: "orders", Partition: 0, PartitionEpoch: partitionEpoch, Leader: next, ISR: []int32{1, 2}}, nil)
				leaderEpoch++
				partitionEpoch++
			},
			"": func(rt *rapid.T) {
				m, _ := h.f.current().Manifest("orders", 0)
				if m.RemoteLogStartOffset != rlso || rlso < lastRLSO {
					rt.Fatalf("remote log start %d, model %d, before %d", m.RemoteLogStartOffset, rlso, lastRLSO)
				}
				lastRLSO = rlso
				if len(m.Segments) != len(model) {
					rt.Fatalf("%d segments, model %d", len(m.Segments), len(model))
				}
				if err := checkManifest(&m); err != nil {
					rt.Fatal(err)
				}
				committed := m.Committed()
				if err := committed.Validate(); err != nil {
					rt.Fatalf("committed manifest: %v", err)
				}
				readable := 0
				for _, s := range model {
					if s.state == SegmentCommitted && s.end >= rlso {
						readable++
					}
				}
				if len(committed.Segments) != readable {
					rt.Fatalf("committed manifest has %d segments, model %d", len(committed.Segments), readable)
				}
				for _, s := range committed.Segments {
					if want := model[s.ID]; want.state != SegmentCommitted || want.base != s.BaseOffset || want.end != s.EndOffset || want.end < rlso {
						rt.Fatalf("committed manifest holds %+v, model %+v", s, want)
					}
				}
				for i, s := range m.Segments {
					want := model[s.ID]
					if want == nil || want.state != s.State || want.base != s.BaseOffset || want.end != s.EndOffset {
						rt.Fatalf("segment %d %+v, model %+v", i, s, want)
					}
					if s.State == SegmentCommitted && s.EndOffset >= rlso {
						at := max(s.BaseOffset, rlso)
						if got, ok := m.Find(at); !ok || got.ID != s.ID {
							rt.Fatalf("Find(%d) = %v, %v", at, got.ID, ok)
						}
						if _, ok := m.Find(rlso - 1); ok {
							rt.Fatalf("Find(%d) below the start %d found a segment", rlso-1, rlso)
						}
					}
				}
			},
		})
	})
}

func TestManifestReaders(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	topic := topicCmd("orders", 1, 1)
	h.mustApply(brokerCmd(1), topic)
	m, ok := h.f.current().Manifest("orders", 0)
	if !ok || m.HighestTieredOffset() != -1 || len(m.Segments) != 0 {
		t.Fatalf("empty manifest %+v %v", m, ok)
	}
	if _, ok := h.f.current().Manifest("orders", 1); ok {
		t.Fatal("manifest of a partition that does not exist")
	}
	for i := range 3 {
		c := segmentCopy(topic.ID, i, int64(i*100), int64(i*100+99))
		h.mustApply(c)
		if i < 2 {
			h.mustApply(CommitSegmentCopy{Topic: "orders", TopicID: topic.ID, SegmentID: c.SegmentID})
		}
	}
	h.mustApply(BeginSegmentDelete{Topic: "orders", TopicID: topic.ID, SegmentID: segmentID(0)})
	m, _ = h.f.current().Manifest("orders", 0)
	if m.HighestTieredOffset() != 199 || m.RemoteLogStartOffset != 100 {
		t.Fatalf("highest %d, start %d", m.HighestTieredOffset(), m.RemoteLogStartOffset)
	}
	for offset, want := range map[int64]string{50: "", 150: segmentID(1).String(), 250: ""} {
		got, ok := m.Find(offset)
		if (want == "") == ok || ok && got.ID.String() != want {
			t.Errorf("Find(%d) = %v %v", offset, got.ID, ok)
		}
	}
	if fmt.Sprint(m.Segments[0].State, m.Segments[1].State, m.Segments[2].State) != "deleting committed copying" {
		t.Fatalf("states %v", m.Segments)
	}
}

// Committed gives the readable segments in the bucket manifest's terms, and
// through them the leader-epoch history a new replica needs.
func TestCommittedManifest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	topic := topicCmd("orders", 1, 1)
	h.mustApply(brokerCmd(1), topic)
	epochs := [][]EpochEntry{
		{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 60}},
		{{Epoch: 2, StartOffset: 100}, {Epoch: 3, StartOffset: 130}},
		{{Epoch: 5, StartOffset: 200}},
		{{Epoch: 5, StartOffset: 300}},
	}
	for i, e := range epochs {
		c := segmentCopy(topic.ID, i, int64(i*100), int64(i*100+99))
		c.LeaderEpochs = e
		h.mustApply(c)
		if i < 3 {
			h.mustApply(CommitSegmentCopy{Topic: "orders", TopicID: topic.ID, SegmentID: c.SegmentID})
		}
	}
	h.mustApply(BeginSegmentDelete{Topic: "orders", TopicID: topic.ID, SegmentID: segmentID(0)})
	m, _ := h.f.current().Manifest("orders", 0)
	got := m.Committed()
	want := segmentobject.Manifest{Version: segmentobject.ManifestVersion, Topic: "orders", Partition: 0, LogStartOffset: 100}
	for i := 1; i < 3; i++ {
		c := segmentCopy(topic.ID, i, int64(i*100), int64(i*100+99))
		want.Segments = append(want.Segments, segmentobject.ManifestSegment{
			ID: c.SegmentID, Key: c.ObjectKey, BaseOffset: c.BaseOffset, EndOffset: c.EndOffset,
			MaxTimestamp: c.MaxTimestamp, LogBytes: c.SizeBytes, LeaderEpochs: epochs[i],
		})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed =\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	if below, want := got.EpochsBelow(250), []EpochEntry{{Epoch: 2, StartOffset: 100}, {Epoch: 3, StartOffset: 130}, {Epoch: 5, StartOffset: 200}}; !slices.Equal(below, want) {
		t.Fatalf("EpochsBelow(250) = %v, want %v", below, want)
	}
	got.Segments[0].LeaderEpochs[0].Epoch = 9
	if m.Segments[1].LeaderEpochs[0].Epoch != 2 {
		t.Fatal("the committed manifest shares its epochs with the manifest it came from")
	}
}
