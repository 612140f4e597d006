package hotlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/tmpfs"
	"github.com/stratalog/strata/record"
)

// TestAppendOnAFullDiskIsRefusedAndRecovers fills a real 2 MiB file
// system: the append that finds no room fails with ErrNoSpace (not
// ErrFailed) and leaves nothing behind, everything appended before reads
// back, and once space returns the log takes appends again without a
// reopen; after a reopen every appended batch is there and nothing else.
func TestAppendOnAFullDiskIsRefusedAndRecovers(t *testing.T) {
	t.Parallel()
	disk := tmpfs.Mount(t, "2m")
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(41, 42))
	c := testConfig()
	c.SegmentBytes = 256 << 10
	dir := filepath.Join(disk, "log")
	l := openLog(t, dir, c)

	var batches []appended
	var err error
	for range 1000 { // 10 MiB: five times the disk
		var res AppendResult
		b := makeBatch(t, rng, 4, 2500, int64(1_700_000_000_000+len(batches)))
		if res, err = l.Append(b); err != nil {
			break
		}
		h, _ := record.ParseHeader(b)
		batches = append(batches, appended{base: res.FirstOffset, last: res.LastOffset, bytes: b, maxTime: h.MaxTimestamp})
	}
	if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
		t.Fatalf("appending 10 MiB to a 2 MiB disk: %v, want ErrNoSpace and not ErrFailed", err)
	}
	if len(batches) == 0 {
		t.Fatal("the disk was full before the first append")
	}
	end := batches[len(batches)-1].last + 1
	if got := l.LogEndOffset(); got != end {
		t.Fatalf("log end %d after the refused append, want %d", got, end)
	}
	checkReadsBack(t, l, batches)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 4, 2500, 1_800_000_000_000))...)
	if batches[len(batches)-1].base != end {
		t.Fatalf("the append after space returned got offset %d, want %d", batches[len(batches)-1].base, end)
	}
	checkReadsBack(t, l, batches)

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, c)
	checkReadsBack(t, l, batches)
	if got, want := l.LogEndOffset(), batches[len(batches)-1].last+1; got != want {
		t.Fatalf("log end %d after reopening, want %d", got, want)
	}
}
