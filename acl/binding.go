package acl

import (
	"fmt"
	"net/netip"
	"strings"
)

const (
	// ClusterName is the name of the one Cluster resource.
	ClusterName = "kafka-cluster"
	// Wildcard, as a literal resource name, matches every name of its
	// resource type; as a host, every host; as the name of a principal
	// ("User:*"), every principal of that type.
	Wildcard = "*"
)

// Binding is one ACL: a resource pattern (type, name, pattern type) and an
// entry (principal, host, operation, permission). The metadata state stores
// bindings as JSON with the wire codes as numbers.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"` // "User:alice", or "User:*"
	Host         string       `json:"host"`      // an IP, or "*"
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// Validate reports whether CreateAcls accepts b, as Kafka decides it: a
// concrete resource type, a Literal or Prefixed pattern, a non-empty name
// (for Cluster only the literal ClusterName), a principal "Type:name" with
// both parts non-empty, a non-empty host, a concrete operation (All or a
// named one), and Allow or Deny. Kafka asks only for the colon in a
// principal; an empty type or name is refused here as well. The error
// wraps ErrInvalidBinding.
func (b Binding) Validate() error {
	if !b.ResourceType.concrete() {
		return invalidBinding("resource type %v, want one of %s", b.ResourceType, strings.Join(resourceTypeNames[Topic:], ", "))
	}
	if !b.PatternType.concrete() {
		return invalidBinding("pattern type %v, want %v or %v", b.PatternType, PatternLiteral, PatternPrefixed)
	}
	if b.ResourceName == "" {
		return invalidBinding("empty resource name, want a name, a prefix or %q", Wildcard)
	}
	if b.ResourceType == Cluster && (b.ResourceName != ClusterName || b.PatternType != PatternLiteral) {
		return invalidBinding("Cluster resource %v %q, want the %v name %q", b.PatternType, b.ResourceName, PatternLiteral, ClusterName)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return invalidBinding("principal %q, want Type:name, such as User:alice or User:*", b.Principal)
	}
	if b.Host == "" {
		return invalidBinding("empty host, want an IP address or %q", Wildcard)
	}
	if !b.Operation.concrete() {
		return invalidBinding("operation %v, want one of %s", b.Operation, strings.Join(operationNames[OpAll:], ", "))
	}
	if !b.Permission.concrete() {
		return invalidBinding("permission %v, want %v or %v", b.Permission, Allow, Deny)
	}
	return nil
}

func invalidBinding(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidBinding}, args...)...)
}

// String gives b on one line: the resource pattern as kafka-acls.sh's
// --list headers spell it, then the entry as it prints it below them:
//
//	Topic:LITERAL:orders (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
func (b Binding) String() string {
	return fmt.Sprintf("%v:%v:%s (principal=%s, host=%s, operation=%v, permissionType=%v)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// MatchesResource reports whether b's resource pattern covers the resource
// of type t named name: b is of type t, and either b is Literal and named
// name or Wildcard, or b is Prefixed and its name is a non-empty prefix of
// name. A pattern of any other type, or with an empty name, covers nothing.
// Source implementations select with it; the Authorizer checks it again.
func (b Binding) MatchesResource(t ResourceType, name string) bool {
	if b.ResourceType != t || !t.concrete() || b.ResourceName == "" {
		return false
	}
	switch b.PatternType {
	case PatternLiteral:
		return b.ResourceName == name || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	default:
		return false
	}
}

// appliesTo reports whether b's entry is for principal connecting from
// host: b's principal is principal, or the wildcard principal of its type
// ("User:*" for "User:alice"), and b's host is host or Wildcard.
func (b Binding) appliesTo(principal, host string) bool {
	return (b.Host == Wildcard || sameHost(b.Host, host)) && principalMatches(b.Principal, principal)
}

// sameHost reports whether a binding's host names the address a request
// came from. Addresses are compared as addresses, not as text: a request's
// host is Go's form of its address (2001:db8::1), while an ACL copied from
// Kafka's tools holds Java's (2001:db8:0:0:0:0:0:1), or upper-case hex, or
// an IPv4 address mapped into IPv6; compared as text, such a DENY never
// applied.
func sameHost(binding, request string) bool {
	if binding == request {
		return true
	}
	a, errA := netip.ParseAddr(binding)
	b, errB := netip.ParseAddr(request)
	return errA == nil && errB == nil && a.Unmap() == b.Unmap()
}

// principalMatches reports whether a binding's principal covers a
// request's. Kafka compares against the one constant "User:*" whatever the
// request principal's type; here "T:*" covers the principals of type T,
// which is the same for the User principals every authenticator produces.
func principalMatches(binding, request string) bool {
	if binding == request {
		return true
	}
	typ, name, ok := strings.Cut(binding, ":")
	if !ok || typ == "" || name != Wildcard {
		return false
	}
	requestType, _, ok := strings.Cut(request, ":")
	return ok && requestType == typ
}

// operationMatches reports whether a binding of operation bound decides a
// request for op on its own: bound is op, or All.
func operationMatches(bound, op Operation) bool {
	return bound == op || bound == OpAll
}

// allowCovers reports whether an Allow binding of operation bound allows a
// request for op: it matches op, or it implies it (Read, Write, Delete and
// Alter imply Describe; AlterConfigs implies DescribeConfigs). A Deny
// binding covers only what operationMatches says.
func allowCovers(bound, op Operation) bool {
	if operationMatches(bound, op) {
		return true
	}
	switch op {
	case OpDescribe:
		return bound == OpRead || bound == OpWrite || bound == OpDelete || bound == OpAlter
	case OpDescribeConfigs:
		return bound == OpAlterConfigs
	default:
		return false
	}
}
