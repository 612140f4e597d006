package compact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// modelRecord is one produced record as the model remembers it.
type modelRecord struct {
	offset int64
	key    string
	value  []byte // nil: a tombstone
}

func openLog(t testing.TB, dir string) *hotlog.Log {
	t.Helper()
	cfg := hotlog.DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 128
	l, err := hotlog.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// produce appends one batch of records with the given keys and values
// (nil: tombstone) and returns their offsets' base.
func produce(t testing.TB, l *hotlog.Log, keys []string, values [][]byte, codec record.Codec) int64 {
	t.Helper()
	records := make([]record.Record, len(keys))
	for i := range keys {
		records[i] = record.Record{OffsetDelta: int32(i), Key: []byte(keys[i]), Value: values[i]}
	}
	b, err := record.Build(record.BuildOptions{Codec: codec, FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := record.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	base := l.LogEndOffset()
	res, err := l.Append(batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WaitAck(context.Background()); err != nil {
		t.Fatal(err)
	}
	return base
}

// readAll returns every record of the log, in offset order, checking that
// batches are dense and every record lies inside its batch.
func readAll(t testing.TB, l *hotlog.Log) []modelRecord {
	t.Helper()
	var out []modelRecord
	for offset := l.LogStartOffset(); offset < l.LogEndOffset(); {
		chunk, err := l.ReadBytes(offset, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		batches, headers, err := record.Split(chunk)
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		for i, b := range batches {
			h := headers[i]
			if h.BaseOffset != offset && !(i == 0 && h.BaseOffset < offset) {
				t.Fatalf("batch at %d, want %d: offsets not dense", h.BaseOffset, offset)
			}
			records, err := record.Records(b, 1<<20)
			if err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			for _, r := range records {
				if o := h.BaseOffset + int64(r.OffsetDelta); o >= offset {
					out = append(out, modelRecord{offset: o, key: string(r.Key), value: r.Value})
				}
			}
			offset = h.NextOffset()
		}
	}
	return out
}

// TestCleanAgainstModel runs produce, roll, clean, reopen and a crash
// during a pass in any order. After a crash (the files as written at a
// random point of the pass, reopened) every record read was produced at
// its offset, every key's latest version is there and no rewrite's file is
// left. After each clean, against every record produced:
//   - every record read back was produced, at that offset, as it was;
//   - every record at or above the pass's end, or newer than what it
//     mapped, is still there;
//   - of each key, the latest version below the end is there, unless it
//     is a tombstone and tombstones had expired;
//   - a record a later version supersedes within what the pass mapped is
//     gone;
//   - tombstones never go while delete.retention.ms has not passed, nor
//     in the pass that maps them first;
//   - offsets stay dense, and a read from any offset, even one whose
//     record was removed, works and moves on.
func TestCleanAgainstModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		l := openLog(t, dir)
		defer func() { l.Close() }()
		var produced []modelRecord
		keys := []string{"a", "b", "c", "d", "e", "f"}
		codec := rapid.SampledFrom([]record.Codec{record.CodecNone, record.CodecZstd}).Draw(rt, "codec")
		firstDirty := int64(0)
		for step := range rapid.IntRange(5, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 10).Draw(rt, fmt.Sprintf("op%d", step)) {
			case 0, 1, 2, 3, 4, 5:
				n := rapid.IntRange(1, 4).Draw(rt, "records")
				ks := make([]string, n)
				vs := make([][]byte, n)
				for i := range n {
					ks[i] = rapid.SampledFrom(keys).Draw(rt, "key")
					if rapid.IntRange(0, 5).Draw(rt, "tombstone") != 0 {
						vs[i] = []byte(fmt.Sprintf("v%d-%d", step, i))
					}
				}
				base := produce(t, l, ks, vs, codec)
				for i := range n {
					produced = append(produced, modelRecord{offset: base + int64(i), key: ks[i], value: vs[i]})
				}
			case 6:
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
				if err := l.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
			case 7:
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = openLog(t, dir)
			case 8:
				// A process crash during a pass: the files as written at
				// the k-th time the pass asks its throttle, then the pass
				// stops; the copy is opened as the log.
				k := rapid.IntRange(1, 40).Draw(rt, "crashAt")
				before := readAll(t, l)
				var crashed string
				calls := 0
				_, err := Clean(context.Background(), Pass{
					Log: l, FirstDirty: firstDirty, End: l.ActiveSegment().BaseOffset, Now: time.Now().Add(time.Second),
					DeleteRetention: time.Hour, MaxKeys: rapid.IntRange(4, 64).Draw(rt, "maxKeys"), DecompressLimit: 1 << 20,
					Throttle: func(context.Context, int) error {
						if calls++; calls == k {
							crashed = copyLogDir(t, dir)
							return errCrash
						}
						return nil
					},
				})
				if err != nil && !errors.Is(err, errCrash) && !errors.Is(err, ErrMapTooSmall) {
					t.Fatalf("clean: %v", err)
				}
				if crashed == "" {
					continue // the pass ended before the crash point
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				dir = crashed
				l = openLog(t, dir)
				checkAfterCrash(t, produced, before, readAll(t, l))
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.HasSuffix(e.Name(), ".cleaned") || strings.HasSuffix(e.Name(), ".swap") {
						t.Fatalf("%s left after the crash and a reopen", e.Name())
					}
				}
				checkReadsFromEveryOffset(t, l)
			default:
				expire := rapid.Bool().Draw(rt, "expireTombstones")
				retention := time.Hour
				if expire {
					retention = 0
				}
				maxKeys := rapid.IntRange(4, 64).Draw(rt, "maxKeys")
				end := l.ActiveSegment().BaseOffset
				before := readAll(t, l)
				res, err := Clean(context.Background(), Pass{
					Log: l, FirstDirty: firstDirty, End: end, Now: time.Now().Add(time.Second),
					DeleteRetention: retention, MaxKeys: maxKeys, DecompressLimit: 1 << 20,
				})
				if err != nil {
					if errors.Is(err, ErrMapTooSmall) {
						continue
					}
					t.Fatalf("clean: %v", err)
				}
				checkClean(t, produced, before, readAll(t, l), firstDirty, res.NextDirty, end, expire)
				firstDirty = res.NextDirty
				checkReadsFromEveryOffset(t, l)
			}
		}
	})
}

// errCrash stops a pass where the test crashed it.
var errCrash = errors.New("crashed here")

// copyLogDir copies the log's files as a process crash leaves them (what
// was written is in the page cache) into a new directory.
func copyLogDir(t testing.TB, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a temporary the flusher renamed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkAfterCrash checks a log reopened after a crash during a pass: every
// record read was produced at its offset, every key's latest version
// (which no pass may drop) is there if it was before, and no file of the
// interrupted rewrite is left.
func checkAfterCrash(t testing.TB, produced, before, after []modelRecord) {
	t.Helper()
	byOffset := map[int64]modelRecord{}
	latest := map[string]int64{}
	for _, r := range produced {
		byOffset[r.offset] = r
		latest[r.key] = r.offset
	}
	present := map[int64]bool{}
	for _, r := range after {
		if want := byOffset[r.offset]; want.key != r.key || string(want.value) != string(r.value) {
			t.Fatalf("after the crash offset %d reads %q=%q, produced %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		present[r.offset] = true
	}
	for _, r := range before {
		if latest[r.key] == r.offset && !present[r.offset] {
			t.Fatalf("after the crash the latest %q (offset %d) is gone", r.key, r.offset)
		}
	}
}

// checkClean compares the log after a pass with what was produced and what
// the log held before it.
func checkClean(t testing.TB, produced, before, after []modelRecord, firstDirty, mapped, end int64, expired bool) {
	t.Helper()
	byOffset := map[int64]modelRecord{}
	for _, r := range produced {
		byOffset[r.offset] = r
	}
	present := map[int64]bool{}
	for _, r := range after {
		want, ok := byOffset[r.offset]
		if !ok || want.key != r.key || string(want.value) != string(r.value) || (want.value == nil) != (r.value == nil) {
			t.Fatalf("offset %d reads %q=%q, produced %q=%q", r.offset, r.key, r.value, want.key, want.value)
		}
		present[r.offset] = true
	}
	wasPresent := map[int64]bool{}
	for _, r := range before {
		wasPresent[r.offset] = true
	}
	latest := map[string]int64{}
	for _, r := range produced {
		if r.offset < mapped {
			latest[r.key] = r.offset
		}
	}
	for _, r := range produced {
		switch {
		case r.offset >= mapped || r.offset >= end:
			if wasPresent[r.offset] && !present[r.offset] {
				t.Fatalf("offset %d (%q), at or above the mapped end %d, was removed", r.offset, r.key, mapped)
			}
		case latest[r.key] == r.offset:
			if r.value != nil && wasPresent[r.offset] && !present[r.offset] {
				t.Fatalf("offset %d, the latest %q, was removed", r.offset, r.key)
			}
			if r.value == nil && !expired && wasPresent[r.offset] && !present[r.offset] {
				t.Fatalf("tombstone at offset %d removed before delete.retention.ms", r.offset)
			}
			if r.value == nil && r.offset >= firstDirty && wasPresent[r.offset] && !present[r.offset] {
				t.Fatalf("tombstone at offset %d removed by the pass that mapped it first (from %d): a reader that read its key's older value just before misses it", r.offset, firstDirty)
			}
		default:
			if present[r.offset] {
				t.Fatalf("offset %d (%q) is superseded by offset %d within the mapped range, yet still read", r.offset, r.key, latest[r.key])
			}
		}
	}
}

// checkReadsFromEveryOffset reads one batch from every offset of the log:
// each read holds the offset asked for, or starts after it only past
// removed records.
func checkReadsFromEveryOffset(t testing.TB, l *hotlog.Log) {
	t.Helper()
	for offset := l.LogStartOffset(); offset < l.LogEndOffset(); offset++ {
		chunk, err := l.ReadBytes(offset, 1)
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		h, err := record.ParseHeader(chunk)
		if err != nil {
			t.Fatalf("read at %d: %v", offset, err)
		}
		if h.BaseOffset > offset || h.LastOffset() < offset {
			t.Fatalf("read at %d gave batch [%d, %d]", offset, h.BaseOffset, h.LastOffset())
		}
	}
}
