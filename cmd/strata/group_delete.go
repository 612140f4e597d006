package main

import (
	"context"
	"errors"
	"fmt"
)

// runGroupDelete is `strata group delete GROUP...`: a group without
// members and its committed offsets.
func runGroupDelete(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "group delete", "GROUP... [flags]")
	client.register(fs)
	groups, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return usageError("give at least one group")
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	responses, err := admin.DeleteGroups(ctx, groups...)
	if err != nil {
		return err
	}
	deleted := []string{}
	var errs []error
	for _, g := range groups {
		if err := responses[g].Err; err != nil {
			errs = append(errs, kafkaError(fmt.Sprintf("group %q", g), err, ""))
			continue
		}
		deleted = append(deleted, g)
	}
	if client.json {
		if err := printJSON(e.stdout, deleted); err != nil {
			return err
		}
	} else {
		for _, g := range deleted {
			fmt.Fprintf(e.stdout, "deleted group %s\n", g)
		}
	}
	return errors.Join(errs...)
}
