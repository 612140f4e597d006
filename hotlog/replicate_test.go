package hotlog

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/smallfs"
	"github.com/stratalog/strata/record"
)

// TestAppendReplicatedKeepsOffsetsAndEpochs appends a leader's batches,
// across several segments and epochs: they keep their bytes, every epoch
// they start is in the history at its first batch, and all of it survives
// a clean restart and a crash.
func TestAppendReplicatedKeepsOffsetsAndEpochs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(120, 121))
	c := testConfig()
	c.SegmentBytes = 4 << 10
	dir := t.TempDir()
	l := openLog(t, dir, c)
	var batches []appended
	var want []EpochEntry
	epoch := int32(0)
	for len(l.Segments()) < 5 {
		epochs := make([]int32, 1+rng.IntN(4))
		for i := range epochs {
			if rng.IntN(8) == 0 {
				epoch += 1 + rng.Int32N(3)
			}
			epochs[i] = epoch
		}
		added := appendReplicated(t, l, leaderBatches(t, rng, l.LogEndOffset(), epochs...)...)
		for i, b := range added {
			if n := len(want); n == 0 || want[n-1].Epoch != epochs[i] {
				want = append(want, EpochEntry{Epoch: epochs[i], StartOffset: b.base})
			}
		}
		batches = append(batches, added...)
	}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	checkReadsBack(t, l, batches)
	checkTimestampLookups(t, l, batches)
	segments := l.Segments()
	for i := 1; i < len(segments); i++ {
		if segments[i].BaseOffset != segments[i-1].NextOffset || !segments[i-1].Sealed {
			t.Fatalf("segments not contiguous and sealed: %+v", segments)
		}
	}
	if e, end := l.EndOffsetForEpoch(want[0].Epoch); len(want) > 1 && (e != want[0].Epoch || end != want[1].StartOffset) {
		t.Fatalf("EndOffsetForEpoch(%d) = %d, %d; want %d, %d", want[0].Epoch, e, end, want[0].Epoch, want[1].StartOffset)
	}

	crashed := openLog(t, crashCopy(t, l, nil), c)
	checkReadsBack(t, crashed, batches)
	if got := crashed.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after a crash %v, want %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openLog(t, dir, c)
	checkReadsBack(t, reopened, batches)
	if got := reopened.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after a restart %v, want %v", got, want)
	}
}

