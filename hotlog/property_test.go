package hotlog

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stratalog/strata/record"
	"pgregory.net/rapid"
)

// TestLogMatchesModel runs random sequences of appends (a leader's and a
// follower's), reads, syncs, rolls, epoch assignments, truncations,
// deletions, resets, clean restarts and crashes against an in-memory model
// of the log. A crash copies the directory as a power loss
// could leave it: each .log cut to what was fsynced (as the Synced events
// report), plus, at random, some or all of what was written after, torn at
// any byte; index entries the recovery point does not vouch for replaced by
// garbage; in a torn crash, the log-checkpoint slot the next checkpoint
// would write torn too. After every step the log must agree with the
// model: dense offsets, every batch read back byte for byte, nothing half
// written, the epoch history, and after a crash every fsynced batch
// present.
func TestLogMatchesModel(t *testing.T) {
	root := fastTempDir(t)
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(root, "log-")
		if err != nil {
			rt.Fatalf("%v", err)
		}
		defer os.RemoveAll(dir)
		m := &modelTest{rt: rt, dir: filepath.Join(dir, "p-0"), synced: map[int64]int64{}}
		m.config = testConfig()
		m.config.SegmentBytes = 4 << 10
		m.config.IndexIntervalBytes = 256
		m.config.SegmentIndexBytes = 512
		m.config.Events.Synced = func(info SyncInfo) {
			m.mu.Lock()
			m.synced[info.BaseOffset] = info.Size
			m.mu.Unlock()
		}
		m.config.Events.Deleted = func(info SegmentInfo) {
			m.mu.Lock()
			delete(m.synced, info.BaseOffset)
			m.mu.Unlock()
		}
		m.open()
		defer func() { m.log.Close() }()
		rt.Repeat(map[string]func(*rapid.T){
			"append":           m.append,
			"appendReplicated": m.appendReplicated,
			"assignEpoch":      m.assignEpoch,
			"reset":            m.reset,
			"read":             m.read,
			"sync":             m.sync,
			"roll":             m.roll,
			"truncate":         m.truncate,
			"deleteBefore":     m.deleteBefore,
			"timestamps":       m.timestamps,
			"reopen":           m.reopen,
			"crash":            m.crash,
			"":                 m.check,
		})
	})
}

type modelTest struct {
	rt     *rapid.T
	dir    string
	config Config
	log    *Log

	mu     sync.Mutex
	synced map[int64]int64 // segment base offset -> bytes fsynced

	batches []appended // from the one holding the log start on
	start   int64
	end     int64
	durable int64 // every batch below is fsynced and must survive a crash
	// epochs is the leader epoch history; the model applies the same
	// rules as the log (epoch.go), which epoch_test.go checks against
	// Kafka's.
	epochs []EpochEntry
}

// open opens the log. Whatever Open leaves on disk is durable: it trusts
// only fsynced data and fsyncs what it checks.
func (m *modelTest) open() {
	l, err := Open(m.dir, m.config)
	if err != nil {
		m.rt.Fatalf("Open: %v", err)
	}
	m.log = l
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced = map[int64]int64{}
	for _, s := range l.Segments() {
		m.synced[s.BaseOffset] = s.Size
	}
}

func (m *modelTest) append(rt *rapid.T) {
	n := rapid.IntRange(1, 3).Draw(rt, "batches")
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0))
	batches := make([][]byte, n)
	for i := range batches {
		records := rapid.IntRange(1, 5).Draw(rt, "records")
		size := rapid.IntRange(0, 400).Draw(rt, "size")
		timestamp := rapid.Int64Range(10, 10_000).Draw(rt, "timestamp")
		batches[i] = makeBatch(rt, rng, records, size, timestamp)
	}
	added := appendBatches(rt, m.log, batches...)
	if added[0].base != m.end {
		rt.Fatalf("append at %d, model end %d", added[0].base, m.end)
	}
	m.batches = append(m.batches, added...)
	m.end = added[len(added)-1].last + 1
	if rapid.Bool().Draw(rt, "waitAck") {
		if err := m.log.Sync(context.Background()); err != nil {
			rt.Fatalf("Sync: %v", err)
		}
		m.durable = m.end
	}
}

