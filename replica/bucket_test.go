package replica

import (
	"testing"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/segmentobject"
)

// TestDivergenceFromTheBucket: the first offset both lineages cover where
// their epochs differ, compared only where they overlap.
func TestDivergenceFromTheBucket(t *testing.T) {
	bucket := []segmentobject.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 50}, {Epoch: 5, StartOffset: 90}}
	for _, c := range []struct {
		name     string
		local    []hotlog.EpochEntry
		from, to int64
		at       int64
		diverged bool
	}{
		{"the same lineage", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 5, StartOffset: 90}, {Epoch: 6, StartOffset: 120}}, 60, 100, -1, false},
		{"an epoch the bucket's log never had", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 4, StartOffset: 80}}, 60, 100, 80, true},
		{"the bucket's epoch began later here", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 5, StartOffset: 95}}, 60, 100, 90, true},
		{"other from the start", []hotlog.EpochEntry{{Epoch: 1, StartOffset: 60}}, 60, 100, 60, true},
		{"differing only past the range", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 4, StartOffset: 92}}, 60, 90, -1, false},
		{"no local epochs to compare", nil, 60, 100, -1, false},
	} {
		at, diverged := divergence(bucket, c.local, c.from, c.to)
		if at != c.at || diverged != c.diverged {
			t.Errorf("%s: divergence %d, %v; want %d, %v", c.name, at, diverged, c.at, c.diverged)
		}
	}
}

// TestOffloadEpochFencedOnceDeposed: the epoch offload's commands carry is
// the one this broker leads at, and none once another broker leads, so an
// upload pass still running then is fenced by meta.
func TestOffloadEpochFencedOnceDeposed(t *testing.T) {
	u := startUploads(t)
	p := u.partition(0)
	r := *p.role.Load()
	if got := p.ledEpoch(); got != r.leaderEpoch {
		t.Fatalf("leading at epoch %d, offload's epoch %d", r.leaderEpoch, got)
	}
	r.leader, r.leaderEpoch = 7, r.leaderEpoch+1
	if _, err := p.setRole(&r); err != nil {
		t.Fatal(err)
	}
	if got := p.ledEpoch(); got != -1 {
		t.Fatalf("offload's epoch %d after broker 7 took the lead at %d, want -1", got, r.leaderEpoch)
	}
}
