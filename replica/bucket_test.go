package replica

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/segmentobject"
)

// TestDivergenceFromTheBucket: the first offset both lineages cover where
// their epochs differ, compared only where they overlap.
func TestDivergenceFromTheBucket(t *testing.T) {
	bucket := []segmentobject.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 50}, {Epoch: 5, StartOffset: 90}}
	for _, c := range []struct {
		name     string
		local    []hotlog.EpochEntry
		from, to int64
		at       int64
		diverged bool
	}{
		{"the same lineage", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 5, StartOffset: 90}, {Epoch: 6, StartOffset: 120}}, 60, 100, -1, false},
		{"an epoch the bucket's log never had", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 4, StartOffset: 80}}, 60, 100, 80, true},
		{"the bucket's epoch began later here", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 5, StartOffset: 95}}, 60, 100, 90, true},
		{"other from the start", []hotlog.EpochEntry{{Epoch: 1, StartOffset: 60}}, 60, 100, 60, true},
		{"differing only past the range", []hotlog.EpochEntry{{Epoch: 2, StartOffset: 60}, {Epoch: 4, StartOffset: 92}}, 60, 90, -1, false},
		{"no local epochs to compare", nil, 60, 100, -1, false},
	} {
		at, diverged := divergence(bucket, c.local, c.from, c.to)
		if at != c.at || diverged != c.diverged {
			t.Errorf("%s: divergence %d, %v; want %d, %v", c.name, at, diverged, c.at, c.diverged)
		}
	}
}

// handedOver records the partitions the Manager hands to offload: the
// uploads themselves are offload's and not under test here.
type handedOver struct {
	mu    sync.Mutex
	added map[int32]offload.Partition
	// logStarts counts NotifyLogStart's notices by partition.
	logStarts map[int32]int
	// purged lists the partitions Purge was asked for, "<id>-<index>".
	purged []string
	// finishPurges has Purge report each purge done at once; otherwise
	// none ends (the broker stops first).
	finishPurges bool
}

func (h *handedOver) Add(p offload.Partition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.added[p.Partition] = p
	return nil
}

func (h *handedOver) Remove(string, int32) {}
func (h *handedOver) Notify(string, int32) {}
func (h *handedOver) Purge(_ string, id uuid.UUID, partition int32, done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.purged = append(h.purged, fmt.Sprintf("%s-%d", id, partition))
	if h.finishPurges {
		done()
	}
}

func (h *handedOver) purges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(slices.Values(h.purged))
}
func (h *handedOver) NotifyLogStart(_ string, partition int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logStarts[partition]++
}

func (h *handedOver) logStartNotices(partition int32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logStarts[partition]
}

func (h *handedOver) get(partition int32) (offload.Partition, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.added[partition]
	return p, ok
}

// startTieredUploads is startUploads with the topic tiered, its leaders
// handed to h.
func startTieredUploads(t *testing.T) (*uploads, *handedOver) {
	h := &handedOver{added: map[int32]offload.Partition{}, logStarts: map[int32]int{}}
	return startUploadsDeps(t, Deps{Offload: h, Tiered: func(meta.Topic) bool { return true }}), h
}

// TestOffloadEpochFencedOnceDeposed: the leader epoch offload's commands
// carry is the one this broker leads at, and none (-1, which meta fences)
// once another broker leads: before, a pass still running then read the
// new leader's epoch.
func TestOffloadEpochFencedOnceDeposed(t *testing.T) {
	u, handed := startTieredUploads(t)
	p := u.partition(0)
	spec, ok := handed.get(0)
	if !ok {
		t.Fatal("the tiered partition's leader was not handed to offload")
	}
	r := *p.role.Load()
	if got := spec.LeaderEpoch(); got != r.leaderEpoch {
		t.Fatalf("leading at epoch %d, offload's epoch %d", r.leaderEpoch, got)
	}
	r.leader, r.leaderEpoch = 7, r.leaderEpoch+1
	if _, err := p.setRole(&r); err != nil {
		t.Fatal(err)
	}
	if got := spec.LeaderEpoch(); got != -1 {
		t.Fatalf("offload's epoch %d after broker 7 took the lead at %d, want -1", got, r.leaderEpoch)
	}
}

