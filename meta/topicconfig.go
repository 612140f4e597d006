package meta

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ConfigType is the type of a topic config, named as Kafka's DescribeConfigs
// names it.
type ConfigType uint8

// Config types.
const (
	ConfigBoolean ConfigType = iota + 1
	ConfigInt
	ConfigLong
	ConfigDouble
	ConfigString
	ConfigList
)

func (t ConfigType) String() string {
	switch t {
	case ConfigBoolean:
		return "BOOLEAN"
	case ConfigInt:
		return "INT"
	case ConfigLong:
		return "LONG"
	case ConfigDouble:
		return "DOUBLE"
	case ConfigString:
		return "STRING"
	case ConfigList:
		return "LIST"
	default:
		return fmt.Sprintf("ConfigType(%d)", uint8(t))
	}
}

// ConfigDef describes one topic config strata knows: Kafka's name,
// type, meaning and unit, and strata's default. A topic stores only the
// configs set on it explicitly; every other config has its default.
type ConfigDef struct {
	Name    string
	Type    ConfigType
	Default string
	// Valid describes the accepted values, for error messages and docs.
	Valid string
	Doc   string

	check func(value string) (canonical string, err error)
}

// Validate checks value against the definition and returns it in canonical
// form (trimmed; booleans lower case; numbers in plain decimal; list items
// comma-separated without spaces). The error wraps ErrInvalidConfig.
func (d ConfigDef) Validate(value string) (string, error) {
	canonical, err := d.check(strings.TrimSpace(value))
	if err != nil {
		return "", fmt.Errorf("%w: %s=%q: %v (valid: %s)", ErrInvalidConfig, d.Name, value, err, d.Valid)
	}
	return canonical, nil
}

