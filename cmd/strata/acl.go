package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
)

// ACLs as kafka-acls.sh manages them (CreateAcls, DescribeAcls,
// DeleteAcls), with the names of package acl: one resource per command
// line (--topic, --group, --cluster or --transactional-id, --prefixed for
// a prefix), principals as Type:name, operations by Kafka's names in any
// case. Everything a broker would refuse as INVALID_REQUEST is refused
// here first, with the flag that holds it.

// aclSynopsis is `acl create`'s command line.
const aclSynopsis = "(--allow|--deny) PRINCIPAL --operation OP[,OP] (--topic T|--group G|--cluster|--transactional-id X) [--prefixed] [--host H]"

// aclFilterSynopsis is the filters `acl list` and `acl delete` take.
const aclFilterSynopsis = "[--principal P] [--host H] [--operation OP] [--permission allow|deny] [--topic T|--group G|--cluster|--transactional-id X] [--prefixed|--pattern TYPE]"

// aclResourceFlags name one resource: a topic, a group, the cluster or a
// transactional id, by name or (--prefixed) by prefix.
type aclResourceFlags struct {
	topic, group, transactionalID string
	cluster, prefixed             bool
	fs                            *flag.FlagSet
}

func (r *aclResourceFlags) register(fs *flag.FlagSet, verb string) {
	r.fs = fs
	fs.StringVar(&r.topic, "topic", "", verb+" the topic `name` (* for every topic; with --prefixed, a prefix)")
	fs.StringVar(&r.group, "group", "", verb+" the consumer group `name` (* for every group; with --prefixed, a prefix)")
	fs.BoolVar(&r.cluster, "cluster", false, verb+" the cluster (creating topics, managing ACLs and users, IdempotentWrite)")
	fs.StringVar(&r.transactionalID, "transactional-id", "", verb+" the transactional `id` (* for every one; with --prefixed, a prefix)")
	fs.BoolVar(&r.prefixed, "prefixed", false, "the name is a prefix: it covers every name that starts with it (Kafka's PREFIXED pattern type)")
}

// resource is the resource named, and whether one was; more than one is
// an error.
func (r *aclResourceFlags) resource() (t acl.ResourceType, name string, given bool, err error) {
	var named []string
	for _, c := range []struct {
		flag string
		t    acl.ResourceType
		name string
	}{{"topic", acl.Topic, r.topic}, {"group", acl.Group, r.group}, {"transactional-id", acl.TransactionalID, r.transactionalID}} {
		if !flagGiven(r.fs, c.flag) {
			continue
		}
		if c.name == "" {
			return 0, "", false, usageError("--%s is empty: give a name, a prefix with --prefixed, or *", c.flag)
		}
		named = append(named, "--"+c.flag)
		t, name = c.t, c.name
	}
	if r.cluster {
		named = append(named, "--cluster")
		t, name = acl.Cluster, acl.ClusterName
		if r.prefixed {
			return 0, "", false, usageError("--cluster --prefixed: the cluster is one resource, it has no prefix")
		}
	}
	if len(named) > 1 {
		return 0, "", false, usageError("%s: name one resource per command line", strings.Join(named, " and "))
	}
	return t, name, len(named) == 1, nil
}

// checkPrincipal refuses a principal that is not Type:name, and one whose
// type no strata login gives (every login is a User principal: User:NAME
// for SASL, User:CN=... for a certificate).
func checkPrincipal(flagName, p string) error {
	typ, name, ok := strings.Cut(p, ":")
	switch {
	case !ok || typ == "" || name == "":
		return usageError("--%s %q: a principal is Type:name, such as User:alice, or User:* for everyone", flagName, p)
	case typ != "User" && strings.EqualFold(typ, "User"):
		return usageError("--%s %q: principal types are case-sensitive: write User:%s", flagName, p, name)
	case typ != "User":
		return usageError("--%s %q: strata's logins are all User principals (User:NAME for SASL, User:CN=... for a certificate, User:* for everyone)", flagName, p)
	}
	return nil
}

// checkHost refuses a host that is neither * nor an IP address: an ACL's
// host is matched against the client's address, never a name.
func checkHost(h string) error {
	if h != acl.Wildcard && net.ParseIP(h) == nil {
		return usageError("--host %q: give a client IP address, or * for any", h)
	}
	return nil
}

// parseOperations reads --operation values: comma-separated, repeatable,
// Kafka's names in any case (Read, WRITE, describe-configs).
func parseOperations(values []string) ([]acl.Operation, error) {
	var out []acl.Operation
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			op, err := acl.ParseOperation(name)
			if err != nil || op == acl.OpUnknown || op == acl.OpAny {
				return nil, usageError("--operation %q: want one of Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All", name)
			}
			out = append(out, op)
		}
	}
	return out, nil
}

