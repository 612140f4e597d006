package offload

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// TestCrashBetweenSteps stops the Manager right after each step of the
// upload and delete protocols, as a crash would, starts a new one over the
// same meta, store and hot log, and checks that a pass leaves everything
// consistent: nothing lost, no duplicate or overlapping segment, no
// orphan, and no needless second PUT.
func TestCrashBetweenSteps(t *testing.T) {
	for at := stepCopyBegun; at <= stepCount; at++ {
		t.Run(at.String(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{topicConfigs: map[string]string{"retention.ms": "3600000", "local.retention.ms": "600000"}})
			h.segments(3)
			deleting := at >= stepDeleteBegun
			if deleting {
				h.mustSync()
				h.clock.Advance(2 * time.Hour) // every segment past retention.ms
				h.append(1, 10)                // newer data keeps the local log from emptying
				h.roll()
			}
			h.startManager(crashOnce(at))
			if err := h.sync(); !errors.Is(err, errCrash) {
				t.Fatalf("Sync with a crash at %s: %v", at, err)
			}
			h.startManager(nil)
			h.mustSync()
			h.checkConsistent()
			committed := h.committed()
			if deleting {
				if len(committed) != 1 || h.manifest().RemoteLogStartOffset != committed[0].BaseOffset {
					t.Fatalf("after expiry: committed %+v, manifest %+v", committed, h.manifest())
				}
				return
			}
			if len(committed) != 3 {
				t.Fatalf("%d segments committed, want 3", len(committed))
			}
			// Resumed uploads keep their key, and an object already stored
			// (a crash after the PUT) is not stored again.
			for _, s := range committed {
				if n := h.store.putCount(s.ObjectKey); n != 1 {
					t.Fatalf("%s put %d times, want 1", s.ObjectKey, n)
				}
			}
		})
	}
}

// TestCrashDuringPut: a PUT that dies half-way stores nothing; the entry
// stays copying and the next pass finishes it under the same key.
func TestCrashDuringPut(t *testing.T) {
	h := newHarness(t, harnessOptions{tweak: func(c *Config) { c.MaxAttempts = 1 }})
	h.segments(1)
	h.store.setFailPut(func(context.Context, string) error { return errCrash })
	if err := h.sync(); !errors.Is(err, errCrash) {
		t.Fatalf("Sync: %v", err)
	}
	man := h.manifest()
	if len(man.Segments) != 1 || man.Segments[0].State != meta.SegmentCopying {
		t.Fatalf("manifest after a failed put: %+v", man)
	}
	key := man.Segments[0].ObjectKey
	h.store.setFailPut(nil)
	h.startManager(nil)
	h.mustSync()
	h.checkConsistent()
	if got := h.committed(); len(got) != 1 || got[0].ObjectKey != key {
		t.Fatalf("committed %+v, want the resumed %s", got, key)
	}
}

// TestAbandonAndSweep: copying entries that do not describe the next
// segment (a former leader's, with other boundaries) are abandoned and
// their objects deleted, and segment objects no entry names are swept;
// other keys are left alone.
func TestAbandonAndSweep(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(2)
	ctx := t.Context()
	first := h.sealedSegments()[0]
	stale := uuid.New()
	staleKey := segmentobject.SegmentKey(h.prefix(), 0, stale)
	_, err := h.meta.Propose(ctx, meta.BeginSegmentCopy{
		Topic: h.topic.Name, TopicID: h.topic.ID, LeaderEpoch: 0, SegmentID: stale,
		BaseOffset: 0, EndOffset: first.NextOffset - 2, SizeBytes: 100,
		LeaderEpochs: []meta.EpochEntry{{Epoch: 0, StartOffset: 0}}, ObjectKey: staleKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	orphan := segmentobject.SegmentKey(h.prefix(), 5, uuid.New())
	other := h.prefix() + "notes.txt"
	for _, k := range []string{staleKey, orphan, other} {
		if err := h.store.Store.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	h.mustSync()
	if got := len(h.committed()); got != 2 {
		t.Fatalf("%d committed", got)
	}
	if n := len(h.manifest().Segments); n != 2 {
		t.Fatalf("manifest keeps %d entries: %+v", n, h.manifest())
	}
	if _, err := h.store.Head(ctx, other); err != nil {
		t.Fatalf("a key not of the segment form was touched: %v", err)
	}
	if err := h.store.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	h.checkConsistent()
	if got := testutil.ToFloat64(h.mgr.metrics.orphansDeleted); got != 1 {
		t.Fatalf("orphans deleted %v, want 1", got)
	}
	if got := testutil.ToFloat64(h.mgr.metrics.remoteDeletes.WithLabelValues("abandoned")); got != 1 {
		t.Fatalf("abandoned uploads %v, want 1", got)
	}
}

// TestManifestRebuiltAfterRestart: a new Manager that finds commits its
// predecessor did not publish learns the tail sizes from the old bucket
// manifest, or from the objects when there is none.
func TestManifestRebuiltAfterRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(1)
	h.mustSync()
	h.segments(1)
	h.startManager(crashOnce(stepCopyCommitted))
	if err := h.sync(); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	h.startManager(nil)
	h.mustSync()
	h.checkConsistent()

	// Without any manifest in the bucket the objects' sizes serve.
	if err := h.store.Delete(t.Context(), h.prefix()+segmentobject.ManifestName); err != nil {
		t.Fatal(err)
	}
	h.startManager(nil)
	h.mustSync()
	h.checkConsistent()
	for _, s := range h.bucketManifest().Segments {
		if s.TailBytes < segmentobject.FooterSize {
			t.Fatalf("tail of %d bytes", s.TailBytes)
		}
	}
}

// TestUnsealedSegmentWaits: a segment whose index files still hold the
// zeroed entries of an untrimmed index (hotlog's flusher has not sealed it
// on disk yet) is not uploaded; if that lasts past the stall alarm the pass
// reports it.
func TestUnsealedSegmentWaits(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(1)
	info := h.sealedSegments()[0]
	path := segmentPath(h.dir, info.BaseOffset, ".index")
	trimmed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(bytes.Clone(trimmed), make([]byte, 64)...), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	if n := len(h.manifest().Segments); n != 0 {
		t.Fatalf("%d entries for a segment not sealed on disk", n)
	}
	h.clock.Advance(h.cfg.StallAlarm)
	if err := h.sync(); !errors.Is(err, errNotReady) {
		t.Fatalf("Sync past the stall alarm: %v", err)
	}
	if err := os.WriteFile(path, trimmed, 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustSync()
	h.checkConsistent()
}
