package replica

import (
	"math"
	"strconv"
	"testing"

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
				if err := logSettingsOf(topic, tiered).hotlogConfig().Validate(); err != nil {
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
