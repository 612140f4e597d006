package ingest

// IncrementalAlterConfigs: v0-1
//
// Behavior:
//   - Changes some of a topic's configs: SET a value, DELETE (return to the
//     default), APPEND to or SUBTRACT from a list config (cleanup.policy).
//     The resulting set is validated as a whole; a name Kafka does not have,
//     a bad value, or APPEND/SUBTRACT on a config that is not a list is
//     INVALID_CONFIG and changes nothing. A config named twice in one
//     resource is INVALID_REQUEST.
//   - Broker resources change dynamic broker configs, kept in the metadata
//     and applied by every broker without a restart: the resource name is
//     a broker id, or empty for the cluster-wide default.
//     leader.replication.throttled.rate and
//     follower.replication.throttled.rate are the ones strata has; any
//     other name is INVALID_CONFIG naming them (the other broker settings
//     are static flags of strata server), as is APPEND or SUBTRACT.
//   - ValidateOnly checks without changing anything.
//
// Version notes:
//   - v1: flexible.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

func init() { register(0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(ctx context.Context, b *Broker, req0 *request, req *kmsg.IncrementalAlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[string]int{}
	for _, rr := range req.Resources {
		seen[resourceKey(rr.ResourceType, rr.ResourceName)]++
	}
	for _, rr := range req.Resources {
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
		err := checkAlterResource(rr.ResourceType, rr.ResourceName, seen, true)
		if err == nil {
			err = b.authorizeConfigs(req0, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		switch {
		case err != nil:
		case rr.ResourceType == kmsg.ConfigResourceTypeBroker:
			err = changeBrokerConfigs(ctx, b, rr, req.ValidateOnly)
		default:
			err = changeTopicConfigs(ctx, b, rr, req.ValidateOnly)
		}
		if err != nil {
			r.ErrorCode = errorCode(err)
			r.ErrorMessage = errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("IncrementalAlterConfigs", kerr.ErrorForCode(r.ErrorCode).Error()).Inc()
		}
		resp.Resources = append(resp.Resources, r)
	}
	return replyWith(resp), nil
}

// changeTopicConfigs applies rr's operations to the topic's configs.
func changeTopicConfigs(ctx context.Context, b *Broker, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	topic, err := topicByName(b.meta.State(), rr.ResourceName)
	if err != nil {
		return err
	}
	set := map[string]string{}
	var reset []string
	named := map[string]bool{}
	for _, c := range rr.Configs {
		if named[c.Name] {
			return fmt.Errorf("%w: config %q changed twice", ErrInvalidRequest, c.Name)
		}
		named[c.Name] = true
		def, known := meta.LookupTopicConfig(c.Name)
		if !known {
			return fmt.Errorf("%w: unknown config %q", meta.ErrInvalidConfig, c.Name)
		}
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: SET %q with a null value", meta.ErrInvalidConfig, c.Name)
			}
			set[c.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			reset = append(reset, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if def.Type != meta.ConfigList {
				return fmt.Errorf("%w: %v on %q, which is not a list", meta.ErrInvalidConfig, c.Op, c.Name)
			}
			current, _ := topic.Config(c.Name)
			set[c.Name] = editList(current, value, c.Op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return fmt.Errorf("%w: unknown operation %d on %q", ErrInvalidRequest, c.Op, c.Name)
		}
	}
	return b.alterTopicConfigs(ctx, topic.Name, set, reset, validateOnly)
}

// changeBrokerConfigs applies rr's operations to a broker resource's
// dynamic configs.
func changeBrokerConfigs(ctx context.Context, b *Broker, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	cmd := &meta.AlterBrokerConfigs{Broker: rr.ResourceName, Set: map[string]string{}}
	named := map[string]bool{}
	for _, c := range rr.Configs {
		if named[c.Name] {
			return fmt.Errorf("%w: config %q changed twice", ErrInvalidRequest, c.Name)
		}
		named[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: SET %q with a null value", meta.ErrInvalidConfig, c.Name)
			}
			cmd.Set[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			cmd.Delete = append(cmd.Delete, c.Name)
		default:
			return fmt.Errorf("%w: %v on broker config %q, which is not a list", meta.ErrInvalidConfig, c.Op, c.Name)
		}
	}
	if validateOnly {
		return b.meta.State().Check(cmd)
	}
	_, err := b.meta.Propose(ctx, cmd)
	if err == nil {
		b.log.Info("altered dynamic broker configs", "broker", rr.ResourceName, "set", cmd.Set, "deleted", cmd.Delete)
	}
	return err
}

// editList appends the comma-separated items of change to list, or removes
// them from it. Appending an item already present keeps one.
func editList(list, change string, add bool) string {
	items := splitList(list)
	for _, item := range splitList(change) {
		present := slices.Contains(items, item)
		switch {
		case add && !present:
			items = append(items, item)
		case !add && present:
			items = slices.DeleteFunc(items, func(s string) bool { return s == item })
		}
	}
	return strings.Join(items, ",")
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
