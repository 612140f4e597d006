package replica

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
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

// TestAcksAllWaitIsWokenByTheHighWatermarkAndTheRole: an acks=all
// produce whose records are durable here waits for the follower, and is
// answered when the follower's fetch takes the high watermark past them;
// one still waiting when the leadership moves is answered NOT_LEADER. (The
// replica unit tests passed with both wakes taken out; only the
// integration tests' timeouts would have said so.)
func TestAcksAllWaitIsWokenByTheHighWatermarkAndTheRole(t *testing.T) {
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	wait := func() <-chan error {
		t.Helper()
		raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := record.ValidateProduced(raw, p.ProduceOptions())
		if err != nil {
			t.Fatal(err)
		}
		outcome, err := p.Append([]record.Batch{batch}, AcksAll)
		if err != nil {
			t.Fatal(err)
		}
		ack := outcome.Expect()
		done := make(chan error, 1)
		go func() { done <- ack.Wait(t.Context()) }()
		// Parked: it made the channel an advance closes, which it
		// does only once its records are durable here and the high
		// watermark is still short of them.
		waitUntil(t, "the produce waiting on the high watermark", func() bool {
			p.hwmMu.Lock()
			defer p.hwmMu.Unlock()
			return p.hwmChanged != nil
		})
		return done
	}
	answer := func(done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the produce was never answered")
			return nil
		}
	}

	done := wait()
	select {
	case err := <-done:
		t.Fatalf("answered (%v) before the follower had the records", err)
	default:
	}
	followerReached(t, p, p.log.LogEndOffset())
	if err := answer(done); err != nil {
		t.Fatalf("answered %v once the follower had the records, want success", err)
	}

	done = wait()
	moved := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := p.setRole(roleOf(moved)); err != nil {
		t.Fatal(err)
	}
	if err := answer(done); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("answered %v after the leadership moved, want ErrNotLeader", err)
	}
}

// waitUntil polls cond until it holds, or fails the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
	}
}
