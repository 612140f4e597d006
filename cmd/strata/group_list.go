package main

import (
	"context"
	"strings"
)

// runGroupList is `strata group list`.
func runGroupList(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		states string
	)
	fs := newFlagSet(e, "group list", "[flags]")
	client.register(fs)
	fs.StringVar(&states, "state", "", "only groups in these `states`, comma-separated (Empty, Stable, PreparingRebalance, CompletingRebalance)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("group list takes no arguments")
	}
	var filter []string
	for _, s := range strings.Split(states, ",") {
		if s = strings.TrimSpace(s); s != "" {
			filter = append(filter, s)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	listed, err := admin.ListGroups(ctx, filter...)
	if err != nil {
		return err
	}
	type listedGroup struct {
		Group        string `json:"group"`
		State        string `json:"state"`
		ProtocolType string `json:"protocol_type"`
	}
	out := []listedGroup{}
	for _, g := range listed.Sorted() {
		out = append(out, listedGroup{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType})
	}
	if client.json {
		return printJSON(e.stdout, out)
	}
	t := newTable(e.stdout, "GROUP", "STATE", "PROTOCOL TYPE")
	for _, g := range out {
		t.row(g.Group, g.State, g.ProtocolType)
	}
	return t.flush()
}
