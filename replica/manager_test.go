package replica

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/internal/metatest"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// TestManifestChangesTakeNoAppendLock: every upload commits two manifest
// changes, and a manifest change reaches the partition it names without a
// reconcile, which would take every partition's append lock in turn. With
// every partition's append lock held, as by appends in flight, an upload's
// two changes still reach the partition's remote range.
func TestManifestChangesTakeNoAppendLock(t *testing.T) {
	node := metatest.Open(t)
	ctx := t.Context()
	if _, err := node.Propose(ctx, meta.RegisterBroker{ID: 0, Listeners: []meta.Listener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{BrokerID: 0, DataDir: t.TempDir(), ProducerStateScanBytes: 1 << 20, SegmentFiles: 16, ReplicaLagTimeMax: modelLagTimeMax},
		Deps{Meta: node, Lease: func() error { return nil }, Incarnation: func() int64 { return 1 }})
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
	// Created once the manager runs, so that the reconciles it starts with
	// are over when the topic's is.
	topicID := uuid.New()
	created, err := node.Propose(ctx, meta.CreateTopic{ID: topicID, Name: "uploads", Replicas: [][]int32{{0}, {0}, {0}}})
	if err != nil {
		t.Fatal(err)
	}
	m.WaitReconciled(ctx, created.Index)
	parts := m.All()
	if len(parts) != 3 {
		t.Fatalf("%d partitions open, want 3", len(parts))
	}
	var target *Partition
	for _, p := range parts {
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
		if p.index == 1 {
			target = p
		}
	}

	assignment, _ := node.State().Partition("uploads", 1)
	segment := uuid.New()
	for _, cmd := range []meta.Command{
		meta.BeginSegmentCopy{Topic: "uploads", TopicID: topicID, Partition: 1, LeaderEpoch: assignment.LeaderEpoch,
			SegmentID: segment, BaseOffset: 0, EndOffset: 9, SizeBytes: 1,
			LeaderEpochs: []segmentobject.EpochEntry{{Epoch: assignment.LeaderEpoch, StartOffset: 0}}, ObjectKey: "uploads/1/0"},
		meta.CommitSegmentCopy{Topic: "uploads", TopicID: topicID, Partition: 1, LeaderEpoch: assignment.LeaderEpoch, SegmentID: segment},
	} {
		if _, err := node.Propose(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		start, next, ok := target.RemoteRange()
		if ok && start == 0 && next == 10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote range [%d, %d) (ok %v) 30 s after the upload committed, want [0, 10): the manifest change waits for append locks", start, next, ok)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
