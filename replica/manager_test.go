package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/internal/metatest"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segmentobject"
)

// TestManifestChangesTakeNoAppendLock: every upload commits two manifest
// changes, and a manifest change reaches the partition it names without a
// reconcile, which would take every partition's append lock in turn. With
// every partition's append lock held, as by appends in flight, an upload's
// two changes still reach the partition's remote range, and a wait for the
// partitions to follow the metadata at the commit (WaitReconciled) ends.
func TestManifestChangesTakeNoAppendLock(t *testing.T) {
	u := startUploads(t)
	target := u.partition(1)
	parts := u.manager.All()
	if len(parts) != 3 {
		t.Fatalf("%d partitions open, want 3", len(parts))
	}
	for _, p := range parts {
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
	}
	u.commitSegment(1, 0, 9)
	u.waitRemoteRange(target, 10)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	u.manager.WaitReconciled(ctx, u.node.State().Index())
	if ctx.Err() != nil {
		t.Fatal("WaitReconciled at the commit's index still waits after 30 s")
	}
}

// TestRemoteRangeNeverMovesBack: the run loop notes each metadata update
// in turn while a retention pass (CanDelete) notes the newest state from
// offload's goroutine, so an update older than what is noted may come
// after it; the range it holds must not move back.
func TestRemoteRangeNeverMovesBack(t *testing.T) {
	u := startUploads(t)
	target := u.partition(1)
	u.commitSegment(1, 0, 9)
	older := u.node.State()
	u.commitSegment(1, 10, 19)
	u.waitRemoteRange(target, 20)
	target.noteManifest(older)
	if start, next, ok := target.RemoteRange(); !ok || start != 0 || next != 20 {
		t.Fatalf("remote range [%d, %d) (ok %v) after an older state was noted, want [0, 20)", start, next, ok)
	}
}

// TestLogStartFollowsABucketThatReachesTheLog: the remote log start is
// the partition's only while the bucket's offsets run up to the local log
// start; past a gap (local retention of a topic that stopped tiering) the
// local start is the log's.
func TestLogStartFollowsABucketThatReachesTheLog(t *testing.T) {
	u := startUploads(t)
	target := u.partition(1)
	u.commitSegment(1, 0, 9)
	u.waitRemoteRange(target, 10)
	for _, c := range []struct{ local, want int64 }{{10, 0}, {15, 15}} {
		if err := target.log.ResetTo(c.local, nil); err != nil {
			t.Fatal(err)
		}
		if got := target.LogStartOffset(); got != c.want {
			t.Fatalf("log start %d with the bucket holding [0, 10) and the hot log starting at %d, want %d", got, c.local, c.want)
		}
	}
}