// runACLCreate is `strata acl create`: kafka-acls.sh --add. Every
// combination of the principals, hosts and operations given becomes one
// binding on the one resource.
func runACLCreate(ctx context.Context, e *env, args []string) error {
	var (
		client             clientFlags
		allow, deny, hosts stringList
		operations         stringList
		resource           aclResourceFlags
	)
	fs := newFlagSet(e, "acl create", aclSynopsis+" [flags]")
	client.register(fs)
	fs.Var(&allow, "allow", "allow `principal` (User:NAME, User:* for everyone; repeatable)")
	fs.Var(&deny, "deny", "deny `principal` (repeatable); a Deny beats every Allow")
	fs.Var(&hosts, "host", "only from this client `IP` (repeatable; default *, any host)")
	fs.Var(&operations, "operation", "the `operations`, comma-separated or repeated: Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, IdempotentWrite, ClusterAction, All")
	resource.register(fs, "on")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("acl create takes flags only, not %q", rest[0])
	}
	bindings, err := aclBindings(allow, deny, hosts, operations, &resource)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	cl, err := newClient(ctx, &client)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bindings {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.ResourceName, kmsg.ACLResourcePatternType(b.PatternType)
		c.Principal, c.Host = b.Principal, b.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return aclRequestError("creating ACLs", err, "")
	}
	var created []acl.Binding
	var errs []error
	for i, r := range resp.Results {
		if i >= len(bindings) {
			break
		}
		err := kerr.ErrorForCode(r.ErrorCode)
		switch {
		case errors.Is(err, kerr.ClusterAuthorizationFailed):
			// The broker refuses every creation alike: say it once.
			return aclRequestError("creating ACLs", err, messageOf(r.ErrorMessage))
		case err != nil:
			errs = append(errs, aclRequestError(bindings[i].String(), err, messageOf(r.ErrorMessage)))
		default:
			created = append(created, bindings[i])
		}
	}
	if len(resp.Results) != len(bindings) {
		errs = append(errs, fmt.Errorf("the broker answered %d of %d ACL creations", len(resp.Results), len(bindings)))
	}
	if len(created) > 0 || len(errs) == 0 || client.json {
		if err := printBindings(e, client.json, "created", "Created ACLs for resource", created); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// aclBindings are the bindings acl create's flags ask for, each checked as
// the broker would.
func aclBindings(allow, deny, hosts, operations stringList, resource *aclResourceFlags) ([]acl.Binding, error) {
	if len(allow) == 0 && len(deny) == 0 {
		return nil, usageError("say who: give --allow PRINCIPAL or --deny PRINCIPAL")
	}
	type principal struct {
		name       string
		permission acl.Permission
	}
	var principals []principal
	for _, p := range allow {
		if err := checkPrincipal("allow", p); err != nil {
			return nil, err
		}
		principals = append(principals, principal{p, acl.Allow})
	}
	for _, p := range deny {
		if err := checkPrincipal("deny", p); err != nil {
			return nil, err
		}
		principals = append(principals, principal{p, acl.Deny})
	}
	if len(hosts) == 0 {
		hosts = stringList{acl.Wildcard}
	}
	for _, h := range hosts {
		if err := checkHost(h); err != nil {
			return nil, err
		}
	}
	ops, err := parseOperations(operations)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, usageError("say what: give --operation, such as --operation Read,Describe")
	}
	t, name, given, err := resource.resource()
	if err != nil {
		return nil, err
	}
	if !given {
		return nil, usageError("say on what: give --topic T, --group G, --cluster or --transactional-id X")
	}
	pattern := acl.PatternLiteral
	if resource.prefixed {
		pattern = acl.PatternPrefixed
	}
	var out []acl.Binding
	for _, p := range principals {
		for _, h := range hosts {
			for _, op := range ops {
				b := acl.Binding{ResourceType: t, ResourceName: name, PatternType: pattern, Principal: p.name, Host: h, Operation: op, Permission: p.permission}
				if err := b.Validate(); err != nil {
					return nil, usageError("%v", strings.TrimPrefix(err.Error(), acl.ErrInvalidBinding.Error()+": "))
				}
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// aclFilterFlags are the filters `acl list` and `acl delete` take; a flag
// left out matches everything.
type aclFilterFlags struct {
	principal, host, operation, permission, pattern string
	resource                                        aclResourceFlags
	fs                                              *flag.FlagSet
}

func (f *aclFilterFlags) register(fs *flag.FlagSet, verb string) {
	f.fs = fs
	fs.StringVar(&f.principal, "principal", "", "only ACLs of this `principal` (User:NAME; User:* is the everyone binding itself)")
	fs.StringVar(&f.host, "host", "", "only ACLs for this `host` (an IP, or * for the any-host ACLs)")
	fs.StringVar(&f.operation, "operation", "", "only ACLs of this `operation` (Read, Write, ..., All)")
	fs.StringVar(&f.permission, "permission", "", "only `allow` or deny ACLs")
	f.resource.register(fs, verb)
	fs.StringVar(&f.pattern, "pattern", "", "how --topic, --group or --transactional-id match: `literal`, prefixed, match (every ACL that applies to the name: literal, * and prefixes) or any (default: any, the name compared exactly)")
}

// given reports whether any filter was given.
func (f *aclFilterFlags) given() bool {
	for _, name := range []string{"principal", "host", "operation", "permission", "pattern", "topic", "group", "cluster", "transactional-id", "prefixed"} {
		if flagGiven(f.fs, name) {
			return true
		}
	}
	return false
}

// filter is the acl.Filter the flags give.
func (f *aclFilterFlags) filter() (acl.Filter, error) {
	out := acl.AnyFilter()
	if flagGiven(f.fs, "principal") {
		if err := checkPrincipal("principal", f.principal); err != nil {
			return out, err
		}
		out.Principal = &f.principal
	}
	if flagGiven(f.fs, "host") {
		if err := checkHost(f.host); err != nil {
			return out, err
		}
		out.Host = &f.host
	}
	if flagGiven(f.fs, "operation") {
		ops, err := parseOperations([]string{f.operation})
		if err != nil {
			return out, err
		}
		if len(ops) != 1 {
			return out, usageError("--operation %q: a filter takes one operation", f.operation)
		}
		out.Operation = ops[0]
	}
	if flagGiven(f.fs, "permission") {
		p, err := acl.ParsePermission(f.permission)
		if err != nil || (p != acl.Allow && p != acl.Deny) {
			return out, usageError("--permission %q: want allow or deny", f.permission)
		}
		out.Permission = p
	}
	t, name, given, err := f.resource.resource()
	if err != nil {
		return out, err
	}
	if given {
		out.ResourceType, out.ResourceName = t, &name
	}
	switch {
	case f.resource.prefixed && flagGiven(f.fs, "pattern"):
		return out, usageError("--prefixed and --pattern: give one of them")
	case f.resource.prefixed:
		out.PatternType = acl.PatternPrefixed
	case flagGiven(f.fs, "pattern"):
		p, err := acl.ParsePatternType(f.pattern)
		if err != nil || p == acl.PatternUnknown {
			return out, usageError("--pattern %q: want literal, prefixed, match or any", f.pattern)
		}
		if p == acl.PatternMatch && !given {
			return out, usageError("--pattern match needs a resource name to match: give --topic, --group or --transactional-id")
		}
		out.PatternType = p
	}
	return out, nil
}

// runACLList is `strata acl list`: kafka-acls.sh --list, every ACL or
// those the filters select, grouped by resource pattern.
func runACLList(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		filter aclFilterFlags
	)
	fs := newFlagSet(e, "acl list", aclFilterSynopsis+" [flags]")
	client.register(fs)
	filter.register(fs, "only ACLs on")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("acl list takes flags only, not %q", rest[0])
	}
	f, err := filter.filter()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	cl, err := newClient(ctx, &client)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.ResourceName, kmsg.ACLResourcePatternType(f.PatternType)
	req.Principal, req.Host = f.Principal, f.Host
	req.Operation, req.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return aclRequestError("listing ACLs", err, "")
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return aclRequestError("listing ACLs", err, messageOf(resp.ErrorMessage))
	}
	var listed []acl.Binding
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			listed = append(listed, acl.Binding{
				ResourceType: acl.ResourceType(r.ResourceType), ResourceName: r.ResourceName, PatternType: acl.PatternType(r.ResourcePatternType),
				Principal: a.Principal, Host: a.Host, Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.PermissionType),
			})
		}
	}
	if client.json {
		return printJSON(e.stdout, bindingDocuments(listed))
	}
	return printACLs(e.stdout, "Current ACLs for resource", listed)
}

