package replica

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// TestEveryAcceptedLogConfigOpensALog: any value meta accepts for a hot
// log setting is one the hot log accepts too, tiered or not, so no valid
// topic config can leave a partition unable to open.
func TestEveryAcceptedLogConfigOpensALog(t *testing.T) {
	t.Parallel()
	names := []string{"segment.bytes", "segment.ms", "segment.jitter.ms", "file.delete.delay.ms", "max.compaction.lag.ms", "index.interval.bytes", "segment.index.bytes",
		"retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes", "flush.messages", "flush.ms"}
	values := []int64{math.MinInt64, -3, -2, -1, 0, 1, 4, 13, 14, 47, 48, 60, 61, 4096, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt64}
	for _, name := range names {
		def, ok := meta.LookupTopicConfig(name)
		if !ok {
			t.Fatalf("meta does not know %s", name)
		}
		for _, v := range values {
			canonical, err := def.Validate(strconv.FormatInt(v, 10))
			if err != nil {
				continue
			}
			topic := meta.Topic{Name: "t", Configs: map[string]string{name: canonical}}
			for _, tiered := range []bool{false, true} {
				if err := logSettingsOf(topic, tiered).hotlogConfig(1).Validate(); err != nil {
					t.Errorf("%s = %s (tiered %v): meta accepts it, the hot log refuses it: %v", name, canonical, tiered, err)
				}
			}
		}
	}
}

// TestSchemaValidatedSettings: the produce path asks the registry for a
// partition of a topic with key or value validation on, and for no other.
func TestSchemaValidatedSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configs map[string]string
		want    bool
	}{
		{nil, false},
		{map[string]string{"confluent.value.schema.validation": "true"}, true},
		{map[string]string{"confluent.key.schema.validation": "true"}, true},
		{map[string]string{"confluent.value.schema.validation": "false", "confluent.key.schema.validation": "false"}, false},
	} {
		if got := settingsOf(meta.Topic{Name: "t", Configs: tc.configs}, 0, 1, false).schemaValidated; got != tc.want {
			t.Errorf("%v: schema validated %v, want %v", tc.configs, got, tc.want)
		}
	}
}

// TestFirstSegmentCutsSpreadByIndex: partition 0's first segment rolls at
// segment.bytes; a topic's partitions cut theirs by shares of it spread
// evenly over [0, 1/2), however many partitions there are, so that
// partitions filled at one rate roll spread over half a segment's
// filling.
func TestFirstSegmentCutsSpreadByIndex(t *testing.T) {
	t.Parallel()
	if cut := firstSegmentCut(0); cut != 0 {
		t.Fatalf("partition 0's first segment cut by %v, want 0", cut)
	}
	for _, n := range []int32{2, 3, 8, 64, 512, 4000} {
		cuts := make([]float64, 0, n+1)
		for i := range n {
			cut := firstSegmentCut(i)
			if cut < 0 || cut >= 0.5 {
				t.Fatalf("partition %d's first segment cut by %v, want [0, 1/2)", i, cut)
			}
			cuts = append(cuts, cut)
		}
		slices.Sort(cuts)
		cuts = append(cuts, 0.5)
		for i := 1; i < len(cuts); i++ {
			// Evenly: no gap wider than three times an even split's (the
			// golden ratio's multiples leave gaps of at most three
			// lengths, each within a small factor of the even split's;
			// uniform random cuts would leave gaps near ln(n) times it).
			if gap := cuts[i] - cuts[i-1]; gap > 3*0.5/float64(n) {
				t.Errorf("%d partitions: no cut in (%.4f, %.4f), a gap of %.4f where an even split has %.4f",
					n, cuts[i-1], cuts[i], gap, 0.5/float64(n))
			}
		}
	}
}

// TestTheLongestCompactionSettingsSaturate: Long.MAX_VALUE for
// delete.retention.ms (keep tombstones for ever) and min.compaction.lag.ms
// (never compact) are the longest durations there are, not -1 ms:
// multiplied into a Duration they wrapped, and did the opposite (every
// tombstone dropped at the first pass, no lag at all).
func TestTheLongestCompactionSettingsSaturate(t *testing.T) {
	topic := meta.Topic{Name: "t", Configs: map[string]string{
		"cleanup.policy":        "compact",
		"delete.retention.ms":   "9223372036854775807",
		"min.compaction.lag.ms": "9223372036854775807",
	}}
	p := cleaningPolicy(topic, false)
	if p.DeleteRetention != math.MaxInt64 || p.MinCompactionLag != math.MaxInt64 {
		t.Fatalf("delete.retention.ms and min.compaction.lag.ms at Long.MAX_VALUE: %v and %v, want both %v",
			p.DeleteRetention, p.MinCompactionLag, time.Duration(math.MaxInt64))
	}
}
