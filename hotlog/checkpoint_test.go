package hotlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/syncbuf"
)

// checkpointTwice fills l, makes it durable and checkpoints it, then does
// it again, and returns how many bytes the second fill appended.
func checkpointTwice(t *testing.T, l *Log, rng *rand.Rand) (second int64) {
	t.Helper()
	var before int64
	for i := range 2 {
		if i == 1 {
			before = l.ActiveSegment().Size
		}
		fill(t, l, rng, 30, 5)
		if err := l.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		l.flusher.round.Lock()
		err := l.writeCheckpointLocked()
		l.flusher.round.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	return l.ActiveSegment().Size - before
}

// textCheckpoint is c in the text format of log-checkpoint that releases
// before the slot format wrote.
func textCheckpoint(c logCheckpoint) []byte {
	p := c.recoveryPoint
	return fmt.Appendf(nil, "0\n%d\n%d %d %d %d %d\n", c.logStartOffset, p.offset, p.segmentBase, p.position, p.indexEntries, p.timeIndexEntries)
}

// downgradeCheckpoint rewrites l's log-checkpoint in the text format and
// leaves l holding it as Open leaves a log that an older release wrote:
// its next checkpoint must write a whole new file, which a full disk
// refuses.
func downgradeCheckpoint(t testing.TB, l *Log) {
	t.Helper()
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	text := textCheckpoint(l.flusher.checkpointFile.checkpoint)
	if err := os.WriteFile(filepath.Join(l.dir, logCheckpointName), text, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parseCheckpointFile(text)
	if err != nil {
		t.Fatal(err)
	}
	l.flusher.checkpointFile = f
}

// garbleSlot returns a cut for crashCopy that overwrites the
// log-checkpoint slot of checkpoint seq with garbage, as a write torn by
// a crash leaves it.
func garbleSlot(seq uint64) func(string, []byte) []byte {
	return func(name string, data []byte) []byte {
		if name == logCheckpointName {
			at := checkpointSlotOffset(seq)
			for i := range checkpointSlotSize {
				data[at+int64(i)] ^= byte(i*7 + 1)
			}
		}
		return data
	}
}

// TestCheckpointSurvivesATornSlot damages one slot of log-checkpoint at a
// time, as a crash inside a checkpoint's write does: recovery trusts the
// other and loses nothing.
func TestCheckpointSurvivesATornSlot(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(80, 81))
	c := testConfig()
	c.SegmentBytes = 1 << 20 // one segment: the two checkpoints differ only in position
	l := openLog(t, t.TempDir(), c)
	second := checkpointTwice(t, l, rng)
	newest := l.flusher.checkpointFile.seq
	for _, tc := range []struct {
		name    string
		torn    uint64
		scanned int64 // bytes recovery checks past the checkpoint it trusts
	}{
		{"the next checkpoint's slot", newest + 1, 0},
		{"the newest checkpoint's slot", newest, second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var info RecoveryInfo
			var logged syncbuf.Buffer
			c := recoveryEvents(c, &info)
			c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			r := openLog(t, crashCopy(t, l, garbleSlot(tc.torn)), c)
			if !strings.Contains(logged.String(), "log-checkpoint slot is damaged") {
				t.Errorf("Open did not say it found a slot damaged: %q", logged.String())
			}
			if info.BytesScanned != tc.scanned || info.BytesTruncated != 0 || r.LogEndOffset() != l.LogEndOffset() {
				t.Fatalf("recovery %+v, end %d; want %d bytes scanned, none truncated, end %d",
					info, r.LogEndOffset(), tc.scanned, l.LogEndOffset())
			}
		})
	}
	t.Run("both slots", func(t *testing.T) {
		dst := crashCopy(t, l, func(name string, data []byte) []byte {
			return garbleSlot(newest+1)(name, garbleSlot(newest)(name, data))
		})
		if _, err := Open(dst, c); !errors.Is(err, ErrCorruptFile) {
			t.Fatalf("Open with both slots damaged: %v, want ErrCorruptFile", err)
		}
	})
}

