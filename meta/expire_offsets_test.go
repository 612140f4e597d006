package meta

import (
	"errors"
	"testing"
)

// TestExpireOffsetsKeepsNewerCommits: ExpireOffsets deletes an offset only
// while it is the commit the coordinator read; a commit that landed after
// the coordinator looked, and offsets already gone, are left alone.
func TestExpireOffsetsKeepsNewerCommits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.mustApply(InitCluster{ClusterID: "c1"}, brokerCmd(1), topicCmd("t", 3, 1),
		CommitOffsets{Group: "g", CommitTimeMs: 10, Offsets: []OffsetCommit{
			{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1},
			{Topic: "t", Partition: 1, Offset: 2, LeaderEpoch: -1},
		}},
		CommitOffsets{Group: "h", CommitTimeMs: 10, Offsets: []OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}},
		// g's partition 1 is committed again after the coordinator read it.
		CommitOffsets{Group: "g", CommitTimeMs: 20, Offsets: []OffsetCommit{{Topic: "t", Partition: 1, Offset: 4, LeaderEpoch: -1}}},
	)
	h.mustApply(ExpireOffsets{Offsets: []ExpiredOffset{
		{Group: "g", Topic: "t", Partition: 0, CommitTimeMs: 10},
		{Group: "g", Topic: "t", Partition: 1, CommitTimeMs: 10},
		{Group: "g", Topic: "t", Partition: 2, CommitTimeMs: 10},
		{Group: "h", Topic: "t", Partition: 0, CommitTimeMs: 10},
	}})
	st := h.f.current()
	if _, ok := st.CommittedOffset("g", "t", 0); ok {
		t.Error("g's expired offset of partition 0 is still there")
	}
	if o, ok := st.CommittedOffset("g", "t", 1); !ok || o.Offset != 4 {
		t.Errorf("g's newer commit of partition 1: %+v %v, want offset 4", o, ok)
	}
	if got := st.Groups(); len(got) != 1 || got[0] != "g" {
		t.Errorf("groups with offsets %v, want [g]", got)
	}
	if err := h.apply(ExpireOffsets{})[0]; !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("an empty ExpireOffsets: %v, want ErrInvalidCommand", err)
	}
}
