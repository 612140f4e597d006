package remotefetch

import (
	"math"
	"testing"

	"github.com/stratalog/strata/record"
)

// OffsetForTimestamp finds the first record at or after a timestamp across
// segments, inside batches, compressed ones too, and never below the log
// start offset.
func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	for _, codec := range []record.Codec{record.CodecNone, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			t.Parallel()
			s, _ := openFileStore(t)
			p := buildPartition(t, "times", 0, []int{40, 40}, segmentSpec{codec: codec})
			p.put(t, s)
			r := newReader(t, StoreBucket(s), p, testConfig())

			// The model: the first record, in offset order, at or after ts.
			type rec struct{ offset, ts int64 }
			var records []rec
			for _, seg := range p.segments {
				for _, h := range seg.headers {
					for i := range h.NextOffset() - h.BaseOffset {
						records = append(records, rec{h.BaseOffset + i, h.FirstTimestamp + i})
					}
				}
			}
			first := records[0].ts
			last := records[len(records)-1].ts
			for _, ts := range []int64{0, first, first + 1, first + 150, first + 3001, records[100].ts, last - 1, last, last + 1} {
				var want *rec
				for i := range records {
					if records[i].ts >= ts {
						want = &records[i]
						break
					}
				}
				got, found, err := r.OffsetForTimestamp(t.Context(), p.part, ts, math.MaxInt64)
				switch {
				case err != nil:
					t.Fatalf("OffsetForTimestamp(%d): %v", ts, err)
				case want == nil && found:
					t.Errorf("OffsetForTimestamp(%d) = %+v, want not found", ts, got)
				case want != nil && (!found || got.Offset != want.offset || got.Timestamp != want.ts || got.LeaderEpoch != testEpoch):
					t.Errorf("OffsetForTimestamp(%d) = %+v, %v; want offset %d at %d, epoch %d", ts, got, found, want.offset, want.ts, testEpoch)
				}
			}

			// Below the second segment's base: its records are the hot
			// log's to answer for, and not searched.
			second := p.segments[1].headers[0]
			if got, found, err := r.OffsetForTimestamp(t.Context(), p.part, second.FirstTimestamp, second.BaseOffset); err != nil || found {
				t.Errorf("OffsetForTimestamp(%d) below %d = %+v, %v, %v; want not found", second.FirstTimestamp, second.BaseOffset, got, found, err)
			}
			if got, found, err := r.OffsetForTimestamp(t.Context(), p.part, second.FirstTimestamp, second.BaseOffset+1); err != nil || !found || got.Offset != second.BaseOffset {
				t.Errorf("OffsetForTimestamp(%d) below %d = %+v, %v, %v; want %d", second.FirstTimestamp, second.BaseOffset+1, got, found, err, second.BaseOffset)
			}

			p.manifest.LogStartOffset = records[50].offset
			got, found, err := r.OffsetForTimestamp(t.Context(), p.part, 0, math.MaxInt64)
			if err != nil || !found || got.Offset != records[50].offset {
				t.Errorf("OffsetForTimestamp(0) above a log start of %d = %+v, %v, %v", records[50].offset, got, found, err)
			}
		})
	}
}

// A batch that decompresses past MaxUncompressedSize answers a lookup at
// its base offset (or the log start inside it), with its max timestamp, as
// the broker's hot log lookup does; before, the lookup failed and the
// client was told MESSAGE_TOO_LARGE.
func TestOffsetForTimestampInATooLargeBatch(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "large", 0, []int{40}, segmentSpec{codec: record.CodecZstd})
	p.put(t, s)
	cfg := testConfig()
	cfg.MaxUncompressedSize = 1
	r := newReader(t, StoreBucket(s), p, cfg)
	h := p.segments[0].headers[2] // three records
	for _, c := range []struct {
		logStart, want int64
	}{{0, h.BaseOffset}, {h.BaseOffset + 1, h.BaseOffset + 1}} {
		p.manifest.LogStartOffset = c.logStart
		got, found, err := r.OffsetForTimestamp(t.Context(), p.part, h.FirstTimestamp+1, math.MaxInt64)
		if err != nil || !found || got.Offset != c.want || got.Timestamp != h.MaxTimestamp || got.LeaderEpoch != testEpoch {
			t.Errorf("log start %d: OffsetForTimestamp(%d) = %+v, %v, %v; want offset %d at %d, epoch %d",
				c.logStart, h.FirstTimestamp+1, got, found, err, c.want, h.MaxTimestamp, testEpoch)
		}
	}
}
