package offload

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/compact"
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/record"
)

// TestCompactionAgainstModel drives a tiered compacted partition with
// random sequences of produce (a few keys, some tombstones), rolls, cleaning
// passes of the hot log, offload passes that upload and recompact (some
// stopped by a crash at a random step of either protocol, then restarted),
// hot-log restarts and time passing through min.compaction.lag.ms,
// delete.retention.ms, the local retention and the retire delay. After
// every action a full read (the bucket below the hot log's start, the hot
// log above) must hold:
//
//   - only records that were appended, each at its offset;
//   - every key's latest record, unless it is a tombstone older than
//     delete.retention.ms;
//   - every record younger than min.compaction.lag.ms;
//   - below the remote cleaner's checkpoint, no record that a later one of
//     its key, also below it and uploaded, supersedes. The hot log's
//     cleaner, its map reaching past the remote checkpoint, may drop a
//     record before its upload; the remote cleaner never maps it, and
//     removes the older versions of its key once it maps a later one, the
//     way Kafka's cleaner leaves a record below its checkpoint while what
//     supersedes it is in the dirty part of the log.
//
// At the end, with everything sealed, uploaded and recompacted and the
// retire delay past, the bucket holds exactly manifest.json and the
// committed objects.
func TestCompactionAgainstModel(t *testing.T) {
	const (
		minLag          = 10 * time.Minute
		deleteRetention = 30 * time.Minute
	)
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, harnessOptions{topicConfigs: compactedTopic(map[string]string{
			"min.compaction.lag.ms": fmt.Sprint(minLag.Milliseconds()),
			"delete.retention.ms":   fmt.Sprint(deleteRetention.Milliseconds()),
			"local.retention.ms":    "1200000", "segment.bytes": "8000",
		})})
		defer h.close()
		h.tb = rt
		appended := map[int64]keyedRecord{}
		appendedAt := map[int64]time.Time{}
		// hotCleaned holds the records the hot log's cleaner dropped
		// before they were uploaded.
		hotCleaned := map[int64]bool{}
		var cleanerCheckpoint int64

		check := func() {
			got := h.fullRead(rt)
			now := h.clock.Now()
			for o, r := range got {
				if want, ok := appended[o]; !ok || want != r {
					rt.Fatalf("offset %d holds %+v, appended %+v", o, r, want)
				}
			}
			for o, r := range latest(appended) {
				if _, ok := got[o]; !ok && !(r.tombstone && now.Sub(appendedAt[o]) > deleteRetention) {
					rt.Fatalf("the latest record of %q (offset %d) is gone", r.key, o)
				}
			}
			for o, at := range appendedAt {
				if _, ok := got[o]; !ok && now.Sub(at) < minLag {
					rt.Fatalf("offset %d, younger than min.compaction.lag.ms, is gone", o)
				}
			}
			cleaned := h.manifest().CleanedOffset
			below := map[string]int64{}
			for _, o := range slices.Sorted(maps.Keys(appended)) {
				if o < cleaned && !hotCleaned[o] {
					below[appended[o].key] = o
				}
			}
			for o, r := range got {
				if o < cleaned && o < h.log.LogStartOffset() && below[r.key] != o {
					rt.Fatalf("offset %d (%q) is superseded at %d below the remote checkpoint %d", o, r.key, below[r.key], cleaned)
				}
			}
		}
		actions := map[string]func(*rapid.T){
			"produce": func(rt *rapid.T) {
				var batch []keyedRecord
				for range rapid.IntRange(1, 12).Draw(rt, "records") {
					key := fmt.Sprintf("k%d", rapid.IntRange(0, 5).Draw(rt, "key"))
					if rapid.IntRange(0, 5).Draw(rt, "tombstone") == 0 {
						batch = append(batch, keyedRecord{key: key, tombstone: true})
					} else {
						batch = append(batch, keyedRecord{key: key, value: fmt.Sprintf("%s@%d-%0200d", key, len(appended), 0)})
					}
				}
				for o, r := range h.appendKeyed(batch...) {
					appended[o], appendedAt[o] = r, h.clock.Now()
				}
			},
			"roll": func(rt *rapid.T) {
				if h.log.ActiveSegment().Size > 0 {
					h.roll()
				}
			},
			"clean the hot log": func(rt *rapid.T) {
				tiered, before := tieredEnd(h.manifest()), h.fullRead(rt)
				res, err := compact.Clean(rt.Context(), compact.Pass{
					Log: h.log, FirstDirty: cleanerCheckpoint, End: h.cleanableEnd(minLag), Now: h.clock.Now(),
					DeleteRetention: deleteRetention, KeepTombstones: true, MaxKeys: 4, DecompressLimit: record.MaxDecompressedBytes,
				})
				if err != nil && !errors.Is(err, compact.ErrMapTooSmall) && !errors.Is(err, hotlog.ErrNotRewritable) && !errors.Is(err, hotlog.ErrOffsetOutOfRange) {
					rt.Fatalf("cleaning the hot log: %v", err)
				}
				cleanerCheckpoint = res.NextDirty
				after := h.fullRead(rt)
				for o := range before {
					if _, ok := after[o]; !ok && o >= tiered {
						hotCleaned[o] = true
					}
				}
			},
			"pass": func(rt *rapid.T) {
				steps := []step{0, stepCopyBegun, stepObjectPut, stepCopyCommitted, stepDeleteBegun, stepReplaceBegun, stepReplacePut, stepReplaceCommitted}
				if at := rapid.SampledFrom(steps).Draw(rt, "crash at"); at > 0 {
					h.startManager(crashOnce(at))
				}
				if err := h.sync(); err != nil && !errors.Is(err, errCrash) {
					rt.Fatalf("pass: %v", err)
				}
				h.startManager(nil)
			},
			"restart the hot log": func(rt *rapid.T) {
				h.mgr.Close()
				if err := h.log.Close(); err != nil {
					rt.Fatal(err)
				}
				h.openLog()
				h.startManager(nil)
			},
			"time passes": func(rt *rapid.T) {
				h.clock.Advance(time.Duration(rapid.IntRange(1, 40).Draw(rt, "minutes")) * time.Minute)
			},
		}
		for range rapid.IntRange(5, 40).Draw(rt, "actions") {
			name := rapid.SampledFrom([]string{"produce", "produce", "roll", "clean the hot log", "pass", "pass", "restart the hot log", "time passes"}).Draw(rt, "action")
			actions[name](rt)
			check()
		}
		if h.log.ActiveSegment().Size > 0 {
			h.roll()
		}
		h.clock.Advance(minLag)
		for range 10 {
			if err := h.sync(); err != nil {
				rt.Fatalf("settling pass: %v", err)
			}
		}
		h.clock.Advance(h.cfg.RetireDelay)
		if err := h.sync(); err != nil {
			rt.Fatalf("final pass: %v", err)
		}
		check()
		h.checkBucket()
	})
}

