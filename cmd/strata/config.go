package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configResource is the one resource a config command names: a broker
// (--broker ID), the cluster-wide broker defaults (--broker-defaults) or a
// topic (--topic NAME).
type configResource struct {
	broker   int
	defaults bool
	topic    string
}

func (r *configResource) register(fs *flag.FlagSet) {
	fs.IntVar(&r.broker, "broker", -1, "a broker's dynamic configs, by broker `id`")
	fs.BoolVar(&r.defaults, "broker-defaults", false, "the cluster-wide default dynamic broker configs")
	fs.StringVar(&r.topic, "topic", "", "a topic's configs, by `name`")
}

// check refuses anything but exactly one resource.
func (r *configResource) check() error {
	given := 0
	if r.broker >= 0 {
		given++
	}
	if r.defaults {
		given++
	}
	if r.topic != "" {
		given++
		if err := checkTopicName("--topic", r.topic); err != nil {
			return err
		}
	}
	if r.broker < -1 {
		return usageError("--broker %d: broker ids are not negative", r.broker)
	}
	if _, err := int32Flag("broker", r.broker); err != nil {
		return err
	}
	if given != 1 {
		return usageError("name exactly one of --broker ID, --broker-defaults and --topic NAME")
	}
	return nil
}

func (r *configResource) String() string {
	switch {
	case r.topic != "":
		return fmt.Sprintf("topic %q", r.topic)
	case r.defaults:
		return "the cluster-wide broker defaults"
	}
	return "broker " + strconv.Itoa(r.broker)
}

// brokers is the broker list kadm's broker config calls take: none for
// the cluster defaults.
func (r *configResource) brokers() []int32 {
	if r.defaults {
		return nil
	}
	return []int32{int32(r.broker)}
}

// runConfigAlter is `strata config alter`: kafka-configs.sh --alter for
// one broker (dynamic broker configs such as the replication throttles),
// the cluster-wide broker defaults, or a topic, through
// IncrementalAlterConfigs. Brokers apply changes without a restart.
func runConfigAlter(ctx context.Context, e *env, args []string) error {
	var (
		client   clientFlags
		resource configResource
		set      keyValues
		deletes  stringList
	)
	fs := newFlagSet(e, "config alter", "(--broker ID|--broker-defaults|--topic NAME) --set NAME=VALUE... --delete NAME... [flags]")
	client.register(fs)
	resource.register(fs)
	fs.Var(&set, "set", "set config `name=value` (repeatable)")
	fs.Var(&deletes, "delete", "return config `name` to its default (repeatable)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("unexpected argument %q: name the resource with --broker, --broker-defaults or --topic", rest[0])
	}
	if err := resource.check(); err != nil {
		return err
	}
	if len(set.order) == 0 && len(deletes) == 0 {
		return usageError("nothing to change: give --set or --delete")
	}
	var changes []kadm.AlterConfig
	for _, name := range set.order {
		value := set.values[name]
		changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &value})
	}
	for _, name := range deletes {
		changes = append(changes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name})
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	var responses kadm.AlterConfigsResponses
	if resource.topic != "" {
		responses, err = admin.AlterTopicConfigs(ctx, changes, resource.topic)
	} else {
		responses, err = admin.AlterBrokerConfigs(ctx, changes, resource.brokers()...)
	}
	if err != nil {
		return err
	}
	for _, r := range responses {
		if r.Err != nil {
			return kafkaError(resource.String(), r.Err, r.ErrMessage)
		}
	}
	if client.json {
		return printJSON(e.stdout, map[string]any{"resource": resource.String(), "set": set.values, "deleted": []string(deletes)})
	}
	fmt.Fprintf(e.stdout, "altered %s", resource.String())
	for _, name := range set.order {
		fmt.Fprintf(e.stdout, "; set %s=%s", name, set.values[name])
	}
	for _, name := range deletes {
		fmt.Fprintf(e.stdout, "; reset %s", name)
	}
	_, err = fmt.Fprintln(e.stdout)
	return err
}

// runConfigDescribe is `strata config describe`: kafka-configs.sh
// --describe for a broker (its static settings and dynamic configs), the
// cluster-wide broker defaults, or a topic, each config with its value and
// where it comes from.
func runConfigDescribe(ctx context.Context, e *env, args []string) error {
	var (
		client   clientFlags
		resource configResource
	)
	fs := newFlagSet(e, "config describe", "(--broker ID|--broker-defaults|--topic NAME) [flags]")
	client.register(fs)
	resource.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("unexpected argument %q: name the resource with --broker, --broker-defaults or --topic", rest[0])
	}
	if err := resource.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	var described kadm.ResourceConfigs
	if resource.topic != "" {
		described, err = admin.DescribeTopicConfigs(ctx, resource.topic)
	} else {
		described, err = admin.DescribeBrokerConfigs(ctx, resource.brokers()...)
	}
	if err != nil {
		return err
	}
	type entry struct {
		Name   string `json:"name"`
		Value  string `json:"value"`
		Source string `json:"source"`
	}
	var out []entry
	for _, r := range described {
		if r.Err != nil {
			return kafkaError(resource.String(), r.Err, r.ErrMessage)
		}
		for _, c := range r.Configs {
			out = append(out, entry{Name: c.Key, Value: c.MaybeValue(), Source: sourceName(c.Source)})
		}
	}
	if client.json {
		return printJSON(e.stdout, out)
	}
	tw := newTable(e.stdout, "NAME", "VALUE", "SOURCE")
	for _, c := range out {
		tw.row(c.Name, c.Value, c.Source)
	}
	return tw.flush()
}

// sourceName is a config source as kafka-configs.sh prints it.
func sourceName(s kmsg.ConfigSource) string {
	return strings.ToLower(strings.TrimSuffix(s.String(), "_CONFIG"))
}
