package replica

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/internal/smallfs"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
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
	if !f.beginAlter(2, true, 4) {
		t.Fatal("no change in flight, yet the addition was not begun")
	}
	f.committedISR([]int32{1, 2}, 5)
	f.committedISR([]int32{1}, 6)
	f.endAlter(2, true, false)
	if end := f.committed([]int32{1}, 10); end != 10 {
		t.Fatalf("high watermark allowed %d with the leader alone in the ISR at 10, want 10", end)
	}
}

// TestAnAdditionCountsUntilItsOutcomeIsKnown: an addition whose answer
// was lost, or refused as stale, may have committed: the follower counts
// towards the high watermark until the leader's metadata shows it in the
// ISR or moves past the epoch its proposal was built on. A refusal the
// state machine gave for another reason settles it at once; so does the
// follower leaving the replicas (a reassignment cancelled) while its
// addition is in flight.
func TestAnAdditionCountsUntilItsOutcomeIsKnown(t *testing.T) {
	t.Parallel()
	start := func() *followers {
		f := new(followers)
		f.reset([]int32{0, 1, 2, 3}, 0, time.Now())
		f.fetched(1, 10, 10, time.Now())
		f.fetched(2, 7, 10, time.Now())
		f.fetched(3, 10, 10, time.Now())
		if !f.beginAlter(2, true, 4) {
			t.Fatal("no change in flight, yet the addition was not begun")
		}
		return f
	}
	isr := []int32{0, 1}
	f := start()
	f.endAlter(2, true, false) // the answer was lost
	f.committedISR(isr, 4)     // a change at the same epoch settles nothing
	if end := f.committed(isr, 10); end != 7 {
		t.Fatalf("with follower 2's addition unanswered the high watermark may reach %d, want 7 (its log end)", end)
	}
	f.committedISR(isr, 5)
	if end := f.committed(isr, 10); end != 10 {
		t.Fatalf("with the metadata past the addition's epoch and 2 not in the ISR: %d, want 10", end)
	}
	f = start()
	f.endAlter(2, true, true) // refused: an ineligible replica
	if end := f.committed(isr, 10); end != 10 {
		t.Fatalf("after a refusal: %d, want 10", end)
	}
	var g followers
	g.reset([]int32{0, 1, 2, 3}, 0, time.Now())
	for _, id := range []int32{1, 2, 3} {
		g.fetched(id, 10, 10, time.Now())
	}
	if !g.beginAlter(3, true, 4) {
		t.Fatal("the addition was not begun")
	}
	g.track([]int32{0, 1, 2}, time.Now()) // a reassignment cancelled at epoch 6
	if end := g.committed([]int32{0, 1, 2}, 10); end != 10 {
		t.Fatalf("with 3 gone from the replicas before the leader saw the epoch: %d, want 10", end)
	}
	g.committedISR([]int32{0, 1, 2}, 6)
	g.endAlter(3, true, false) // committed at 5
	if end := g.committed([]int32{0, 1, 2}, 10); end != 10 {
		t.Fatalf("with ISR {0,1,2} all at 10 and 3 gone from the replicas: %d, want 10", end)
	}
	// A partition reopened on the same log (a changed log setting) keeps
	// counting the additions its previous Partition had pending.
	f = start()
	reopened := new(followers)
	reopened.reset([]int32{0, 1, 2, 3}, 0, time.Now())
	reopened.fetched(1, 10, 10, time.Now())
	reopened.fetched(2, 7, 10, time.Now())
	reopened.keepAdditions(f.additions())
	if end := reopened.committed(isr, 10); end != 7 {
		t.Fatalf("reopened with follower 2's addition pending: %d, want 7", end)
	}
}

// TestAnAdditionNeverTrailsTheHighWatermark: follower 2, out of the ISR,
// fetches at the high watermark while follower 1 fetches the record just
// appended past it, from two goroutines, again and again. Whenever 2 is
// proposed for the ISR, the high watermark must not be past 2's log end:
// otherwise 2 joins without a record the ISR is said to hold. (Follower
// 1's advance used to run between 2's look at the high watermark and its
// claim, not counting 2.) The proposals are refused (an ineligible
// replica, which settles them), so that each round starts again with 2
// out of the ISR.
func TestAnAdditionNeverTrailsTheHighWatermark(t *testing.T) {
	t.Parallel()
	var p *Partition
	var behind atomic.Int64
	check := proposeFunc(func(cmd meta.Command) (meta.Result, error) {
		if hwm, end := p.HighWatermark(), p.followers.logEnd(2); hwm > end {
			behind.Store(hwm<<32 | end)
		}
		return meta.Result{}, meta.ErrIneligibleReplica
	})
	// flush.ms: the log end is durable as it is written, so that the
	// rounds need no fsync.
	var m *Manager
	m, p = openOnePartition(t, check, "additions", map[string]string{"flush.ms": "60000"},
		meta.Partition{Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1})
	r := p.role.Load()
	for seq := range int32(20000) {
		hwm := p.log.LogEndOffset()
		appendIdempotent(t, p, 7, seq)
		var wg sync.WaitGroup
		wg.Go(func() { p.followerFetched(r, 1, hwm+1) })
		wg.Go(func() { p.followerFetched(r, 2, hwm) })
		wg.Wait()
		m.alters.Wait()
		if b := behind.Load(); b != 0 {
			t.Fatalf("round %d: follower 2 was proposed for the ISR at log end %d with the high watermark at %d", seq, b&(1<<32-1), b>>32)
		}
		p.followerFetched(r, 2, hwm+1)
		m.alters.Wait()
		if got := p.HighWatermark(); got != hwm+1 {
			t.Fatalf("round %d: high watermark %d with both followers at %d", seq, got, hwm+1)
		}
	}
}

