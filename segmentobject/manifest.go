package segmentobject

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/google/uuid"
)

// The manifest: a partition's committed segment objects, the one
// description of "the remote segments of a partition" that every package
// shares. offload publishes it as <partition prefix>/manifest.json
// (ManifestKey) after every change; meta derives it from its Raft state
// (meta.Manifest.Committed); remotefetch reads either. doc.go draws the
// JSON.

// ManifestVersion is the version of the manifest format this package
// writes and reads.
const ManifestVersion = 1

// ErrInvalidManifest means a manifest that does not parse, is of another
// version, or breaks the invariants Validate checks.
var ErrInvalidManifest = errors.New("segmentobject: invalid manifest")

// Manifest is one partition's committed segments and the remote log start
// offset below which none of them is read.
type Manifest struct {
	// Version is ManifestVersion. Readers refuse other versions; fields
	// added within a version are ones a reader may ignore.
	Version   int       `json:"version"`
	Topic     string    `json:"topic"`
	TopicID   uuid.UUID `json:"topic_id"`
	Partition int32     `json:"partition"`
	// LogStartOffset is the remote log start offset: offsets below it are
	// not served, even where a segment still holds them. A segment may
	// start below it; it is then readable from LogStartOffset on.
	LogStartOffset int64 `json:"log_start_offset"`
	// Segments are sorted by offset and never overlap.
	Segments []ManifestSegment `json:"segments"`
}

// ManifestSegment is one segment object.
type ManifestSegment struct {
	ID uuid.UUID `json:"id"`
	// Key is the object's key in the store (relative to the store URL's
	// prefix, as objstore keys are).
	Key string `json:"key"`
	// BaseOffset and EndOffset are the first and last offsets held
	// (inclusive, as in meta). The object's footer must say the same.
	BaseOffset   int64 `json:"base_offset"`
	EndOffset    int64 `json:"end_offset"`
	MaxTimestamp int64 `json:"max_timestamp"`
	// LogBytes is the length of the log section (object bytes
	// [0, LogBytes)); TailBytes the rest: indexes, epochs and footer, which
	// a reader fetches with one suffix read. The object is LogBytes +
	// TailBytes long. Either is 0 where the manifest's source does not know
	// it (meta keeps no tail sizes); a published manifest records both.
	LogBytes  int64 `json:"log_bytes"`
	TailBytes int64 `json:"tail_bytes"`
	// LeaderEpochs are the leader epochs of the segment's records, the
	// first starting at BaseOffset: the epochs section of the object.
	LeaderEpochs []EpochEntry `json:"leader_epochs"`
}

// NextOffset is one past the segment's last offset.
func (s ManifestSegment) NextOffset() int64 { return s.EndOffset + 1 }

// ParseManifest decodes a published manifest and checks it: its version,
// Validate's invariants, and the sizes every published segment records.
// Every error wraps ErrInvalidManifest.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %w", ErrInvalidManifest, err)
	}
	if m.Version != ManifestVersion {
		return Manifest{}, fmt.Errorf("%w: version %d (this build reads %d)", ErrInvalidManifest, m.Version, ManifestVersion)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	for i, s := range m.Segments {
		if s.LogBytes == 0 || s.TailBytes == 0 {
			return Manifest{}, fmt.Errorf("%w: segment %d (%s) records a log of %d bytes and a tail of %d", ErrInvalidManifest, i, s.Key, s.LogBytes, s.TailBytes)
		}
	}
	return m, nil
}

// Encode renders m as a published manifest: deterministic JSON (fields in
// declaration order), one line, "segments" [] when there are none.
func (m Manifest) Encode() []byte {
	if m.Segments == nil {
		m.Segments = []ManifestSegment{}
	}
	data, err := json.Marshal(m)
	if err != nil {
		panic("segmentobject: encoding a manifest: " + err.Error()) // plain structs: cannot fail
	}
	return append(data, '\n')
}

