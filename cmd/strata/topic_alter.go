package main

import (
	"context"
	"fmt"
)

// runTopicAlter is `strata topic alter NAME`: incremental config changes
// (IncrementalAlterConfigs) and a larger partition count (CreatePartitions).
func runTopicAlter(ctx context.Context, e *env, args []string) error {
	var (
		client       clientFlags
		set          keyValues
		deletes      stringList
		partitions   int
		validateOnly bool
	)
	fs := newFlagSet(e, "topic alter", "NAME [flags]")
	client.register(fs)
	fs.Var(&set, "set", "set topic config `name=value` (repeatable)")
	fs.Var(&deletes, "delete", "reset topic config `name` to its default (repeatable)")
	fs.IntVar(&partitions, "partitions", 0, "grow the topic to this many partitions")
	fs.BoolVar(&validateOnly, "validate-only", false, "check the change without making it")
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return usageError("give exactly one topic name")
	}
	if err := checkTopicName("topic", names[0]); err != nil {
		return err
	}
	if _, err := int32Flag("partitions", partitions); err != nil {
		return err
	}
	if partitions < 0 {
		return usageError("--partitions %d: give the new total partition count, above the current one", partitions)
	}
	if len(set.order) == 0 && len(deletes) == 0 && partitions == 0 {
		return usageError("nothing to change: give --set, --delete or --partitions")
	}
	topic := names[0]
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()

	type altered struct {
		Topic        string            `json:"topic"`
		Set          map[string]string `json:"set,omitempty"`
		Deleted      []string          `json:"deleted,omitempty"`
		Partitions   int               `json:"partitions,omitempty"`
		ValidateOnly bool              `json:"validate_only"`
	}
	result := altered{Topic: topic, ValidateOnly: validateOnly}

	if len(set.order) > 0 || len(deletes) > 0 {
		changes := configChanges(set, deletes)
		alter := admin.AlterTopicConfigs
		if validateOnly {
			alter = admin.ValidateAlterTopicConfigs
		}
		responses, err := alter(ctx, changes, topic)
		if err != nil {
			return err
		}
		for _, r := range responses {
			if r.Err != nil {
				return kafkaError(fmt.Sprintf("topic %q configs", topic), r.Err, r.ErrMessage)
			}
		}
		result.Set, result.Deleted = set.values, deletes
	}
	if partitions > 0 {
		update := admin.UpdatePartitions
		if validateOnly {
			update = admin.ValidateUpdatePartitions
		}
		responses, err := update(ctx, partitions, topic)
		if err != nil {
			return err
		}
		r, err := responses.On(topic, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return kafkaError(fmt.Sprintf("topic %q partitions", topic), err, r.ErrMessage)
		}
		result.Partitions = partitions
	}
	if client.json {
		return printJSON(e.stdout, result)
	}
	verb := "altered"
	if validateOnly {
		verb = "would alter"
	}
	fmt.Fprintf(e.stdout, "%s topic %s", verb, topic)
	for _, name := range set.order {
		fmt.Fprintf(e.stdout, "; set %s=%s", name, set.values[name])
	}
	for _, name := range deletes {
		fmt.Fprintf(e.stdout, "; reset %s", name)
	}
	if partitions > 0 {
		fmt.Fprintf(e.stdout, "; %d partitions", partitions)
	}
	_, err = fmt.Fprintln(e.stdout)
	return err
}