// TestAppendReplicatedRefusesAndWritesNothing: batches that do not continue
// the log, or go back in epoch, are refused whole, with nothing written
// and the epoch history as it was, even when an earlier batch of the call
// would have started an epoch.
func TestAppendReplicatedRefusesAndWritesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		batches func(t *testing.T, rng *rand.Rand, end int64) [][]byte
		want    error
	}{
		{"below the log end", func(t *testing.T, rng *rand.Rand, end int64) [][]byte { return leaderBatches(t, rng, end-1, 5) }, ErrNotContiguous},
		{"past the log end", func(t *testing.T, rng *rand.Rand, end int64) [][]byte { return leaderBatches(t, rng, end+1, 5) }, ErrNotContiguous},
		{"a gap between batches", func(t *testing.T, rng *rand.Rand, end int64) [][]byte {
			first := leaderBatches(t, rng, end, 6)
			h, _ := record.ParseHeader(first[0])
			return append(first, leaderBatches(t, rng, h.NextOffset()+1, 6)...)
		}, ErrNotContiguous},
		{"an overlap between batches", func(t *testing.T, rng *rand.Rand, end int64) [][]byte {
			return append(leaderBatches(t, rng, end, 6), leaderBatches(t, rng, end, 6)...)
		}, ErrNotContiguous},
		{"an epoch below the latest", func(t *testing.T, rng *rand.Rand, end int64) [][]byte { return leaderBatches(t, rng, end, 4) }, ErrStaleEpoch},
		{"a negative epoch", func(t *testing.T, rng *rand.Rand, end int64) [][]byte { return leaderBatches(t, rng, end, -2) }, ErrStaleEpoch},
		{"going back after a bump in the same call", func(t *testing.T, rng *rand.Rand, end int64) [][]byte {
			return leaderBatches(t, rng, end, 5, 7, 6)
		}, ErrStaleEpoch},
		{"larger than segment.bytes", func(t *testing.T, rng *rand.Rand, end int64) [][]byte {
			return append(leaderBatches(t, rng, end, 6), bigBatch(t, rng, end))
		}, ErrBatchTooLarge},
		{"no batches", func(*testing.T, *rand.Rand, int64) [][]byte { return nil }, ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(122, 123))
			dir := t.TempDir()
			l := openLog(t, dir, testConfig())
			batches := appendReplicated(t, l, leaderBatches(t, rng, 0, 2, 2, 5)...)
			epochs := l.Epochs()
			end, size := l.LogEndOffset(), fileSize(t, lastSegmentLog(l))
			checkpoint, err := os.ReadFile(filepath.Join(dir, epochCheckpointName))
			if err != nil {
				t.Fatal(err)
			}
			refused := tc.batches(t, rng, end)
			var in []record.Batch
			for _, b := range refused {
				c, err := record.Check(b)
				if err != nil {
					t.Fatal(err)
				}
				in = append(in, c)
			}
			if _, err := l.AppendReplicated(in...); !errors.Is(err, tc.want) {
				t.Fatalf("AppendReplicated: %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != end || fileSize(t, lastSegmentLog(l)) != size || len(l.Segments()) != 1 {
				t.Fatal("a refused append changed the log")
			}
			if got := l.Epochs(); !slices.Equal(got, epochs) {
				t.Fatalf("a refused append changed the epochs to %v", got)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, epochCheckpointName)); string(got) != string(checkpoint) {
				t.Fatalf("a refused append rewrote the epoch checkpoint: %q", got)
			}
			checkReadsBack(t, l, batches)
			// The log takes the next batch that does continue it.
			appendReplicated(t, l, leaderBatches(t, rng, end, 5)...)
		})
	}
}

// bigBatch is a leader batch at base larger than testConfig's segment.bytes.
func bigBatch(t *testing.T, rng *rand.Rand, base int64) []byte {
	b := makeBatch(t, rng, 70, 1000, 1)
	record.SetBaseOffset(b, base)
	record.SetPartitionLeaderEpoch(b, 6)
	return b
}

// TestAppendReplicatedEpochSurvivesCrash: an epoch a replicated batch
// starts is persisted before the batch, so a crash that keeps the batch
// keeps the entry, and one that loses it drops entries past the end.
func TestAppendReplicatedEpochSurvivesCrash(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(124, 125))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	kept := appendReplicated(t, l, leaderBatches(t, rng, 0, 1, 1, 2)...)
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	lost := appendReplicated(t, l, leaderBatches(t, rng, end, 3, 4)...)
	all := append(append([]appended(nil), kept...), lost...)
	full := []EpochEntry{{1, 0}, {2, kept[2].base}, {3, lost[0].base}, {4, lost[1].base}}
	if got := l.Epochs(); !slices.Equal(got, full) {
		t.Fatalf("epochs %v, want %v", got, full)
	}

	// The process dies: the page cache keeps everything.
	r := openLog(t, crashCopy(t, l, nil), c)
	checkReadsBack(t, r, all)
	if got := r.Epochs(); !slices.Equal(got, full) {
		t.Fatalf("epochs after a process crash %v, want %v", got, full)
	}
	// The machine dies before the batches reach the disk: the entries for
	// what is gone go too, but for the one at the recovered end, which is
	// what AssignEpoch at the log end leaves.
	path := lastSegmentLog(l)
	r = openLog(t, crashCopy(t, l, func(name string, data []byte) []byte {
		if name == filepath.Base(path) {
			return data[:len(data)-len(lost[0].bytes)-len(lost[1].bytes)]
		}
		return data
	}), c)
	if r.LogEndOffset() != end {
		t.Fatalf("recovered end %d, want %d", r.LogEndOffset(), end)
	}
	if got, want := r.Epochs(), full[:3]; !slices.Equal(got, want) {
		t.Fatalf("epochs after losing the batches %v, want %v", got, want)
	}
	checkReadsBack(t, r, kept)
	// The follower fetches them again, and the history is whole.
	appendReplicated(t, r, lost[0].bytes, lost[1].bytes)
	if got := r.Epochs(); !slices.Equal(got, full) {
		t.Fatalf("epochs after fetching again %v, want %v", got, full)
	}
}

