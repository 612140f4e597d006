package offload

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/meta"
)

// TestProtocolProperties drives a partition with random sequences of
// appends, rolls, high watermark moves, passes (some stopped by a crash at
// a random protocol step, then restarted), and time passing through local
// and remote retention. After every action the committed segments must be
// sorted, contiguous and non-overlapping, and every offset below the hot
// log's start must be in one (or below the remote log start), and none may
// reach the high watermark (which only grows here). After a
// final clean pass the bucket must hold exactly the committed objects,
// each with the bytes that were appended, and a matching manifest.
func TestProtocolProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, harnessOptions{topicConfigs: map[string]string{
			"retention.ms": "3600000", "local.retention.ms": "900000",
		}})
		defer h.close()
		h.tb = rt
		check := func() {
			man := h.manifest()
			var prev *meta.RemoteSegment
			for i, s := range man.Segments {
				if s.State != meta.SegmentCommitted {
					continue
				}
				if prev != nil && s.BaseOffset != prev.EndOffset+1 {
					rt.Fatalf("committed segments %d..%d and %d..%d are not contiguous", prev.BaseOffset, prev.EndOffset, s.BaseOffset, s.EndOffset)
				}
				prev = &man.Segments[i]
			}
			if w := h.hwm.Load(); w >= 0 && man.HighestTieredOffset() >= w {
				rt.Fatalf("offset %d tiered above the high watermark %d", man.HighestTieredOffset(), w)
			}
			if start := h.log.LogStartOffset(); !covered(man, 0, start) {
				rt.Fatalf("hot log starts at %d but the committed segments do not hold everything below: %+v", start, man)
			}
		}
		actions := map[string]func(*rapid.T){
			"append": func(rt *rapid.T) {
				h.append(rapid.IntRange(1, 4).Draw(rt, "batches"), rapid.IntRange(10, 6000).Draw(rt, "size"))
			},
			"roll": func(rt *rapid.T) {
				if h.log.ActiveSegment().Size == 0 {
					return // nothing to seal
				}
				h.roll()
			},
			"move the high watermark": func(rt *rapid.T) {
				low := h.hwm.Load()
				if low < 0 { // following the log end
					low = h.log.LogEndOffset()
				}
				h.hwm.Store(rapid.Int64Range(low, h.log.LogEndOffset()).Draw(rt, "hwm"))
			},
			"pass": func(rt *rapid.T) {
				at := step(rapid.IntRange(0, int(stepCount)).Draw(rt, "crash at"))
				if at > 0 {
					h.startManager(crashOnce(at))
				}
				if err := h.sync(); err != nil && !errors.Is(err, errCrash) {
					rt.Fatalf("pass: %v", err)
				}
				h.startManager(nil)
			},
			"time passes": func(rt *rapid.T) {
				h.clock.Advance(time.Duration(rapid.IntRange(1, 90).Draw(rt, "minutes")) * time.Minute)
			},
		}
		for range rapid.IntRange(5, 40).Draw(rt, "actions") {
			name := rapid.SampledFrom([]string{"append", "append", "roll", "move the high watermark", "pass", "pass", "time passes"}).Draw(rt, "action")
			actions[name](rt)
			check()
		}
		h.hwm.Store(-1)
		if err := h.sync(); err != nil {
			rt.Fatalf("final pass: %v", err)
		}
		check()
		h.checkConsistent()
	})
}
