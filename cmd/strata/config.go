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
// (--broker ID), the cluster-wide broker defaults (--broker-defaults), a
// topic (--topic NAME), or a client quota entity (--user, --client-id or
// both, kafka-configs.sh's users and clients; <default> names the default).
type configResource struct {
	broker          int
	defaults        bool
	topic           string
	user, clientID  string
	hasUser, hasCID bool
}

// configSynopsis is how config commands name their resource.
const configSynopsis = "(--broker ID|--broker-defaults|--topic T|--user U|--client-id C)"

// defaultEntity is the name that stands for a quota entity type's default.
const defaultEntity = "<default>"

func (r *configResource) register(fs *flag.FlagSet) {
	fs.IntVar(&r.broker, "broker", -1, "a broker's dynamic configs, by broker `id`")
	fs.BoolVar(&r.defaults, "broker-defaults", false, "the cluster-wide default dynamic broker configs")
	fs.StringVar(&r.topic, "topic", "", "a topic's configs, by `name`")
	fs.Func("user", "a user's client quotas (`name`, or <default>); with --client-id, that user's client's", func(s string) error {
		r.user, r.hasUser = s, true
		return nil
	})
	fs.Func("client-id", "a client id's quotas (`name`, or <default>)", func(s string) error {
		r.clientID, r.hasCID = s, true
		return nil
	})
}

// quota reports whether the resource is a client quota entity.
func (r *configResource) quota() bool { return r.hasUser || r.hasCID }

// entity is the quota entity the resource names.
func (r *configResource) entity() kadm.ClientQuotaEntity {
	var out kadm.ClientQuotaEntity
	for _, part := range []struct {
		kind, name string
		given      bool
	}{{"user", r.user, r.hasUser}, {"client-id", r.clientID, r.hasCID}} {
		if !part.given {
			continue
		}
		c := kadm.ClientQuotaEntityComponent{Type: part.kind}
		if part.name != defaultEntity {
			name := part.name
			c.Name = &name
		}
		out = append(out, c)
	}
	return out
}

// check refuses arguments (rest) and anything but exactly one resource.
func (r *configResource) check(rest []string) error {
	if len(rest) != 0 {
		return usageError("unexpected argument %q: name the resource with --broker, --broker-defaults, --topic, --user or --client-id", rest[0])
	}
	given := 0
	if r.broker >= 0 {
		given++
	}
	if r.defaults {
		given++
	}
	if r.quota() {
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
		return usageError("name exactly one of --broker ID, --broker-defaults, --topic NAME and a quota entity (--user, --client-id)")
	}
	return nil
}

func (r *configResource) String() string {
	switch {
	case r.quota():
		return "quotas of " + r.entity().String()
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
	fs := newFlagSet(e, "config alter", configSynopsis+" --set NAME=VALUE... --delete NAME... [flags]")
	client.register(fs)
	resource.register(fs)
	fs.Var(&set, "set", "set config `name=value` (repeatable)")
	fs.Var(&deletes, "delete", "return config `name` to its default (repeatable)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := resource.check(rest); err != nil {
		return err
	}
	if len(set.order) == 0 && len(deletes) == 0 {
		return usageError("nothing to change: give --set or --delete")
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	if resource.quota() {
		err = alterQuotas(ctx, admin, &resource, set, deletes)
	} else {
		err = alterConfigs(ctx, admin, &resource, configChanges(set, deletes))
	}
	if err != nil {
		return err
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

// alterQuotas sets and removes a quota entity's values (AlterClientQuotas).
func alterQuotas(ctx context.Context, admin *kadm.Client, resource *configResource, set keyValues, deletes stringList) error {
	entry := kadm.AlterClientQuotaEntry{Entity: resource.entity()}
	for _, name := range set.order {
		v, err := strconv.ParseFloat(set.values[name], 64)
		if err != nil {
			return usageError("--set %s=%s: a quota is a number", name, set.values[name])
		}
		entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: name, Value: v})
	}
	for _, name := range deletes {
		entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: name, Remove: true})
	}
	altered, err := admin.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{entry})
	if err != nil {
		return err
	}
	for _, a := range altered {
		if a.Err != nil {
			return kafkaError(resource.String(), a.Err, a.ErrMessage)
		}
	}
	return nil
}

// configChanges are --set and --delete as IncrementalAlterConfigs
// operations.
func configChanges(set keyValues, deletes stringList) []kadm.AlterConfig {
	var changes []kadm.AlterConfig
	for _, name := range set.order {
		value := set.values[name]
		changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &value})
	}
	for _, name := range deletes {
		changes = append(changes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name})
	}
	return changes
}

// alterConfigs applies changes to a broker's or topic's configs
// (IncrementalAlterConfigs).
func alterConfigs(ctx context.Context, admin *kadm.Client, resource *configResource, changes []kadm.AlterConfig) error {
	var err error
	if resource.topic != "" {
		err = alterAll(admin.AlterTopicConfigs(ctx, changes, resource.topic))
	} else {
		err = alterAll(admin.AlterBrokerConfigs(ctx, changes, resource.brokers()...))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", resource.String(), err)
	}
	return nil
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
	fs := newFlagSet(e, "config describe", configSynopsis+" [flags]")
	client.register(fs)
	resource.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := resource.check(rest); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	var out []configEntry
	if resource.quota() {
		var components []kadm.DescribeClientQuotaComponent
		for _, c := range resource.entity() {
			d := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: kmsg.QuotasMatchTypeExact}
			if c.Name == nil {
				d.MatchType = kmsg.QuotasMatchTypeDefault
			}
			components = append(components, d)
		}
		quotas, err := admin.DescribeClientQuotas(ctx, true, components)
		if err != nil {
			return err
		}
		for _, q := range quotas {
			for _, v := range q.Values {
				out = append(out, configEntry{Name: v.Key, Value: strconv.FormatFloat(v.Value, 'f', -1, 64), Source: "quota"})
			}
		}
		return printEntries(e, client.json, out)
	}
	var described kadm.ResourceConfigs
	if resource.topic != "" {
		described, err = admin.DescribeTopicConfigs(ctx, resource.topic)
	} else {
		described, err = admin.DescribeBrokerConfigs(ctx, resource.brokers()...)
	}
	if err != nil {
		return err
	}
	for _, r := range described {
		if r.Err != nil {
			return kafkaError(resource.String(), r.Err, r.ErrMessage)
		}
		for _, c := range r.Configs {
			out = append(out, configEntry{Name: c.Key, Value: c.MaybeValue(), Source: sourceName(c.Source)})
		}
	}
	return printEntries(e, client.json, out)
}

// configEntry is one config or quota value `config describe` prints.
type configEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

func printEntries(e *env, asJSON bool, out []configEntry) error {
	if asJSON {
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
