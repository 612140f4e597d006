package replica

import (
	"testing"

	"github.com/stratalog/strata/meta"
)

// TestTruncationBelowTheHighWatermarkAfterAnUncleanElection: a former
// leader, its four records committed (at epoch 1), follows a leader whose
// log ends at 2. It refuses to take the committed records back unless the
// partition's newest unclean election came after the epoch that wrote
// them; then it truncates, and its high watermark goes back with its log.
func TestTruncationBelowTheHighWatermarkAfterAnUncleanElection(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0}, nil)[0]
	for seq := range int32(4) {
		appendIdempotent(t, p, 7, seq)
	}
	if err := p.log.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.advanceHighWatermark()
	if hwm := p.HighWatermark(); hwm != 4 {
		t.Fatalf("the sole leader's high watermark is %d, want 4", hwm)
	}
	follow := func(uncleanEpoch int32) {
		t.Helper()
		r := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 3,
			UncleanLeaderEpoch: uncleanEpoch}
		if _, err := p.setRole(roleOf(r)); err != nil {
			t.Fatal(err)
		}
	}
	for _, uncleanEpoch := range []int32{0, 1} { // none; one at the records' epoch
		follow(uncleanEpoch)
		if err := p.truncateTo(3, 2); err == nil || p.log.LogEndOffset() != 4 || p.HighWatermark() != 4 {
			t.Fatalf("unclean epoch %d: truncating committed records: %v; log end %d, high watermark %d; want refused, 4 and 4",
				uncleanEpoch, err, p.log.LogEndOffset(), p.HighWatermark())
		}
	}
	follow(2)
	if err := p.truncateTo(3, 2); err != nil || p.log.LogEndOffset() != 2 || p.HighWatermark() != 2 {
		t.Fatalf("after an unclean election at epoch 2: %v; log end %d, high watermark %d; want both 2", err, p.log.LogEndOffset(), p.HighWatermark())
	}
}