// openOnePartition opens a Manager on broker 0 whose metadata is propose,
// and in it the partition of topic (one partition, configs) assigned as
// assignment; the test's end waits for its ISR changes and closes it.
func openOnePartition(t *testing.T, propose proposeFunc, name string, configs map[string]string, assignment meta.Partition) (*Manager, *Partition) {
	t.Helper()
	m, err := NewManager(Config{BrokerID: 0, DataDir: t.TempDir(), ProducerStateScanBytes: 1 << 20, SegmentFiles: 64, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: propose, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	topic := meta.Topic{ID: uuid.New(), Name: name, Partitions: 1, Configs: configs}
	assignment.Topic = name
	p, err := m.openPartition(topic, assignment)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.alters.Wait()
		p.close()
	})
	return m, p
}

// proposeFunc is a Metadata whose proposals go to a function.
type proposeFunc func(meta.Command) (meta.Result, error)

func (f proposeFunc) State() *meta.State { return nil }

func (f proposeFunc) Propose(_ context.Context, cmd meta.Command) (meta.Result, error) { return f(cmd) }

func (f proposeFunc) Watch(meta.WatchOptions) *meta.Watch { return nil }

// TestALostAdditionAnswerNeverLetsTheHighWatermarkPass: an AlterPartition
// adding follower 2 commits, but its answer is lost (the proposer's
// deadline passed while its node applied it). The leader proposes it
// again, which the state machine refuses as stale (the first one
// committed); all the while 2 counts towards the high watermark, so
// follower 1 alone cannot move it past 2's log end, and when the
// metadata shows 2 in the ISR every acknowledged record is in 2's log.
func TestALostAdditionAnswerNeverLetsTheHighWatermarkPass(t *testing.T) {
	t.Parallel()
	var proposals atomic.Int32
	lost := proposeFunc(func(cmd meta.Command) (meta.Result, error) {
		if proposals.Add(1) == 1 {
			return meta.Result{Index: 42}, fmt.Errorf("%w: %w", meta.ErrOutcomeUnknown, context.DeadlineExceeded)
		}
		return meta.Result{}, meta.ErrStalePartitionEpoch
	})
	m, p := openOnePartition(t, lost, "lost", map[string]string{"flush.ms": "60000"},
		meta.Partition{Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1})
	r := p.role.Load()
	appendIdempotent(t, p, 7, 0) // offset 0
	p.followerFetched(r, 1, 0)
	p.followerFetched(r, 2, 0) // at the high watermark: proposed
	m.alters.Wait()
	if n := proposals.Load(); n != 2 {
		t.Fatalf("the addition was proposed %d times, want twice: again once its answer was lost", n)
	}
	p.followerFetched(r, 1, 1)
	if hwm, end := p.HighWatermark(), p.followers.logEnd(2); hwm > end {
		t.Fatalf("high watermark %d past follower 2's log end %d while its addition may have committed", hwm, end)
	}
	next := *r
	next.isr, next.partitionEpoch = []int32{0, 1, 2}, 2
	if _, err := p.setRole(&next); err != nil {
		t.Fatal(err)
	}
	p.followerFetched(&next, 1, 1)
	if hwm, end := p.HighWatermark(), p.followers.logEnd(2); hwm > end {
		t.Fatalf("ISR %v: high watermark %d past member 2's log end %d", next.isr, hwm, end)
	}
	p.followerFetched(&next, 2, 1)
	if hwm := p.HighWatermark(); hwm != 1 {
		t.Fatalf("high watermark %d once every member has offset 0, want 1", hwm)
	}
}