// runACLDelete is `strata acl delete`: kafka-acls.sh --remove, without
// its prompt. It deletes the ACLs the filters select and prints them; with
// no filter at all it refuses, unless --all says to delete every ACL.
func runACLDelete(ctx context.Context, e *env, args []string) error {
	var (
		client clientFlags
		filter aclFilterFlags
		all    bool
	)
	fs := newFlagSet(e, "acl delete", "("+aclFilterSynopsis+" | --all) [flags]")
	client.register(fs)
	filter.register(fs, "only ACLs on")
	fs.BoolVar(&all, "all", false, "delete every ACL (what a delete with no filter would do, so it must be said)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("acl delete takes flags only, not %q", rest[0])
	}
	switch given := filter.given(); {
	case all && given:
		return usageError("--all deletes every ACL: it takes no filters")
	case !all && !given:
		return withFix(usageError("no filter: that would delete every ACL"),
			"give filters (--principal, --topic, --operation, ...; `strata acl list` with the same filters shows what they select), or --all to delete every ACL")
	}
	f, err := filter.filter()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	cl, err := newClient(ctx, &client)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourceName, df.ResourcePatternType = kmsg.ACLResourceType(f.ResourceType), f.ResourceName, kmsg.ACLResourcePatternType(f.PatternType)
	df.Principal, df.Host = f.Principal, f.Host
	df.Operation, df.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
	req.Filters = append(req.Filters, df)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return aclRequestError("deleting ACLs", err, "")
	}
	var deleted []acl.Binding
	var errs []error
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			errs = append(errs, aclRequestError("deleting ACLs", err, messageOf(r.ErrorMessage)))
			continue
		}
		for _, m := range r.MatchingACLs {
			b := acl.Binding{
				ResourceType: acl.ResourceType(m.ResourceType), ResourceName: m.ResourceName, PatternType: acl.PatternType(m.ResourcePatternType),
				Principal: m.Principal, Host: m.Host, Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.PermissionType),
			}
			if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
				errs = append(errs, aclRequestError("deleting "+b.String(), err, messageOf(m.ErrorMessage)))
				continue
			}
			deleted = append(deleted, b)
		}
	}
	if err := printBindings(e, client.json, "deleted", "Deleted ACLs for resource", deleted); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// aclRequestError is a failed ACL request, with the fix for the refusal
