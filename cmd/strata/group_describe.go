package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/group"
)

// groupDescription is one group as `strata group describe` prints it.
type groupDescription struct {
	Group        string           `json:"group"`
	State        string           `json:"state"`
	ProtocolType string           `json:"protocol_type"`
	Protocol     string           `json:"protocol"`
	Members      []memberDocument `json:"members"`
	Partitions   []partitionLag   `json:"partitions"`
}

type memberDocument struct {
	MemberID   string   `json:"member_id"`
	InstanceID string   `json:"instance_id,omitempty"`
	ClientID   string   `json:"client_id"`
	ClientHost string   `json:"client_host"`
	Assigned   []string `json:"assigned"`
}

// runGroupDescribe is `strata group describe GROUP...`: members and their
// partitions from the Kafka protocol, lag per partition (records and ms)
// and stalled partitions from the coordinator's admin address.
func runGroupDescribe(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		admin  adminFlags
	)
	fs := newFlagSet(e, "group describe", "GROUP... [flags]")
	client.register(fs)
	admin.register(fs, &client.security.tls)
	fs.Lookup("admin").Usage = "the coordinator's admin HTTP `host:port`, for lag; over HTTPS when a TLS flag is given, or say http:// or https:// (env STRATA_ADMIN)"
	groups, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return usageError("give at least one group")
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	adm, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return err
	}
	var out []groupDescription
	var errs []error
	for _, id := range groups {
		g := described[id]
		if g.Err != nil {
			errs = append(errs, kafkaError(fmt.Sprintf("group %q", id), g.Err, g.ErrMessage))
			continue
		}
		if g.State == string(group.Dead) {
			// As Kafka's kafka-consumer-groups: Dead is how DescribeGroups
			// answers a group it does not know.
			errs = append(errs, fmt.Errorf("group %q does not exist: no members and no committed offsets (`strata group list` lists the groups)", id))
			continue
		}
		d := groupDescription{Group: id, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol, Members: []memberDocument{}}
		for _, m := range g.Members {
			md := memberDocument{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []string{}}
			if m.InstanceID != nil {
				md.InstanceID = *m.InstanceID
			}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						md.Assigned = append(md.Assigned, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
			}
			d.Members = append(d.Members, md)
		}
		if d.Partitions, err = fetchGroupLag(ctx, adminClient, id); err != nil {
			return err
		}
		out = append(out, d)
	}
	if client.json {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	for i, d := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		fmt.Fprintf(e.stdout, "group %s: %s, protocol %s/%s, %d members\n\n", d.Group, d.State, d.ProtocolType, d.Protocol, len(d.Members))
		members := newTable(e.stdout, "MEMBER", "INSTANCE", "CLIENT", "HOST", "PARTITIONS")
		for _, m := range d.Members {
			members.row(m.MemberID, m.InstanceID, m.ClientID, m.ClientHost, len(m.Assigned))
		}
		if err := members.flush(); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout)
		partitions := newTable(e.stdout, "TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "LAG TIME", "MEMBER", "STALLED")
		for _, p := range d.Partitions {
			stalled := ""
			if p.Stalled {
				stalled = "for " + (time.Duration(p.StalledForMs) * time.Millisecond).String()
			}
			lagTime := (time.Duration(p.LagMs) * time.Millisecond).String()
			if p.Error != "" {
				lagTime = "unknown: " + p.Error
			}
			// Assigned but never committed, as kafka-consumer-groups shows it.
			committed := any(p.CommittedOffset)
			if p.CommittedOffset < 0 {
				committed = "-"
			}
			partitions.row(p.Topic, p.Partition, committed, p.HighWatermark, p.LagRecords, lagTime, p.Member, stalled)
		}
		if err := partitions.flush(); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
