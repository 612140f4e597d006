package hotlog

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// checkTimestampLookups compares OffsetForTimestamp and MaxTimestamp with a
// linear scan of the batches: the first batch whose max timestamp is at or
// above the target.
func checkTimestampLookups(t *testing.T, l *Log, batches []appended) {
	t.Helper()
	targets := map[int64]bool{0: true, 1 << 62: true}
	for _, b := range batches {
		targets[b.maxTime-1], targets[b.maxTime], targets[b.maxTime+1] = true, true, true
	}
	for ts := range targets {
		var want *appended
		for i := range batches {
			if batches[i].maxTime >= ts {
				want = &batches[i]
				break
			}
		}
		got, ok, err := l.OffsetForTimestamp(ts, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want == nil && ok:
			t.Fatalf("OffsetForTimestamp(%d) = %+v, want none", ts, got)
		case want != nil && (!ok || got.Offset != want.base || got.Timestamp != want.maxTime):
			t.Fatalf("OffsetForTimestamp(%d) = %+v %v, want offset %d timestamp %d", ts, got, ok, want.base, want.maxTime)
		}
	}
	wantMax := appended{maxTime: NoTimestamp}
	for _, b := range batches {
		if b.maxTime > wantMax.maxTime {
			wantMax = b
		}
	}
	got, ok := l.MaxTimestamp()
	if ok != (len(batches) > 0) || (ok && (got.Timestamp != wantMax.maxTime || got.Offset != wantMax.base)) {
		t.Fatalf("MaxTimestamp = %+v %v, want %d at %d", got, ok, wantMax.maxTime, wantMax.base)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(40, 41))
	dir := t.TempDir()
	c := testConfig()
	l, err := Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := l.OffsetForTimestamp(5, 0); ok {
		t.Fatal("timestamp found in an empty log")
	}
	if _, ok := l.MaxTimestamp(); ok {
		t.Fatal("max timestamp in an empty log")
	}
	if _, _, err := l.OffsetForTimestamp(-1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("OffsetForTimestamp(-1): %v", err)
	}
	// Mostly rising timestamps with stragglers from the past, as producers
	// with their own clocks send them.
	var batches []appended
	clock := int64(1_000_000)
	for range 1500 {
		clock += rng.Int64N(50)
		ts := clock
		if rng.IntN(5) == 0 {
			ts -= rng.Int64N(5000)
		}
		batches = append(batches, appendBatches(t, l, makeBatch(t, rng, 1+rng.IntN(4), 1+rng.IntN(150), ts))...)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("%d segments", len(l.Segments()))
	}
	checkTimestampLookups(t, l, batches)
	checkLookupsFrom(t, l, batches)

	// The sealed indexes reloaded from their files give the same answers.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, c)
	checkTimestampLookups(t, l, batches)

	// And so does a truncated log, whose time index lost entries.
	cut := batches[len(batches)*2/3]
	if err := l.TruncateTo(cut.base); err != nil {
		t.Fatal(err)
	}
	batches = batches[:len(batches)*2/3]
	checkTimestampLookups(t, l, batches)
}

// checkLookupsFrom checks OffsetForTimestamp from a start above the log's,
// inside a batch of several records: the first batch that holds an offset
// at or above it, its answer raised to the start when the batch straddles
// it.
func checkLookupsFrom(t *testing.T, l *Log, batches []appended) {
	t.Helper()
	var from int64 = -1
	for _, b := range batches[len(batches)/2:] {
		if b.last > b.base {
			from = b.base + 1
			break
		}
	}
	if from < 0 {
		t.Fatal("no batch of several records to start inside")
	}
	for _, target := range batches {
		ts := target.maxTime
		var want *appended
		for i := range batches {
			if batches[i].last >= from && batches[i].maxTime >= ts {
				want = &batches[i]
				break
			}
		}
		got, ok, err := l.OffsetForTimestamp(ts, from)
		switch {
		case err != nil:
			t.Fatal(err)
		case want == nil && ok:
			t.Fatalf("OffsetForTimestamp(%d, %d) = %+v, want none", ts, from, got)
		case want != nil && (!ok || got.Offset != max(want.base, from) || got.Timestamp != want.maxTime):
			t.Fatalf("OffsetForTimestamp(%d, %d) = %+v %v, want offset %d timestamp %d", ts, from, got, ok, max(want.base, from), want.maxTime)
		}
	}
}

// TestALoweredIndexSizeKeepsTheSealingEntry: an active segment reopened
// after segment.index.bytes was lowered below its time index entries
// rolls at its next append, and its sealing must still write the entry
// holding its max timestamp: a reopen reads the segment's max from its
// last entry, and timestamp lookups and time retention trust it.
func TestALoweredIndexSizeKeepsTheSealingEntry(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.SegmentBytes = 64 << 10
	c.IndexIntervalBytes = 256
	dir := fastTempDir(t) + "/p"
	l := openLog(t, dir, c)
	rng := rand.New(rand.NewPCG(5, 6))
	fill(t, l, rng, 100, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	small := c
	small.SegmentIndexBytes = 48
	l = openLog(t, dir, small)
	fill(t, l, rng, 2, 2) // the first rolls the reopened segment
	syncSealed(t, l)
	sealed := l.Segments()[0]
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, small)
	if got := l.Segments()[0]; got.MaxTimestamp != sealed.MaxTimestamp {
		t.Fatalf("the sealed segment's max timestamp is %d after a reopen, %d before", got.MaxTimestamp, sealed.MaxTimestamp)
	}
	found, ok, err := l.OffsetForTimestamp(sealed.MaxTimestamp, 0)
	if err != nil || !ok || found.Offset != sealed.OffsetOfMaxTimestamp {
		t.Fatalf("OffsetForTimestamp(%d) = %+v, %v, %v; want offset %d", sealed.MaxTimestamp, found, ok, err, sealed.OffsetOfMaxTimestamp)
	}
}