// TestRemoteLogStartBoundsReads, on an untiered partition with data in
// its bucket: DeleteRecords moves the remote log start (in meta) before
// the hot log's, and a leader that crashed between the two holds offsets
// below it until the moves are finished (a retried DeleteRecords here; a
// tiered leader's offload): the partition's log start is the remote one
// meanwhile, and a read below it is out of range.
func TestRemoteLogStartBoundsReads(t *testing.T) {
	u := startUploads(t)
	target := u.partition(2)
	u.commitSegment(2, 0, 9)
	u.waitRemoteRange(target, 10)
	if err := target.log.ResetTo(10, nil); err != nil {
		t.Fatal(err)
	}
	appendTens(t, target, 2) // batches [10, 20) and [20, 30)
	// Inside the bucket's data: the remote log start moves, in meta.
	start, err := target.DeleteBefore(t.Context(), 5)
	if m, _ := u.node.State().Manifest("uploads", 2); err != nil || start != 5 || m.RemoteLogStartOffset != 5 || target.LogStartOffset() != 5 {
		t.Fatalf("DeleteBefore(5) = %d, %v; remote log start %d, log start %d; want 5 for all", start, err, m.RemoteLogStartOffset, target.LogStartOffset())
	}
	// Past it, as if the leader had crashed after meta's move.
	assignment, _ := u.node.State().Partition("uploads", 2)
	if _, err := u.node.Propose(t.Context(), &meta.MoveRemoteLogStart{
		Topic: "uploads", TopicID: u.topicID, Partition: 2, LeaderEpoch: assignment.LeaderEpoch, Offset: 15,
	}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the partition noting the remote log start 15", func() bool { return target.LogStartOffset() == 15 })
	if _, err := target.Read(12, 1<<20); !errors.Is(err, hotlog.ErrOffsetOutOfRange) {
		t.Fatalf("a read at 12, below the remote log start 15 but in the hot log: %v, want out of range", err)
	}
	if r, err := target.Read(15, 1<<20); err != nil || r.Section == nil {
		t.Fatalf("a read at the log start 15: %+v, %v", r, err)
	} else {
		r.Section.Release()
	}
	// A retry of the DeleteRecords that crashed between the moves moves
	// the hot log's start.
	if start, err := target.DeleteBefore(t.Context(), 15); err != nil || start != 15 || target.log.LogStartOffset() != 15 {
		t.Fatalf("DeleteBefore(15) again = %d, %v; hot log start %d; want 15 for both", start, err, target.log.LogStartOffset())
	}
	if start, err := target.DeleteBefore(t.Context(), 25); err != nil || start != 25 || target.log.LogStartOffset() != 25 {
		t.Fatalf("DeleteBefore(25) = %d, %v; hot log start %d; want 25 for both", start, err, target.log.LogStartOffset())
	}
}

// appendTens appends n batches of ten records to p, a sole leader, and
// waits until they are acknowledged.
func appendTens(t *testing.T, p *Partition, n int) {
	t.Helper()
	for range n {
		records := make([]record.Record, 10)
		for i := range records {
			records[i].Value = []byte("v")
		}
		raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := record.ValidateProduced(raw, p.ProduceOptions())
		if err != nil {
			t.Fatal(err)
		}
		outcome, err := p.Append([]record.Batch{batch}, AcksLeader)
		if err != nil {
			t.Fatal(err)
		}
		if err := outcome.Expect().Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteRecordsBelowAHotLogPastTheBucket: a topic that turned tiering
// off deleted past its bucket's end, and clients are told the hot log's
// start; DeleteRecords below it still moves the remote start, so the
// bucket stops serving the records it holds below the offset.
func TestDeleteRecordsBelowAHotLogPastTheBucket(t *testing.T) {
	u := startUploads(t)
	target := u.partition(0)
	u.commitSegment(0, 0, 9)
	u.waitRemoteRange(target, 10)
	if err := target.log.ResetTo(15, nil); err != nil {
		t.Fatal(err)
	}
	appendTens(t, target, 1)
	start, err := target.DeleteBefore(t.Context(), 12)
	m, _ := u.node.State().Manifest("uploads", 0)
	if _, _, remote := target.RemoteRange(); err != nil || start != 15 || m.RemoteLogStartOffset != 12 || remote {
		t.Fatalf("DeleteBefore(12) = %d, %v; remote log start %d, bucket readable %v; want 15 and 12, nothing readable", start, err, m.RemoteLogStartOffset, remote)
	}
}

// TestEpochsBelowTheHotLogFromTheBucket: a tiered partition's epoch
// cache starts at its local log start, and OffsetForLeaderEpoch for an
// older epoch is answered from the epochs of its bucket's segments: where
// that epoch ended there, not at the local start.
func TestEpochsBelowTheHotLogFromTheBucket(t *testing.T) {
	u := startUploads(t)
	target := u.partition(1)
	u.commitSegmentEpochs(1, 0, 9, []segmentobject.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 5}})
	u.commitSegmentEpochs(1, 10, 19, []segmentobject.EpochEntry{{Epoch: 1, StartOffset: 10}, {Epoch: 2, StartOffset: 15}})
	u.waitRemoteRange(target, 20)
	if err := target.log.ResetTo(20, []hotlog.EpochEntry{{Epoch: 2, StartOffset: 20}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		epoch, wantEpoch int32
		wantEnd          int64
	}{{0, 0, 5}, {1, 1, 15}, {2, 2, 20}, {3, hotlog.UndefinedEpoch, hotlog.UndefinedOffset}} {
		if epoch, end := target.EndOffsetForEpoch(c.epoch); epoch != c.wantEpoch || end != c.wantEnd {
			t.Errorf("OffsetForLeaderEpoch(%d) = epoch %d ending at %d, want %d at %d", c.epoch, epoch, end, c.wantEpoch, c.wantEnd)
		}
	}
}

// uploads is a running Manager on a real metadata node that holds topic
// "uploads" (three partitions, led here), and commits remote segments to
// it as offload does.
type uploads struct {
	t       *testing.T
	node    *meta.Node
	manager *Manager
	topicID uuid.UUID
}

// runManager starts broker 0's Manager over node, with deps' Offload and
// Tiered, until the test ends.
func runManager(t *testing.T, node *meta.Node, lagTimeMax time.Duration, deps Deps) *Manager {
	t.Helper()
	deps.Meta, deps.Lease, deps.Incarnation = node, func() error { return nil }, func() int64 { return 1 }
	m, err := NewManager(Config{BrokerID: 0, DataDir: t.TempDir(), ProducerStateScanBytes: 1 << 20, SegmentFiles: 16, ReplicaLagTimeMax: lagTimeMax}, deps)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	if err := m.Start(runCtx, node.State()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		m.Wait()
	})
	return m
}

func startUploads(t *testing.T) *uploads {
	t.Helper()
	return startUploadsDeps(t, Deps{})
}

// startUploadsDeps is startUploads with deps' Offload and Tiered.
func startUploadsDeps(t *testing.T, deps Deps) *uploads {
	t.Helper()
	node := metatest.Open(t)
	ctx := t.Context()
	if _, err := node.Propose(ctx, &meta.RegisterBroker{ID: 0, Listeners: []meta.Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	m := runManager(t, node, modelLagTimeMax, deps)
	// Created once the manager runs, so that the reconciles it starts with
	// are over when the topic's is.
	topicID := uuid.New()
	created, err := node.Propose(ctx, &meta.CreateTopic{ID: topicID, Name: "uploads", Replicas: [][]int32{{0}, {0}, {0}}})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.WaitReconciled(waitCtx, created.Index)
	return &uploads{t: t, node: node, manager: m, topicID: topicID}
}

// partition is the open partition index of the topic.
func (u *uploads) partition(index int32) *Partition {
	u.t.Helper()
	for _, p := range u.manager.All() {
		if p.index == index {
			return p
		}
	}
	u.t.Fatalf("partition %d is not open", index)
	return nil
}

// commitSegment records an uploaded segment of offsets [base, end] of
// partition, begun and then committed, as offload does, written in the
// partition's leader epoch.
func (u *uploads) commitSegment(partition int32, base, end int64) {
	u.t.Helper()
	assignment, _ := u.node.State().Partition("uploads", partition)
	u.commitSegmentEpochs(partition, base, end, []segmentobject.EpochEntry{{Epoch: assignment.LeaderEpoch, StartOffset: base}})
}

// commitSegmentEpochs is commitSegment with the segment's leader epochs.
func (u *uploads) commitSegmentEpochs(partition int32, base, end int64, epochs []segmentobject.EpochEntry) {
	u.t.Helper()
	assignment, _ := u.node.State().Partition("uploads", partition)
	segment := uuid.New()
	for _, cmd := range []meta.Command{
		&meta.BeginSegmentCopy{Topic: "uploads", TopicID: u.topicID, Partition: partition, LeaderEpoch: assignment.LeaderEpoch,
			SegmentID: segment, BaseOffset: base, EndOffset: end, SizeBytes: 1,
			LeaderEpochs: epochs, ObjectKey: segment.String()},
		&meta.CommitSegmentCopy{Topic: "uploads", TopicID: u.topicID, Partition: partition, LeaderEpoch: assignment.LeaderEpoch, SegmentID: segment},
	} {
		if _, err := u.node.Propose(u.t.Context(), cmd); err != nil {
			u.t.Fatal(err)
		}
	}
}

// waitRemoteRange waits until p's remote range is [0, next), or fails the
// test after 30 s.
func (u *uploads) waitRemoteRange(p *Partition, next int64) {
	u.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		start, end, ok := p.RemoteRange()
		if ok && start == 0 && end == next {
			return
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("remote range [%d, %d) (ok %v) 30 s after the upload committed, want [0, %d)", start, end, ok, next)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestADeletedTopicFoundAtStartIsPurged: a broker down while a topic it
// held a replica of was deleted finds the directories at its start and
// removes them; it has offload purge their bucket objects too (before,
// only a broker up at the deletion did, and with every replica's broker
// down then, the objects stayed for good). A purge the broker stops
// before it ends is started again at its next start, until one ends.
func TestADeletedTopicFoundAtStartIsPurged(t *testing.T) {
	node := metatest.Open(t)
	ctx := t.Context()
	if _, err := node.Propose(ctx, &meta.RegisterBroker{ID: 0, Listeners: []meta.Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(h *handedOver, until func(*Manager)) {
		t.Helper()
		m, err := NewManager(Config{BrokerID: 0, DataDir: dir, ProducerStateScanBytes: 1 << 20, SegmentFiles: 16, ReplicaLagTimeMax: modelLagTimeMax},
			Deps{Meta: node, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }, Offload: h, Tiered: func(meta.Topic) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		if err := m.Start(runCtx, node.State()); err != nil {
			t.Fatal(err)
		}
		until(m)
		stop()
		m.Wait()
	}
	id := uuid.New()
	run(&handedOver{added: map[int32]offload.Partition{}, logStarts: map[int32]int{}}, func(m *Manager) {
		created, err := node.Propose(ctx, &meta.CreateTopic{ID: id, Name: "gone", Replicas: [][]int32{{0}, {0}}})
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		m.WaitReconciled(waitCtx, created.Index)
		if n := len(m.All()); n != 2 {
			t.Fatalf("%d partitions open, want 2", n)
		}
	})
	if _, err := node.Propose(ctx, &meta.DeleteTopic{Name: "gone", ID: id}); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%s-0", id), fmt.Sprintf("%s-1", id)}
	for i, finish := range []bool{false, false, true} {
		h := &handedOver{added: map[int32]offload.Partition{}, logStarts: map[int32]int{}, finishPurges: finish}
		run(h, func(*Manager) {})
		if got := h.purges(); !slices.Equal(got, want) {
			t.Fatalf("start %d after the deletion (purges before it unfinished): purged %q, want %q", i+1, got, want)
		}
	}
	h := &handedOver{added: map[int32]offload.Partition{}, logStarts: map[int32]int{}}
	run(h, func(*Manager) {})
	if got := h.purges(); len(got) != 0 {
		t.Fatalf("purged %q at a start after the purges ended, want none", got)
	}
}

// TestAPartitionReopenedKeepsItsHighWatermark: a changed log setting
// (flush.ms here) reopens the partition on the same log; as leader of two
// replicas its high watermark started again from the log start until the
// follower fetched, and ListOffsets' latest went back to 0 meanwhile. It
// keeps what it had.
func TestAPartitionReopenedKeepsItsHighWatermark(t *testing.T) {
	node := metatest.Open(t)
	ctx := t.Context()
	for id := range int32(2) {
		if _, err := node.Propose(ctx, &meta.RegisterBroker{ID: id, Listeners: []meta.Listener{
			{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
			t.Fatal(err)
		}
	}
	m := runManager(t, node, time.Hour, Deps{})
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	id := uuid.New()
	created, err := node.Propose(ctx, &meta.CreateTopic{ID: id, Name: "reopened", Replicas: [][]int32{{0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	m.WaitReconciled(waitCtx, created.Index)
	p := m.All()[0]
	for seq := range int32(4) {
		appendIdempotent(t, p, 7, seq)
	}
	if err := p.log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadForFollower(1, 4, 1<<20); err != nil {
		t.Fatal(err)
	}
	if hwm := p.HighWatermark(); hwm != 4 {
		t.Fatalf("high watermark %d once the follower fetched at 4, want 4", hwm)
	}
	altered, err := node.Propose(ctx, &meta.AlterTopicConfigs{Name: "reopened", ID: id, Set: map[string]string{"flush.ms": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	m.WaitReconciled(waitCtx, altered.Index)
	reopened := m.All()[0]
	if reopened == p {
		t.Fatal("flush.ms did not reopen the partition")
	}
	if hwm := reopened.HighWatermark(); hwm != 4 {
		t.Fatalf("high watermark %d after the reopen, want 4 as before", hwm)
	}
}