// an operator meets first: not being allowed to manage ACLs.
func aclRequestError(what string, err error, message string) error {
	return withClusterRightsFix(kafkaError(what, err, message), "ACLs")
}

// printBindings prints what acl create or delete did: under --json an
// object {verb: [bindings]}, else the bindings grouped as kafka-acls.sh
// groups them, or a line saying there were none.
func printBindings(e *env, asJSON bool, verb, header string, bindings []acl.Binding) error {
	if asJSON {
		return printJSON(e.stdout, map[string]any{verb: bindingDocuments(bindings)})
	}
	if len(bindings) == 0 {
		_, err := fmt.Fprintf(e.stdout, "no ACLs %s\n", verb)
		return err
	}
	return printACLs(e.stdout, header, bindings)
}

// printACLs prints bindings as kafka-acls.sh --list does: a header per
// resource pattern, then its entries, a blank line after each resource.
//
//	Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:
//		(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)
func printACLs(w io.Writer, header string, bindings []acl.Binding) error {
	bindings = sortedBindings(bindings)
	for i, b := range bindings {
		if i == 0 || !samePattern(bindings[i-1], b) {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s `ResourcePattern(resourceType=%v, name=%s, patternType=%v)`:\n",
				header, kmsg.ACLResourceType(b.ResourceType), b.ResourceName, b.PatternType)
		}
		if _, err := fmt.Fprintf(w, "\t(principal=%s, host=%s, operation=%v, permissionType=%v)\n", b.Principal, b.Host, b.Operation, b.Permission); err != nil {
			return err
		}
	}
	return nil
}

func samePattern(a, b acl.Binding) bool {
	return a.ResourceType == b.ResourceType && a.ResourceName == b.ResourceName && a.PatternType == b.PatternType
}

// sortedBindings is bindings ordered by resource pattern, then entry.
func sortedBindings(bindings []acl.Binding) []acl.Binding {
	bindings = slices.Clone(bindings)
	sort.SliceStable(bindings, func(i, j int) bool {
		a, b := bindings[i], bindings[j]
		switch {
		case a.ResourceType != b.ResourceType:
			return a.ResourceType < b.ResourceType
		case a.ResourceName != b.ResourceName:
			return a.ResourceName < b.ResourceName
		case a.PatternType != b.PatternType:
			return a.PatternType < b.PatternType
		case a.Principal != b.Principal:
			return a.Principal < b.Principal
		case a.Host != b.Host:
			return a.Host < b.Host
		case a.Operation != b.Operation:
			return a.Operation < b.Operation
		}
		return a.Permission < b.Permission
	})
	return bindings
}

// bindingDocument is one ACL in JSON, with Kafka's names.
type bindingDocument struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func bindingDocuments(bindings []acl.Binding) []bindingDocument {
	out := []bindingDocument{}
	for _, b := range sortedBindings(bindings) {
		out = append(out, bindingDocument{
			ResourceType: kmsg.ACLResourceType(b.ResourceType).String(), ResourceName: b.ResourceName, PatternType: b.PatternType.String(),
			Principal: b.Principal, Host: b.Host, Operation: b.Operation.String(), Permission: b.Permission.String(),
		})
	}
	return out
}

// messageOf is a Kafka error message, "" when the broker sent none.
func messageOf(message *string) string {
	if message == nil {
		return ""
	}
	return *message
}
