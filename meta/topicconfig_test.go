package meta

import (
	"errors"
	"testing"
)

func TestTopicConfigRegistryCoversKafkasNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
		"flush.messages", "flush.ms", "index.interval.bytes", "local.retention.bytes", "local.retention.ms",
		"max.message.bytes", "message.timestamp.type", "min.insync.replicas", "remote.storage.enable",
		"retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.ms",
		"unclean.leader.election.enable", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"} {
		def, ok := LookupTopicConfig(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if def.Doc == "" || def.Valid == "" || def.Type.String() == "" {
			t.Errorf("%s lacks docs: %+v", name, def)
		}
	}
	defs := TopicConfigDefs()
	defs[0].Name = "changed"
	if TopicConfigDefs()[0].Name == "changed" {
		t.Fatal("TopicConfigDefs exposes the registry")
	}
}

func TestTopicConfigDefaults(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"segment.bytes": "134217728", "segment.ms": "600000", "local.retention.ms": "3600000",
		"remote.storage.enable": "true", "retention.ms": "604800000", "cleanup.policy": "delete",
		"max.message.bytes": "1048588", "min.insync.replicas": "1", "unclean.leader.election.enable": "false",
		"flush.messages": "9223372036854775807", "min.cleanable.dirty.ratio": "0.5",
	}
	for name, value := range want {
		if def, _ := LookupTopicConfig(name); def.Default != value {
			t.Errorf("%s default %q, want %q", name, def.Default, value)
		}
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	t.Parallel()
	good := []struct{ name, in, out string }{
		{"retention.ms", "-1", "-1"},
		{"retention.ms", " 007 ", "7"},
		{"preallocate", "True", "true"},
		{"cleanup.policy", "compact , delete", "compact,delete"},
		{"compression.type", "zstd", "zstd"},
		{"min.cleanable.dirty.ratio", "0.25", "0.25"},
		{"message.timestamp.type", "LogAppendTime", "LogAppendTime"},
		{"local.retention.bytes", "-2", "-2"},
		{"segment.bytes", "2147483647", "2147483647"},
	}
	for _, g := range good {
		got, err := ValidateTopicConfigs(map[string]string{g.name: g.in})
		if err != nil || got[g.name] != g.out {
			t.Errorf("%s=%q: %q, %v", g.name, g.in, got[g.name], err)
		}
	}
	bad := []map[string]string{
		{"retention.mss": "1"},
		{"retention.ms": "-2"},
		{"retention.ms": "1.5"},
		{"segment.bytes": "2147483648"},
		{"segment.bytes": "13"},
		{"min.insync.replicas": "0"},
		{"preallocate": "yes"},
		{"cleanup.policy": "delete,delete"},
		{"cleanup.policy": ""},
		{"compression.type": "ZSTD"},
		{"min.cleanable.dirty.ratio": "1.5"},
		{"min.cleanable.dirty.ratio": "NaN"},
		{"local.retention.ms": "7200000", "retention.ms": "3600000"},
		{"local.retention.ms": "-1", "retention.ms": "3600000"},
		{"local.retention.bytes": "10", "retention.bytes": "5"},
		{"confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
	}
	for _, configs := range bad {
		if _, err := ValidateTopicConfigs(configs); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: %v", configs, err)
		}
	}
	// Consistent pairs: -2 follows the total; an unlimited total allows any.
	for _, configs := range []map[string]string{
		{"local.retention.ms": "-2", "retention.ms": "1000"},
		{"local.retention.ms": "99999999", "retention.ms": "-1"},
		{"local.retention.bytes": "10"},
	} {
		if _, err := ValidateTopicConfigs(configs); err != nil {
			t.Errorf("%v: %v", configs, err)
		}
	}
}

// TestCheckClientTopicConfigs: the rules added after configs were first
// stored refuse a client's configs, and only there: ValidateTopicConfigs,
// which applying a command and loading a snapshot run, still takes what
// an earlier release stored.
func TestCheckClientTopicConfigs(t *testing.T) {
	t.Parallel()
	for _, configs := range []map[string]string{
		// With copying off the hot log keeps the total retention.
		{"remote.log.copy.disable": "true", "local.retention.ms": "3600000"},
		{"remote.log.copy.disable": "true", "local.retention.bytes": "10", "retention.bytes": "20"},
		// Decoding modifies schema validation; alone it would do nothing.
		{"strata.schema.validation.decode": "true"},
		{"strata.schema.validation.decode": "true", "confluent.value.schema.validation": "false"},
	} {
		canonical, err := ValidateTopicConfigs(configs)
		if err != nil {
			t.Errorf("%v stored by an earlier release: %v", configs, err)
			continue
		}
		if err := CheckClientTopicConfigs(canonical); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v from a client: %v", configs, err)
		}
	}
	for _, configs := range []map[string]string{
		{"remote.log.copy.disable": "true"},
		{"remote.log.copy.disable": "true", "local.retention.ms": "-2", "local.retention.bytes": "20", "retention.bytes": "20"},
		{"remote.log.copy.disable": "false", "local.retention.ms": "3600000"},
		{"strata.schema.validation.decode": "true", "confluent.key.schema.validation": "true"},
	} {
		if err := CheckClientTopicConfigs(configs); err != nil {
			t.Errorf("%v: %v", configs, err)
		}
	}
}
