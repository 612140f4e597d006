package ingest

// AlterConfigs: v0-2
//
// Behavior:
//   - Replaces a topic's explicit configs with the ones given: each listed
//     config is set, every other returns to its default. The resulting set is
//     validated as a whole; a name Kafka does not have or a bad value is
//     INVALID_CONFIG and changes nothing.
//   - Broker resources are INVALID_REQUEST: dynamic broker configs are
//     changed with IncrementalAlterConfigs, the rest are static flags.
//   - ValidateOnly checks without changing anything.
//
// Version notes:
//   - v1 differs only in throttling. v2: flexible.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

func init() { register(0, 2, handleAlterConfigs) }

func handleAlterConfigs(ctx context.Context, b *Broker, req0 *request, req *kmsg.AlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[string]int{}
	for _, rr := range req.Resources {
		seen[resourceKey(rr.ResourceType, rr.ResourceName)]++
	}
	for _, rr := range req.Resources {
		r := kmsg.NewAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
		err := checkAlterResource(rr.ResourceType, rr.ResourceName, seen, false)
		if err == nil {
			err = b.authorizeConfigs(req0, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		}
		if err == nil {
			err = replaceTopicConfigs(ctx, b, rr, req.ValidateOnly)
		}
		if err != nil {
			r.ErrorCode = errorCode(err)
			r.ErrorMessage = errorMessage(err)
			b.metrics.partitionErrors.WithLabelValues("AlterConfigs", kerr.ErrorForCode(r.ErrorCode).Error()).Inc()
		}
		resp.Resources = append(resp.Resources, r)
	}
	return replyWith(resp), nil
}

// replaceTopicConfigs makes the topic's explicit configs exactly rr's.
func replaceTopicConfigs(ctx context.Context, b *Broker, rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	topic, err := topicByName(b.meta.State(), rr.ResourceName)
	if err != nil {
		return err
	}
	set := map[string]string{}
	for _, c := range rr.Configs {
		if c.Value == nil {
			return fmt.Errorf("%w: config %q has a null value", ErrInvalidRequest, c.Name)
		}
		if _, dup := set[c.Name]; dup {
			return fmt.Errorf("%w: config %q given twice", ErrInvalidRequest, c.Name)
		}
		set[c.Name] = *c.Value
	}
	var reset []string
	for name := range topic.Configs {
		if _, kept := set[name]; !kept {
			reset = append(reset, name)
		}
	}
	slices.Sort(reset)
	return b.alterTopicConfigs(ctx, topic.Name, set, reset, validateOnly)
}
