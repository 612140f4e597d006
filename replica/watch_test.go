package replica

import "testing"

// TestFollowerFetchesWaitForWakeFollowers: an append does not wake the
// followers' fetches waiting on the partition, so a produce request's
// other partitions can be appended before a follower reads any of them;
// WakeFollowers does, once, for everything appended since. A consumer's
// fetch waits for the high watermark as before.
func TestFollowerFetchesWaitForWakeFollowers(t *testing.T) {
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	follower, consumer := NewWatch(1), NewWatch(1)
	p.Watch(follower, true)
	p.Watch(consumer, false)
	appendIdempotent(t, p, 7, 0)
	appendIdempotent(t, p, 7, 1)
	select {
	case <-follower.Ready:
		t.Fatal("an append woke a follower's fetch before WakeFollowers")
	case <-consumer.Ready:
		t.Fatal("an append woke a consumer's fetch before the high watermark moved")
	default:
	}
	p.WakeFollowers()
	select {
	case <-follower.Ready:
	default:
		t.Fatal("WakeFollowers left the follower's fetch waiting")
	}
	// A second watch is told only of what is appended after the call.
	again := NewWatch(1)
	p.Watch(again, true)
	p.WakeFollowers()
	select {
	case <-again.Ready:
		t.Fatal("WakeFollowers with nothing appended since woke a fetch")
	default:
	}
	appendIdempotent(t, p, 7, 2)
	p.WakeFollowers()
	select {
	case <-again.Ready:
	default:
		t.Fatal("WakeFollowers after another append left the fetch waiting")
	}
}
