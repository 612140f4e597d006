package replica

import (
	"testing"

	"github.com/stratalog/strata/record"
)

func checkedBatch(t *testing.T, h record.Header, records []record.Record) record.Batch {
	t.Helper()
	b, err := record.Rebuild(h, records)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := record.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// TestAlignToLogEnd: a follower whose log end lies inside an empty batch
// the leader's cleaner joined keeps the part past its end (a valid empty
// batch from its end), drops an empty batch wholly below it, and leaves
// batches that start at its end, or hold records, as they are.
func TestAlignToLogEnd(t *testing.T) {
	empty := checkedBatch(t, record.Header{BaseOffset: 10, LastOffsetDelta: 9, PartitionLeaderEpoch: 3, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, nil)
	next := checkedBatch(t, record.Header{BaseOffset: 20, LastOffsetDelta: 0, PartitionLeaderEpoch: 3, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.Record{{Key: []byte("k"), Value: []byte("v")}})
	for _, tc := range []struct {
		logEnd          int64
		firstBase, last int64
		n               int
	}{
		{10, 10, 19, 2}, // at the batch's start: as it is
		{15, 15, 19, 2}, // inside: cut to start at the log end
		{19, 19, 19, 2},
		{20, 20, 20, 1}, // past it: dropped
	} {
		got, err := alignToLogEnd([]record.Batch{empty, next}, tc.logEnd)
		if err != nil {
			t.Fatal(err)
		}
		h := got[0].Header()
		if len(got) != tc.n || h.BaseOffset != tc.firstBase || h.LastOffset() != tc.last {
			t.Fatalf("log end %d: %d batches, the first [%d, %d]; want %d, [%d, %d]", tc.logEnd, len(got), h.BaseOffset, h.LastOffset(), tc.n, tc.firstBase, tc.last)
		}
		if _, err := record.Validate(got[0].Bytes()); err != nil || h.PartitionLeaderEpoch != 3 {
			t.Fatalf("log end %d: the first batch: %v, epoch %d", tc.logEnd, err, h.PartitionLeaderEpoch)
		}
	}
}