// TestDeleteRecordsOnATieredPartitionWithAnEmptyBucket: nothing uploaded
// yet, DeleteRecords still moves the remote log start, so the upload of
// the segment that holds it starts there (offload), and offload is told
// at once (its expiry pass republishes the bucket manifest).
func TestDeleteRecordsOnATieredPartitionWithAnEmptyBucket(t *testing.T) {
	u, handed := startTieredUploads(t)
	p := u.partition(1)
	appendTens(t, p, 2)
	start, err := p.DeleteBefore(t.Context(), 15)
	m, _ := u.node.State().Manifest("uploads", 1)
	if err != nil || start != 15 || m.RemoteLogStartOffset != 15 || p.log.LogStartOffset() != 15 {
		t.Fatalf("DeleteBefore(15) = %d, %v; remote log start %d, hot log start %d; want 15 for all", start, err, m.RemoteLogStartOffset, p.log.LogStartOffset())
	}
	if n := handed.logStartNotices(1); n != 1 {
		t.Fatalf("offload was told of the moved remote log start %d times, want once", n)
	}
}

// TestOffloadDeletionNotesTheBucketFirst: a segment offload deletes (under
// disk pressure) leaves the hot log only after the partition notes the
// bucket's range from the newest metadata, here while the run loop has
// not yet noted the partition's first commit. Before, a consumer's fetch
// between the two found its offset in neither place: OFFSET_OUT_OF_RANGE.
func TestOffloadDeletionNotesTheBucketFirst(t *testing.T) {
	u, handed := startTieredUploads(t)
	p := u.partition(0)
	appendTens(t, p, 3)
	unnoted := p.remote.Load()
	u.commitSegment(0, 0, 19)
	u.waitRemoteRange(p, 20)
	p.remote.Store(unnoted)
	spec, ok := handed.get(0)
	if !ok {
		t.Fatal("the tiered partition's leader was not handed to offload")
	}
	if _, err := spec.Log.DeleteBefore(20); err != nil {
		t.Fatal(err)
	}
	start, next, ok := p.RemoteRange()
	if local := p.log.LogStartOffset(); local != 20 || !ok || start != 0 || next != 20 {
		t.Fatalf("after offload deleted below 20: hot log start %d, remote range [%d, %d) (ok %v); want 20 and [0, 20)", local, start, next, ok)
	}
}

// TestEpochAtBelowTheHotLog: the leader epoch of an offset only the bucket
// holds comes from its segments (ListOffsets answered -1 for a tiered
// partition's earliest offset before).
func TestEpochAtBelowTheHotLog(t *testing.T) {
	u, _ := startTieredUploads(t)
	p := u.partition(1)
	appendTens(t, p, 3)
	// Epochs other than the hot log's, so that each answer tells its source.
	u.commitSegmentEpochs(1, 0, 19, []segmentobject.EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 5, StartOffset: 12}})
	u.waitRemoteRange(p, 20)
	if _, err := p.log.DeleteBefore(20); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		offset int64
		want   int32
	}{{0, 3}, {11, 3}, {12, 5}, {19, 5}, {20, p.LatestEpoch()}} {
		if got := p.EpochAt(c.offset); got != c.want {
			t.Errorf("EpochAt(%d) = %d, want %d", c.offset, got, c.want)
		}
	}
}

// TestNewLeaderBelowARemoteStartWithNoSegments: every segment is gone from
// the bucket (DeleteRecords moved the remote log start to 30, past them),
// and a replica whose log ends at 20 starts leading (elected uncleanly).
// It restarts its log at 30: before, it wrote acknowledged records at
// [20, 30), below the start, where no read served them.
func TestNewLeaderBelowARemoteStartWithNoSegments(t *testing.T) {
	u, _ := startTieredUploads(t)
	p := u.partition(1)
	appendTens(t, p, 2) // [0, 20)
	r := *p.role.Load()
	if _, err := u.node.Propose(t.Context(), &meta.MoveRemoteLogStart{Topic: "uploads", TopicID: u.topicID, Partition: 1, LeaderEpoch: r.leaderEpoch, Offset: 30}); err != nil {
		t.Fatal(err)
	}
	p.noteManifest(u.node.State())
	r.leaderEpoch++
	if _, err := p.setRole(&r); err != nil {
		t.Fatal(err)
	}
	if start, end := p.log.LogStartOffset(), p.log.LogEndOffset(); start != 30 || end != 30 {
		t.Fatalf("the new leader's log is [%d, %d), want it restarted at the remote log start, [30, 30)", start, end)
	}
	appendTens(t, p, 1)
	res, err := p.Read(30, 1<<20)
	if err != nil || res.Section == nil || res.Section.NextOffset != 40 {
		t.Fatalf("Read(30) after ten records: %+v, %v; want them", res, err)
	}
	res.Section.Release()
}