// TestAPeriodicallyFlushedFollowerTruncatesBelowItsHighWatermark: under
// flush.ms a leader acknowledges records before they are durable, and one
// that lost power and was elected again (cleanly: it was the ISR) lost
// them. Its follower, which learned a high watermark past them, must
// truncate to the leader's log as Kafka's does, or it never follows again;
// under fsync before ack the same truncation is refused, as it would take
// committed records back.
func TestAPeriodicallyFlushedFollowerTruncatesBelowItsHighWatermark(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configs   map[string]string
		truncates bool
	}{
		{map[string]string{"flush.ms": "60000"}, true},
		{nil, false},
	} {
		assignment := meta.Partition{Topic: "flushed", Replicas: []int32{0, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
		_, p := openOnePartition(t, func(meta.Command) (meta.Result, error) { return meta.Result{}, nil }, "flushed", tc.configs, assignment)
		var fetched []byte
		for i := range int64(4) {
			raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, []record.Record{{Value: []byte("v")}})
			if err != nil {
				t.Fatal(err)
			}
			record.SetBaseOffset(raw, i)
			record.SetPartitionLeaderEpoch(raw, 1)
			fetched = append(fetched, raw...)
		}
		a, err := p.appendFromLeader(1, fetched, 4)
		if err != nil {
			t.Fatal(err)
		}
		a.expect()
		if err := a.finish(t.Context()); err != nil {
			t.Fatal(err)
		}
		if hwm := p.HighWatermark(); hwm != 4 {
			t.Fatalf("high watermark %d after the leader's 4, want 4", hwm)
		}
		assignment.LeaderEpoch, assignment.PartitionEpoch = 2, 2 // the leader, back with 2 records
		if _, err := p.setRole(roleOf(assignment)); err != nil {
			t.Fatal(err)
		}
		err = p.truncateTo(2, 2)
		switch {
		case tc.truncates && (err != nil || p.Log().LogEndOffset() != 2 || p.HighWatermark() != 2):
			t.Fatalf("flush.ms: truncating to 2: %v; log end %d, high watermark %d, want both 2", err, p.Log().LogEndOffset(), p.HighWatermark())
		case !tc.truncates && err == nil:
			t.Fatal("fsync before ack: truncating below the high watermark was not refused")
		}
	}
}

// TestAnUnansweredISRChangeStopsWithTheBroker: an AlterPartition whose
// answer never comes is proposed again and again, but not past the
// broker's stop: shutdown waits for the changes in flight before it
// closes any partition, and must not wait for the metadata group.
func TestAnUnansweredISRChangeStopsWithTheBroker(t *testing.T) {
	t.Parallel()
	var proposals atomic.Int32
	unknown := proposeFunc(func(meta.Command) (meta.Result, error) {
		proposals.Add(1)
		return meta.Result{}, fmt.Errorf("%w: %w", meta.ErrOutcomeUnknown, context.DeadlineExceeded)
	})
	m, p := openOnePartition(t, unknown, "unanswered", map[string]string{"flush.ms": "60000"},
		meta.Partition{Replicas: []int32{0, 1}, ISR: []int32{0}, Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1})
	p.followerFetched(p.role.Load(), 1, 0) // at the high watermark: proposed
	waitUntil(t, "the addition proposed again", func() bool { return proposals.Load() >= 2 })
	close(m.stopping)
	m.alters.Wait()
}

// TestAFollowerNotesTheProducersOfAPartlyWrittenFetch: a fetch response
// a follower appends may roll its log partway; a roll that fails for
// space leaves the batches before it in the log, refused as a whole. Their
// producers must be noted, or a retry of theirs after a failover to this
// replica would be taken as new and written twice.
func TestAFollowerNotesTheProducersOfAPartlyWrittenFetch(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "4m")
	m, err := NewManager(Config{BrokerID: 0, DataDir: disk, ProducerStateScanBytes: 1 << 20, SegmentFiles: 64, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: proposeFunc(func(meta.Command) (meta.Result, error) { return meta.Result{}, nil }), Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	topic := meta.Topic{ID: uuid.New(), Name: "partly", Partitions: 1, Configs: map[string]string{"segment.bytes": strconv.Itoa(64 << 10), "segment.index.bytes": "4096"}}
	p, err := m.openPartition(topic, meta.Partition{Topic: topic.Name, Replicas: []int32{0, 1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	// Twelve batches of about 10 KiB from producer 7, one record each: the
	// log rolls after the sixth.
	var fetched []byte
	for seq := range int32(12) {
		raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: 7, BaseSequence: seq},
			[]record.Record{{Value: bytes.Repeat([]byte{byte(seq)}, 10<<10)}})
		if err != nil {
			t.Fatal(err)
		}
		record.SetBaseOffset(raw, int64(seq))
		record.SetPartitionLeaderEpoch(raw, 1)
		fetched = append(fetched, raw...)
	}
	// Room for the first run (six batches, 62 KiB), its indexes' and the
	// next segment's (4 KiB each), not for the second run.
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for page := make([]byte, 4096); ; {
		if _, err := f.Write(page); err != nil {
			break
		}
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size - 88<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := p.appendFromLeader(1, fetched, 12); err == nil {
		t.Fatal("a fetch of 120 KiB appended with 88 KiB free")
	}
	end := p.Log().LogEndOffset()
	if end == 0 || end == 12 {
		t.Fatalf("log end %d after the refused append: the test wants a prefix written (free space to tune)", end)
	}
	p.appendMu.Lock()
	check, err := p.appendMu.producers.check(header(7, 0, int32(end)-1, 1))
	p.appendMu.Unlock()
	if err != nil || check.duplicate == nil || check.duplicate.firstSequence != int32(end)-1 {
		t.Fatalf("with %d of producer 7's batches in the log, a retry of the last is %+v, %v; want it answered as a duplicate", end, check, err)
	}
}
