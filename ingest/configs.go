package ingest

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

// configEntry is one config as DescribeConfigs and CreateTopics report it.
type configEntry struct {
	name          string
	value         string
	source        kmsg.ConfigSource
	configType    kmsg.ConfigType
	documentation string
}

// topicConfigEntries lists every topic config strata knows for topic, each
// with its effective value and where it comes from: set on the topic, or the
// default.
func topicConfigEntries(topic meta.Topic) []configEntry {
	defs := meta.TopicConfigDefs()
	out := make([]configEntry, 0, len(defs))
	for _, def := range defs {
		value, _ := topic.Config(def.Name)
		e := configEntry{name: def.Name, value: value, source: kmsg.ConfigSourceDefaultConfig, configType: configType(def.Type), documentation: def.Doc}
		if v, ok := topic.Configs[def.Name]; ok {
			e.value, e.source = v, kmsg.ConfigSourceDynamicTopicConfig
		}
		out = append(out, e)
	}
	return out
}

// configType maps meta's config types to the protocol's.
func configType(t meta.ConfigType) kmsg.ConfigType {
	switch t {
	case meta.ConfigBoolean:
		return kmsg.ConfigTypeBoolean
	case meta.ConfigInt:
		return kmsg.ConfigTypeInt
	case meta.ConfigLong:
		return kmsg.ConfigTypeLong
	case meta.ConfigDouble:
		return kmsg.ConfigTypeDouble
	case meta.ConfigString:
		return kmsg.ConfigTypeString
	case meta.ConfigList:
		return kmsg.ConfigTypeList
	}
	return kmsg.ConfigTypeUnknown
}

// brokerConfigEntries lists the broker settings DescribeConfigs reports for
// this broker. They are static: set by `strata server` flags, read-only here.
func (b *Broker) brokerConfigEntries() []configEntry {
	c := b.config
	entry := func(name, value string, t kmsg.ConfigType, doc string) configEntry {
		return configEntry{name: name, value: value, source: kmsg.ConfigSourceStaticBrokerConfig, configType: t, documentation: doc}
	}
	return []configEntry{
		entry("auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics), kmsg.ConfigTypeBoolean, "Create unknown topics on Metadata and Produce."),
		entry("connections.max.idle.ms", strconv.FormatInt(c.ConnectionsMaxIdle.Milliseconds(), 10), kmsg.ConfigTypeLong, "Close connections idle this long, in ms."),
		entry("fetch.max.bytes", strconv.FormatInt(int64(c.FetchMaxBytes), 10), kmsg.ConfigTypeInt, "Largest Fetch response, in bytes."),
		entry("log.dirs", c.DataDir, kmsg.ConfigTypeString, "Where partition directories live."),
		entry("node.id", strconv.FormatInt(int64(c.BrokerID), 10), kmsg.ConfigTypeInt, "This broker's id."),
		entry("num.partitions", strconv.FormatInt(int64(c.DefaultPartitions), 10), kmsg.ConfigTypeInt, "Partitions of topics created without a count."),
		entry("socket.request.max.bytes", strconv.FormatInt(int64(c.MaxRequestBytes), 10), kmsg.ConfigTypeInt, "Largest request frame accepted, in bytes."),
	}
}

// alterTopicConfigs checks a change to a topic's explicit configs (set these,
// return those to their defaults) against the whole resulting set and,
// unless validateOnly, proposes it.
func (b *Broker) alterTopicConfigs(ctx context.Context, name string, set map[string]string, reset []string, validateOnly bool) error {
	topic, err := topicByName(b.meta.State(), name)
	if err != nil {
		return err
	}
	next := maps.Clone(topic.Configs)
	if next == nil {
		next = map[string]string{}
	}
	for _, n := range reset {
		if _, ok := meta.LookupTopicConfig(n); !ok {
			return fmt.Errorf("%w: unknown config %q", meta.ErrInvalidConfig, n)
		}
		delete(next, n)
	}
	maps.Copy(next, set)
	canonical, err := meta.ValidateTopicConfigs(next)
	if err != nil {
		return err
	}
	if err := meta.CheckClientTopicConfigs(canonical); err != nil {
		return err
	}
	if err := meta.CheckTopicConfigChange(b.meta.State(), topic, canonical); err != nil {
		return err
	}
	if err := meta.CheckClientTopicConfigChange(b.meta.State(), topic, canonical); err != nil {
		return err
	}
	if err := b.checkCompaction(canonical); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	_, err = b.meta.Propose(ctx, &meta.AlterTopicConfigs{Name: topic.Name, ID: topic.ID, Set: set, Delete: reset})
	if err == nil {
		b.log.Info("altered topic configs", "topic", topic.Name, "set", set, "reset", reset)
	}
	return err
}

// checkAlterResource refuses what the Alter APIs cannot change: resources
// other than topics and, where brokers is true (IncrementalAlterConfigs),
// brokers, and a resource named twice in one request.
func checkAlterResource(resourceType kmsg.ConfigResourceType, name string, seen map[string]int, brokers bool) error {
	switch {
	case resourceType == kmsg.ConfigResourceTypeBroker && !brokers:
		return fmt.Errorf("%w: dynamic broker configs are changed with IncrementalAlterConfigs; the other broker settings are `strata server` flags", ErrUnsupportedResource)
	case resourceType != kmsg.ConfigResourceTypeTopic && resourceType != kmsg.ConfigResourceTypeBroker:
		return fmt.Errorf("%w: only topic and broker configs can be altered", ErrUnsupportedResource)
	}
	if seen[resourceKey(resourceType, name)] > 1 {
		return fmt.Errorf("%w: %v %q named more than once", ErrInvalidRequest, resourceType, name)
	}
	return nil
}

// resourceKey tells resources apart across types, for checkAlterResource.
func resourceKey(resourceType kmsg.ConfigResourceType, name string) string {
	return resourceType.String() + "/" + name
}

// dynamicBrokerEntries lists the dynamic broker configs of a broker
// resource: for the cluster default (broker ""), those set on it; for a
// broker, every one with its effective value and where it comes from.
func dynamicBrokerEntries(st *meta.State, broker string) []configEntry {
	var out []configEntry
	for _, def := range meta.BrokerConfigDefs() {
		e := configEntry{name: def.Name, configType: configType(def.Type), documentation: def.Doc}
		if broker == "" {
			v, ok := st.BrokerConfigs("")[def.Name]
			if !ok {
				continue
			}
			e.value, e.source = v, kmsg.ConfigSourceDynamicDefaultBrokerConfig
			out = append(out, e)
			continue
		}
		id, _ := strconv.ParseInt(broker, 10, 32)
		var src meta.ConfigSource
		e.value, src = st.BrokerConfig(int32(id), def.Name)
		e.source = map[meta.ConfigSource]kmsg.ConfigSource{
			meta.SourceDefault:        kmsg.ConfigSourceDefaultConfig,
			meta.SourceClusterDefault: kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			meta.SourceBroker:         kmsg.ConfigSourceDynamicBrokerConfig,
		}[src]
		out = append(out, e)
	}
	return out
}

// authorizeConfigs checks op (DescribeConfigs, AlterConfigs) on a config
// resource: a topic's own ACLs (TOPIC_AUTHORIZATION_FAILED), the cluster's
// for a broker's configs (CLUSTER_AUTHORIZATION_FAILED).
func (b *Broker) authorizeConfigs(r *request, op acl.Operation, t kmsg.ConfigResourceType, name string) error {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorize(r, op, acl.Topic, name) {
			return ErrTopicAuthorization
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.authorizeCluster(r, op) {
			return ErrClusterAuthorization
		}
	}
	return nil
}
