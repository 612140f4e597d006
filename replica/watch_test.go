package replica

import (
	"slices"
	"testing"
)

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
	if woken(follower) {
		t.Fatal("an append woke a follower's fetch before WakeFollowers")
	}
	if woken(consumer) {
		t.Fatal("an append woke a consumer's fetch before the high watermark moved")
	}
	p.WakeFollowers()
	if !woken(follower) {
		t.Fatal("WakeFollowers left the follower's fetch waiting")
	}
	// A second watch is told only of what is appended after the call.
	again := NewWatch(1)
	p.Watch(again, true)
	p.WakeFollowers()
	if woken(again) {
		t.Fatal("WakeFollowers with nothing appended since woke a fetch")
	}
	appendIdempotent(t, p, 7, 2)
	p.WakeFollowers()
	if !woken(again) {
		t.Fatal("WakeFollowers after another append left the fetch waiting")
	}
}

// TestConsumerFetchIsWokenByEachHighWatermarkAdvance: a consumer's fetch
// waiting at the high watermark is woken when it advances over bytes
// appended before the fetch began waiting. (Told of every appended byte
// at the first advance, it was not woken by the second, and slept until
// its max wait.)
func TestConsumerFetchIsWokenByEachHighWatermarkAdvance(t *testing.T) {
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	appendIdempotent(t, p, 7, 0)
	endA := p.log.LogEndOffset()
	appendIdempotent(t, p, 7, 1)
	endB := p.log.LogEndOffset()
	followerReached(t, p, endA)
	if got := p.HighWatermark(); got != endA {
		t.Fatalf("high watermark %d after the follower fetched at %d", got, endA)
	}
	// A consumer that read up to the high watermark waits there.
	consumer := NewWatch(1)
	p.Watch(consumer, false)
	followerReached(t, p, endB)
	if got := p.HighWatermark(); got != endB {
		t.Fatalf("high watermark %d after the follower fetched at %d", got, endB)
	}
	if !woken(consumer) {
		t.Fatal("the high watermark advanced over a batch, and the consumer's fetch waiting for it was not woken")
	}
}

// TestUnreadableMarksAreBounded: while the high watermark stands still,
// the marks of appends above it stop growing at maxUnreadableMarks, the
// newest taking in the rest, and an advance over them all still tells a
// waiting consumer of every byte.
func TestUnreadableMarksAreBounded(t *testing.T) {
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(maxUnreadableMarks + 50) {
		appendIdempotent(t, p, 7, seq)
	}
	p.hwmMu.Lock()
	marks := len(p.unreadable)
	p.hwmMu.Unlock()
	if marks != maxUnreadableMarks {
		t.Fatalf("%d marks for %d appends above the high watermark, want %d", marks, maxUnreadableMarks+50, maxUnreadableMarks)
	}
	all := NewWatch(p.appendedBytes.Load())
	p.Watch(all, false)
	followerReached(t, p, p.log.LogEndOffset())
	if !woken(all) {
		t.Fatal("the high watermark passed every append, and a fetch waiting for all their bytes was not woken")
	}
}

// TestAppendMarksAtTheirEdges: an append the high watermark passed before
// its mark was noted is told at once; a truncation drops the marks past
// it and cuts the one it cut into; and an advance that ends inside a mark
// of many batches wakes a fetch waiting for one byte.
func TestAppendMarksAtTheirEdges(t *testing.T) {
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	appendIdempotent(t, p, 7, 0)
	end := p.log.LogEndOffset()
	followerReached(t, p, end)

	passed := NewWatch(1)
	p.Watch(passed, false)
	p.markAppended(end-1, end, p.appendedBytes.Load()+1)
	if !woken(passed) {
		t.Fatal("an append below the high watermark when its mark was noted was not told")
	}

	p.hwmMu.Lock()
	p.unreadable = []appendMark{{start: 10, end: 20, appended: 100}, {start: 20, end: 30, appended: 200}, {start: 30, end: 40, appended: 300}}
	p.hwmMu.Unlock()
	p.forgetAppendsAfter(25)
	p.hwmMu.Lock()
	got := slices.Clone(p.unreadable)
	p.hwmMu.Unlock()
	if want := []appendMark{{start: 10, end: 20, appended: 100}, {start: 20, end: 25, appended: 200}}; !slices.Equal(got, want) {
		t.Fatalf("marks after a truncation to 25: %+v, want %+v", got, want)
	}

	// Two appends noted as one mark (as a follower's fetched chunk is, or
	// appends past the bound): the high watermark stops between them.
	p.hwmMu.Lock()
	p.unreadable = nil
	p.hwmMu.Unlock()
	appendIdempotent(t, p, 7, 1)
	middle := p.log.LogEndOffset()
	appendIdempotent(t, p, 7, 2)
	p.hwmMu.Lock()
	p.unreadable = []appendMark{{start: end, end: p.log.LogEndOffset(), appended: p.appendedBytes.Load()}}
	p.hwmMu.Unlock()
	inside := NewWatch(1)
	p.Watch(inside, false)
	followerReached(t, p, middle)
	if got := p.HighWatermark(); got != middle {
		t.Fatalf("high watermark %d, want %d", got, middle)
	}
	if !woken(inside) {
		t.Fatal("the high watermark advanced into a mark of two appends, and a fetch waiting for one byte was not woken")
	}
}

// woken reports whether w's fetch was told to read again.
func woken(w *Watch) bool {
	select {
	case <-w.Ready:
		return true
	default:
		return false
	}
}

// followerReached makes p's log durable and has follower 1 fetch at
// offset, which takes the high watermark there.
func followerReached(t *testing.T, p *Partition, offset int64) {
	t.Helper()
	if err := p.log.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.followerFetched(p.role.Load(), 1, offset)
}