// cleanableEnd is where a hot-log cleaning pass must stop: before the
// active segment and the first segment with a record younger than minLag.
func (h *harness) cleanableEnd(minLag time.Duration) int64 {
	for _, s := range h.log.Segments() {
		if !s.Sealed || h.clock.Now().Sub(time.UnixMilli(s.MaxTimestamp)) < minLag {
			return s.BaseOffset
		}
	}
	return h.log.LogEndOffset()
}

// fullRead reads the partition from its first offset to its end as a
// consumer would be served: from the bucket below the hot log's start, from
// the hot log above. It returns the records by offset, and fails on a gap
// in the batches.
func (h *harness) fullRead(tb fataler) map[int64]keyedRecord {
	tb.Helper()
	start := h.log.LogStartOffset()
	out := map[int64]keyedRecord{}
	for o, r := range h.remoteRecords() {
		if o < start {
			out[o] = r
		}
	}
	if first := h.manifest().RemoteLogStartOffset; start > first && !covered(h.manifest(), first, start) {
		tb.Fatalf("offsets %d..%d are neither in the hot log nor tiered", first, start)
	}
	for offset := start; offset < h.log.LogEndOffset(); {
		chunk, err := h.log.ReadBytes(offset, 1<<20)
		if err != nil {
			tb.Fatalf("reading the hot log at %d: %v", offset, err)
		}
		batches, headers, err := record.Split(chunk)
		if err != nil {
			tb.Fatalf("hot log at %d: %v", offset, err)
		}
		for i, hd := range headers {
			if hd.BaseOffset > offset {
				tb.Fatalf("hot log: batch at %d after offset %d", hd.BaseOffset, offset)
			}
			records, err := record.Records(batches[i], record.MaxDecompressedBytes)
			if err != nil {
				tb.Fatalf("hot log at %d: %v", hd.BaseOffset, err)
			}
			for _, r := range records {
				if o := hd.BaseOffset + int64(r.OffsetDelta); o >= start {
					out[o] = keyedRecord{key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil}
				}
			}
			offset = hd.NextOffset()
		}
	}
	return out
}
