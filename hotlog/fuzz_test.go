package hotlog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stratalog/strata/record"
)

// FuzzRecoverSegment opens a log whose only segment holds arbitrary bytes
// and no recovery point: recovery must keep exactly the longest prefix of
// valid batches with dense offsets from 0, and never panic.
func FuzzRecoverSegment(f *testing.F) {
	rng := rand.New(rand.NewPCG(120, 121))
	var valid []byte
	var next int64
	for i := range 3 {
		b := makeBatch(f, rng, 1+i, 10*i, int64(i))
		record.SetBaseOffset(b, next)
		next += int64(1 + i)
		valid = append(valid, b...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add([]byte{})
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fastTempDir(t)
		if err := os.WriteFile(filepath.Join(dir, segmentFileName(0, logSuffix)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c := testConfig()
		c.IndexIntervalBytes = 64
		var info RecoveryInfo
		l, err := Open(dir, recoveryEvents(c, &info))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()

		// The longest valid prefix, computed independently.
		var prefix int
		var next int64
		for prefix < len(data) {
			h, err := record.ParseHeader(data[prefix:])
			if err != nil || h.Size() > len(data)-prefix || h.BaseOffset != next {
				break
			}
			if _, err := record.Validate(data[prefix : prefix+h.Size()]); err != nil {
				break
			}
			prefix += h.Size()
			next = h.NextOffset()
		}
		if l.LogEndOffset() != next || info.BytesTruncated != int64(len(data)-prefix) {
			t.Fatalf("recovered to offset %d with %d bytes cut; want %d and %d", l.LogEndOffset(), info.BytesTruncated, next, len(data)-prefix)
		}
		var got []byte
		for offset := int64(0); offset < next; {
			s, err := l.Read(offset, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.ReadAll()
			s.Release()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
			offset = s.NextOffset
		}
		if !bytes.Equal(got, data[:prefix]) {
			t.Fatal("the recovered log does not read back as the valid prefix")
		}
	})
}

// FuzzRecoverDamagedFiles opens a cleanly closed log of three segments whose
// log-checkpoint and the second segment's indexes are replaced by
// arbitrary bytes. Open may refuse a malformed checkpoint, but must never
// panic, and whatever it opens must read back as the original batches.
func FuzzRecoverDamagedFiles(f *testing.F) {
	rng := rand.New(rand.NewPCG(122, 123))
	c := testConfig()
	c.SegmentBytes = 2 << 10
	c.IndexIntervalBytes = 128
	template := fastTempDir(f)
	l, err := Open(template, c)
	if err != nil {
		f.Fatal(err)
	}
	batches := fill(f, l, rng, 40, 4)
	segments := l.Segments()
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	if len(segments) < 3 {
		f.Fatalf("%d segments", len(segments))
	}
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(template, name))
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	second := segments[1].BaseOffset
	indexName, timeIndexName := segmentFileName(second, indexSuffix), segmentFileName(second, timeIndexSuffix)
	f.Add(read(logCheckpointName), read(indexName), read(timeIndexName))
	f.Add([]byte("0\n0\n0 0 0 0 0\n"), []byte{}, []byte{})
	f.Add([]byte("0\n5\n99999 "+strconv.FormatInt(second, 10)+" 7 1 1\n"), read(indexName)[:5], make([]byte, 24))
	f.Fuzz(func(t *testing.T, checkpoint, index, timeIndex []byte) {
		dir := copyDir(t, template, func(name string, data []byte) []byte {
			switch name {
			case logCheckpointName:
				return checkpoint
			case indexName:
				return index
			case timeIndexName:
				return timeIndex
			}
			return data
		})
		l, err := Open(dir, c)
		if err != nil {
			return
		}
		defer l.Close()
		start, end := l.LogStartOffset(), l.LogEndOffset()
		for _, b := range batches {
			if b.base < start || b.last >= end {
				continue
			}
			got, err := l.ReadBytes(b.base, 1)
			if err != nil {
				t.Fatalf("read %d in [%d, %d): %v", b.base, start, end, err)
			}
			if !bytes.Equal(got, b.bytes) {
				t.Fatalf("batch at %d reads back changed", b.base)
			}
		}
	})
}

// FuzzLogCheckpoint parses arbitrary log-checkpoint files: each is refused
// as corrupt or yields a consistent checkpoint, which the next checkpoint
// written in place supersedes and a new file made from it gives back.
func FuzzLogCheckpoint(f *testing.F) {
	c := logCheckpoint{logStartOffset: 5, recoveryPoint: recoveryPoint{offset: 90, segmentBase: 40, position: 700, indexEntries: 3, timeIndexEntries: 2}}
	image := checkpointFileImage(c)
	f.Add(image)
	c.recoveryPoint.offset, c.recoveryPoint.position = 95, 800
	next := bytes.Clone(image)
	copy(next[checkpointSlotOffset(1):], encodeCheckpointSlot(1, c))
	f.Add(next)
	f.Add(next[:checkpointSlotStride+10])
	next[3] ^= 1
	f.Add(next)
	f.Add([]byte("0\n5\n90 40 700 3 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseCheckpointFile(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptFile) {
				t.Fatalf("refused with %v, want ErrCorruptFile", err)
			}
			return
		}
		if err := checkRecoveryPoint(file.checkpoint); err != nil {
			t.Fatalf("parsed an inconsistent checkpoint: %v", err)
		}
		if file.inPlace && file.seq < math.MaxUint64 {
			later := file.checkpoint
			later.recoveryPoint.indexEntries = 1<<31 - later.recoveryPoint.indexEntries
			data = bytes.Clone(data)
			copy(data[checkpointSlotOffset(file.seq+1):], encodeCheckpointSlot(file.seq+1, later))
			again, err := parseCheckpointFile(data)
			if err != nil || again.checkpoint != later || again.seq != file.seq+1 {
				t.Fatalf("after checkpoint %d written in place: %+v, %v", file.seq+1, again, err)
			}
			// That write torn instead leaves the checkpoint before it.
			at := checkpointSlotOffset(file.seq + 1)
			data[at+checkpointSlotSize-1] ^= 0x5a
			torn, err := parseCheckpointFile(data)
			if err != nil || torn.checkpoint != file.checkpoint || torn.seq != file.seq {
				t.Fatalf("with checkpoint %d torn: %+v, %v; want checkpoint %d", file.seq+1, torn, err, file.seq)
			}
		}
		fresh, err := parseCheckpointFile(checkpointFileImage(file.checkpoint))
		if err != nil || fresh.checkpoint != file.checkpoint || !fresh.inPlace {
			t.Fatalf("a new file of %+v parses as %+v, %v", file.checkpoint, fresh, err)
		}
	})
}

