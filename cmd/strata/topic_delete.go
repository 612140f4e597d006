package main

import (
	"context"
	"errors"
	"fmt"
)

// runTopicDelete is `strata topic delete NAME...`.
func runTopicDelete(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "topic delete", "NAME... [flags]")
	client.register(fs)
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usageError("give at least one topic name")
	}
	if err := checkTopicNames("topic", names); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	responses, err := admin.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	type deleted struct {
		Topic string `json:"topic"`
		ID    string `json:"id"`
	}
	var out []deleted
	var errs []error
	for _, name := range names {
		r, err := responses.On(name, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			errs = append(errs, kafkaError(fmt.Sprintf("topic %q", name), err, r.ErrMessage))
			continue
		}
		out = append(out, deleted{Topic: name, ID: topicID(r.ID)})
	}
	if client.json {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		for _, d := range out {
			fmt.Fprintf(e.stdout, "deleted topic %s (id %s)\n", d.Topic, d.ID)
		}
	}
	return errors.Join(errs...)
}