// Validate checks the invariants readers rely on, whatever the manifest's
// source: offsets that make segments, keys present, sizes not negative and
// a tail of at least a footer where one is recorded, segments sorted and
// not overlapping, and each segment's leader epochs starting at its base
// offset and growing in epoch and offset within it.
func (m Manifest) Validate() error {
	if m.LogStartOffset < 0 {
		return fmt.Errorf("%w: log start offset %d", ErrInvalidManifest, m.LogStartOffset)
	}
	for i, s := range m.Segments {
		switch {
		case s.Key == "":
			return fmt.Errorf("%w: segment %d has no object key", ErrInvalidManifest, i)
		case s.BaseOffset < 0 || s.EndOffset < s.BaseOffset || s.EndOffset == math.MaxInt64:
			return fmt.Errorf("%w: segment %d (%s) has offsets %d..%d", ErrInvalidManifest, i, s.Key, s.BaseOffset, s.EndOffset)
		case s.LogBytes < 0 || s.TailBytes < 0 || (s.TailBytes > 0 && s.TailBytes < FooterSize):
			return fmt.Errorf("%w: segment %d (%s) has a log of %d bytes, a tail of %d", ErrInvalidManifest, i, s.Key, s.LogBytes, s.TailBytes)
		case i > 0 && s.BaseOffset <= m.Segments[i-1].EndOffset:
			return fmt.Errorf("%w: segment %d (%s) at %d overlaps or precedes the one before, which ends at %d",
				ErrInvalidManifest, i, s.Key, s.BaseOffset, m.Segments[i-1].EndOffset)
		case len(s.LeaderEpochs) == 0 || s.LeaderEpochs[0].StartOffset != s.BaseOffset:
			return fmt.Errorf("%w: segment %d (%s): leader epochs must start at its base offset %d", ErrInvalidManifest, i, s.Key, s.BaseOffset)
		}
		for j, e := range s.LeaderEpochs {
			if e.Epoch < 0 || e.StartOffset > s.EndOffset || (j > 0 && (e.Epoch <= s.LeaderEpochs[j-1].Epoch || e.StartOffset <= s.LeaderEpochs[j-1].StartOffset)) {
				return fmt.Errorf("%w: segment %d (%s): leader epoch entry %d (%d at %d) out of order or range", ErrInvalidManifest, i, s.Key, j, e.Epoch, e.StartOffset)
			}
		}
	}
	return nil
}

// NextOffset is one past the last tiered offset: the end of what the
// manifest serves. It is LogStartOffset when nothing is readable.
func (m Manifest) NextOffset() int64 {
	if n := len(m.Segments); n > 0 && m.Segments[n-1].NextOffset() > m.LogStartOffset {
		return m.Segments[n-1].NextOffset()
	}
	return m.LogStartOffset
}

// SegmentFor returns the index of the segment a read of offset starts in:
// the first segment that ends after offset. ok is false when offset is
// outside [LogStartOffset, NextOffset()).
func (m Manifest) SegmentFor(offset int64) (i int, ok bool) {
	if offset < m.LogStartOffset || offset >= m.NextOffset() {
		return 0, false
	}
	i = sort.Search(len(m.Segments), func(i int) bool { return m.Segments[i].EndOffset >= offset })
	return i, i < len(m.Segments)
}

// EpochsBelow is the leader-epoch history of the tiered offsets below
// offset, from LogStartOffset on: what a replica that starts its log at
// offset (the leader's local log start, KIP-405) needs for the offsets it
// will not hold. One entry per epoch, epochs and start offsets growing;
// the entry in force at LogStartOffset starts there, as Kafka's leader
// epoch cache does once truncated from the start. An epoch that goes on
// into the next segment, whose entries start at its base offset, stays one
// entry; an entry that would not raise the epoch is taken as going on
// from the one before. Empty when no tiered offset is below offset.
func (m Manifest) EpochsBelow(offset int64) []EpochEntry {
	var out []EpochEntry
	for _, s := range m.Segments {
		for _, e := range s.LeaderEpochs {
			e.StartOffset = max(e.StartOffset, m.LogStartOffset)
			n := len(out)
			switch {
			case e.StartOffset >= offset:
				return out // entries only grow from here
			case n > 0 && e.Epoch <= out[n-1].Epoch:
				// the epoch before goes on
			case n > 0 && e.StartOffset == out[n-1].StartOffset:
				out[n-1] = e // the one before ended below the log start
			default:
				out = append(out, e)
			}
		}
	}
	return out
}
