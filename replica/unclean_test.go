package replica

import (
	"errors"
	"slices"
	"testing"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/hotlog"
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
	cleaner := &truncationsSeen{}
	p.manager.deps.Cleaner = cleaner
	if err := p.truncateTo(3, 2); err != nil || p.log.LogEndOffset() != 2 || p.HighWatermark() != 2 {
		t.Fatalf("after an unclean election at epoch 2: %v; log end %d, high watermark %d; want both 2", err, p.log.LogEndOffset(), p.HighWatermark())
	}
	if !slices.Equal(cleaner.offsets, []int64{2}) {
		t.Fatalf("the log cleaner was told of truncations to %v, want [2]: its checkpoint may be above the log end", cleaner.offsets)
	}
}

// truncationsSeen is a Cleaner that records the truncations it is told of.
type truncationsSeen struct{ offsets []int64 }

func (c *truncationsSeen) Add(compact.Partition) {}
func (c *truncationsSeen) Remove(string, int32)  {}
func (c *truncationsSeen) Truncated(_ string, _ int32, offset int64) {
	c.offsets = append(c.offsets, offset)
}

// TestAFetchPastTheLogEndIsNotRecorded: a follower whose log runs past
// the leader's (a former leader's, after an unclean election) fetches
// there and is told OFFSET_OUT_OF_RANGE. The leader must not take that
// offset as the follower's log end: records the leader writes up to it
// later would count as held by a follower that holds other records
// there, and acks=all would acknowledge them on the leader's copy alone.
func TestAFetchPastTheLogEndIsNotRecorded(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	appendSynced := func(n int32, from int32) {
		t.Helper()
		for seq := from; seq < from+n; seq++ {
			appendIdempotent(t, p, 7, seq)
		}
		if err := p.log.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	appendSynced(2, 0)
	if _, err := p.ReadForFollower(1, 2, 1<<20); err != nil {
		t.Fatal(err)
	}
	if hwm := p.HighWatermark(); hwm != 2 {
		t.Fatalf("high watermark %d after the follower fetched at the log end, want 2", hwm)
	}
	var outOfRange *hotlog.OffsetOutOfRangeError
	if _, err := p.ReadForFollower(1, 5, 1<<20); !errors.As(err, &outOfRange) {
		t.Fatalf("a follower's fetch at 5 past the log end 2: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	appendSynced(3, 2)
	p.advanceHighWatermark()
	if hwm := p.HighWatermark(); hwm != 2 {
		t.Fatalf("high watermark %d once the leader's log reached the offset the follower asked past its end, want 2", hwm)
	}
}

// TestTruncationAsksAgainForAnEpochItNeverHad (KIP-279's rounds): a
// former leader holds four records of epoch 1 and an empty epoch 3; the
// new leader, asked about epoch 3, answers epoch 2 ending at 3, an epoch
// this log never had. Its own epoch below 2 is 1, which ends at the log's
// end, 4: it truncates there (dropping only epoch 3) and asks again, now
// about epoch 1, which the leader says ended at 2, where its epoch 2 began
// with other records. One round kept the epoch-1 records at 2 and 3, at
// offsets where the leader holds others, and counted as caught up.
func TestTruncationAsksAgainForAnEpochItNeverHad(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(4) {
		appendIdempotent(t, p, 7, seq) // epoch 1: [0, 4)
	}
	setRole := func(r meta.Partition) {
		t.Helper()
		r.Topic, r.Replicas = p.topic, []int32{0, 1}
		if _, err := p.setRole(roleOf(r)); err != nil {
			t.Fatal(err)
		}
	}
	setRole(meta.Partition{ISR: []int32{0}, Leader: 0, LeaderEpoch: 3, PartitionEpoch: 3})
	setRole(meta.Partition{ISR: []int32{1}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 5, UncleanLeaderEpoch: 4})
	// The leader's epochs: 1 at 0, 2 at 2, 4 at 3.
	offset, done := p.divergence(2, 3)
	if offset != 4 || done {
		t.Fatalf("answered epoch 2 ending at 3: truncate to %d, done %v; want 4 and another round", offset, done)
	}
	if err := p.truncateTo(5, offset); err != nil {
		t.Fatal(err)
	}
	if latest := p.LatestEpoch(); latest != 1 {
		t.Fatalf("newest epoch %d after the first round, want 1", latest)
	}
	offset, done = p.divergence(1, 2)
	if offset != 2 || !done {
		t.Fatalf("answered epoch 1 ending at 2: truncate to %d, done %v; want 2, done", offset, done)
	}
}

// TestOffsetsNotAvailableUntilTheHighWatermarkReachesTheEpoch (KIP-207):
// a leader whose high watermark is below the start of its leader epoch
// answers ListOffsets' latest with OFFSET_NOT_AVAILABLE, which clients
// retry: its high watermark may be below what was committed under the
// previous leader, and "latest" would go back. Once the ISR's fetches
// raise it past the epoch's start, offsets are available.
func TestOffsetsNotAvailableUntilTheHighWatermarkReachesTheEpoch(t *testing.T) {
	t.Parallel()
	p := openSnapshotPartitions(t, t.TempDir(), 1, []int32{0, 1}, nil)[0]
	for seq := range int32(5) {
		appendIdempotent(t, p, 7, seq)
	}
	if err := p.log.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadForFollower(1, 3, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckOffsetsAvailable(); err != nil || p.HighWatermark() != 3 {
		t.Fatalf("high watermark %d within leader epoch 1 (from 0): %v, want 3 and available", p.HighWatermark(), err)
	}
	// A new leader epoch of this broker starts at the log end, 5.
	r := meta.Partition{Topic: p.topic, Partition: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := p.setRole(roleOf(r)); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckOffsetsAvailable(); !errors.Is(err, ErrOffsetNotAvailable) {
		t.Fatalf("high watermark 3 below leader epoch 2's start at 5: %v, want ErrOffsetNotAvailable", err)
	}
	if _, err := p.ReadForFollower(1, 5, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckOffsetsAvailable(); err != nil {
		t.Fatalf("high watermark %d at leader epoch 2's start: %v, want available", p.HighWatermark(), err)
	}
}
