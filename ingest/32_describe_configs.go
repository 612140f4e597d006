package ingest

// DescribeConfigs: v1-4
//
// Behavior:
//   - Topic resources list every topic config strata knows (or the names
//     asked for; names Kafka does not have are left out, as Kafka does), each
//     with its effective value and source: DYNAMIC_TOPIC_CONFIG when set on
//     the topic, DEFAULT_CONFIG otherwise. An unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker resources named by this broker's id list its static settings
//     (STATIC_BROKER_CONFIG, read-only) and every dynamic broker config with
//     its effective value and source (DYNAMIC_BROKER_CONFIG,
//     DYNAMIC_DEFAULT_BROKER_CONFIG or DEFAULT_CONFIG); the empty name lists
//     the cluster-wide dynamic defaults that are set; another broker's id is
//     INVALID_REQUEST (ask that broker). Broker loggers are INVALID_REQUEST.
//   - IncludeSynonyms lists the config itself as its only synonym;
//     IncludeDocumentation (v3+) adds each config's documentation.
//
// Version notes:
//   - v1: sources and synonyms. v3: config type and documentation.
//     v4: flexible.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(1, 4, handleDescribeConfigs) }

func handleDescribeConfigs(_ context.Context, b *Broker, r *request, req *kmsg.DescribeConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	st := b.meta.State()
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := []configEntry(nil), b.authorizeConfigs(r, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName)
		if err == nil {
			entries, err = describeResource(b, st, rr)
		}
		if err != nil {
			res.ErrorCode = errorCode(err)
			res.ErrorMessage = errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("DescribeConfigs", kerr.ErrorForCode(res.ErrorCode).Error()).Inc()
			resp.Resources = append(resp.Resources, res)
			continue
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			value := e.value
			c.Name, c.Value, c.Source, c.ConfigType = e.name, &value, e.source, e.configType
			c.ReadOnly = e.source == kmsg.ConfigSourceStaticBrokerConfig
			c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
			if req.IncludeSynonyms {
				s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				s.Name, s.Value, s.Source = e.name, &value, e.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, s)
			}
			if req.IncludeDocumentation {
				doc := e.documentation
				c.Documentation = &doc
			}
			res.Configs = append(res.Configs, c)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return replyWith(resp), nil
}

// describeResource returns the configs of one resource.
func describeResource(b *Broker, st *meta.State, rr kmsg.DescribeConfigsRequestResource) ([]configEntry, error) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		topic, err := topicByName(st, rr.ResourceName)
		if err != nil {
			return nil, err
		}
		return topicConfigEntries(topic), nil
	case kmsg.ConfigResourceTypeBroker:
		return b.brokerResource(st, rr.ResourceName)
	}
	return nil, fmt.Errorf("%w: resource type %v", ErrUnsupportedResource, rr.ResourceType)
}

// brokerResource returns this broker's settings, static and dynamic, when
// name is its id, and the cluster-wide dynamic defaults when name is "".
func (b *Broker) brokerResource(st *meta.State, name string) ([]configEntry, error) {
	if name == "" {
		return dynamicBrokerEntries(st, ""), nil
	}
	if id, err := strconv.ParseInt(name, 10, 32); err != nil || int32(id) != b.config.BrokerID {
		return nil, fmt.Errorf("%w: broker %q is not this broker (%d); ask it directly", ErrInvalidRequest, name, b.config.BrokerID)
	}
	entries := append(b.brokerConfigEntries(), dynamicBrokerEntries(st, name)...)
	slices.SortFunc(entries, func(x, y configEntry) int { return strings.Compare(x.name, y.name) })
	return entries, nil
}