// Strata's defaults differ from Kafka's only where tiering wants smaller
// numbers, so that data reaches the bucket within minutes and the local disk
// holds only the hot tail:
//
//   - segment.bytes 128 MiB (Kafka 1 GiB): a segment is one PUT and one
//     object; 128 MiB keeps uploads short and ranged reads well aligned.
//   - segment.ms 10 minutes (Kafka 7 days): a quiet partition's data is
//     sealed, and so can be tiered, within 10 minutes.
//   - local.retention.ms 1 hour (Kafka -2, "same as retention.ms"):
//     consumers within an hour of the head read from local disk; older
//     reads go to the bucket. An explicit value must not exceed retention.ms;
//     the default is capped at retention.ms by whoever applies it.
//   - remote.storage.enable true (Kafka false): tiering is on by default,
//     compacted topics included (their segments in the bucket are
//     recompacted, which Kafka does not do).
//   - file.delete.delay.ms 0 (Kafka 60000): a deleted segment is already
//     kept until no reader holds it, which Kafka's delay approximates; a
//     delay set on a topic is added after that.
//
// Schema validation on produce (package registry) takes Confluent Server's
// names (confluent.*.schema.validation and the subject name strategies)
// and one of strata's own, strata.schema.validation.decode.
//
// Every other default is Kafka 3.9's.
var topicConfigDefs = []ConfigDef{
	listConfig("cleanup.policy", "delete", []string{"compact", "delete"},
		"How old segments are retired: delete them by retention, compact them by key, or both."),
	enumConfig("compression.type", "producer", []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"},
		"The codec batches are stored with; producer keeps what the producer sent."),
	boolConfig("confluent.key.schema.validation", false,
		"Refuse produced records whose key does not carry the id of a schema registered under the topic's key subject (Confluent Server's name)."),
	enumConfig("confluent.key.subject.name.strategy", TopicNameStrategy, []string{TopicNameStrategy},
		"How the key subject is named: <topic>-key (only TopicNameStrategy is supported)."),
	boolConfig("confluent.value.schema.validation", false,
		"Refuse produced records whose value does not carry the id of a schema registered under the topic's value subject (Confluent Server's name)."),
	enumConfig("confluent.value.subject.name.strategy", TopicNameStrategy, []string{TopicNameStrategy},
		"How the value subject is named: <topic>-value (only TopicNameStrategy is supported)."),
	longConfig("delete.retention.ms", 86400000, 0, math.MaxInt64,
		"How long delete tombstones are kept on compacted topics, in ms."),
	longConfig("file.delete.delay.ms", 0, 0, math.MaxInt64,
		"How long a deleted segment's log lingers, once no reader holds it, before its space is freed, in ms."),
	longConfig("flush.messages", math.MaxInt64, 1, math.MaxInt64,
		"Force an fsync after this many messages."),
	longConfig("flush.ms", math.MaxInt64, 0, math.MaxInt64,
		"Force an fsync after this many ms."),
	throttledReplicasConfig(FollowerThrottledReplicas,
		"The replicas whose catch-up fetches followers throttle to follower.replication.throttled.rate: partition:broker pairs, or * for all."),
	intConfig("index.interval.bytes", 4096, 0, math.MaxInt32,
		"Bytes of log between two offset index entries."),
	throttledReplicasConfig(LeaderThrottledReplicas,
		"The replicas whose catch-up reads leaders throttle to leader.replication.throttled.rate: partition:broker pairs, or * for all."),
	longConfig("local.retention.bytes", -2, -2, math.MaxInt64,
		"Local (hot tier) size limit per partition in bytes; -2 means retention.bytes."),
	longConfig("local.retention.ms", 3600000, -2, math.MaxInt64,
		"How long data stays on local disk once tiered, in ms; -2 means retention.ms."),
	longConfig("max.compaction.lag.ms", math.MaxInt64, 1, math.MaxInt64,
		"The longest a message can stay ineligible for compaction, in ms."),
	intConfig("max.message.bytes", 1048588, 0, math.MaxInt32,
		"The largest record batch accepted, in bytes."),
	longConfig("message.timestamp.after.max.ms", math.MaxInt64, 0, math.MaxInt64,
		"How far ahead of the broker's clock a CreateTime timestamp may be, in ms."),
	longConfig("message.timestamp.before.max.ms", math.MaxInt64, 0, math.MaxInt64,
		"How far behind the broker's clock a CreateTime timestamp may be, in ms."),
	enumConfig("message.timestamp.type", "CreateTime", []string{"CreateTime", "LogAppendTime"},
		"Whether record timestamps are the producer's or the broker's append time."),
	doubleConfig("min.cleanable.dirty.ratio", 0.5, 0, 1,
		"The dirty fraction of the log that triggers compaction."),
	longConfig("min.compaction.lag.ms", 0, 0, math.MaxInt64,
		"The shortest a message stays uncompacted, in ms."),
	intConfig("min.insync.replicas", 1, 1, math.MaxInt32,
		"The fewest in-sync replicas an acks=all write needs."),
	boolConfig("preallocate", false,
		"Preallocate segment files."),
	boolConfig("remote.log.copy.disable", false,
		"Stop copying new segments to the bucket while still reading old ones; the hot log then keeps retention.ms and retention.bytes."),
	boolConfig("remote.log.delete.on.disable", false,
		"Delete the remote data when remote storage is turned off."),
	boolConfig("remote.storage.enable", true,
		"Tier sealed segments to the bucket."),
	longConfig("retention.bytes", -1, -1, math.MaxInt64,
		"Size limit per partition in bytes, over both tiers; -1 means none."),
	longConfig("retention.ms", 604800000, -1, math.MaxInt64,
		"How long data is kept, over both tiers, in ms; -1 means forever."),
	// Kafka's floors are 14 and 4 bytes; the hot log needs room for one
	// batch header (61 bytes) and four time index entries (48 bytes).
	// segment.index.bytes defaults to 1 MiB, four times what a 128 MiB
	// segment needs at the 4 KiB index interval (Kafka: 10 MiB for 1 GiB).
	intConfig("segment.bytes", 134217728, 61, math.MaxInt32,
		"The size at which a segment is sealed, in bytes."),
	intConfig("segment.index.bytes", 1048576, 48, math.MaxInt32,
		"The size of a segment's offset index, in bytes."),
	longConfig("segment.jitter.ms", 0, 0, math.MaxInt64,
		"A random amount subtracted from segment.ms per segment, in ms."),
	longConfig("segment.ms", 600000, 1, math.MaxInt64,
		"The age at which a segment is sealed even if not full, in ms."),
	boolConfig("strata.schema.validation.decode", false,
		"With schema validation on, also refuse records whose key or value does not decode with the schema its id names."),
	boolConfig("unclean.leader.election.enable", false,
		"Allow a replica outside the ISR to become leader, losing data."),
}