// TestCheckpointRefusesALaterFormat: a slot of a format this release does
// not know, with a valid checksum, refuses the file rather than falling
// back to the other slot, which a later release may have left stale.
func TestCheckpointRefusesALaterFormat(t *testing.T) {
	t.Parallel()
	c := logCheckpoint{logStartOffset: 1, recoveryPoint: recoveryPoint{offset: 10, segmentBase: 0, position: 400}}
	image := checkpointFileImage(c)
	later := encodeCheckpointSlot(1, c)
	binary.BigEndian.PutUint32(later[4:], checkpointSlotFormat+1)
	binary.BigEndian.PutUint32(later[56:], crc32.Checksum(later[:56], castagnoli))
	copy(image[checkpointSlotOffset(1):], later)
	if _, err := parseCheckpointFile(image); !errors.Is(err, errUnknownSlotFormat) || !errors.Is(err, ErrCorruptFile) {
		t.Fatalf("a slot of format %d: %v, want a refusal", checkpointSlotFormat+1, err)
	}
}

// TestCheckpointAfterAFailedWrite: a checkpoint whose write failed may
// have left its slot holding anything, so the next checkpoint replaces
// the whole file, and a crash then recovers from it.
func TestCheckpointAfterAFailedWrite(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(86, 87))
	c := testConfig()
	var fail atomic.Bool
	c.fsync = func(f *os.File, _ bool) error {
		if filepath.Base(f.Name()) == logCheckpointName && fail.Swap(false) {
			return syscall.EIO
		}
		return nil
	}
	l := openLog(t, t.TempDir(), c)
	checkpointTwice(t, l, rng)
	fill(t, l, rng, 10, 5)
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.flusher.round.Lock()
	fail.Store(true)
	if err := l.writeCheckpointLocked(); !errors.Is(err, syscall.EIO) {
		l.flusher.round.Unlock()
		t.Fatalf("a checkpoint whose fdatasync failed: %v, want EIO", err)
	}
	err := l.writeCheckpointLocked()
	l.flusher.round.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if f := l.flusher.checkpointFile; f.seq != 0 || !f.inPlace || f.checkpoint.recoveryPoint.offset != l.LogEndOffset() {
		t.Fatalf("after a failed write the next checkpoint is %+v, want a new file at %d", f, l.LogEndOffset())
	}
	var info RecoveryInfo
	r := openLog(t, crashCopy(t, l, nil), recoveryEvents(c, &info))
	if info.BytesScanned != 0 || r.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("recovery %+v, end %d, want the new checkpoint trusted at %d", info, r.LogEndOffset(), l.LogEndOffset())
	}
}

