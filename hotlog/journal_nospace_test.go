package hotlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/smallfs"
)

// journalWhole checks that every journal file of d's parses to where it
// ends (an older one to where the next one's header says, the current
// one to the journal's size): no torn or partial entry was left behind.
func journalWhole(t *testing.T, d *DiskSync) {
	t.Helper()
	j := d.journal
	// No retirement half done: its files deleted, still live.
	j.retireMu.Lock()
	defer j.retireMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, seq := range j.mu.live {
		b, err := os.ReadFile(filepath.Join(j.dir, journalName(seq)))
		if err != nil {
			t.Fatal(err)
		}
		_, _, end, err := parseJournalTo(b)
		if err == nil && i+1 < len(j.mu.live) {
			err = checkJournalEnd(j.dir, seq, j.mu.live[i+1], end)
		} else if err == nil && int64(end) != j.mu.size {
			err = fmt.Errorf("the journal has written %d", j.mu.size)
		}
		if err != nil {
			t.Fatalf("journal file %d: its entries end at byte %d: %v", seq, end, err)
		}
	}
}

// TestJournalOnAFullDiskFallsBackToSyncfs fills a real ext4 under four
// journaled logs: a round whose entries find no room in the journal file
// is cut off there and made durable by a syncfs instead, an append that
// finds no room is refused with ErrNoSpace, nothing fails the DiskSync,
// and SyncWrites falls back to an fsync of each file (the journal file
// cut back and fsynced first). Once room returns the rounds go
// through the journal again, and after a reopen every acknowledged batch
// reads back.
func TestJournalOnAFullDiskFallsBackToSyncfs(t *testing.T) {
	t.Parallel()
	root := smallfs.Ext4(t, "16M")
	rng := rand.New(rand.NewPCG(13, 14))
	d, c, logs, acked := openJournaledLogs(t, root, rng, 4)
	// However the test ends, nothing left open keeps the file system
	// busy: the logs (Close is idempotent), then the DiskSync, once.
	closeDisk := sync.OnceValue(d.Close)
	t.Cleanup(func() {
		for _, l := range logs {
			l.Close()
		}
		closeDisk()
	})
	for i, b := range journaledUntil(t, root, rng, logs) {
		acked[i] = append(acked[i], b...)
	}
	// Two files for SyncWrites, their blocks allocated while there is room:
	// a write in place needs none.
	slots := make([]*os.File, 2)
	for i := range slots {
		f, err := os.Create(filepath.Join(root, fmt.Sprintf("slots-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		slots[i] = f
	}
	if err := d.syncfsAll(); err != nil {
		t.Fatal(err)
	}

	filler := fillDisk(t, root)
	syncfsFull, _, _ := d.Calls()
	var refused int
	for round := 0; ; round++ {
		if round == 1000 {
			t.Fatal("a thousand rounds on a full disk, and none fell back to a syncfs")
		}
		acks := make([]*Ack, len(logs)) // nil where the append was refused
		batches := make([]appended, len(logs))
		for i, l := range logs {
			b := makeBatch(t, rng, 1, 100, 1)
			res, err := l.Append(checked(t, b)...)
			if err != nil {
				if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
					t.Fatalf("append on a full disk: %v, want ErrNoSpace", err)
				}
				refused++
				continue
			}
			batches[i] = appended{base: res.FirstOffset, last: res.LastOffset, bytes: b}
			a := res.Expect()
			acks[i] = &a
		}
		for i, a := range acks {
			if a == nil {
				continue
			}
			if err := a.Wait(context.Background()); err != nil {
				t.Fatalf("round %d, log %d: %v", round, i, err)
			}
			acked[i] = append(acked[i], batches[i])
		}
		if syncfs, _, _ := d.Calls(); syncfs > syncfsFull {
			break
		}
	}
	if err := d.offline(); err != nil {
		t.Fatalf("the DiskSync went offline on a full disk: %v", err)
	}
	journalWhole(t, d)
	t.Logf("%d appends refused before a round fell back", refused)

	// Room for a part of SyncWrites' entries, so the journal takes a
	// part of them before it finds no room: the part must be cut off.
	if err := os.Truncate(filler, fileSize(t, filler)-16<<10); err != nil {
		t.Fatal(err)
	}
	writes := make([]FileWrite, len(slots))
	for i, f := range slots {
		data := make([]byte, 32<<10)
		data[0] = byte('a' + i)
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		writes[i] = FileWrite{File: f, Position: 0, Len: len(data)}
	}
	syncfs, fdatasync, fsync := d.Calls()
	for i, err := range d.SyncWrites(writes) {
		if err != nil {
			t.Fatalf("SyncWrites on a full disk, file %d: %v", i, err)
		}
	}
	// One fsync makes the cut journal file durable, one each file.
	if syncfs2, fdatasync2, fsync2 := d.Calls(); syncfs2 != syncfs || fdatasync2 != fdatasync || fsync2 != fsync+3 {
		t.Fatalf("SyncWrites on a full disk took %d syncfs, %d fdatasync and %d fsync calls, want an fsync of the cut journal file and of each file",
			syncfs2-syncfs, fdatasync2-fdatasync, fsync2-fsync)
	}
	journalWhole(t, d)

	freeDisk(t, filler)
	position := func() (uint64, int64) {
		d.journal.mu.Lock()
		defer d.journal.mu.Unlock()
		return d.journal.mu.seq, d.journal.mu.size
	}
	seq, size := position()
	// A round with much new data per file goes to a syncfs, so it may
	// take a few.
	for round := 0; ; round++ {
		if round == 100 {
			t.Fatal("with room again, a hundred rounds of four logs never went through the journal")
		}
		for i, b := range ackAll(t, rng, logs, 100) {
			acked[i] = append(acked[i], b)
		}
		if seq2, size2 := position(); seq2 != seq || size2 > size {
			break
		}
	}

	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := closeDisk(); err != nil {
		t.Fatal(err)
	}
	d = openJournaledDiskSync(t, root, 1<<20)
	t.Cleanup(func() { d.Close() })
	c.DiskSync = d
	for i := range logs {
		checkReadsBack(t, openLog(t, filepath.Join(root, fmt.Sprint(i)), c), acked[i])
	}
}

// TestTruncateOnAFullDiskEmptiesTheJournalInPlace: a truncation of a
// journaled log on a full disk, where no new journal file finds room,
// still leaves no entry to undo it (the current file is cut back to its
// header after a syncfs) and does not fail the log; once room returns the
// rounds go through the journal again.
func TestTruncateOnAFullDiskEmptiesTheJournalInPlace(t *testing.T) {
	t.Parallel()
	root := smallfs.Ext4(t, "16M")
	rng := rand.New(rand.NewPCG(15, 16))
	d, c, logs, _ := openJournaledLogs(t, root, rng, 3)
	t.Cleanup(func() {
		for _, l := range logs {
			l.Close()
		}
		d.Close()
	})
	journaled := journaledUntil(t, root, rng, logs)
	// Closed and opened again, the log holds its checkpoint in the slot
	// format, which the truncation overwrites in place (a new log's
	// first checkpoint is written whole, and needs room); its entries
	// are still in the journal.
	if err := logs[1].Close(); err != nil {
		t.Fatal(err)
	}
	logs[1] = openLog(t, filepath.Join(root, "1"), c)
	filler := fillDisk(t, root)
	d.journal.mu.Lock()
	current := journalName(d.journal.mu.seq)
	d.journal.mu.Unlock()

	cut := journaled[1][0].base
	if err := logs[1].TruncateTo(cut); err != nil {
		t.Fatalf("truncating on a full disk: %v", err)
	}
	files := journalFiles(t, root)
	if _, ok := files[current]; len(files) != 1 || !ok {
		t.Fatalf("journal files %v after the truncation, want only %s, emptied (no new file has room)", slices.Collect(maps.Keys(files)), current)
	}
	for name, b := range files {
		if len(b) != journalHeaderSize {
			t.Fatalf("%s holds %d bytes after the truncation, want only its header", name, len(b))
		}
	}
	if got := logs[1].LogEndOffset(); got != cut {
		t.Fatalf("log end %d after the truncation, want %d", got, cut)
	}

	freeDisk(t, filler)
	// With room again, rounds go through the journal (fails if a
	// hundred rounds never journal every log).
	journaledUntil(t, root, rng, logs)
	end := logs[1].LogEndOffset()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c.DiskSync = d
	if got := openLog(t, filepath.Join(root, "1"), c).LogEndOffset(); got != end {
		t.Fatalf("log end %d after reopening, want %d", got, end)
	}
}
