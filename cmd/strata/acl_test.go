package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stratalog/strata/acl"
)

// TestACLCommandLinesRefused: what a broker would refuse, and what would
// delete every ACL by accident, is refused before anything is sent, exit
// 2, one line naming the flag.
func TestACLCommandLinesRefused(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--bootstrap", "127.0.0.1:1", "--timeout", "1s"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--operation", "Read", "--topic", "t"}, "say who: give --allow PRINCIPAL or --deny PRINCIPAL"},
		{[]string{"create", "--allow", "alice", "--operation", "Read", "--topic", "t"}, `--allow "alice": a principal is Type:name, such as User:alice`},
		{[]string{"create", "--allow", "User:", "--operation", "Read", "--topic", "t"}, `--allow "User:": a principal is Type:name`},
		{[]string{"create", "--deny", "user:bob", "--operation", "Read", "--topic", "t"}, `--deny "user:bob": principal types are case-sensitive: write User:bob`},
		{[]string{"create", "--allow", "Group:ops", "--operation", "Read", "--topic", "t"}, `--allow "Group:ops": strata's logins are all User principals`},
		{[]string{"create", "--allow", "User:alice", "--topic", "t"}, "say what: give --operation"},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read,Fly", "--topic", "t"}, `--operation "Fly": want one of Read, Write`},
		{[]string{"create", "--allow", "User:alice", "--operation", "Any", "--topic", "t"}, `--operation "Any": want one of`},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read"}, "say on what: give --topic T, --group G, --cluster or --transactional-id X"},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read", "--topic", "t", "--group", "g"}, "--topic and --group: name one resource per command line"},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read", "--topic", ""}, "--topic is empty"},
		{[]string{"create", "--allow", "User:alice", "--operation", "Alter", "--cluster", "--prefixed"}, "--cluster --prefixed: the cluster is one resource"},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read", "--topic", "t", "--host", "client.example.com"}, `--host "client.example.com": give a client IP address, or * for any`},
		{[]string{"create", "--allow", "User:alice", "--operation", "Read", "--topic", "t", "extra"}, `acl create takes flags only, not "extra"`},
		{[]string{"list", "--principal", "alice"}, `--principal "alice": a principal is Type:name`},
		{[]string{"list", "--operation", "Read,Write"}, `--operation "Read,Write": a filter takes one operation`},
		{[]string{"list", "--permission", "maybe"}, `--permission "maybe": want allow or deny`},
		{[]string{"list", "--pattern", "fuzzy", "--topic", "t"}, `--pattern "fuzzy": want literal, prefixed, match or any`},
		{[]string{"list", "--pattern", "match"}, "--pattern match needs a resource name to match"},
		{[]string{"list", "--prefixed", "--pattern", "literal", "--topic", "t"}, "--prefixed and --pattern: give one of them"},
		{[]string{"delete"}, "no filter: that would delete every ACL (give filters"},
		{[]string{"delete", "--all", "--topic", "t"}, "--all deletes every ACL: it takes no filters"},
	} {
		args := append(append([]string{"acl"}, tc.args...), nowhere...)
		code, stdout, stderr := runCLI(t, "", args...)
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", strings.Join(args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestACLBindingsAreTheCrossProduct: every principal, host and operation
// given becomes one binding on the one resource, checked as CreateAcls
// checks it.
func TestACLBindingsAreTheCrossProduct(t *testing.T) {
	t.Parallel()
	fs := newFlagSet(&env{}, "acl create", "")
	var resource aclResourceFlags
	resource.register(fs, "on")
	if err := fs.Parse([]string{"--topic", "logs-", "--prefixed"}); err != nil {
		t.Fatal(err)
	}
	got, err := aclBindings(stringList{"User:alice", "User:bob"}, stringList{"User:*"}, stringList{"10.0.0.1"}, stringList{"read,Write", "describe-configs"}, &resource)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("%d bindings, want 3 principals x 3 operations", len(got))
	}
	want := acl.Binding{ResourceType: acl.Topic, ResourceName: "logs-", PatternType: acl.PatternPrefixed, Principal: "User:*", Host: "10.0.0.1", Operation: acl.OpDescribeConfigs, Permission: acl.Deny}
	if got[8] != want {
		t.Fatalf("last binding %v, want %v", got[8], want)
	}
}

// TestACLListPrintsAsKafkaACLs: grouped by resource pattern, sorted, the
// entries as kafka-acls.sh --list prints them.
func TestACLListPrintsAsKafkaACLs(t *testing.T) {
	t.Parallel()
	bindings := []acl.Binding{
		{ResourceType: acl.Group, ResourceName: "billing", PatternType: acl.PatternLiteral, Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow},
		{ResourceType: acl.Topic, ResourceName: "logs-", PatternType: acl.PatternPrefixed, Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.Allow},
		{ResourceType: acl.TransactionalID, ResourceName: "tx", PatternType: acl.PatternLiteral, Principal: "User:bob", Host: "10.0.0.1", Operation: acl.OpWrite, Permission: acl.Deny},
		{ResourceType: acl.Topic, ResourceName: "logs-", PatternType: acl.PatternPrefixed, Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow},
	}
	var out bytes.Buffer
	if err := printACLs(&out, "Current ACLs for resource", bindings); err != nil {
		t.Fatal(err)
	}
	want := "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:\n" +
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
		"\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n" +
		"\n" +
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)`:\n" +
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
		"\n" +
		"Current ACLs for resource `ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=LITERAL)`:\n" +
		"\t(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)\n"
	if out.String() != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	docs := bindingDocuments(bindings)
	if d := docs[3]; d.ResourceType != "TRANSACTIONAL_ID" || d.PatternType != "LITERAL" || d.Operation != "WRITE" || d.Permission != "DENY" {
		t.Fatalf("JSON document %+v", d)
	}
}

// TestACLFilterDefaultsToExactNames: a filter's resource name is compared
// exactly with both pattern types unless --prefixed or --pattern says
// otherwise; flags left out match anything.
func TestACLFilterDefaultsToExactNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		pattern acl.PatternType
	}{
		{[]string{"--topic", "logs-"}, acl.PatternAny},
		{[]string{"--topic", "logs-", "--prefixed"}, acl.PatternPrefixed},
		{[]string{"--topic", "logs-app", "--pattern", "MATCH"}, acl.PatternMatch},
		{[]string{"--principal", "User:alice"}, acl.PatternAny},
	} {
		fs := newFlagSet(&env{}, "acl list", "")
		var f aclFilterFlags
		f.register(fs, "only ACLs on")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.filter()
		if err != nil || got.PatternType != tc.pattern || got.Operation != acl.OpAny || got.Permission != acl.PermissionAny || got.Validate() != nil {
			t.Errorf("%v: %+v, %v; want pattern %v and the rest any", tc.args, got, err, tc.pattern)
		}
	}
}
