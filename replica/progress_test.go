package replica

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/meta"
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

// TestAnAdditionNeverTrailsTheHighWatermark: follower 2, out of the ISR,
// fetches at the high watermark while follower 1 fetches the record just
// appended past it, from two goroutines, again and again. Whenever 2 is
// proposed for the ISR, the high watermark must not be past 2's log end:
// otherwise 2 joins without a record the ISR is said to hold. (Follower
// 1's advance used to run between 2's look at the high watermark and its
// claim, not counting 2.) The proposals are refused, so that each round
// starts again with 2 out of the ISR.
func TestAnAdditionNeverTrailsTheHighWatermark(t *testing.T) {
	t.Parallel()
	var p *Partition
	var behind atomic.Int64
	check := proposeFunc(func(cmd meta.Command) (meta.Result, error) {
		if hwm, end := p.HighWatermark(), p.followers.logEnd(2); hwm > end {
			behind.Store(hwm<<32 | end)
		}
		return meta.Result{}, meta.ErrStalePartitionEpoch
	})
	m, err := NewManager(Config{BrokerID: 0, DataDir: t.TempDir(), ProducerStateScanBytes: 1 << 20, SegmentFiles: 64, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: check, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	// flush.ms: the log end is durable as it is written, so that the
	// rounds need no fsync.
	topic := meta.Topic{ID: uuid.New(), Name: "additions", Partitions: 1, Configs: map[string]string{"flush.ms": "60000"}}
	p, err = m.openPartition(topic, meta.Partition{Topic: topic.Name, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 1, PartitionEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.alters.Wait()
		p.close()
	})
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

// proposeFunc is a Metadata whose proposals go to a function.
type proposeFunc func(meta.Command) (meta.Result, error)

func (f proposeFunc) State() *meta.State { return nil }

func (f proposeFunc) Propose(_ context.Context, cmd meta.Command) (meta.Result, error) { return f(cmd) }

func (f proposeFunc) Watch(meta.WatchOptions) *meta.Watch { return nil }