// topicConfigIndex maps a name to its position in topicConfigDefs.
var topicConfigIndex = func() map[string]int {
	index := make(map[string]int, len(topicConfigDefs))
	for i, d := range topicConfigDefs {
		if _, dup := index[d.Name]; dup {
			panic("meta: topic config " + d.Name + " defined twice")
		}
		if i > 0 && topicConfigDefs[i-1].Name > d.Name {
			panic("meta: topic configs not sorted at " + d.Name)
		}
		if _, err := d.Validate(d.Default); err != nil {
			panic("meta: bad default: " + err.Error())
		}
		index[d.Name] = i
	}
	return index
}()

// TopicConfigDefs returns every known topic config, sorted by name.
func TopicConfigDefs() []ConfigDef {
	return slices.Clone(topicConfigDefs)
}

// LookupTopicConfig returns the definition of the named config.
func LookupTopicConfig(name string) (ConfigDef, bool) {
	i, ok := topicConfigIndex[name]
	if !ok {
		return ConfigDef{}, false
	}
	return topicConfigDefs[i], true
}

// ValidateTopicConfigs checks a set of explicit topic configs: every name
// known, every value valid, and the pairs that constrain each other
// consistent. It returns the configs in canonical form. Errors wrap
// ErrInvalidConfig.
func ValidateTopicConfigs(configs map[string]string) (map[string]string, error) {
	if len(configs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(configs))
	// Sorted, so that the first error reported is the same everywhere.
	for _, name := range sortedKeys(configs) {
		def, ok := LookupTopicConfig(name)
		if !ok {
			return nil, fmt.Errorf("%w: unknown config %q", ErrInvalidConfig, name)
		}
		value, err := def.Validate(configs[name])
		if err != nil {
			return nil, err
		}
		out[name] = value
	}
	if err := checkLocalRetention(out, "local.retention.ms", "retention.ms"); err != nil {
		return nil, err
	}
	if err := checkLocalRetention(out, "local.retention.bytes", "retention.bytes"); err != nil {
		return nil, err
	}
	if out["remote.log.delete.on.disable"] == "true" {
		return nil, fmt.Errorf("%w: remote.log.delete.on.disable=true: deleting a topic's tiered data when remote.storage.enable is turned off is not built; turning it off keeps that data readable, and deleting the topic deletes it", ErrInvalidConfig)
	}
	return out, nil
}

// CheckClientTopicConfigs checks the rules a client's topic configs must
// meet beyond ValidateTopicConfigs: rules added after configs were first
// stored in the metadata. ValidateTopicConfigs runs when a command is
// applied and when a snapshot is loaded, where a new rule would refuse
// what an earlier release stored (a node would fail to load its snapshot,
// or refuse a command its peers applied); these run only where a client
// sets configs (CreateTopics, AlterConfigs), on the configs
// ValidateTopicConfigs returned. Errors wrap ErrInvalidConfig.
func CheckClientTopicConfigs(configs map[string]string) error {
	if err := checkCopyDisabledRetention(configs, "local.retention.ms", "retention.ms"); err != nil {
		return err
	}
	if err := checkCopyDisabledRetention(configs, "local.retention.bytes", "retention.bytes"); err != nil {
		return err
	}
	if configs["strata.schema.validation.decode"] == "true" && configs["confluent.value.schema.validation"] != "true" && configs["confluent.key.schema.validation"] != "true" {
		return fmt.Errorf("%w: strata.schema.validation.decode=true decodes what schema validation checks, and neither confluent.value.schema.validation nor confluent.key.schema.validation is true: set one of them too", ErrInvalidConfig)
	}
	return nil
}