// appendReplicated appends a leader's batches, now and then ones that do
// not continue the log or go back in epoch, which must be refused whole.
func (m *modelTest) appendReplicated(rt *rapid.T) {
	n := rapid.IntRange(1, 3).Draw(rt, "batches")
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 0))
	latest := latestEpochOf(m.epochs)
	base := m.end
	if rapid.IntRange(0, 9).Draw(rt, "misplaced") == 0 {
		base += rapid.SampledFrom([]int64{-1, 1}).Draw(rt, "offBy")
	}
	epochs := make([]int32, n)
	epoch := latest
	for i := range epochs {
		epoch += int32(rapid.IntRange(-1, 2).Draw(rt, "epochStep"))
		epoch = max(epoch, -1)
		epochs[i] = epoch
	}
	batches := make([][]byte, n)
	next := base
	for i := range batches {
		records := rapid.IntRange(1, 5).Draw(rt, "records")
		size := rapid.IntRange(0, 400).Draw(rt, "size")
		timestamp := rapid.Int64Range(10, 10_000).Draw(rt, "timestamp")
		batches[i] = makeBatch(rt, rng, records, size, timestamp)
		record.SetBaseOffset(batches[i], next)
		record.SetPartitionLeaderEpoch(batches[i], epochs[i])
		next += int64(records)
	}
	wantErr := error(nil)
	running := latest
	for _, e := range epochs {
		if e < running {
			wantErr = ErrStaleEpoch
			break
		}
		running = e
	}
	if base != m.end {
		wantErr = ErrNotContiguous
	}
	if wantErr != nil {
		if _, err := m.log.AppendReplicated(checked(rt, batches...)...); !errors.Is(err, wantErr) {
			rt.Fatalf("AppendReplicated at %d, epochs %v, log at %d in epoch %d: %v, want %v", base, epochs, m.end, latest, err, wantErr)
		}
		return
	}
	added := appendReplicated(rt, m.log, batches...)
	for i, b := range added {
		if epochs[i] > latestEpochOf(m.epochs) {
			m.epochs, _ = assignEpoch(m.epochs, EpochEntry{Epoch: epochs[i], StartOffset: b.base})
		}
	}
	m.batches = append(m.batches, added...)
	m.end = added[len(added)-1].last + 1
}

// assignEpoch makes this replica leader in a new epoch at the log end.
func (m *modelTest) assignEpoch(rt *rapid.T) {
	epoch := latestEpochOf(m.epochs) + int32(rapid.IntRange(1, 3).Draw(rt, "epochStep"))
	if err := m.log.AssignEpoch(epoch, m.end); err != nil {
		rt.Fatalf("AssignEpoch(%d, %d): %v", epoch, m.end, err)
	}
	m.epochs, _ = assignEpoch(m.epochs, EpochEntry{Epoch: epoch, StartOffset: m.end})
}

// reset restarts the log empty below, at or above its end, as a follower
// whose leader's local log no longer reaches it.
func (m *modelTest) reset(rt *rapid.T) {
	offset := rapid.Int64Range(0, m.end+50).Draw(rt, "offset")
	var epochs []EpochEntry
	if rapid.Bool().Draw(rt, "withEpochs") {
		epoch := max(latestEpochOf(m.epochs), 0) + int32(rapid.IntRange(0, 2).Draw(rt, "epochStep"))
		if offset > 0 {
			epochs = append(epochs, EpochEntry{Epoch: epoch, StartOffset: rapid.Int64Range(0, offset-1).Draw(rt, "older")})
			epoch++
		}
		epochs = append(epochs, EpochEntry{Epoch: epoch, StartOffset: offset - rapid.Int64Range(0, min(offset, 3)).Draw(rt, "back")})
		if len(epochs) == 2 && epochs[1].StartOffset <= epochs[0].StartOffset {
			epochs = epochs[1:]
		}
	}
	if err := m.log.ResetTo(offset, epochs); err != nil {
		rt.Fatalf("ResetTo(%d, %v): %v", offset, epochs, err)
	}
	m.batches = nil
	m.start, m.end, m.durable = offset, offset, offset
	m.epochs = nil
	if n := len(epochs); n > 0 {
		m.epochs = []EpochEntry{{Epoch: epochs[n-1].Epoch, StartOffset: offset}}
	}
}

// latestEpochOf is the epoch a history ends in.
func latestEpochOf(entries []EpochEntry) int32 {
	if len(entries) == 0 {
		return UndefinedEpoch
	}
	return entries[len(entries)-1].Epoch
}

// headerOf parses a batch's header.
func headerOf(t fataler, b []byte) record.Header {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return h
}

func (m *modelTest) sync(rt *rapid.T) {
	if err := m.log.Sync(context.Background()); err != nil {
		rt.Fatalf("Sync: %v", err)
	}
	m.durable = m.end
}

func (m *modelTest) roll(rt *rapid.T) {
	if err := m.log.Roll(); err != nil {
		rt.Fatalf("Roll: %v", err)
	}
}

