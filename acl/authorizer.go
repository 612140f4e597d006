package acl

import (
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Source gives the bindings that may apply to one resource: every binding
// of resource type t whose pattern matches name (literal name, literal "*",
// prefixed patterns that are prefixes of name). The metadata state
// implements it.
//
// The Authorizer checks every binding again with MatchesResource, so a
// Source that yields too much cannot widen access; one that leaves a
// binding out can, and must not. The bindings are yielded rather than
// returned, so a check copies none of them (it runs on every request).
type Source interface {
	Bindings(t ResourceType, name string) iter.Seq[Binding]
	// BindingsOfType is every binding of type t (for AuthorizeAny).
	BindingsOfType(t ResourceType) iter.Seq[Binding]
}

// Authorizer decides requests from bindings, with the semantics of
// Kafka's AclAuthorizer and StandardAuthorizer. The zero value has no
// super users and denies resources that have no bindings.
type Authorizer struct {
	SuperUsers   []string // principals allowed everything ("User:admin")
	AllowIfNoACL bool     // allow.everyone.if.no.acl.found
}

// Validate reports whether every super user is a principal "Type:name"
// with both parts non-empty. The error wraps ErrInvalidAuthorizer.
func (a Authorizer) Validate() error {
	for _, p := range a.SuperUsers {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("%w: super user %q, want Type:name, such as User:admin", ErrInvalidAuthorizer, p)
		}
	}
	return nil
}

// Request is one authorization question.
type Request struct {
	Principal string // "User:alice"; "User:ANONYMOUS" when unauthenticated
	Host      string // client IP, in the form bindings name hosts (netip.Addr.String)
	Operation Operation
	Type      ResourceType
	Name      string
}

// Authorize reports whether r is allowed. A request whose type or
// operation is Unknown, Any or out of range is denied, super user or not
// (Kafka throws). Otherwise, in order:
//
//  1. A super user is allowed.
//  2. Of the bindings for the resource (those src.Bindings returns that
//     MatchesResource confirms), the ones that apply are those whose
//     principal is r's or the wildcard principal of its type ("User:*")
//     and whose host is r's or "*".
//  3. An applying Deny of r's operation or All denies.
//  4. An applying Allow of r's operation or All allows, and so does an
//     Allow of Read, Write, Delete or Alter for Describe, and an Allow of
//     AlterConfigs for DescribeConfigs. Deny does not extend that way: a
//     Deny of Read leaves Describe to the Allows.
//  5. A resource with no bindings at all, whoever they are for, is
//     allowed if AllowIfNoACL; any other request is denied.
func (a Authorizer) Authorize(src Source, r Request) bool {
	if !r.Type.concrete() || !r.Operation.concrete() {
		return false
	}
	if a.isSuperUser(r.Principal) {
		return true
	}
	found, allowed := false, false
	for b := range src.Bindings(r.Type, r.Name) {
		if !b.MatchesResource(r.Type, r.Name) {
			continue
		}
		found = true
		if !b.appliesTo(r.Principal, r.Host) {
			continue
		}
		switch b.Permission {
		case Deny:
			if operationMatches(b.Operation, r.Operation) {
				return false
			}
		case Allow:
			allowed = allowed || allowCovers(b.Operation, r.Operation)
		}
	}
	if !found {
		return a.AllowIfNoACL
	}
	return allowed
}

// AuthorizeAny is Kafka's authorizeByResourceType: may the principal perform
// op on at least one resource of type t (used for idempotent producers:
// Write on any topic). Deny rules (literal "*" deny, or a prefixed deny
// covering every allowed pattern) win as in Kafka's implementation.
//
// Only bindings of op itself or All count: no Allow implies Describe or
// DescribeConfigs here, as in Kafka. Invalid questions are denied as in
// Authorize. Then, in order:
//
//  1. A super user is allowed.
//  2. An applying literal "*" Deny denies.
//  3. An applying literal "*" Allow allows.
//  4. An applying Allow allows unless an applying Deny dominates it: a
//     literal Allow is dominated by a literal Deny of its name or a
//     prefixed Deny of a prefix of its name; a prefixed Allow by a
//     prefixed Deny of a prefix of its name.
//  5. If AllowIfNoACL and no binding of type t, whoever it is for, is the
//     literal "*", some name has no bindings at all, and the request is
//     allowed; otherwise it is denied.
//
// For op other than Describe and DescribeConfigs the answer is whether
// Authorize allows op on some name of type t, names being any strings
// (short of prefixed bindings that cover every first byte). Kafka's
// default implementation differs in two corners: it decides step 5 by
// asking Authorize about a resource named "hardcode", and it takes a
// prefixed "*" Allow for a wildcard in step 3.
func (a Authorizer) AuthorizeAny(src Source, principal, host string, op Operation, t ResourceType) bool {
	if !t.concrete() || !op.concrete() {
		return false
	}
	if a.isSuperUser(principal) {
		return true
	}
	var allows, denies []Binding
	wildcardAllow, wildcardBound := false, false
	for b := range src.BindingsOfType(t) {
		if b.ResourceType != t || !b.PatternType.concrete() || b.ResourceName == "" {
			continue
		}
		literalWildcard := b.PatternType == PatternLiteral && b.ResourceName == Wildcard
		wildcardBound = wildcardBound || literalWildcard
		if !b.appliesTo(principal, host) || !operationMatches(b.Operation, op) {
			continue
		}
		switch b.Permission {
		case Deny:
			if literalWildcard {
				return false
			}
			denies = append(denies, b)
		case Allow:
			wildcardAllow = wildcardAllow || literalWildcard
			allows = append(allows, b)
		}
	}
	if wildcardAllow {
		return true
	}
	for _, allow := range allows {
		if !slices.ContainsFunc(denies, func(deny Binding) bool { return dominates(deny, allow) }) {
			return true
		}
	}
	return a.AllowIfNoACL && !wildcardBound
}

// dominates reports whether the Deny binding deny covers every name the
// Allow binding allow covers.
func dominates(deny, allow Binding) bool {
	switch deny.PatternType {
	case PatternPrefixed:
		return strings.HasPrefix(allow.ResourceName, deny.ResourceName)
	case PatternLiteral:
		return allow.PatternType == PatternLiteral && allow.ResourceName == deny.ResourceName
	default:
		return false
	}
}

func (a Authorizer) isSuperUser(principal string) bool {
	return slices.Contains(a.SuperUsers, principal)
}
