package replica

import (
	"testing"
	"time"
)

// TestAnAdditionTheMetadataShowedIsNotCountedAgain: the leader proposes
// follower 2 for the ISR; the metadata that shows it added (partition
// epoch 5), then a change that takes it out again (epoch 6), reach the
// leader before the proposal's answer. The answer must not count follower
// 2 towards the high watermark again: it is out of the ISR, and dead it
// would hold the high watermark, and every acks=all produce, until the
// partition's next change.
func TestAnAdditionTheMetadataShowedIsNotCountedAgain(t *testing.T) {
	t.Parallel()
	var f followers
	f.reset([]int32{1, 2}, 1, time.Now())
	if !f.beginAlter(2, true) {
		t.Fatal("no change in flight, yet the addition was not begun")
	}
	f.committedISR([]int32{1, 2}, 5)
	f.committedISR([]int32{1}, 6)
	f.endAlter(2, true, true, 5)
	if end := f.committed([]int32{1}, 10); end != 10 {
		t.Fatalf("high watermark allowed %d with the leader alone in the ISR at 10, want 10", end)
	}
}