// FuzzJournal parses arbitrary bytes as a disk journal file: never a
// panic, and what parses is whole entries from the header on, each of
// which encodes back to exactly its bytes.
func FuzzJournal(f *testing.F) {
	h := journalHeader{seq: 3, previousEnd: 4096}
	b := appendJournalHeader(nil, h)
	for i, data := range [][]byte{[]byte("first batch"), bytes.Repeat([]byte{7}, 300)} {
		id := &fileID{rel: fmt.Sprintf("orders-%d/00000000000000000000.log", i), ino: 12, gen: 34, btimeSec: 56, btimeNsec: 78}
		b, _ = appendJournalEntry(b, id, int64(100*i), len(data), func(p []byte) error { copy(p, data); return nil })
	}
	sealJournalEntries(b[journalHeaderSize:], h)
	f.Add(b)
	f.Add(b[:len(b)-5])
	f.Add(b[:journalHeaderSize])
	// Written over a spare: the entries of file 3 under file 4's header.
	f.Add(append(appendJournalHeader(nil, journalHeader{seq: 4, previousEnd: int64(len(b))}), b[journalHeaderSize:]...))
	// A file of format 1, from before spares.
	f.Add(journalFormat1(2, b[journalHeaderSize:]))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, entries, err := parseJournal(data)
		if err != nil {
			if !errors.Is(err, errJournalHeader) && !errors.Is(err, errJournalVersion) {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		again := appendJournalHeader(nil, h)
		if h.version != journalVersion {
			again = slices.Clone(data[:h.size()])
		}
		for _, e := range entries {
			again, err = appendJournalEntry(again, &e.file, e.position, len(e.data), func(p []byte) error { copy(p, e.data); return nil })
			if err != nil {
				t.Fatal(err)
			}
		}
		sealJournalEntries(again[h.size():], h)
		if !bytes.Equal(again, data[:len(again)]) {
			t.Fatalf("%d entries encode to other bytes than they parsed from", len(entries))
		}
	})
}