// TopicNameStrategy is the one subject name strategy schema validation
// supports: the subject of a topic's values is <topic>-value, of its keys
// <topic>-key.
const TopicNameStrategy = "io.confluent.kafka.serializers.subject.TopicNameStrategy"

// Compacted reports whether a topic with these explicit configs is
// compacted: its cleanup.policy includes compact.
func Compacted(configs map[string]string) bool {
	return slices.Contains(strings.Split(effectiveTopicConfig(configs, "cleanup.policy"), ","), "compact")
}

// CopyDisabled reports whether a topic with these explicit configs has
// remote.log.copy.disable: its new segments stay out of the bucket, and
// its hot log keeps the topic-wide retention (offload.LocalRetention).
func CopyDisabled(configs map[string]string) bool {
	return effectiveTopicConfig(configs, "remote.log.copy.disable") == "true"
}

// Deletes reports whether a topic with these explicit configs deletes old
// data: its cleanup.policy includes delete, so retention.ms and
// retention.bytes apply and DeleteRecords is allowed.
func Deletes(configs map[string]string) bool {
	return slices.Contains(strings.Split(effectiveTopicConfig(configs, "cleanup.policy"), ","), "delete")
}

// checkLocalRetention refuses an explicit local retention above the total
// retention, as Kafka does. -2 (follow the total) and -1 (unlimited total)
// are always consistent.
func checkLocalRetention(configs map[string]string, localName, totalName string) error {
	localValue, ok := configs[localName]
	if !ok {
		return nil
	}
	local, _ := strconv.ParseInt(localValue, 10, 64)
	total, _ := strconv.ParseInt(effectiveTopicConfig(configs, totalName), 10, 64)
	if local == -2 || total == -1 {
		return nil
	}
	if local == -1 || local > total {
		return fmt.Errorf("%w: %s=%d must not exceed %s=%d", ErrInvalidConfig, localName, local, totalName, total)
	}
	return nil
}

// checkCopyDisabledRetention refuses, while remote.log.copy.disable is
// true, an explicit local retention other than the total one, as Kafka
// does: no more segments reach the bucket, so the hot log keeps the total
// retention (offload.LocalRetention) and one set apart from it would be
// ignored. -2 (follow the total) is always consistent.
func checkCopyDisabledRetention(configs map[string]string, localName, totalName string) error {
	localValue, ok := configs[localName]
	if !ok || !CopyDisabled(configs) {
		return nil
	}
	local, _ := strconv.ParseInt(localValue, 10, 64)
	total, _ := strconv.ParseInt(effectiveTopicConfig(configs, totalName), 10, 64)
	if local == -2 || local == total {
		return nil
	}
	return fmt.Errorf("%w: remote.log.copy.disable=true keeps the hot log by %s=%d, as no more segments reach the bucket: set %s to -2 or %d, or remove it (it is %d)",
		ErrInvalidConfig, totalName, total, localName, total, local)
}

// effectiveTopicConfig returns the explicit value of name in configs, or its
// default. name must be known.
func effectiveTopicConfig(configs map[string]string, name string) string {
	if v, ok := configs[name]; ok {
		return v
	}
	def, _ := LookupTopicConfig(name)
	return def.Default
}

func boolConfig(name string, def bool, doc string) ConfigDef {
	return ConfigDef{
		Name: name, Type: ConfigBoolean, Default: strconv.FormatBool(def), Valid: "true, false", Doc: doc,
		check: func(v string) (string, error) {
			switch strings.ToLower(v) {
			case "true":
				return "true", nil
			case "false":
				return "false", nil
			}
			return "", fmt.Errorf("not a boolean")
		},
	}
}

