package hotlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
)

// fakeClock is a Clock the test moves by hand.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeTimer{at: c.now.Add(d), c: ch})
	return ch
}

// Advance moves the clock and fires the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	c.waiters = kept
}

// waitForTimer returns once some goroutine waits on a timer of the clock,
// so an Advance that follows is seen.
func (c *fakeClock) waitForTimer(t *testing.T) {
	t.Helper()
	waitFor(t, "a timer", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.waiters) > 0
	})
}

// noFsync skips fsync: for tests that simulate crashes by copying files,
// where real fsyncs only cost time.
func noFsync(*os.File, bool) error { return nil }

// testConfig is a small configuration: 64 KiB segments, 512-byte index
// interval, 4 KiB indexes, a fake clock and no fsync.
func testConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 64 << 10
	c.IndexIntervalBytes = 512
	c.SegmentIndexBytes = 4 << 10
	c.Clock = newFakeClock()
	c.fsync = noFsync
	return c
}

func openLog(t testing.TB, dir string, c Config) *Log {
	t.Helper()
	l, err := Open(dir, c)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// fataler is what test helpers need of a *testing.T or *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// makeBatch builds a valid uncompressed batch of n records with values of
// size bytes, its max timestamp at timestamp.
func makeBatch(t fataler, rng *rand.Rand, n, size int, timestamp int64) []byte {
	t.Helper()
	records := make([]record.Record, n)
	for i := range records {
		value := make([]byte, size)
		for j := range value {
			value[j] = byte(rng.IntN(256))
		}
		records[i] = record.Record{Value: value, TimestampDelta: int64(i)}
	}
	b, err := record.Build(record.BuildOptions{FirstTimestamp: timestamp - int64(n-1), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		t.Fatalf("record.Build: %v", err)
	}
	return b
}

// appended is a batch the test appended, as stamped by the log.
type appended struct {
	base, last int64
	bytes      []byte
	maxTime    int64
}

// checked is batches as record.Check finds them, ready for Append.
func checked(t fataler, batches ...[]byte) []record.Batch {
	t.Helper()
	out := make([]record.Batch, len(batches))
	for i, b := range batches {
		c, err := record.Check(b)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		out[i] = c
	}
	return out
}

// appendBatches appends the batches in one call and records them.
func appendBatches(t fataler, l *Log, batches ...[]byte) []appended {
	t.Helper()
	res, err := l.Append(checked(t, batches...)...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	out := make([]appended, len(batches))
	next := res.FirstOffset
	for i, b := range batches {
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if h.BaseOffset != next {
			t.Fatalf("batch %d stamped with base offset %d, want %d", i, h.BaseOffset, next)
		}
		out[i] = appended{base: h.BaseOffset, last: h.LastOffset(), bytes: bytes.Clone(b), maxTime: h.MaxTimestamp}
		next = h.NextOffset()
	}
	if res.LastOffset != next-1 {
		t.Fatalf("LastOffset %d, want %d", res.LastOffset, next-1)
	}
	return out
}

// leaderBatches builds batches as a leader sends them to a follower: dense
// offsets from base, batch i in leader epoch epochs[i], timestamps growing
// with the offsets.
func leaderBatches(t fataler, rng *rand.Rand, base int64, epochs ...int32) [][]byte {
	t.Helper()
	out := make([][]byte, len(epochs))
	for i, epoch := range epochs {
		b := makeBatch(t, rng, 1+rng.IntN(4), 1+rng.IntN(100), 1_700_000_000_000+base*10)
		record.SetBaseOffset(b, base)
		record.SetPartitionLeaderEpoch(b, epoch)
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatalf("%v", err)
		}
		base = h.NextOffset()
		out[i] = b
	}
	return out
}

// appendReplicated appends leader batches in one AppendReplicated call,
// checks that nothing of them changed, and records them.
func appendReplicated(t fataler, l *Log, batches ...[]byte) []appended {
	t.Helper()
	sent := make([][]byte, len(batches))
	for i, b := range batches {
		sent[i] = bytes.Clone(b)
	}
	res, err := l.AppendReplicated(checked(t, batches...)...)
	if err != nil {
		t.Fatalf("AppendReplicated: %v", err)
	}
	out := make([]appended, len(batches))
	for i, b := range batches {
		if !bytes.Equal(b, sent[i]) {
			t.Fatalf("AppendReplicated changed batch %d", i)
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatalf("%v", err)
		}
		out[i] = appended{base: h.BaseOffset, last: h.LastOffset(), bytes: sent[i], maxTime: h.MaxTimestamp}
	}
	if res.FirstOffset != out[0].base || res.LastOffset != out[len(out)-1].last {
		t.Fatalf("AppendReplicated = [%d, %d], want [%d, %d]", res.FirstOffset, res.LastOffset, out[0].base, out[len(out)-1].last)
	}
	return out
}

// fill appends count random batches of 1..maxRecords records of 1..100
// bytes, one per call, with increasing timestamps.
func fill(t testing.TB, l *Log, rng *rand.Rand, count, maxRecords int) []appended {
	t.Helper()
	var out []appended
	for range count {
		ts := int64(1_700_000_000_000 + len(out)*10)
		out = append(out, appendBatches(t, l, makeBatch(t, rng, 1+rng.IntN(maxRecords), 1+rng.IntN(100), ts))...)
	}
	return out
}

// batchesFrom is the batches at or above offset.
func batchesFrom(batches []appended, offset int64) []appended {
	var kept []appended
	for _, b := range batches {
		if b.base >= offset {
			kept = append(kept, b)
		}
	}
	return kept
}

// checkReadsBack reads every offset of batches and compares the first
// batch of each read with what was appended.
func checkReadsBack(t fataler, l *Log, batches []appended) {
	t.Helper()
	for _, b := range batches {
		for _, offset := range []int64{b.base, b.last} {
			got, err := l.ReadBytes(offset, 1)
			if err != nil {
				t.Fatalf("read offset %d: %v", offset, err)
			}
			if !bytes.Equal(got, b.bytes) {
				t.Fatalf("read offset %d: got %d bytes, want the %d-byte batch at %d", offset, len(got), len(b.bytes), b.base)
			}
		}
	}
}

// vanishes reports whether a file of that name may go between a
// directory listing and its read while the log works: a temporary renamed
// over its target, or a retired segment log reclaimed. A copy without it
// is the directory as it was after that, as a crash then would leave it.
func vanishes(name string) bool {
	return strings.HasSuffix(name, temporarySuffix) || strings.HasSuffix(name, deletedSuffix)
}

// copyDir copies the regular files of src into a new directory,
// transforming each file's content with cut (nil keeps it whole).
func copyDir(t testing.TB, src string, cut func(name string, data []byte) []byte) string {
	t.Helper()
	dst := filepath.Join(fastTempDir(t), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if errors.Is(err, os.ErrNotExist) && vanishes(e.Name()) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cut != nil {
			data = cut(e.Name(), data)
		}
		if data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// lastSegmentLog returns the path of the active segment's .log.
func lastSegmentLog(l *Log) string {
	return filepath.Join(l.Dir(), segmentFileName(l.ActiveSegment().BaseOffset, logSuffix))
}

// splitBatches validates a read's bytes as whole batches with dense
// offsets starting at first.
func splitBatches(t fataler, b []byte, first int64) []record.Header {
	t.Helper()
	_, headers, err := record.Split(b)
	if err != nil {
		t.Fatalf("read returned bytes that are not whole valid batches: %v", err)
	}
	next := first
	for _, h := range headers {
		if h.BaseOffset != next {
			t.Fatalf("batch base offset %d, want %d", h.BaseOffset, next)
		}
		next = h.NextOffset()
	}
	return headers
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// syncSealed syncs l and waits for the seals queued before the call: a
// round releases its waiters before it seals the rolled segments' indexes,
// and holds round until it has, so taking round after Sync waits for them.
func syncSealed(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	l.flusher.mu.Lock()
	pending := len(l.flusher.mu.pendingSeals)
	l.flusher.mu.Unlock()
	if pending > 0 {
		t.Fatalf("%d segments still wait for their seal after Sync", pending)
	}
}

// crashCopy copies a live log's directory as a crash would leave it, each
// file passed through cut (nil keeps what the page cache holds, as after a
// process crash). The flusher is paused meanwhile, so no round is half done
// in the copy; the copy has no clean-shutdown marker.
func crashCopy(t testing.TB, l *Log, cut func(name string, data []byte) []byte) string {
	t.Helper()
	l.flusher.round.Lock()
	defer l.flusher.round.Unlock()
	return copyDir(t, l.Dir(), cut)
}

// recoveryEvents returns a config that records Open's RecoveryInfo.
func recoveryEvents(c Config, info *RecoveryInfo) Config {
	c.Events.Recovered = func(i RecoveryInfo) { *info = i }
	return c
}

// fastTempDir returns a temporary directory on tmpfs when there is one:
// tests that create tens of thousands of files measure descriptors and
// memory, not the disk, and file creation on a journaled disk dominates
// their time otherwise.
func fastTempDir(t testing.TB) string {
	t.Helper()
	if dir, err := os.MkdirTemp("/dev/shm", "hotlog-test-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// inodeOf returns the inode number of the file at path.
func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}
