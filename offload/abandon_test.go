package offload

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
)

// lateCommit is a metadata group that loses the answer to the first
// replacement's commit (ErrOutcomeUnknown) and applies that commit only
// just before the next command naming the same segment: a commit still on
// its way through Raft when the next pass read the state, which showed the
// replacement copying.
type lateCommit struct {
	Meta
	mu   sync.Mutex
	held *meta.CommitSegmentReplace
	done bool
}

func (l *lateCommit) Propose(ctx context.Context, cmd meta.Command) (meta.Result, error) {
	l.mu.Lock()
	if c, ok := cmd.(meta.CommitSegmentReplace); ok && !l.done {
		l.held, l.done = &c, true
		l.mu.Unlock()
		return meta.Result{}, meta.ErrOutcomeUnknown
	}
	held := l.held
	if held != nil && segmentOf(cmd) == held.SegmentID {
		l.held = nil
	} else {
		held = nil
	}
	l.mu.Unlock()
	if held != nil {
		if _, err := l.Meta.Propose(ctx, *held); err != nil {
			return meta.Result{}, err
		}
	}
	return l.Meta.Propose(ctx, cmd)
}

// segmentOf is the segment a command abandoning or committing one names.
func segmentOf(cmd meta.Command) uuid.UUID {
	switch c := cmd.(type) {
	case meta.BeginSegmentDelete:
		return c.SegmentID
	case meta.CommitSegmentReplace:
		return c.SegmentID
	}
	return uuid.Nil
}

// TestUnsettledCommitIsNotAbandoned: remote recompaction's commit of its
// replacement gets no answer, and is applied only after the next pass read
// the replacement as copying. That pass commits it again rather than
// abandon it: before, its BeginSegmentDelete met the committed
// replacement and deleted it as retention does, moving the remote log
// start past its end and so giving up the partition's compacted history.
func TestUnsettledCommitIsNotAbandoned(t *testing.T) {
	h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(nil)})
	appended := h.keyedSegments(4, 10)
	h.mgr.Close()
	late := &lateCommit{Meta: h.meta}
	mgr, err := New(h.cfg, late, h.store)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(h.partition()); err != nil {
		t.Fatal(err)
	}
	h.mgr = mgr
	if err := h.sync(); !errors.Is(err, meta.ErrOutcomeUnknown) {
		t.Fatalf("the pass whose commit got no answer: %v, want ErrOutcomeUnknown", err)
	}
	if err := h.sync(); !errors.Is(err, errCommittedMeanwhile) {
		t.Fatalf("the pass that found the replacement copying: %v, want errCommittedMeanwhile", err)
	}
	h.mustSync()
	h.clock.Advance(h.cfg.RetireDelay) // the replaced segments' objects go
	h.mustSync()
	if man := h.manifest(); man.RemoteLogStartOffset != 0 {
		t.Fatalf("the remote log start moved to %d: the committed replacement was deleted", man.RemoteLogStartOffset)
	}
	h.checkBucket()
	checkRecords(t, h.remoteRecords(), latest(appended))
}

// TestSettleForgetsSettledCommits: an unsettled commit is forgotten once
// the partition's manifest shows its segment committed, deleting or gone,
// and kept while it is copying; other partitions' are left alone.
func TestSettleForgetsSettledCommits(t *testing.T) {
	m := &Manager{}
	m.mu.unsettled = map[uuid.UUID]unsettledCommit{}
	p := &partition{tp: topicPartition{"t", 0}}
	other := topicPartition{"t", 1}
	ids := map[string]uuid.UUID{}
	for _, name := range []string{"committed", "deleting", "gone", "copying", "other's"} {
		ids[name] = uuid.New()
		tp := p.tp
		if name == "other's" {
			tp = other
		}
		m.mu.unsettled[ids[name]] = unsettledCommit{tp: tp}
	}
	m.settle(p, meta.Manifest{Segments: []meta.RemoteSegment{
		{ID: ids["committed"], State: meta.SegmentCommitted},
		{ID: ids["deleting"], State: meta.SegmentDeleting},
		{ID: ids["copying"], State: meta.SegmentCopying},
	}})
	for name, id := range ids {
		_, kept := m.mu.unsettled[id]
		if want := name == "copying" || name == "other's"; kept != want {
			t.Errorf("%s: kept %v, want %v", name, kept, want)
		}
	}
}
