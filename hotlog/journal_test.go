package hotlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openJournaledDiskSync opens a DiskSync on dir with a journal of
// limit-byte files, coalescing as on a journaled file system whatever
// dir's shared kind is. The caller closes it, after its logs.
func openJournaledDiskSync(t *testing.T, dir string, limit int64) *DiskSync {
	t.Helper()
	if errs, err := SyncfsErrorsOn(dir); err == nil && errs == SyncfsMayMiss {
		t.Skip("a syncfs on the test directory's file system may miss a failed write, so a journal is refused there")
	}
	d, err := OpenDiskSync(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	d.errors = SyncfsReportsAll
	return d
}

// openJournaledLogs opens a journaled DiskSync on root (files of 1 MiB)
// and n logs in it, in directories named 0 to n-1, each with one batch
// appended and synced; it returns their config and each one's batch.
// The caller closes the DiskSync, after the logs.
func openJournaledLogs(t *testing.T, root string, rng *rand.Rand, n int) (*DiskSync, Config, []*Log, [][]appended) {
	t.Helper()
	d := openJournaledDiskSync(t, root, 1<<20)
	c := testConfig()
	c.DiskSync = d
	logs := make([]*Log, n)
	first := make([][]appended, n)
	for i := range logs {
		logs[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		first[i] = appendBatches(t, logs[i], makeBatch(t, rng, 1, 100, 1))
		if err := logs[i].Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return d, c, logs, first
}

// ackAll appends a batch of two records of recordBytes to each log,
// registers every acknowledgement before waiting for any (so the disk
// rounds take the logs together, in journal rounds while their new bytes
// are small), and waits for them. It returns each log's batch.
func ackAll(t *testing.T, rng *rand.Rand, logs []*Log, recordBytes int) []appended {
	t.Helper()
	batches := make([]appended, len(logs))
	acks := make([]Ack, len(logs))
	for i, l := range logs {
		b := makeBatch(t, rng, 2, recordBytes, 1)
		res, err := l.Append(checked(t, b)...)
		if err != nil {
			t.Fatal(err)
		}
		// Append stamped b in place.
		batches[i] = appended{base: res.FirstOffset, last: res.LastOffset, bytes: bytes.Clone(b)}
		acks[i] = res.Expect()
	}
	for _, a := range acks {
		if err := a.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return batches
}

// openSyncedLogs opens n logs on d in root, in directories named 0 to
// n-1, each with one batch appended and synced (openSyncedLog).
func openSyncedLogs(t *testing.T, root string, d *DiskSync, rng *rand.Rand, n int) []*Log {
	t.Helper()
	c := testConfig()
	c.DiskSync = d
	logs := make([]*Log, n)
	for i := range logs {
		logs[i] = openSyncedLog(t, filepath.Join(root, fmt.Sprint(i)), c, rng)
	}
	return logs
}

// journaledUntil calls ackAll until the journal files in dir hold an
// entry for every log, and returns the batches per log.
func journaledUntil(t *testing.T, dir string, rng *rand.Rand, logs []*Log) [][]appended {
	t.Helper()
	batches := make([][]appended, len(logs))
	for range 100 {
		for i, b := range ackAll(t, rng, logs, 200) {
			batches[i] = append(batches[i], b)
		}
		covered := map[string]bool{}
		for _, b := range journalFiles(t, dir) {
			_, entries, _ := parseJournal(b)
			for _, e := range entries {
				covered[filepath.Dir(e.file.rel)] = true
			}
		}
		if len(covered) == len(logs) {
			return batches
		}
	}
	t.Fatalf("a hundred rounds of appends to %d logs never journaled them all", len(logs))
	return nil
}

// journalFiles returns the journal files in dir, by name.
func journalFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if _, ok := parseJournalName(e.Name()); ok {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = b
		}
	}
	return files
}

// TestJournalReplaysWhatSegmentFilesLost acknowledges batches on eight
// logs until journal rounds have taken each, then plays a power loss that
// took every journaled range of the segment files but not the journal:
// the ranges are zeroed in place and the journal files as they were put
// back. Opening the DiskSync writes them back, so every acknowledged
// batch reads back; a log whose file was replaced by another of the same
// name meanwhile is skipped.
func TestJournalReplaysWhatSegmentFilesLost(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	d, c, logs, before := openJournaledLogs(t, root, rng, 8)
	journaled := journaledUntil(t, root, rng, logs)
	crashed := journalFiles(t, root)
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if left := journalFiles(t, root); len(left) != 0 {
		t.Fatalf("Close left %d journal files", len(left))
	}

	// The power loss: no journaled range reached its segment file.
	var entries, skipped int
	for _, b := range crashed {
		_, parsed, err := parseJournal(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range parsed {
			entries++
			if filepath.Dir(e.file.rel) == "7" {
				skipped++
			}
			f, err := os.OpenFile(filepath.Join(root, e.file.rel), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, len(e.data)), e.position); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	// Log 7's file is replaced by another holding the same bytes.
	segment7 := filepath.Join(root, "7", segmentFileName(0, logSuffix))
	replaced, err := os.ReadFile(segment7)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(segment7); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segment7, replaced, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, b := range crashed {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	d = openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() }) // after the logs' Close
	r := d.Replayed()
	if r.Files != len(crashed) || r.Entries != entries || r.Written != entries-skipped || r.Skipped != skipped {
		t.Fatalf("replayed %+v, want %d files, %d entries, %d skipped", r, len(crashed), entries, skipped)
	}
	if left := journalFiles(t, root); len(left) != 1 {
		t.Fatalf("after the replay %d journal files, want only the new one", len(left))
	}
	c.DiskSync = d
	for i := range logs[:7] {
		l := openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		checkReadsBack(t, l, append(before[i], journaled[i]...))
	}
}

// TestTruncateLeavesNoJournalEntryToUndoIt: a batch acknowledged through
// the journal, then cut by TruncateTo, must not come back when the
// journal files left at a crash right after are replayed; also where the
// log was closed and opened again in this process in between (a partition
// reopened for a changed setting), while its entries' journal file lived.
func TestTruncateLeavesNoJournalEntryToUndoIt(t *testing.T) {
	t.Parallel()
	for _, reopen := range []bool{false, true} {
		t.Run(fmt.Sprintf("reopened=%v", reopen), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			rng := rand.New(rand.NewPCG(9, 10))
			d, c, logs, _ := openJournaledLogs(t, root, rng, 3)
			journaled := journaledUntil(t, root, rng, logs)
			if reopen {
				if err := logs[1].Close(); err != nil {
					t.Fatal(err)
				}
				logs[1] = openLog(t, filepath.Join(root, "1"), c)
			}
			cut := journaled[1][0].base
			truncateCrashReplay(t, root, d, c, logs, cut)
		})
	}
}

// truncateCrashReplay cuts logs[1] at cut, checks that no journal entry
// is left, plays a crash right after (the journal files as they are, the
// segment as the truncation left it) and opens log 1 again on a new
// DiskSync: its end is cut.
func truncateCrashReplay(t *testing.T, root string, d *DiskSync, c Config, logs []*Log, cut int64) {
	t.Helper()
	if err := logs[1].TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	segment := lastSegmentLog(logs[1])
	crashed := journalFiles(t, root)
	for name, b := range crashed {
		_, entries, err := parseJournal(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(entries) != 0 {
			t.Fatalf("%s holds %d entries after the truncation, want none: every file before it was retired", name, len(entries))
		}
	}
	size := fileSize(t, segment)
	for _, l := range logs {
		l.Close()
	}
	d.Close()
	for name, b := range crashed {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d = openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	if got := fileSize(t, segment); got != size {
		t.Fatalf("the replay changed the truncated segment from %d to %d bytes", size, got)
	}
	c.DiskSync = d
	if end := openLog(t, filepath.Join(root, "1"), c).LogEndOffset(); end != cut {
		t.Fatalf("log end %d after the replay, want the truncation's %d", end, cut)
	}
}

// TestJournalFilesRetireAtTheirSize: once a journal file holds its limit,
// rounds go on in the next and the full one is retired (its bytes made
// durable in their files by a syncfs, then deleted).
func TestJournalFilesRetireAtTheirSize(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	c := testConfig()
	c.SegmentBytes = 8 << 20
	c.DiskSync = d
	rng := rand.New(rand.NewPCG(11, 12))
	logs := make([]*Log, 4)
	for i := range logs {
		logs[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		appendBatches(t, logs[i], makeBatch(t, rng, 1, 100, 1))
		if err := logs[i].Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	syncfsBefore, _, _ := d.Calls()
	var written int64
	for written < 3<<20 {
		for _, b := range ackAll(t, rng, logs, 200) {
			written += int64(len(b.bytes))
		}
	}
	waitFor(t, "the full journal files retired", func() bool {
		return len(journalFiles(t, root)) == 1 && !d.journal.retiring.Load()
	})
	d.journal.mu.Lock()
	seq := d.journal.mu.seq
	d.journal.mu.Unlock()
	if seq < 3 {
		t.Fatalf("%d bytes journaled in files of 1 MiB reached file %d, want 3 or more", written, seq)
	}
	if syncfs, _, _ := d.Calls(); syncfs == syncfsBefore {
		t.Fatal("journal files were retired without a syncfs")
	}
	// Every file before the current one filled up to its size, so the
	// entries written are at least what those files hold past their
	// headers.
	bytes, retirements := d.JournalWork()
	if least := int64(seq-1) * (1<<20 - journalHeaderSize); bytes < least {
		t.Errorf("JournalWork counts %d bytes written into %d files of 1 MiB, want %d or more", bytes, seq, least)
	}
	// Entry headers add a tenth or so to batches of this size; twice
	// the batches would be a commit counted twice.
	if bytes > 2*written {
		t.Errorf("JournalWork counts %d bytes written for %d bytes of batches, want at most twice that", bytes, written)
	}
	if retirements == 0 {
		t.Error("JournalWork counts no retirement after the full files were retired")
	}
}

// TestJournalParsesUpToATornTail cuts a journal file at every length: the
// entries parsed are always the whole ones before the cut.
func TestJournalParsesUpToATornTail(t *testing.T) {
	t.Parallel()
	b := appendJournalHeader(nil, journalHeader{seq: 5})
	var ends []int
	for i := range 3 {
		id := &fileID{rel: fmt.Sprintf("orders-%d/00000000000000000000.log", i), ino: uint64(100 + i), gen: 7, btimeSec: 1, btimeNsec: 2}
		data := bytes.Repeat([]byte{byte('a' + i)}, 10*(i+1))
		var err error
		b, err = appendJournalEntry(b, id, int64(64*i), len(data), func(p []byte) error { copy(p, data); return nil })
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(b))
	}
	sealJournalEntries(b[journalHeaderSize:], journalHeader{seq: 5})
	for cut := journalHeaderSize; cut <= len(b); cut++ {
		h, entries, err := parseJournal(b[:cut])
		if err != nil || h.seq != 5 {
			t.Fatalf("cut at %d: seq %d, %v", cut, h.seq, err)
		}
		want := 0
		for _, end := range ends {
			if end <= cut {
				want++
			}
		}
		if len(entries) != want {
			t.Fatalf("cut at %d: %d entries, want %d", cut, len(entries), want)
		}
		for i, e := range entries {
			if e.position != int64(64*i) || len(e.data) != 10*(i+1) || e.data[0] != byte('a'+i) || e.file.ino != uint64(100+i) {
				t.Fatalf("cut at %d: entry %d is %+v", cut, i, e)
			}
		}
	}
	// A flipped bit in the second entry ends the journal before it.
	b[ends[0]+20] ^= 1
	if _, entries, _ := parseJournal(b); len(entries) != 1 {
		t.Fatalf("%d entries before a corrupt one, want 1", len(entries))
	}
	b[ends[0]+20] ^= 1
	// The same entries in file 6, as where file 5 was retired and
	// written over as a spare, are older bytes, not entries.
	over := append(appendJournalHeader(nil, journalHeader{seq: 6}), b[journalHeaderSize:]...)
	if _, entries, _ := parseJournal(over); len(entries) != 0 {
		t.Fatalf("file 5's entries under file 6's header: %d parse, want none", len(entries))
	}
	b[9] ^= 1 // the header's sequence number
	if _, _, err := parseJournal(b); !errors.Is(err, errJournalHeader) {
		t.Fatalf("a header with a bad checksum: %v, want errJournalHeader", err)
	}
}

// TestJournalOfALaterFormatIsRefused: replay must not skip entries a
// later release wrote in a format this one does not know.
func TestJournalOfALaterFormatIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := []byte(journalMagic)
	b = binary.BigEndian.AppendUint32(b, journalVersion+1)
	b = binary.BigEndian.AppendUint64(b, 1)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := os.WriteFile(filepath.Join(root, journalName(1)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDiskSync(root, 0); !errors.Is(err, errJournalVersion) {
		t.Fatalf("OpenDiskSync over a journal of a later format: %v, want errJournalVersion", err)
	}
	if len(journalFiles(t, root)) != 1 {
		t.Fatal("the refused journal file is gone")
	}
}

// TestJournalRoundsStartWritebackOfWholePages: the journal rounds ask
// the kernel to write each segment's whole pages as they fill, in
// contiguous page-aligned runs from the segment's start, each time they
// pass one of the marks journalWritebackBytes apart, so its pages are not left to a burst
// at the 30 s expiry; the marks of Logs filled at one rate fall at
// different places (their phases), so their hints do not come due at
// once.
func TestJournalRoundsStartWritebackOfWholePages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	var mu sync.Mutex
	hinted := map[string]int64{} // file: where its hints have reached
	phases := map[string]int64{} // file: its Log's phase
	mark := func(f string, position int64) int64 { return (position + phases[f]) / journalWritebackBytes }
	c := testConfig()
	c.SegmentBytes = 8 << 20
	c.writeback = func(f *os.File, offset, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if offset != hinted[f.Name()] || offset%pageSize != 0 || n%pageSize != 0 || mark(f.Name(), offset+n) == mark(f.Name(), offset) {
			t.Errorf("%s: a hint of [%d, +%d) after hints up to %d, phase %d", f.Name(), offset, n, hinted[f.Name()], phases[f.Name()])
		}
		hinted[f.Name()] = offset + n
		return nil
	}
	c.DiskSync = d
	rng := rand.New(rand.NewPCG(13, 14))
	logs := make([]*Log, 4)
	distinct := map[int64]bool{}
	for i := range logs {
		logs[i] = openLog(t, filepath.Join(root, fmt.Sprint(i)), c)
		phase := logs[i].flusher.writebackPhase
		mu.Lock()
		phases[lastSegmentLog(logs[i])] = phase
		mu.Unlock()
		distinct[phase] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("%d Logs opened together have one writeback phase", len(logs))
	}
	for range 64 {
		ackAll(t, rng, logs, 4000) // 8 KiB a log a round, under journalBelowBytes
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logs {
		segment := lastSegmentLog(l)
		size := fileSize(t, segment)
		// Only journal rounds hint, and a round that took one Log alone
		// was not one: a run of those may leave the last pages unhinted
		// (91 KiB of 505 KiB in one run in 40).
		if got := hinted[segment]; size < 4*journalWritebackBytes || got < size/2 {
			t.Errorf("%s: hints reached %d of its %d bytes", segment, got, size)
		}
	}
}

// TestWritebackMarksFollowThePhase: Logs opened together and filled at one
// rate pass their writeback marks at different sizes, so their hints do
// not all come due in the same rounds: each hints once every
// journalWritebackBytes, first when it passes journalWritebackBytes less
// its phase, and the Logs' hints fall on every page of that stride.
func TestWritebackMarksFollowThePhase(t *testing.T) {
	t.Parallel()
	d := openJournaledDiskSync(t, t.TempDir(), 1<<20)
	t.Cleanup(func() { d.Close() })
	pages := map[int64]bool{} // where in the stride hints fell
	for log := range 8 {
		phase := writebackPhase(d.phase())
		var from int64
		hints := 0
		for to := int64(pageSize); to <= 4*journalWritebackBytes; to += pageSize {
			if !passesWritebackMark(from, to, phase) {
				continue
			}
			if want := journalWritebackBytes - phase + (from+phase)/journalWritebackBytes*journalWritebackBytes; to != want {
				t.Fatalf("Log %d of phase %d hinted at %d, want %d", log, phase, to, want)
			}
			pages[to%journalWritebackBytes] = true
			from = to
			hints++
		}
		if hints < 3 {
			t.Fatalf("Log %d hinted %d times over 4 strides", log, hints)
		}
	}
	if len(pages) != journalWritebackBytes/pageSize {
		t.Fatalf("8 Logs' hints fell on %d pages of the stride, want all %d", len(pages), journalWritebackBytes/pageSize)
	}
}

// TestJournalReplayRefusesADamagedOlderFile: only the newest journal file
// may end torn. An older one whose entries stop before the next file's
// header says they end (format 1: before its end) lost acknowledged
// entries, and the open says so rather than replaying the rest; an older
// one written over a spare ends in older bytes, which is no damage; the
// newest one torn replays what it holds. A leftover temporary of a new
// file (a crash while it was created) is deleted.
func TestJournalReplayRefusesADamagedOlderFile(t *testing.T) {
	t.Parallel()
	// file returns journal file h with two entries, then tail (the older
	// bytes of a file written over a spare).
	file := func(h journalHeader, tail []byte) []byte {
		b := appendJournalHeader(nil, h)
		for range 2 {
			id := &fileID{rel: "gone/00000000000000000000.log", ino: 1}
			b, _ = appendJournalEntry(b, id, 0, 5, func(p []byte) error { copy(p, "bytes"); return nil })
		}
		sealJournalEntries(b[journalHeaderSize:], h)
		return append(b, tail...)
	}
	older := file(journalHeader{seq: 1}, nil)
	firstEnd := journalHeaderSize + (len(older)-journalHeaderSize)/2 // two entries of one size
	newer := file(journalHeader{seq: 2, previousEnd: int64(len(older))}, nil)
	// File 1 written over a spare, which its entries do not fill.
	overSpare := file(journalHeader{seq: 1}, bytes.Repeat([]byte{0xa5}, 300))
	damaged := slices.Clone(overSpare)
	damaged[len(older)-2] ^= 1 // in the second entry's bytes
	// Format 1 (before spares): an older file parses to its end.
	v1 := func(seq uint64, cut int) []byte {
		b := journalFormat1(seq, older[journalHeaderSize:])
		return b[:len(b)-cut]
	}
	for _, c := range []struct {
		name          string
		older, newer  []byte
		wantEntries   int
		wantCorrupted bool
	}{
		{"both whole", older, newer, 4, false},
		{"the newest torn", older, newer[:len(newer)-3], 3, false},
		{"an older one torn", older[:len(older)-3], newer, 0, true},
		{"an older one written over a spare", overSpare, newer, 4, false},
		{"an older one written over a spare, damaged", damaged, newer, 0, true},
		// A header-only file left by a start that failed past its
		// rename, while rounds went on in the older one: its header
		// names an end short of the whole entries after it.
		{"an older one longer than the next says", older, file(journalHeader{seq: 2, previousEnd: int64(firstEnd)}, nil), 4, false},
		{"format 1, both whole", v1(1, 0), v1(2, 0), 4, false},
		{"format 1, the newest torn", v1(1, 0), v1(2, 3), 3, false},
		{"format 1, an older one torn", v1(1, 3), v1(2, 0), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for name, b := range map[string][]byte{journalName(1): c.older, journalName(2): c.newer, journalName(3) + temporarySuffix: nil} {
				if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := OpenDiskSync(root, 0)
			if c.wantCorrupted {
				if !errors.Is(err, ErrCorruptFile) {
					t.Fatalf("OpenDiskSync: %v, want ErrCorruptFile", err)
				}
				if len(journalFiles(t, root)) != 2 {
					t.Fatal("the refused journal files are gone")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if r := d.Replayed(); r.Files != 2 || r.Entries != c.wantEntries || r.Skipped != c.wantEntries {
				t.Fatalf("replayed %+v, want 2 files and %d entries, all skipped (their file is gone)", r, c.wantEntries)
			}
			if left, _ := os.ReadDir(root); len(left) != 0 {
				t.Fatalf("%d files left after the replay, the temporary among them", len(left))
			}
		})
	}
}

// TestTruncateOfAnUnjournaledFileRetiresNothing: the barrier is for files
// a live journal file holds entries of; a log whose bytes no journal round
// took (its round had more new bytes than the journal takes, so the file
// was synced on its own) truncates without a syncfs or a new journal file.
func TestTruncateOfAnUnjournaledFileRetiresNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(15, 16))
	d, c, logs, _ := openJournaledLogs(t, root, rng, 2)
	t.Cleanup(func() { d.Close() })
	journaledUntil(t, root, rng, logs)
	quiet := openLog(t, filepath.Join(root, "quiet"), c)
	big := journalBelowBytes
	batches := appendBatches(t, quiet, makeBatch(t, rng, 1, big, 1), makeBatch(t, rng, 1, big, 1))
	if err := quiet.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.journal.mu.Lock()
	seq := d.journal.mu.seq
	d.journal.mu.Unlock()
	syncfs, _, _ := d.Calls()
	if err := quiet.TruncateTo(batches[1].base); err != nil {
		t.Fatal(err)
	}
	d.journal.mu.Lock()
	after := d.journal.mu.seq
	d.journal.mu.Unlock()
	if nowSyncfs, _, _ := d.Calls(); after != seq || nowSyncfs != syncfs {
		t.Fatalf("the truncation moved the journal from file %d to %d and made %d syncfs calls, want none", seq, after, nowSyncfs-syncfs)
	}
	if err := logs[0].TruncateTo(logs[0].LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	d.journal.mu.Lock()
	after = d.journal.mu.seq
	d.journal.mu.Unlock()
	if after == seq {
		t.Fatal("the truncation of a journaled log retired nothing")
	}
}

// TestSyncWritesGoThroughTheJournal: writes in place into many small
// files (replica's producer snapshot slots) become durable with one
// journal fdatasync and no syncfs, and a power loss that took them from
// their files is undone by the replay. Without a journal they take one
// syncfs.
func TestSyncWritesGoThroughTheJournal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	files := make([]*os.File, 8)
	for i := range files {
		dir := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "slots"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write(make([]byte, 8192)); err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	if err := d.syncfsAll(); err != nil {
		t.Fatal(err)
	}
	write := func(d *DiskSync, text string) {
		t.Helper()
		writes := make([]FileWrite, len(files))
		for i, f := range files {
			data := fmt.Sprintf("%s %d", text, i)
			if _, err := f.WriteAt([]byte(data), 4096); err != nil {
				t.Fatal(err)
			}
			writes[i] = FileWrite{File: f, Position: 4096, Len: len(data)}
		}
		for i, err := range d.SyncWrites(writes) {
			if err != nil {
				t.Fatalf("file %d: %v", i, err)
			}
		}
	}
	syncfs, fdatasync, fsync := d.Calls()
	write(d, "journaled")
	syncfs2, fdatasync2, fsync2 := d.Calls()
	if syncfs2 != syncfs || fdatasync2 != fdatasync+1 || fsync2 != fsync {
		t.Fatalf("8 writes took %d syncfs, %d fdatasync and %d fsync calls, want one fdatasync",
			syncfs2-syncfs, fdatasync2-fdatasync, fsync2-fsync)
	}
	crashed := journalFiles(t, root)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The power loss: no write reached its file.
	for _, f := range files {
		if _, err := f.WriteAt(make([]byte, 64), 4096); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range crashed {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := OpenDiskSync(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	if r := plain.Replayed(); r.Entries != len(files) || r.Written != len(files) {
		t.Fatalf("replayed %+v, want %d entries written", r, len(files))
	}
	for i, f := range files {
		got := make([]byte, 12)
		if _, err := f.ReadAt(got, 4096); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("journaled %d", i); string(got[:len(want)]) != want {
			t.Fatalf("file %d after the replay: %q, want %q", i, got, want)
		}
	}
	syncfs, fdatasync, fsync = plain.Calls()
	write(plain, "synced")
	syncfs2, fdatasync2, fsync2 = plain.Calls()
	if plain.Shared() && (syncfs2 != syncfs+1 || fdatasync2 != fdatasync || fsync2 != fsync) {
		t.Fatalf("without a journal 8 writes took %d syncfs, %d fdatasync and %d fsync calls, want one syncfs",
			syncfs2-syncfs, fdatasync2-fdatasync, fsync2-fsync)
	}
}

// TestFailedJournalFdatasyncTakesTheDiskOffline: a journal round whose
// fdatasync fails acknowledges none of its logs, and takes the DiskSync
// offline, as a failed syncfs does: the journal file's state is unknown,
// so every later acknowledgement through it fails too, and every SyncAll,
// until a restart.
func TestFailedJournalFdatasyncTakesTheDiskOffline(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	var failing atomic.Bool
	d.fdatasync = func(f *os.File) error {
		if failing.Load() && strings.HasPrefix(filepath.Base(f.Name()), journalPrefix) {
			return unix.EIO
		}
		return unix.Fdatasync(int(f.Fd()))
	}
	rng := rand.New(rand.NewPCG(17, 18))
	logs := openSyncedLogs(t, root, d, rng, 4)
	journaledUntil(t, root, rng, logs)

	failing.Store(true)
	refused := 0
	for round := 0; d.offline() == nil; round++ {
		if round == 100 {
			t.Fatal("a hundred rounds of four logs, and none went through the failing journal")
		}
		acks := make([]Ack, len(logs))
		for i, l := range logs {
			res, err := l.Append(checked(t, makeBatch(t, rng, 2, 200, 1))...)
			if err != nil {
				t.Fatal(err)
			}
			acks[i] = res.Expect()
		}
		for i, a := range acks {
			err := a.Wait(context.Background())
			if err != nil && !errors.Is(err, ErrFailed) {
				t.Fatalf("log %d: %v, want ErrFailed or nothing", i, err)
			}
			if err != nil {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("the journal round failed, and every append was acknowledged")
	}
	if !errors.Is(d.offline(), unix.EIO) {
		t.Fatalf("the DiskSync is offline with %v, want the journal's EIO", d.offline())
	}
	// SyncAll fsyncs each file under a journal, and fails them all now.
	f, err := os.Create(filepath.Join(root, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if errs := d.SyncAll([]*os.File{f}); !errors.Is(errs[0], unix.EIO) {
		t.Errorf("SyncAll after the failed journal round: %v, want the journal's EIO", errs[0])
	}
	for i, l := range logs {
		res, err := l.Append(checked(t, makeBatch(t, rng, 1, 100, 1))...)
		if err == nil {
			err = res.WaitAck(context.Background())
		}
		if !errors.Is(err, ErrFailed) {
			t.Errorf("log %d after the failed journal round: %v, want ErrFailed", i, err)
		}
	}
}

// openJournaledOverSpare opens a DiskSync on root with a journal of 1 MiB
// files whose first file is written over a spare, as every file is once
// one was retired, where calls take turns (SyncfsReportsOnce).
func openJournaledOverSpare(t *testing.T, root string) *DiskSync {
	t.Helper()
	spare := appendJournalHeader(nil, journalHeader{seq: 7})
	if err := os.WriteFile(filepath.Join(root, journalSpareName), append(spare, make([]byte, 1<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	if _, err := os.Stat(filepath.Join(root, journalSpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spare was not taken as the first journal file: %v", err)
	}
	d.errors = SyncfsReportsOnce
	return d
}

// sharingConfig is the tests' Log config with d as its DiskSync.
func sharingConfig(d *DiskSync) Config {
	c := testConfig()
	c.DiskSync = d
	return c
}

// holdSyncfs starts a syncfs call, in turn as a retirement's, and returns
// once it is in flight, holding the turn until release.
func holdSyncfs(t *testing.T, d *DiskSync) (release func()) {
	t.Helper()
	var in <-chan struct{}
	var let func()
	d.syncfs, in, let = holdFirst(func(dir *os.File) error { return unix.Syncfs(int(dir.Fd())) })
	retired := make(chan error, 1)
	go func() { retired <- d.syncfsAll() }()
	<-in
	return sync.OnceFunc(func() {
		let()
		if err := <-retired; err != nil {
			t.Error(err)
		}
	})
}

// Where calls take turns (SyncfsReportsOnce), a retirement's syncfs
// holds the turn for as long as it writes; the disk rounds run on one
// goroutine, so a round that waited for the turn held up every round
// behind it. Neither a round of one log nor a round with nothing new
// waits for it now: the first goes through the journal, written over a
// spare (as every file is once one was retired), the second makes no
// call.
func TestRoundsDoNotWaitBehindARetirementsSyncfs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledOverSpare(t, root)
	rng := rand.New(rand.NewPCG(19, 20))
	l := openSyncedLog(t, filepath.Join(root, "0"), sharingConfig(d), rng)

	// The first fdatasync is held until the test lets it go, however the
	// test ends, before the syncfs and the DiskSync.
	var fdatasyncIn <-chan struct{}
	var releaseFdatasync func()
	d.fdatasync, fdatasyncIn, releaseFdatasync = holdFirst(func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) })
	releaseSyncfs := holdSyncfs(t, d)
	defer func() {
		releaseFdatasync()
		releaseSyncfs()
	}()

	res, err := l.Append(checked(t, makeBatch(t, rng, 2, 200, 1))...)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Expect()
	select {
	case <-fdatasyncIn:
	case <-time.After(30 * time.Second):
		t.Fatal("a round of one log did not reach the journal's fdatasync in 30 s: it waits its turn behind the syncfs")
	}
	// Registered while that round runs, this wait is for the next round,
	// which finds nothing new to make durable.
	again := res.Expect()
	releaseFdatasync()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.Wait(ctx); err != nil {
		t.Fatalf("the round with nothing new: %v (it waits its turn behind the syncfs)", err)
	}
}

// TestOwnRoundsGoThroughTheJournal: a Log's own flusher round (a
// checkpoint's, or one a disk round left to it) makes its new bytes
// durable through the journal, as a disk round does, and so does not
// wait behind a retirement's syncfs where calls take turns: the flusher
// holds the Log's syncing lock meanwhile, and every disk round leaves the
// Log's appenders to it.
func TestOwnRoundsGoThroughTheJournal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledOverSpare(t, root)
	rng := rand.New(rand.NewPCG(25, 26))
	l := openSyncedLog(t, filepath.Join(root, "0"), sharingConfig(d), rng)
	// Appended with no one waiting: no disk round takes it.
	if _, err := l.Append(checked(t, makeBatch(t, rng, 2, 200, 1))...); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()

	defer holdSyncfs(t, d)()

	own := make(chan error, 1)
	go func() {
		f := &l.flusher
		f.round.Lock()
		defer f.round.Unlock()
		f.syncing.Lock()
		_, err := l.flushRoundLocked(true)
		own <- err
	}()
	select {
	case err := <-own:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Log's own round did not end in 30 s: it waits its turn behind the syncfs")
	}
	if got := l.FlushedOffset(); got != end {
		t.Fatalf("flushed to %d after the Log's own round, want %d", got, end)
	}
	segment := filepath.Join("0", segmentFileName(0, logSuffix))
	var covered int64
	for _, b := range journalFiles(t, root) {
		_, entries, err := parseJournal(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.file.rel == segment {
				covered = max(covered, e.position+int64(len(e.data)))
			}
		}
	}
	if size := l.state.Load().active().tail.Load().size; covered != size {
		t.Fatalf("the journal covers the segment to byte %d, want its end, %d", covered, size)
	}
}

// TestJournalFilesAreWrittenOverSpares: a retired journal file is kept as
// the spare and written over as the next file (the same inode), its older
// bytes not parsed as entries; Close keeps a spare too, and the next open
// takes it as its first file, numbered past every life the spare had; an
// open without a journal, or a spare whose header does not parse, deletes
// it.
func TestJournalFilesAreWrittenOverSpares(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	rng := rand.New(rand.NewPCG(21, 22))
	logs := openSyncedLogs(t, root, d, rng, 4)
	inode := func(name string) uint64 { return inodeOf(t, filepath.Join(root, name)) }
	first := inode(journalName(1))
	for currentJournalSeq(d) < 2 {
		ackAll(t, rng, logs, 200)
	}
	waitFor(t, "file 1 retired", func() bool { return !d.journal.retiring.Load() && len(journalFiles(t, root)) == 1 })
	if got := inode(journalSpareName); got != first {
		t.Fatalf("the spare is inode %d, want file 1's %d", got, first)
	}
	for currentJournalSeq(d) < 3 {
		ackAll(t, rng, logs, 200)
	}
	if got := inode(journalName(3)); got != first {
		t.Fatalf("file 3 is inode %d, want file 1's %d, written over", got, first)
	}
	ackAll(t, rng, logs, 200)
	journalWhole(t, d)

	for _, l := range logs {
		l.Close()
	}
	last := currentJournalSeq(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if left := journalFiles(t, root); len(left) != 0 {
		t.Fatalf("Close left %d journal files", len(left))
	}
	b, err := os.ReadFile(filepath.Join(root, journalSpareName))
	if err != nil {
		t.Fatalf("Close kept no spare: %v", err)
	}
	h, err := parseJournalHeader(b)
	if err != nil || h.seq < 2 || h.seq > last {
		t.Fatalf("the spare's header says file %d (%v), want a retired one of 2 to %d", h.seq, err, last)
	}
	again := openJournaledDiskSync(t, root, 1<<20)
	if got := currentJournalSeq(again); got != h.seq+1 {
		t.Errorf("the first file after a spare of file %d is %d, want %d", h.seq, got, h.seq+1)
	}
	if _, err := os.Stat(filepath.Join(root, journalSpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spare was not taken as the first file: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	off, err := OpenDiskSync(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	off.Close()
	if _, err := os.Stat(filepath.Join(root, journalSpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an open without a journal left the spare: %v", err)
	}

	if err := os.WriteFile(filepath.Join(root, journalSpareName), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := openJournaledDiskSync(t, root, 1<<20)
	defer unknown.Close()
	if got := currentJournalSeq(unknown); got != 1 {
		t.Errorf("the first file beside a spare with no header is %d, want 1", got)
	}
	if _, err := os.Stat(filepath.Join(root, journalSpareName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a spare with no header was kept: %v", err)
	}
}

// currentJournalSeq is the number of d's current journal file.
func currentJournalSeq(d *DiskSync) uint64 {
	d.journal.mu.Lock()
	defer d.journal.mu.Unlock()
	return d.journal.mu.seq
}

// TestGrowingJournalFileTakesItsTurn: where calls take turns
// (SyncfsReportsOnce), a journal write that makes its file longer is
// fdatasynced in turn with the syncfs calls, whose failed metadata write
// it would not see otherwise; over a spare's blocks it need not.
func TestGrowingJournalFileTakesItsTurn(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 64<<20) // no spare: every write grows the file
	t.Cleanup(func() { d.Close() })
	d.errors = SyncfsReportsOnce
	var beside, journaled atomic.Int64
	syncing, stopSyncfs := syncfsMeanwhile(t, d, 200*time.Microsecond)
	d.fdatasync = func(f *os.File) error {
		if strings.HasPrefix(filepath.Base(f.Name()), journalPrefix) {
			journaled.Add(1)
			if syncing.Load() {
				beside.Add(1)
			}
		}
		return unix.Fdatasync(int(f.Fd()))
	}
	rng := rand.New(rand.NewPCG(23, 24))
	logs := openSyncedLogs(t, root, d, rng, 4)
	for range 50 {
		ackAll(t, rng, logs, 200)
	}
	stopSyncfs()
	if journaled.Load() == 0 {
		t.Fatal("no round went through the journal")
	}
	if n := beside.Load(); n > 0 {
		t.Fatalf("%d of %d journal fdatasyncs of a growing file ran beside a syncfs", n, journaled.Load())
	}
}

// syncfsMeanwhile replaces d's syncfs with a stand-in that takes 100 µs
// and reports, through syncing, when one is in flight, and makes syncfs
// calls (syncfsAll, in turn as a retirement's) one after another, pause
// apart for others to take the turn between them, until stop (or the
// test's end).
func syncfsMeanwhile(t *testing.T, d *DiskSync, pause time.Duration) (syncing *atomic.Bool, stop func()) {
	syncing = new(atomic.Bool)
	d.syncfs = func(dir *os.File) error {
		syncing.Store(true)
		defer syncing.Store(false)
		time.Sleep(100 * time.Microsecond) // standing for its writes
		return nil
	}
	done := make(chan struct{})
	var calls sync.WaitGroup
	calls.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := d.syncfsAll(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(pause)
		}
	})
	stop = sync.OnceFunc(func() {
		close(done)
		calls.Wait()
	})
	t.Cleanup(stop) // however the test ends
	return syncing, stop
}

// TestFlushersOwnSyncsTakeTheirTurn: with a journal, the flushers' files
// (seals, checkpoints, directories, producer snapshots) are synced each by
// a call of its own; where calls take turns (SyncfsReportsOnce), those
// calls run in turn with the syncfs calls, which could otherwise take a
// failed metadata write of theirs and leave them reporting success.
func TestFlushersOwnSyncsTakeTheirTurn(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 64<<20)
	t.Cleanup(func() { d.Close() })
	d.errors = SyncfsReportsOnce
	var beside, calls atomic.Int64
	syncing, stopSyncfs := syncfsMeanwhile(t, d, 50*time.Microsecond)
	own := func(f *os.File) error {
		calls.Add(1)
		if syncing.Load() {
			beside.Add(1)
		}
		time.Sleep(50 * time.Microsecond) // standing for its write
		return nil
	}
	d.fsync, d.fdatasync = own, own
	f, err := os.Create(filepath.Join(root, "00000000000000000000.index"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Until the syncfs calls and the own calls have met often; turns are
	// first come, first served, so the own calls, one after another, do
	// not keep the syncfs calls waiting.
	for i := 0; d.syncfsCalls.Load() < 300; i++ {
		if i == 30_000 {
			t.Fatalf("%d syncfs calls beside %d own calls: the own calls kept taking the turn first", d.syncfsCalls.Load(), calls.Load())
		}
		for _, err := range append(d.SyncAll([]*os.File{f, f}), d.SyncFile(f), d.Sync(f)) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stopSyncfs()
	if n := beside.Load(); n > 0 {
		t.Fatalf("%d of %d of the flushers' own calls ran beside a syncfs", n, calls.Load())
	}
}

// TestCallTurnsAreFirstComeFirstServed: a call that releases its turn
// and asks again at once goes after the call that was waiting.
func TestCallTurnsAreFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	d := openJournaledDiskSync(t, t.TempDir(), 1<<20)
	t.Cleanup(func() { d.Close() })
	var order []string
	var orderMu sync.Mutex
	took := func(who string) {
		orderMu.Lock()
		defer orderMu.Unlock()
		order = append(order, who)
	}
	first := make(chan struct{})
	d.acquireCall(first)
	var waiter sync.WaitGroup
	waiter.Go(func() {
		done := make(chan struct{})
		d.acquireCall(done)
		took("waiter")
		d.releaseCall(done)
	})
	for {
		d.mu.Lock()
		waiting := len(d.mu.waiting)
		d.mu.Unlock()
		if waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	d.releaseCall(first)
	again := make(chan struct{})
	d.acquireCall(again)
	took("again")
	d.releaseCall(again)
	waiter.Wait()
	if !slices.Equal(order, []string{"waiter", "again"}) {
		t.Fatalf("turns taken in the order %v, want the waiter first", order)
	}
}

// journalFormat1 is journal file seq as format 1 wrote it (before
// spares), holding entries (appendJournalEntry's, sealed here).
func journalFormat1(seq uint64, entries []byte) []byte {
	b := []byte(journalMagic)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	b = append(b, entries...)
	sealJournalEntries(b[journalVersion1HeaderSize:], journalHeader{version: 1})
	return b
}

// TestJournalReplayRefusesAGap: files are deleted oldest first, the
// directory synced after each, so a number missing between two left
// files is a lost file, whose entries replay cannot make up.
func TestJournalReplayRefusesAGap(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, seq := range []uint64{1, 3} {
		b := appendJournalHeader(nil, journalHeader{seq: seq})
		if err := os.WriteFile(filepath.Join(root, journalName(seq)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenDiskSync(root, 0); !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), "journal file 2 is missing") {
		t.Fatalf("OpenDiskSync over journal files 1 and 3: %v, want ErrCorruptFile naming file 2", err)
	}
}

// holdFirst wraps call so that its first caller, once in, signals in and
// waits for release (which may be called more than once).
func holdFirst(call func(*os.File) error) (held func(*os.File) error, in <-chan struct{}, release func()) {
	var first atomic.Bool
	first.Store(true)
	entered, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held = func(f *os.File) error {
		if first.Swap(false) {
			close(entered)
			<-out
		}
		return call(f)
	}
	return held, entered, func() { once.Do(func() { close(out) }) }
}

// TestRetiredFilesKeepTheLongestAsTheSpare: the spare is written over as
// the next file, which grows (and takes turns) only past its length, so
// the longest retired file is kept; the others are deleted, oldest first.
func TestRetiredFilesKeepTheLongestAsTheSpare(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sizes := map[uint64]int{4: 100, 5: 3000, 6: 20}
	for seq, n := range sizes {
		if err := os.WriteFile(filepath.Join(root, journalName(seq)), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keep := largestJournal(root, []uint64{4, 5, 6})
	if keep != 5 {
		t.Fatalf("largestJournal chose file %d, want 5, the longest", keep)
	}
	kept, err := retireFiles(root, []uint64{4, 5, 6}, keep)
	if err != nil || !kept {
		t.Fatalf("retireFiles kept %v: %v", kept, err)
	}
	if left := journalFiles(t, root); len(left) != 0 {
		t.Fatalf("%d journal files left", len(left))
	}
	if size := fileSize(t, filepath.Join(root, journalSpareName)); size != 3000 {
		t.Fatalf("the spare is %d bytes, want file 5's 3000", size)
	}
}

// TestJournalCommitsAreGrouped: callers who commit while a commit is
// under way join the next, which writes all their entries with one
// fdatasync; every entry is then in the journal file, whole.
func TestJournalCommitsAreGrouped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	files := createFiles(t, root, 8)
	for _, f := range files {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.syncfsAll(); err != nil {
		t.Fatal(err)
	}
	var in <-chan struct{}
	var release func()
	d.fdatasync, in, release = holdFirst(d.fdatasync)
	t.Cleanup(release)
	_, fdatasyncs, _ := d.Calls()
	// Four callers of two writes each (SyncWrites journals two or more):
	// the first's commit is held, the other three form the next.
	errs := make(chan error, 8)
	syncPair := func(pair []*os.File) {
		writes := make([]FileWrite, len(pair))
		for i, f := range pair {
			writes[i] = FileWrite{File: f, Position: 0, Len: 100}
		}
		for _, err := range d.SyncWrites(writes) {
			errs <- err
		}
	}
	go syncPair(files[:2])
	<-in
	for i := 2; i < len(files); i += 2 {
		go syncPair(files[i : i+2])
	}
	waitFor(t, "three callers in the next commit", func() bool {
		g := &d.journal.group
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.next != nil && len(g.next.bufs) == 3
	})
	release()
	for range files {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, after, _ := d.Calls(); after-fdatasyncs != 2 {
		t.Fatalf("four commits, three of them while the first was under way, took %d fdatasync calls, want 2", after-fdatasyncs)
	}
	journalWhole(t, d)
	b, err := os.ReadFile(filepath.Join(root, journalName(currentJournalSeq(d))))
	if err != nil {
		t.Fatal(err)
	}
	_, entries, err := parseJournal(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		t.Fatalf("the journal file holds %d entries, want %d", len(entries), len(files))
	}
}

// TestJournaledSyncRoundsOfManyFilesTakeOneSyncfs: with a journal, a Sync
// round of a few files calls for each (a syncfs would write every
// partition's pages), and a round that many joined, as when hundreds of
// partitions roll at once, takes one syncfs rather than a call for each,
// one after another; many is more than a quarter of the open logs too,
// and a log counts from its Open to its Close.
func TestJournaledSyncRoundsOfManyFilesTakeOneSyncfs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d := openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	d.syncfs = func(*os.File) error { return nil }
	c := testConfig()
	c.DiskSync = d
	l := openLog(t, filepath.Join(root, "log"), c)
	if n := d.logs.Load(); n != 1 {
		t.Fatalf("%d logs open after one Open, want 1", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := d.logs.Load(); n != 0 {
		t.Fatalf("%d logs open after its Close, want 0", n)
	}
	files := createFiles(t, root, journalRoundOwnCalls+5)
	for _, round := range []struct{ joining, logs int }{
		{3, 0},
		{journalRoundOwnCalls + 4, 0},
		{journalRoundOwnCalls + 4, 4 * (journalRoundOwnCalls + 4)},
	} {
		joining := round.joining
		d.logs.Store(int64(round.logs))
		var in <-chan struct{}
		var release func()
		d.fsync, in, release = holdFirst(func(*os.File) error { return nil })
		t.Cleanup(release)
		syncfsBefore, _, fsyncBefore := d.Calls()
		errs := make(chan error, joining+1)
		go func() { errs <- d.SyncFile(files[0]) }()
		<-in
		for _, f := range files[1 : 1+joining] {
			go func() { errs <- d.SyncFile(f) }()
		}
		waitFor(t, "the callers in the next round", func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.mu.next != nil && len(d.mu.next.files) == joining
		})
		release()
		for range joining + 1 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		syncfs, _, fsync := d.Calls()
		wantSyncfs, wantFsync := int64(0), int64(1+joining)
		if joining > journalRoundOwnCalls && 4*joining > round.logs {
			wantSyncfs, wantFsync = 1, 1
		}
		if syncfs-syncfsBefore != wantSyncfs || fsync-fsyncBefore != wantFsync {
			t.Errorf("a round of %d files behind one, %d logs open: %d syncfs and %d fsync calls, want %d and %d",
				joining, round.logs, syncfs-syncfsBefore, fsync-fsyncBefore, wantSyncfs, wantFsync)
		}
	}
}