// read checks a Read against the model exactly: the batch holding the
// offset, then following batches of the same segment while they fit.
func (m *modelTest) read(rt *rapid.T) {
	offset := rapid.Int64Range(m.start-1, m.end+1).Draw(rt, "offset")
	maxBytes := rapid.IntRange(0, 3000).Draw(rt, "maxBytes")
	s, err := m.log.Read(offset, maxBytes)
	if offset < m.start || offset > m.end {
		if !errors.Is(err, ErrOffsetOutOfRange) {
			rt.Fatalf("Read(%d) outside [%d, %d]: %v", offset, m.start, m.end, err)
		}
		return
	}
	if err != nil {
		rt.Fatalf("Read(%d): %v", offset, err)
	}
	defer s.Release()
	got, err := s.ReadAll()
	if err != nil {
		rt.Fatalf("ReadAll: %v", err)
	}
	if offset == m.end {
		if len(got) != 0 {
			rt.Fatalf("Read at the log end returned %d bytes", len(got))
		}
		return
	}
	k := 0
	for m.batches[k].last < offset {
		k++
	}
	var segmentEnd int64
	for _, seg := range m.log.Segments() {
		if seg.BaseOffset <= offset && offset < seg.NextOffset {
			segmentEnd = seg.NextOffset
		}
	}
	want := m.batches[k].bytes
	j := k + 1
	for j < len(m.batches) && m.batches[j].base < segmentEnd && len(want)+len(m.batches[j].bytes) <= maxBytes {
		want = append(bytes.Clone(want), m.batches[j].bytes...)
		j++
	}
	if !bytes.Equal(got, want) || s.FirstOffset != m.batches[k].base || s.NextOffset != m.batches[j-1].last+1 {
		rt.Fatalf("Read(%d, %d) = %d bytes [%d, %d), want %d bytes [%d, %d)", offset, maxBytes,
			len(got), s.FirstOffset, s.NextOffset, len(want), m.batches[k].base, m.batches[j-1].last+1)
	}
}

func (m *modelTest) truncate(rt *rapid.T) {
	offset := rapid.Int64Range(m.start, m.end).Draw(rt, "offset")
	if err := m.log.TruncateTo(offset); err != nil {
		rt.Fatalf("TruncateTo(%d): %v", offset, err)
	}
	if offset == m.end {
		// Only epochs that start at the end, covering no batch, go.
		m.epochs, _ = truncateEpochsFromEnd(m.epochs, m.end, true)
		return
	}
	for i, b := range m.batches {
		if b.last >= offset {
			m.batches = m.batches[:i]
			m.end = b.base
			break
		}
	}
	m.start = min(m.start, m.end)
	m.durable = m.end // TruncateTo flushes first
	m.epochs, _ = truncateEpochsFromEnd(m.epochs, m.end, true)
}

func (m *modelTest) deleteBefore(rt *rapid.T) {
	offset := rapid.Int64Range(m.start, m.end).Draw(rt, "offset")
	if _, err := m.log.DeleteBefore(offset); err != nil {
		rt.Fatalf("DeleteBefore(%d): %v", offset, err)
	}
	if offset == m.start {
		return // a no-op
	}
	m.start = offset
	for len(m.batches) > 0 && m.batches[0].last < m.start {
		m.batches = m.batches[1:]
	}
	m.epochs, _ = truncateEpochsFromStart(m.epochs, offset)
	m.durable = max(m.durable, offset) // DeleteBefore flushes up to its new start
}

func (m *modelTest) timestamps(rt *rapid.T) {
	ts := rapid.Int64Range(0, 10_100).Draw(rt, "timestamp")
	got, ok, err := m.log.OffsetForTimestamp(ts, 0)
	if err != nil {
		rt.Fatalf("OffsetForTimestamp(%d): %v", ts, err)
	}
	for _, b := range m.batches {
		if b.maxTime >= ts {
			if !ok || got.Offset != max(b.base, m.start) || got.Timestamp != b.maxTime {
				rt.Fatalf("OffsetForTimestamp(%d) = %+v %v, want %d at %d", ts, got, ok, b.maxTime, max(b.base, m.start))
			}
			return
		}
	}
	if ok {
		rt.Fatalf("OffsetForTimestamp(%d) = %+v, want none", ts, got)
	}
}

func (m *modelTest) reopen(rt *rapid.T) {
	if err := m.log.Close(); err != nil {
		rt.Fatalf("Close: %v", err)
	}
	m.open()
	m.durable = m.end
	m.checkAll(rt)
}