// TestCheckpointWritesInPlace checks that a checkpoint after the first
// overwrites a slot of the same file and fdatasyncs it: no temporary
// file, rename or directory fsync.
func TestCheckpointWritesInPlace(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(82, 83))
	c := testConfig()
	var synced []string
	c.fsync = func(f *os.File, dataOnly bool) error {
		synced = append(synced, fmt.Sprintf("%s dataOnly=%v", filepath.Base(f.Name()), dataOnly))
		return nil
	}
	dir := t.TempDir()
	l := openLog(t, dir, c)
	path := filepath.Join(dir, logCheckpointName)
	inode := func() uint64 { return inodeOf(t, path) }
	fill(t, l, rng, 30, 5)
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	if err := l.writeCheckpointLocked(); err != nil {
		t.Fatal(err)
	}
	first := inode()
	for range 3 {
		fill(t, l, rng, 10, 5)
		if _, err := l.flushRoundLocked(false); err != nil {
			t.Fatal(err)
		}
		synced = synced[:0]
		if err := l.writeCheckpointLocked(); err != nil {
			t.Fatal(err)
		}
		want := []string{
			segmentFileName(0, indexSuffix) + " dataOnly=false",
			segmentFileName(0, timeIndexSuffix) + " dataOnly=false",
			logCheckpointName + " dataOnly=true",
		}
		if fmt.Sprint(synced) != fmt.Sprint(want) {
			t.Fatalf("a checkpoint synced %q, want %q", synced, want)
		}
		if got := inode(); got != first {
			t.Fatalf("log-checkpoint replaced (inode %d, was %d)", got, first)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseCheckpointFile(data)
	if err != nil || f.checkpoint != l.flusher.checkpointFile.checkpoint || f.seq != 3 || !f.inPlace {
		t.Fatalf("log-checkpoint holds %+v (%v), want checkpoint 3 %+v", f, err, l.flusher.checkpointFile.checkpoint)
	}
}

// TestCheckpointUpgradesTheTextFormat opens a log whose log-checkpoint is
// in the text format of earlier releases: recovery trusts it, and the
// next checkpoint replaces it with the slot format.
func TestCheckpointUpgradesTheTextFormat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(84, 85))
	c := testConfig()
	l := openLog(t, t.TempDir(), c)
	checkpointTwice(t, l, rng)
	text := textCheckpoint(l.flusher.checkpointFile.checkpoint)
	dst := crashCopy(t, l, func(name string, data []byte) []byte {
		if name == logCheckpointName {
			return text
		}
		return data
	})
	var info RecoveryInfo
	r, err := Open(dst, recoveryEvents(c, &info))
	if err != nil {
		t.Fatal(err)
	}
	if info.BytesScanned != 0 || r.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("recovery %+v, end %d: the text checkpoint was not trusted", info, r.LogEndOffset())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dst, logCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseCheckpointFile(data)
	if err != nil || !bytes.HasPrefix(data, []byte(checkpointSlotMagic)) || !f.inPlace || f.checkpoint.recoveryPoint.offset != l.LogEndOffset() {
		t.Fatalf("after Close log-checkpoint is %q (%+v, %v), want the slot format at %d", data, f, err, l.LogEndOffset())
	}
}

// TestRollCheckpointsTheNewSegmentsStart checks the checkpoint a roll
// brings: it holds the new segment's start, so no round makes that
// segment's first index entries durable before it, and the interval's
// checkpoint then takes the point to the flushed end. A crash in between
// recovers by scanning the new segment alone.
func TestRollCheckpointsTheNewSegmentsStart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(90, 91))
	c := testConfig()
	clock := newFakeClock()
	c.Clock = clock
	c.RecoveryPointCheckpointMs = 60_000
	l := openLog(t, t.TempDir(), c)
	batches := fill(t, l, rng, 40, 10)
	syncSealed(t, l)
	// The round lock, held over the roll and the appends after it,
	// keeps the roll's round from starting while the new segment is
	// empty, where its start is the flushed point too.
	l.flusher.round.Lock()
	if err := l.Roll(); err != nil {
		l.flusher.round.Unlock()
		t.Fatal(err)
	}
	batches = append(batches, fill(t, l, rng, 40, 10)...)
	l.flusher.round.Unlock()
	syncSealed(t, l)
	st := l.state.Load()
	active := st.active()
	if entries := active.tail.Load().indexEntries; entries == 0 {
		t.Fatal("the new segment has no index entries: fill more")
	}
	if got := l.RecoveryPoint(); got != active.baseOffset {
		t.Fatalf("recovery point after the roll %d, want the new segment's start %d", got, active.baseOffset)
	}
	index, err := os.ReadFile(active.path(indexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(index[:indexEntrySize], make([]byte, indexEntrySize)) {
		t.Fatalf("the new segment's first index entry was persisted for the roll's checkpoint: % x", index[:indexEntrySize])
	}

	var info RecoveryInfo
	crashed := openLog(t, crashCopy(t, l, nil), recoveryEvents(c, &info))
	checkReadsBack(t, crashed, batches)
	if info.SegmentsScanned != 1 || info.LogEndOffset != l.LogEndOffset() {
		t.Fatalf("recovery from the roll's checkpoint scanned %d segments to %d, want the new one alone to %d", info.SegmentsScanned, info.LogEndOffset, l.LogEndOffset())
	}

	waitFor(t, "the interval's recovery point", func() bool {
		clock.Advance(time.Second)
		return l.RecoveryPoint() == l.LogEndOffset()
	})
}

// TestRollCheckpointRefusedWaitsAnInterval: a roll's checkpoint that
// finds no room is tried again an interval later, not at every round
// while the flushed point stays in another segment than the persisted
// one (a preallocated segment takes appends on a full disk, and each
// try would log its refusal).
func TestRollCheckpointRefusedWaitsAnInterval(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(92, 93))
	l, r := openRefusingCheckpoints(t, rng)
	r.refuse.Store(true)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	fill(t, l, rng, 5, 10)
	syncSealed(t, l)
	waitFor(t, "the roll's checkpoint refused", func() bool {
		return strings.Contains(r.logged.String(), "not persisted")
	})
	for range 5 {
		fill(t, l, rng, 5, 10)
		syncSealed(t, l)
	}
	if n := strings.Count(r.logged.String(), "not persisted"); n != 1 {
		t.Fatalf("%d checkpoints refused over six rounds with the clock stopped, want 1", n)
	}
	if err := l.Failure(); err != nil {
		t.Fatal(err)
	}
	r.refuse.Store(false)
	waitFor(t, "the checkpoint an interval later", func() bool {
		r.clock.Advance(time.Second)
		return l.RecoveryPoint() == l.LogEndOffset()
	})
}