func intConfig(name string, def, minimum, maximum int64, doc string) ConfigDef {
	d := longConfig(name, def, minimum, maximum, doc)
	d.Type = ConfigInt
	return d
}

func longConfig(name string, def, minimum, maximum int64, doc string) ConfigDef {
	valid := fmt.Sprintf("[%d, %d]", minimum, maximum)
	return ConfigDef{
		Name: name, Type: ConfigLong, Default: strconv.FormatInt(def, 10), Valid: valid, Doc: doc,
		check: func(v string) (string, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", fmt.Errorf("not an integer")
			}
			if n < minimum || n > maximum {
				return "", fmt.Errorf("out of range")
			}
			return strconv.FormatInt(n, 10), nil
		},
	}
}

func doubleConfig(name string, def, minimum, maximum float64, doc string) ConfigDef {
	format := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	valid := fmt.Sprintf("[%s, %s]", format(minimum), format(maximum))
	return ConfigDef{
		Name: name, Type: ConfigDouble, Default: format(def), Valid: valid, Doc: doc,
		check: func(v string) (string, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) {
				return "", fmt.Errorf("not a number")
			}
			if f < minimum || f > maximum {
				return "", fmt.Errorf("out of range")
			}
			return format(f), nil
		},
	}
}

func enumConfig(name, def string, values []string, doc string) ConfigDef {
	return ConfigDef{
		Name: name, Type: ConfigString, Default: def, Valid: strings.Join(values, ", "), Doc: doc,
		check: func(v string) (string, error) {
			if !slices.Contains(values, v) {
				return "", fmt.Errorf("not one of the valid values")
			}
			return v, nil
		},
	}
}

func listConfig(name, def string, values []string, doc string) ConfigDef {
	return ConfigDef{
		Name: name, Type: ConfigList, Default: def, Valid: "a comma-separated list of " + strings.Join(values, ", "), Doc: doc,
		check: func(v string) (string, error) {
			var items []string
			for _, item := range strings.Split(v, ",") {
				item = strings.TrimSpace(item)
				if !slices.Contains(values, item) {
					return "", fmt.Errorf("item %q is not one of the valid values", item)
				}
				if slices.Contains(items, item) {
					return "", fmt.Errorf("item %q listed twice", item)
				}
				items = append(items, item)
			}
			return strings.Join(items, ","), nil
		},
	}
}

// Replication throttle topic configs.
const (
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// throttledReplicasConfig is Kafka's throttled replicas list: empty, "*",
// or partition:broker pairs.
func throttledReplicasConfig(name, doc string) ConfigDef {
	return ConfigDef{
		Name: name, Type: ConfigList, Default: "", Valid: "empty, * (every replica), or partition:broker pairs such as 0:101,1:102", Doc: doc,
		check: func(v string) (string, error) {
			if v == "" || v == "*" {
				return v, nil
			}
			var items []string
			for _, item := range strings.Split(v, ",") {
				partition, broker, ok := strings.Cut(strings.TrimSpace(item), ":")
				p, perr := strconv.ParseInt(strings.TrimSpace(partition), 10, 32)
				b, berr := strconv.ParseInt(strings.TrimSpace(broker), 10, 32)
				if !ok || perr != nil || berr != nil || p < 0 || b < 0 {
					return "", fmt.Errorf("item %q is not partition:broker", item)
				}
				canonical := fmt.Sprintf("%d:%d", p, b)
				if slices.Contains(items, canonical) {
					return "", fmt.Errorf("item %q listed twice", item)
				}
				items = append(items, canonical)
			}
			return strings.Join(items, ","), nil
		},
	}
}

// ThrottledReplica reports whether a throttled replicas list (the value of
// leader. or follower.replication.throttled.replicas) names the replica of
// partition on broker.
func ThrottledReplica(list string, partition, broker int32) bool {
	if list == "*" {
		return true
	}
	want := fmt.Sprintf("%d:%d", partition, broker)
	for _, item := range strings.Split(list, ",") {
		if item == want {
			return true
		}
	}
	return false
}
