package main

import (
	"context"
	"slices"
	"strings"

	"github.com/stratalog/strata/group"
)

// runGroupList is `strata group list`.
func runGroupList(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		states string
	)
	fs := newFlagSet(e, "group list", "[flags]")
	client.register(fs)
	fs.StringVar(&states, "state", "", "only groups in these `states`, comma-separated, any case ("+strings.Join(groupStates, ", ")+")")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("group list takes no arguments")
	}
	filter, err := parseGroupStates(states)
	if err != nil {
		return err
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

// groupStates are the states ListGroups filters on, as Kafka names them.
var groupStates = []string{string(group.Empty), string(group.Stable), string(group.PreparingRebalance), string(group.CompletingRebalance), string(group.Dead)}

// parseGroupStates reads --state: comma-separated states, matched without
// regard to case as Kafka's kafka-consumer-groups matches them, and
// returned as Kafka spells them. A state Kafka does not have is refused,
// listing those it has; sent on, it would match nothing and list no group.
func parseGroupStates(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		i := slices.IndexFunc(groupStates, func(state string) bool { return strings.EqualFold(state, s) })
		if i < 0 {
			return nil, usageError("--state %q: no such group state; the states are %s", s, strings.Join(groupStates, ", "))
		}
		out = append(out, groupStates[i])
	}
	return out, nil
}