// TestRefusedRollCheckpointOfAnIdleLogComesLater: a roll at the flushed
// end leaves the flushed point at the persisted offset, only in the new
// segment; when that roll's checkpoint finds no room and the log then
// stays idle, no round asks again, so the interval must: the sealed
// segment becomes rewritable once there is room.
func TestRefusedRollCheckpointOfAnIdleLogComesLater(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(94, 95))
	l, r := openRefusingCheckpoints(t, rng)
	end := l.LogEndOffset()
	waitFor(t, "the interval's recovery point", func() bool {
		r.clock.Advance(time.Second)
		return l.RecoveryPoint() == end
	})
	r.refuse.Store(true)
	// The roll asks its flusher for the round that seals the segment;
	// Sync, with nothing to flush, would not.
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the roll's checkpoint refused", func() bool {
		return strings.Contains(r.logged.String(), "not persisted")
	})
	r.refuse.Store(false)
	waitFor(t, "the sealed segment rewritable", func() bool {
		r.clock.Advance(time.Second)
		return l.RewritableEnd() == end
	})
}

// refusingCheckpoints is a log's view into what openRefusingCheckpoints
// set up: its fake clock, the switch that makes the disk refuse the
// checkpoint file's syncs for want of room, and what it logged.
type refusingCheckpoints struct {
	clock  *fakeClock
	refuse *atomic.Bool
	logged *syncbuf.Buffer
}

// openRefusingCheckpoints opens a log on a fake clock with a minute's
// recovery-point interval, whose checkpoint file's syncs fail with
// ENOSPC while refuse is set, fills it and makes it durable.
func openRefusingCheckpoints(t *testing.T, rng *rand.Rand) (*Log, refusingCheckpoints) {
	t.Helper()
	r := refusingCheckpoints{clock: newFakeClock(), refuse: new(atomic.Bool), logged: new(syncbuf.Buffer)}
	c := testConfig()
	c.Clock = r.clock
	c.RecoveryPointCheckpointMs = 60_000
	c.fsync = func(f *os.File, _ bool) error {
		if strings.HasPrefix(filepath.Base(f.Name()), logCheckpointName) && r.refuse.Load() {
			return syscall.ENOSPC
		}
		return nil
	}
	c.Logger = slog.New(slog.NewTextHandler(r.logged, nil))
	l := openLog(t, t.TempDir(), c)
	fill(t, l, rng, 40, 10)
	syncSealed(t, l)
	return l, r
}