// TestAppendReplicatedThenLead: a follower that becomes leader goes on with
// Append from where replication left it, in the epoch it is assigned; a
// replicated append's WaitAck means an fsync covers it.
func TestAppendReplicatedThenLead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(126, 127))
	c := testConfig()
	var synced atomic.Int64
	c.Events.Synced = func(info SyncInfo) { synced.Store(info.Size) }
	l := openLog(t, t.TempDir(), c)
	replicated := appendReplicated(t, l, leaderBatches(t, rng, 0, 3, 3)...)
	res, err := l.AppendReplicated(checked(t, leaderBatches(t, rng, l.LogEndOffset(), 3)...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() <= res.LastOffset || synced.Load() != l.ActiveSegment().Size {
		t.Fatalf("WaitAck returned with the log flushed to %d (%d bytes), the append ending at %d", l.FlushedOffset(), synced.Load(), res.LastOffset)
	}
	if err := l.AssignEpoch(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	led := appendBatches(t, l, makeBatch(t, rng, 2, 10, 1))
	if led[0].base != res.LastOffset+1 {
		t.Fatalf("Append after replication at %d, want %d", led[0].base, res.LastOffset+1)
	}
	if h, _ := record.ParseHeader(led[0].bytes); h.PartitionLeaderEpoch != 4 {
		t.Fatalf("Append stamped epoch %d, want 4", h.PartitionLeaderEpoch)
	}
	checkReadsBack(t, l, replicated)
	if got, want := l.Epochs(), []EpochEntry{{3, 0}, {4, led[0].base}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
}

// TestAppendReplicatedOnAFullDisk: a replicated append the disk has room
// for the epoch checkpoint but not the batch fails with ErrNoSpace, and
// the epoch it started is taken out of the history again, in memory and on
// disk; once there is room it goes through.
func TestAppendReplicatedOnAFullDisk(t *testing.T) {
	t.Parallel()
	disk := smallfs.Tmpfs(t, "2m")
	rng := rand.New(rand.NewPCG(128, 129))
	c := testConfig()
	dir := filepath.Join(disk, "log")
	l := openLog(t, dir, c)
	batches := appendReplicated(t, l, leaderBatches(t, rng, 0, 0, 1, 1)...)
	epochs := l.Epochs()
	checkpoint, err := os.ReadFile(filepath.Join(dir, epochCheckpointName))
	if err != nil {
		t.Fatal(err)
	}

	// Fill the disk, then free two pages: room for the checkpoint's
	// rewrite, not for a 20 KB batch.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for page := make([]byte, 4096); ; size += 4096 {
		if _, err := filler.Write(page); err != nil {
			break
		}
	}
	if err := filler.Truncate(size - 2*4096); err != nil {
		t.Fatal(err)
	}
	filler.Close()
	end := l.LogEndOffset()
	big := makeBatch(t, rng, 20, 1000, 1_700_000_000_000)
	record.SetBaseOffset(big, end)
	record.SetPartitionLeaderEpoch(big, 5)
	if _, err := l.AppendReplicated(checked(t, big)...); !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
		t.Fatalf("a 20 KB batch on a disk with 8 KiB free: %v, want ErrNoSpace and not ErrFailed", err)
	}
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d after the refused append, want %d", l.LogEndOffset(), end)
	}
	if got := l.Epochs(); !slices.Equal(got, epochs) {
		t.Fatalf("epochs after the refused append %v, want %v", got, epochs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, epochCheckpointName)); string(got) != string(checkpoint) {
		t.Fatalf("epoch checkpoint after the refused append %q, want %q", got, checkpoint)
	}
	checkReadsBack(t, l, batches)

	freeDisk(t, filepath.Join(disk, "filler"))
	batches = append(batches, appendReplicated(t, l, big)...)
	want := append(epochs, EpochEntry{Epoch: 5, StartOffset: end})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, c)
	checkReadsBack(t, l, batches)
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after reopening %v, want %v", got, want)
	}
}
