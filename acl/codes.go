package acl

import (
	"fmt"
	"strings"
)

// ResourceType is the kind of resource an ACL protects. The values are
// Kafka's wire codes (kmsg.ACLResourceType).
type ResourceType int8

// Resource types.
const (
	ResourceUnknown ResourceType = iota // not a resource type; refused everywhere
	ResourceAny                         // filters only: every resource type
	Topic
	Group
	Cluster
	TransactionalID
	DelegationToken
	User
)

// PatternType says how a binding's resource name matches resource names.
// The values are Kafka's wire codes (kmsg.ACLResourcePatternType).
type PatternType int8

// Pattern types.
const (
	PatternUnknown  PatternType = iota // not a pattern type; refused everywhere
	PatternAny                         // filters only: every pattern type, names compared exactly
	PatternMatch                       // filters only: every binding that applies to the filter's name
	PatternLiteral                     // the name itself, or every name if it is Wildcard
	PatternPrefixed                    // every name that starts with the binding's name
)

// Operation is what a request does to a resource. The values are Kafka's
// wire codes (kmsg.ACLOperation). An Allow of Read, Write, Delete or Alter
// also allows Describe, and an Allow of AlterConfigs also allows
// DescribeConfigs.
type Operation int8

// Operations.
const (
	OpUnknown Operation = iota // not an operation; refused everywhere
	OpAny                      // filters only: every operation
	OpAll                      // in a binding: every operation
	OpRead
	OpWrite
	OpCreate
	OpDelete
	OpAlter
	OpDescribe
	OpClusterAction
	OpDescribeConfigs
	OpAlterConfigs
	OpIdempotentWrite
	OpCreateTokens
	OpDescribeTokens
)

// Permission is whether a binding allows or denies. The values are Kafka's
// wire codes (kmsg.ACLPermissionType).
type Permission int8

// Permissions.
const (
	PermissionUnknown Permission = iota // not a permission; refused everywhere
	PermissionAny                       // filters only: both permissions
	Deny
	Allow
)

// The names each value prints as, indexed by the value: kafka-acls.sh's
// names (the resource types as its resource headers spell them, the rest
// as its entries do). Index 0 is always the Unknown value.
var (
	resourceTypeNames = [...]string{"Unknown", "Any", "Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"}
	patternTypeNames  = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames    = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
		"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func (t ResourceType) String() string { return nameOf(resourceTypeNames[:], "ResourceType", t) }
func (p PatternType) String() string  { return nameOf(patternTypeNames[:], "PatternType", p) }
func (o Operation) String() string    { return nameOf(operationNames[:], "Operation", o) }
func (p Permission) String() string   { return nameOf(permissionNames[:], "Permission", p) }

// ParseResourceType reads a resource type's name: Topic, Group, Cluster,
// TransactionalId, DelegationToken, User or Any, in any case, with or
// without - or _ between words (transactional-id, DELEGATION_TOKEN).
// Unknown parses too, so that every String parses back.
func ParseResourceType(s string) (ResourceType, error) {
	return parse[ResourceType](resourceTypeNames[:], "resource type", s)
}

// ParsePatternType reads a pattern type's name: LITERAL, PREFIXED, ANY or
// MATCH, in any case. UNKNOWN parses too.
func ParsePatternType(s string) (PatternType, error) {
	return parse[PatternType](patternTypeNames[:], "pattern type", s)
}

// ParseOperation reads an operation's name: READ, WRITE, ..., ALL or ANY,
// in any case, with or without - or _ between words (cluster-action,
// DescribeConfigs). UNKNOWN parses too.
func ParseOperation(s string) (Operation, error) {
	return parse[Operation](operationNames[:], "operation", s)
}

// ParsePermission reads a permission's name: ALLOW, DENY or ANY, in any
// case. UNKNOWN parses too.
func ParsePermission(s string) (Permission, error) {
	return parse[Permission](permissionNames[:], "permission", s)
}

func nameOf[T ~int8](names []string, typeName string, v T) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typeName, int8(v))
}

// parse accepts every name, the Unknown one included so that String and
// Parse round-trip, but its error lists only the names worth asking for.
func parse[T ~int8](names []string, kind, s string) (T, error) {
	if key := normalizeName(s); key != "" {
		for i, name := range names {
			if normalizeName(name) == key {
				return T(i), nil
			}
		}
	}
	return 0, fmt.Errorf("%w: %s %q, want one of %s", ErrUnknownName, kind, s, strings.Join(names[1:], ", "))
}

// normalizeName lower-cases s and drops the word separators - and _, so
// that TransactionalId, transactional-id and TRANSACTIONAL_ID are one name.
func normalizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// concrete reports whether t names one kind of resource (not Unknown, not
// Any, not out of range): what a binding or a request may carry.
func (t ResourceType) concrete() bool { return t >= Topic && t <= User }

// concrete reports whether p is a binding's pattern type, Literal or
// Prefixed.
func (p PatternType) concrete() bool { return p == PatternLiteral || p == PatternPrefixed }

// concrete reports whether o is an operation a binding may carry: All or
// a named one (not Unknown, not Any, not out of range).
func (o Operation) concrete() bool { return o >= OpAll && o <= OpDescribeTokens }

// concrete reports whether p is Allow or Deny.
func (p Permission) concrete() bool { return p == Allow || p == Deny }

// known reports whether v is one of the named values, Any included:
// what a filter may carry.
func known[T ~int8](names []string, v T) bool { return v > 0 && int(v) < len(names) }
