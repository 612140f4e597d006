package acl

import (
	"errors"
	"testing"
)

const (
	alice     = "User:alice"
	bob       = "User:bob"
	admin     = "User:admin"
	aliceHost = "10.0.0.1"
	otherHost = "10.0.0.2"
)

func readOrders(principal string) Request {
	return Request{Principal: principal, Host: aliceHost, Operation: OpRead, Type: Topic, Name: "orders"}
}

func (r Request) with(op Operation) Request {
	r.Operation = op
	return r
}

func (r Request) on(t ResourceType, name string) Request {
	r.Type, r.Name = t, name
	return r
}

func (r Request) from(host string) Request {
	r.Host = host
	return r
}

// TestAuthorize: one case per rule of Authorize.
func TestAuthorize(t *testing.T) {
	t.Parallel()
	strict := Authorizer{SuperUsers: []string{admin}}
	open := Authorizer{SuperUsers: []string{admin}, AllowIfNoACL: true}
	for _, tt := range []struct {
		name     string
		a        Authorizer
		bindings []Binding
		r        Request
		want     bool
	}{
		// Super users.
		{"super user, no ACLs", strict, nil, readOrders(admin), true},
		{"super user despite deny", strict, []Binding{denyTopic("orders", admin, OpAll), denyTopic("*", "User:*", OpAll)}, readOrders(admin), true},
		{"super users are exact, not a pattern", Authorizer{SuperUsers: []string{"User:*"}}, nil, readOrders(alice), false},
		{"super user, Any operation is no question", strict, nil, readOrders(admin).with(OpAny), false},
		{"super user, Unknown type is no question", strict, nil, readOrders(admin).on(ResourceUnknown, "orders"), false},
		{"Any type is no question even with no ACLs", open, nil, readOrders(alice).on(ResourceAny, "orders"), false},

		// Allow and deny.
		{"literal allow", strict, []Binding{allowTopic("orders", alice, OpRead)}, readOrders(alice), true},
		{"allow of another operation", strict, []Binding{allowTopic("orders", alice, OpWrite)}, readOrders(alice), false},
		{"allow for another principal", strict, []Binding{allowTopic("orders", bob, OpRead)}, readOrders(alice), false},
		{"allow on another topic", strict, []Binding{allowTopic("payments", alice, OpRead)}, readOrders(alice), false},
		{"allow on a group of the same name", strict, []Binding{binding(Group, PatternLiteral, "orders", alice, "*", OpRead, Allow)}, readOrders(alice), false},
		{"allow All", strict, []Binding{allowTopic("orders", alice, OpAll)}, readOrders(alice).with(OpIdempotentWrite), true},
		{"deny before allow", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", alice, OpRead)}, readOrders(alice), false},
		{"deny All before allow", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", alice, OpAll)}, readOrders(alice), false},
		{"deny All before allow All", open, []Binding{allowTopic("orders", alice, OpAll), denyTopic("orders", alice, OpAll)}, readOrders(alice).with(OpDescribe), false},
		{"deny of another operation", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", alice, OpWrite)}, readOrders(alice), true},
		{"deny for another principal", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", bob, OpRead)}, readOrders(alice), true},
		{"deny alone", open, []Binding{denyTopic("orders", alice, OpRead)}, readOrders(alice), false},

		// Implied Describe and DescribeConfigs.
		{"Read implies Describe", strict, []Binding{allowTopic("orders", alice, OpRead)}, readOrders(alice).with(OpDescribe), true},
		{"Write implies Describe", strict, []Binding{allowTopic("orders", alice, OpWrite)}, readOrders(alice).with(OpDescribe), true},
		{"Delete implies Describe", strict, []Binding{allowTopic("orders", alice, OpDelete)}, readOrders(alice).with(OpDescribe), true},
		{"Alter implies Describe", strict, []Binding{allowTopic("orders", alice, OpAlter)}, readOrders(alice).with(OpDescribe), true},
		{"Create does not imply Describe", strict, []Binding{allowTopic("orders", alice, OpCreate)}, readOrders(alice).with(OpDescribe), false},
		{"AlterConfigs does not imply Describe", strict, []Binding{allowTopic("orders", alice, OpAlterConfigs)}, readOrders(alice).with(OpDescribe), false},
		{"Describe does not imply Read", strict, []Binding{allowTopic("orders", alice, OpDescribe)}, readOrders(alice), false},
		{"AlterConfigs implies DescribeConfigs", strict, []Binding{allowTopic("orders", alice, OpAlterConfigs)}, readOrders(alice).with(OpDescribeConfigs), true},
		{"DescribeConfigs does not imply AlterConfigs", strict, []Binding{allowTopic("orders", alice, OpDescribeConfigs)}, readOrders(alice).with(OpAlterConfigs), false},
		{"Alter does not imply DescribeConfigs", strict, []Binding{allowTopic("orders", alice, OpAlter)}, readOrders(alice).with(OpDescribeConfigs), false},
		{"deny Read leaves Describe to the allows", strict,
			[]Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", alice, OpRead)}, readOrders(alice).with(OpDescribe), true},
		{"deny Read without an allow leaves Describe denied", open,
			[]Binding{denyTopic("orders", alice, OpRead)}, readOrders(alice).with(OpDescribe), false},
		{"deny Describe beats an implying allow", strict,
			[]Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", alice, OpDescribe)}, readOrders(alice).with(OpDescribe), false},
		{"deny AlterConfigs leaves DescribeConfigs", strict,
			[]Binding{allowTopic("orders", alice, OpAlterConfigs), denyTopic("orders", alice, OpAlterConfigs)}, readOrders(alice).with(OpDescribeConfigs), true},

		// Wildcard principal.
		{"wildcard principal allow", strict, []Binding{allowTopic("orders", "User:*", OpRead)}, readOrders(alice), true},
		{"wildcard principal allows the anonymous user", strict, []Binding{allowTopic("orders", "User:*", OpRead)}, readOrders("User:ANONYMOUS"), true},
		{"wildcard principal deny", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("orders", "User:*", OpRead)}, readOrders(alice), false},
		{"wildcard of another principal type", strict, []Binding{allowTopic("orders", "Group:*", OpRead)}, readOrders(alice), false},
		{"wildcard of a principal's type", strict, []Binding{allowTopic("orders", "Group:*", OpRead)}, readOrders("Group:eng"), true},
		{"principal names are exact", strict, []Binding{allowTopic("orders", "User:Alice", OpRead)}, readOrders(alice), false},

		// Hosts.
		{"wildcard host", strict, []Binding{allowTopic("orders", alice, OpRead)}, readOrders(alice).from(otherHost), true},
		{"the client's host", strict, []Binding{binding(Topic, PatternLiteral, "orders", alice, aliceHost, OpRead, Allow)}, readOrders(alice), true},
		{"another host", strict, []Binding{binding(Topic, PatternLiteral, "orders", alice, aliceHost, OpRead, Allow)}, readOrders(alice).from(otherHost), false},
		{"deny from one host only", strict,
			[]Binding{allowTopic("orders", alice, OpRead), binding(Topic, PatternLiteral, "orders", alice, otherHost, OpRead, Deny)},
			readOrders(alice), true},
		{"deny from the client's host", strict,
			[]Binding{allowTopic("orders", alice, OpRead), binding(Topic, PatternLiteral, "orders", alice, otherHost, OpRead, Deny)},
			readOrders(alice).from(otherHost), false},
		// Hosts are addresses: an ACL in Java's form of an IPv6 address
		// (Kafka's tools), upper-case hex or an IPv4-mapped address names
		// the host a request's address in Go's form came from.
		{"deny from an IPv6 host in Java's form", strict,
			[]Binding{allowTopic("orders", alice, OpRead), binding(Topic, PatternLiteral, "orders", alice, "2001:db8:0:0:0:0:0:1", OpRead, Deny)},
			readOrders(alice).from("2001:db8::1"), false},
		{"deny from an IPv6 host in upper case", strict,
			[]Binding{allowTopic("orders", alice, OpRead), binding(Topic, PatternLiteral, "orders", alice, "2001:DB8::1", OpRead, Deny)},
			readOrders(alice).from("2001:db8::1"), false},
		{"allow from an IPv4-mapped host", strict,
			[]Binding{binding(Topic, PatternLiteral, "orders", alice, "::ffff:10.0.0.1", OpRead, Allow)}, readOrders(alice), true},
		{"another IPv6 host", strict,
			[]Binding{binding(Topic, PatternLiteral, "orders", alice, "2001:db8:0:0:0:0:0:2", OpRead, Allow)}, readOrders(alice).from("2001:db8::1"), false},
		{"deny from every host", strict,
			[]Binding{binding(Topic, PatternLiteral, "orders", alice, aliceHost, OpRead, Allow), denyTopic("orders", alice, OpRead)},
			readOrders(alice), false},

		// Prefixed and literal "*".
		{"prefixed allow", strict, []Binding{binding(Topic, PatternPrefixed, "ord", alice, "*", OpRead, Allow)}, readOrders(alice), true},
		{"prefixed allow of the whole name", strict, []Binding{binding(Topic, PatternPrefixed, "orders", alice, "*", OpRead, Allow)}, readOrders(alice), true},
		{"prefixed allow longer than the name", strict, []Binding{binding(Topic, PatternPrefixed, "orders-", alice, "*", OpRead, Allow)}, readOrders(alice), false},
		{"prefixed deny beats literal allow", strict,
			[]Binding{allowTopic("orders", alice, OpRead), binding(Topic, PatternPrefixed, "ord", alice, "*", OpRead, Deny)}, readOrders(alice), false},
		{"literal deny beats prefixed allow", strict,
			[]Binding{binding(Topic, PatternPrefixed, "ord", alice, "*", OpRead, Allow), denyTopic("orders", alice, OpRead)}, readOrders(alice), false},
		{"prefixed * is not a wildcard", strict, []Binding{binding(Topic, PatternPrefixed, "*", alice, "*", OpRead, Allow)}, readOrders(alice), false},
		{"literal * allow", strict, []Binding{allowTopic("*", alice, OpRead)}, readOrders(alice), true},
		{"literal * deny beats literal allow", strict, []Binding{allowTopic("orders", alice, OpRead), denyTopic("*", alice, OpRead)}, readOrders(alice), false},
		{"literal * of another type", strict, []Binding{binding(Group, PatternLiteral, "*", alice, "*", OpRead, Allow)}, readOrders(alice), false},
		{"cluster", strict, []Binding{binding(Cluster, PatternLiteral, ClusterName, alice, "*", OpClusterAction, Allow)},
			readOrders(alice).with(OpClusterAction).on(Cluster, ClusterName), true},

		// No ACLs.
		{"no ACLs, AllowIfNoACL", open, nil, readOrders(alice), true},
		{"no ACLs, not AllowIfNoACL", strict, nil, readOrders(alice), false},
		{"ACLs elsewhere only, AllowIfNoACL", open, []Binding{allowTopic("payments", bob, OpRead), binding(Group, PatternLiteral, "orders", bob, "*", OpRead, Allow)}, readOrders(alice), true},
		{"ACLs for someone else, AllowIfNoACL", open, []Binding{allowTopic("orders", bob, OpRead)}, readOrders(alice), false},
		{"ACLs from another host, AllowIfNoACL", open, []Binding{binding(Topic, PatternLiteral, "orders", alice, otherHost, OpRead, Allow)}, readOrders(alice), false},
		{"ACLs for another operation, AllowIfNoACL", open, []Binding{allowTopic("orders", alice, OpWrite)}, readOrders(alice), false},
		{"a prefixed ACL counts, AllowIfNoACL", open, []Binding{binding(Topic, PatternPrefixed, "o", bob, "*", OpRead, Allow)}, readOrders(alice), false},
	} {
		if got := tt.a.Authorize(sliceSource(tt.bindings), tt.r); got != tt.want {
			t.Errorf("%s: Authorize(%+v) = %v, want %v", tt.name, tt.r, got, tt.want)
		}
		// Whatever else a Source returns does not change the answer.
		if got := tt.a.Authorize(sloppySource(append(junk(), tt.bindings...)), tt.r); got != tt.want {
			t.Errorf("%s: with a sloppy source, Authorize(%+v) = %v, want %v", tt.name, tt.r, got, tt.want)
		}
	}
}

// junk is bindings that match no Topic "orders" request, in ways a sloppy
// Source might return them: other names and types, prefixes that are
// longer than the name, and patterns a binding cannot have.
func junk() []Binding {
	return []Binding{
		allowTopic("orders-eu", "User:*", OpAll),
		denyTopic("payments", "User:*", OpAll),
		binding(Topic, PatternPrefixed, "orders-", "User:*", "*", OpAll, Deny),
		binding(Topic, PatternPrefixed, "", "User:*", "*", OpAll, Allow),
		binding(Topic, PatternMatch, "orders", "User:*", "*", OpAll, Allow),
		binding(Topic, PatternAny, "orders", "User:*", "*", OpAll, Deny),
		binding(Topic, PatternUnknown, "*", "User:*", "*", OpAll, Deny),
		binding(Group, PatternLiteral, "*", "User:*", "*", OpAll, Deny),
		binding(ResourceAny, PatternLiteral, "*", "User:*", "*", OpAll, Deny),
	}
}

// TestAuthorizeAny: Kafka's authorizeByResourceType cases, and the
// corners where strata answers differently.
func TestAuthorizeAny(t *testing.T) {
	t.Parallel()
	strict := Authorizer{SuperUsers: []string{admin}}
	open := Authorizer{SuperUsers: []string{admin}, AllowIfNoACL: true}
	prefixed := func(name, principal string, op Operation, perm Permission) Binding {
		return binding(Topic, PatternPrefixed, name, principal, "*", op, perm)
	}
	for _, tt := range []struct {
		name      string
		a         Authorizer
		bindings  []Binding
		principal string
		op        Operation
		want      bool
	}{
		{"super user", strict, []Binding{denyTopic("*", "User:*", OpAll)}, admin, OpWrite, true},
		{"Any operation is no question", open, nil, admin, OpAny, false},
		{"no ACLs, not AllowIfNoACL", strict, nil, alice, OpWrite, false},
		{"no ACLs, AllowIfNoACL", open, nil, alice, OpWrite, true},
		{"AllowIfNoACL, some names without ACLs", open, []Binding{denyTopic("orders", alice, OpWrite)}, alice, OpWrite, true},
		{"AllowIfNoACL, a prefix deny leaves other names", open, []Binding{prefixed("o", alice, OpWrite, Deny)}, alice, OpWrite, true},
		{"AllowIfNoACL, literal * for someone else covers every name", open, []Binding{allowTopic("*", bob, OpWrite)}, alice, OpWrite, false},
		{"AllowIfNoACL, literal * deny", open, []Binding{denyTopic("*", alice, OpWrite)}, alice, OpWrite, false},
		{"literal allow", strict, []Binding{allowTopic("orders", alice, OpWrite)}, alice, OpWrite, true},
		{"allow All", strict, []Binding{allowTopic("orders", alice, OpAll)}, alice, OpWrite, true},
		{"allow of another operation", strict, []Binding{allowTopic("orders", alice, OpRead)}, alice, OpWrite, false},
		{"no implied Describe", strict, []Binding{allowTopic("orders", alice, OpRead)}, alice, OpDescribe, false},
		{"allow for someone else", strict, []Binding{allowTopic("orders", bob, OpWrite)}, alice, OpWrite, false},
		{"wildcard principal", strict, []Binding{allowTopic("orders", "User:*", OpWrite)}, alice, OpWrite, true},
		{"allow from another host", strict, []Binding{binding(Topic, PatternLiteral, "orders", alice, otherHost, OpWrite, Allow)}, alice, OpWrite, false},
		{"allow on a group", strict, []Binding{binding(Group, PatternLiteral, "orders", alice, "*", OpWrite, Allow)}, alice, OpWrite, false},
		{"literal deny of the allowed name", strict, []Binding{allowTopic("orders", alice, OpWrite), denyTopic("orders", alice, OpWrite)}, alice, OpWrite, false},
		{"literal deny of another name", strict, []Binding{allowTopic("orders", alice, OpWrite), denyTopic("payments", alice, OpWrite)}, alice, OpWrite, true},
		{"deny for someone else", strict, []Binding{allowTopic("orders", alice, OpWrite), denyTopic("orders", bob, OpWrite)}, alice, OpWrite, true},
		{"deny of All", strict, []Binding{allowTopic("orders", alice, OpWrite), denyTopic("orders", alice, OpAll)}, alice, OpWrite, false},
		{"prefixed deny covers the literal allow", strict, []Binding{allowTopic("orders", alice, OpWrite), prefixed("ord", alice, OpWrite, Deny)}, alice, OpWrite, false},
		{"prefixed deny covers the prefixed allow", strict, []Binding{prefixed("orders", alice, OpWrite, Allow), prefixed("ord", alice, OpWrite, Deny)}, alice, OpWrite, false},
		{"equal prefixed deny", strict, []Binding{prefixed("ord", alice, OpWrite, Allow), prefixed("ord", alice, OpWrite, Deny)}, alice, OpWrite, false},
		{"longer prefixed deny leaves some names", strict, []Binding{prefixed("ord", alice, OpWrite, Allow), prefixed("orders", alice, OpWrite, Deny)}, alice, OpWrite, true},
		{"literal deny leaves the prefix's other names", strict, []Binding{prefixed("ord", alice, OpWrite, Allow), denyTopic("ord", alice, OpWrite)}, alice, OpWrite, true},
		{"one of two allows survives", strict,
			[]Binding{allowTopic("orders", alice, OpWrite), allowTopic("payments", alice, OpWrite), prefixed("ord", alice, OpWrite, Deny)}, alice, OpWrite, true},
		{"literal * allow despite other denies", strict, []Binding{allowTopic("*", alice, OpWrite), prefixed("o", alice, OpWrite, Deny)}, alice, OpWrite, true},
		{"literal * deny beats literal * allow", strict, []Binding{allowTopic("*", alice, OpWrite), denyTopic("*", alice, OpWrite)}, alice, OpWrite, false},
		{"literal * deny beats any allow", strict, []Binding{prefixed("a", alice, OpWrite, Allow), denyTopic("*", "User:*", OpAll)}, alice, OpWrite, false},
		// Kafka's default implementation takes a prefixed "*" Allow for the
		// wildcard and allows here; every name it covers is denied.
		{"prefixed * is not the wildcard", strict, []Binding{prefixed("*", alice, OpWrite, Allow), prefixed("*", alice, OpWrite, Deny)}, alice, OpWrite, false},
	} {
		if got := tt.a.AuthorizeAny(sliceSource(tt.bindings), tt.principal, aliceHost, tt.op, Topic); got != tt.want {
			t.Errorf("%s: AuthorizeAny(%s, %v) = %v, want %v", tt.name, tt.principal, tt.op, got, tt.want)
		}
		if got := tt.a.AuthorizeAny(sloppySource(append(junkForAny(), tt.bindings...)), tt.principal, aliceHost, tt.op, Topic); got != tt.want {
			t.Errorf("%s: with a sloppy source, AuthorizeAny(%s, %v) = %v, want %v", tt.name, tt.principal, tt.op, got, tt.want)
		}
	}
}

// junkForAny is bindings AuthorizeAny must ignore when asked about
// topics: other types, and Topic patterns a binding cannot have.
func junkForAny() []Binding {
	return []Binding{
		binding(Group, PatternLiteral, "*", "User:*", "*", OpAll, Allow),
		binding(Topic, PatternMatch, "*", "User:*", "*", OpAll, Allow),
		binding(Topic, PatternPrefixed, "", "User:*", "*", OpAll, Allow),
		binding(ResourceAny, PatternLiteral, "*", "User:*", "*", OpAll, Deny),
	}
}

func TestAuthorizerValidate(t *testing.T) {
	t.Parallel()
	if err := (Authorizer{SuperUsers: []string{admin, "User:*"}}).Validate(); err != nil {
		t.Errorf("valid super users: %v", err)
	}
	for _, p := range []string{"admin", "User:", ":admin", ""} {
		if err := (Authorizer{SuperUsers: []string{admin, p}}).Validate(); !errors.Is(err, ErrInvalidAuthorizer) {
			t.Errorf("super user %q: %v, want ErrInvalidAuthorizer", p, err)
		}
	}
}
