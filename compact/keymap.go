package compact

import (
	"fmt"
	"hash/maphash"
	"math"

	"github.com/stratalog/strata/record"
)

// The two pieces of a cleaning that do not care where batches are stored:
// the offset map (KeyMap) and the writer of filtered batches (Writer).
// Clean uses them on the hot log's segments, offload's remote recompaction
// on segment objects in the bucket.

// keyHash identifies a key in the offset map by 128 bits, as Kafka's
// cleaner keys its map by a 16-byte MD5: two 64-bit maphash sums under
// independent random seeds (the map lives for one pass in one process, so
// the hash need not be stable; SHA-256 cost a tenth of a pass). A
// collision would drop a live record of another key; at about 2^-128 per
// pair it is not a concern.
type keyHash [2]uint64

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashKey(key []byte) keyHash {
	return keyHash{maphash.Bytes(keySeeds[0], key), maphash.Bytes(keySeeds[1], key)}
}

// KeyMap is one pass's offset map: the latest offset of every key in the
// batches added to it, which run in offset order from the offset it was
// made at up to End. It holds at most a given number of keys.
type KeyMap struct {
	offsets map[keyHash]int64
	// start is the offset the map was made at: records at or above it
	// are mapped by this pass for the first time.
	start, end int64
	maxKeys    int
}

// NewKeyMap returns an empty map whose first batch starts at from.
func NewKeyMap(from int64, maxKeys int) *KeyMap {
	return &KeyMap{offsets: make(map[keyHash]int64), start: from, end: from, maxKeys: maxKeys}
}

// End is the offset after the last batch mapped.
func (m *KeyMap) End() int64 { return m.end }

// Add maps the keys of the next batch, the one starting at End, or the one
// holding it (a log start inside a batch). It reports false, mapping
// nothing, when the batch's records might not fit.
func (m *KeyMap) Add(h record.Header, batch []byte, decompressLimit int) (bool, error) {
	if len(m.offsets)+int(h.NumRecords) > m.maxKeys {
		return false, nil
	}
	records, err := record.Records(batch, decompressLimit)
	if err != nil {
		return false, fmt.Errorf("compact: batch at offset %d: %w", h.BaseOffset, err)
	}
	for _, r := range records {
		if r.Key != nil {
			m.offsets[hashKey(r.Key)] = h.BaseOffset + int64(r.OffsetDelta)
		}
	}
	m.end = h.NextOffset()
	return true, nil
}

// keeps decides one record: a record at or above End is not the pass's
// business; a keyless record cannot be compacted and goes, as Kafka's
// cleaner drops it; a record a later one of its key supersedes goes; a
// tombstone goes once expired, but never in the pass that maps it first
// (at or above the map's start): that pass removes its key's older
// values, and a reader that read one of them just before must still find
// the tombstone after it (Kafka's cleaner, before KIP-534, kept such
// tombstones the same way, by the last clean segment's time).
func (m *KeyMap) keeps(r record.Record, offset int64, expireTombstones bool) bool {
	if offset >= m.end {
		return true
	}
	if r.Key == nil {
		return false
	}
	if latest, ok := m.offsets[hashKey(r.Key)]; ok && latest > offset {
		return false
	}
	return r.Value != nil || !expireTombstones || offset >= m.start
}

// filter decodes a batch's records and returns them with those the map
// keeps.
func (m *KeyMap) filter(h record.Header, batch []byte, expireTombstones bool, decompressLimit int) (records, kept []record.Record, err error) {
	records, err = record.Records(batch, decompressLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("compact: batch at offset %d: %w", h.BaseOffset, err)
	}
	kept = records[:0:0]
	for _, r := range records {
		if m.keeps(r, h.BaseOffset+int64(r.OffsetDelta), expireTombstones) {
			kept = append(kept, r)
		}
	}
	return records, kept, nil
}

// Drops reports whether filtering the batch would remove a record.
func (m *KeyMap) Drops(h record.Header, batch []byte, expireTombstones bool, decompressLimit int) (bool, error) {
	if h.BaseOffset >= m.end {
		return false, nil
	}
	records, kept, err := m.filter(h, batch, expireTombstones, decompressLimit)
	return len(kept) < len(records), err
}

// Writer writes filtered batches in offset order through its append
// function, joining runs of batches that lost every record into one empty
// batch per leader epoch, so the offsets stay dense.
type Writer struct {
	append  func([]byte) error
	pending *record.Header // a run of removed batches not yet written
	written int64
}

// NewWriter returns a Writer that hands each batch it writes to append.
func NewWriter(append func([]byte) error) *Writer {
	return &Writer{append: append}
}

// Written is the bytes written so far.
func (w *Writer) Written() int64 { return w.written }

// Filter writes the batch without the records the map removes, and
// returns how many it removed. A batch that loses every record joins the
// pending run of empty ones, unless keepEmpty: then it is written alone,
// empty, keeping its producer fields.
func (w *Writer) Filter(h record.Header, batch []byte, keys *KeyMap, expireTombstones, keepEmpty bool, decompressLimit int) (int, error) {
	if h.BaseOffset >= keys.end {
		return 0, w.Batch(batch)
	}
	records, kept, err := keys.filter(h, batch, expireTombstones, decompressLimit)
	if err != nil {
		return 0, err
	}
	removed := len(records) - len(kept)
	switch {
	case removed == 0:
		return 0, w.Batch(batch)
	case len(kept) > 0 || keepEmpty:
		rebuilt, err := record.Rebuild(h, kept)
		if err != nil {
			return 0, err
		}
		return removed, w.Batch(rebuilt)
	default:
		return removed, w.removed(h)
	}
}

// Batch writes a batch as it is.
func (w *Writer) Batch(b []byte) error {
	if err := w.Flush(); err != nil {
		return err
	}
	w.written += int64(len(b))
	return w.append(b)
}

// removed adds a batch that lost every record to the pending run.
func (w *Writer) removed(h record.Header) error {
	if p := w.pending; p != nil && p.PartitionLeaderEpoch == h.PartitionLeaderEpoch && h.LastOffset()-p.BaseOffset <= math.MaxInt32 {
		p.LastOffsetDelta = int32(h.LastOffset() - p.BaseOffset)
		p.MaxTimestamp = max(p.MaxTimestamp, h.MaxTimestamp)
		return nil
	}
	if err := w.Flush(); err != nil {
		return err
	}
	w.pending = &record.Header{
		BaseOffset: h.BaseOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes: h.Attributes, LastOffsetDelta: h.LastOffsetDelta,
		FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}
	return nil
}

// Flush writes the pending run as one empty batch. Call it after the last
// batch.
func (w *Writer) Flush() error {
	if w.pending == nil {
		return nil
	}
	h := *w.pending
	w.pending = nil
	h.Attributes &^= 0x10 // not transactional: it stands for no producer
	b, err := record.Rebuild(h, nil)
	if err != nil {
		return err
	}
	w.written += int64(len(b))
	return w.append(b)
}