// crash simulates a power loss and reopens what it left.
func (m *modelTest) crash(rt *rapid.T) {
	mode := rapid.SampledFrom([]string{"fsynced only", "torn", "everything written"}).Draw(rt, "crash")
	garble := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "garbage"), 0))
	l := m.log
	l.flusher.round.Lock()
	m.mu.Lock()
	synced := map[int64]int64{}
	for base, size := range m.synced {
		synced[base] = size
	}
	m.mu.Unlock()
	var checkpoint logCheckpoint
	if data, err := os.ReadFile(filepath.Join(m.dir, logCheckpointName)); err == nil {
		f, err := parseCheckpointFile(data)
		if err != nil {
			rt.Fatalf("%v", err)
		}
		checkpoint = f.checkpoint
	}
	point := checkpoint.recoveryPoint
	dst := filepath.Join(filepath.Dir(m.dir), filepath.Base(m.dir)+"-crashed")
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		rt.Fatalf("%v", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		rt.Fatalf("%v", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) && vanishes(e.Name()) {
			continue
		}
		if err != nil {
			rt.Fatalf("%v", err)
		}
		base, suffix, isSegment := parseSegmentFileName(e.Name())
		switch {
		case e.Name() == logCheckpointName && mode == "torn" && l.flusher.checkpointFile.inPlace:
			// A checkpoint's write cut short leaves its slot torn.
			next := checkpointSlotOffset(l.flusher.checkpointFile.seq + 1)
			for i := range garble.IntN(checkpointSlotSize + 1) {
				data[next+int64(i)] = byte(garble.IntN(256))
			}
		case isSegment && suffix == logSuffix:
			durable := min(synced[base], int64(len(data)))
			keep := durable
			switch mode {
			case "torn":
				keep += garble.Int64N(int64(len(data)) - durable + 1)
			case "everything written":
				keep = int64(len(data))
			}
			data = data[:keep]
		case isSegment && base >= point.segmentBase:
			// Entries past the recovery point may not have reached the disk.
			entrySize, trusted := indexEntrySize, point.indexEntries
			if suffix == timeIndexSuffix {
				entrySize, trusted = timeIndexEntrySize, point.timeIndexEntries
			}
			valid := 0
			if base == point.segmentBase {
				valid = trusted * entrySize
			}
			for i := valid; i < len(data); i++ {
				data[i] = byte(garble.IntN(256))
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			rt.Fatalf("%v", err)
		}
	}
	l.flusher.round.Unlock()
	if err := l.Close(); err != nil {
		rt.Fatalf("Close: %v", err)
	}
	if err := os.RemoveAll(m.dir); err != nil {
		rt.Fatalf("%v", err)
	}
	if err := os.Rename(dst, m.dir); err != nil {
		rt.Fatalf("%v", err)
	}
	m.open()

	end := m.log.LogEndOffset()
	if end < m.durable || end > m.end {
		rt.Fatalf("crash (%s) recovered the log to %d, want between the durable %d and the end %d", mode, end, m.durable, m.end)
	}
	for i, b := range m.batches {
		if b.last >= end {
			if b.base != end {
				rt.Fatalf("crash recovered to %d, inside the batch [%d, %d]", end, b.base, b.last)
			}
			m.batches = m.batches[:i]
			break
		}
	}
	m.end, m.durable = end, end
	m.start = min(m.start, end)
	m.epochs, _ = truncateEpochsFromEnd(m.epochs, end, false)
	m.epochs, _ = truncateEpochsFromStart(m.epochs, m.start)
	m.checkAll(rt)
}

// check runs after every step.
func (m *modelTest) check(rt *rapid.T) {
	l := m.log
	if l.LogStartOffset() != m.start || l.LogEndOffset() != m.end {
		rt.Fatalf("log [%d, %d), model [%d, %d)", l.LogStartOffset(), l.LogEndOffset(), m.start, m.end)
	}
	if l.FlushedOffset() < m.durable {
		rt.Fatalf("flushed offset %d below the durable %d", l.FlushedOffset(), m.durable)
	}
	segments := l.Segments()
	if segments[0].BaseOffset > m.start || segments[len(segments)-1].NextOffset != m.end {
		rt.Fatalf("segments %+v do not span [%d, %d)", segments, m.start, m.end)
	}
	for i := 1; i < len(segments); i++ {
		if segments[i].BaseOffset != segments[i-1].NextOffset || !segments[i-1].Sealed {
			rt.Fatalf("segments not contiguous and sealed: %+v", segments)
		}
	}
	if got := l.Epochs(); !slices.Equal(got, m.epochs) {
		rt.Fatalf("epochs %v, model %v", got, m.epochs)
	}
}

// checkAll reads every batch back, after a restart.
func (m *modelTest) checkAll(rt *rapid.T) {
	for _, b := range m.batches {
		if b.base < m.start {
			continue
		}
		got, err := m.log.ReadBytes(b.base, 0)
		if err != nil {
			rt.Fatalf("read %d: %v", b.base, err)
		}
		if !bytes.Equal(got, b.bytes) {
			rt.Fatalf("batch at %d changed", b.base)
		}
		// The history names the epoch every batch was written in.
		epoch, _ := epochForOffset(m.epochs, b.base)
		if h := headerOf(rt, got); h.PartitionLeaderEpoch != epoch {
			rt.Fatalf("batch at %d in epoch %d, the history says %d (%v)", b.base, h.PartitionLeaderEpoch, epoch, m.epochs)
		}
	}
}
