package acl

import (
	"fmt"
	"strings"
)

// Filter selects bindings, as DescribeAcls and DeleteAcls filters do: Any
// fields (and nil strings) match everything; PatternMatch on a filter with a
// name matches literal bindings equal to the name, the literal wildcard "*",
// and prefixed bindings that are prefixes of the name; a filter with a
// literal name "*" matches only the wildcard binding (Kafka's semantics).
//
// With PatternAny and a name, the name is compared exactly with bindings
// of both pattern types. Principal and Host are compared exactly too: a
// filter for "User:alice" does not select "User:*" bindings.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// AnyFilter is the filter that matches every binding.
func AnyFilter() Filter {
	return Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
}

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) &&
		(f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == OpAny || f.Operation == b.Operation) &&
		(f.Permission == PermissionAny || f.Permission == b.Permission)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != PatternMatch {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case PatternLiteral:
		return name == b.ResourceName || b.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	default:
		return false // Kafka throws on a stored pattern that is neither
	}
}

// Validate reports whether DescribeAcls and DeleteAcls accept f: Kafka
// refuses a filter with an Unknown field, and a code it does not know
// decodes as Unknown. The error wraps ErrInvalidFilter.
func (f Filter) Validate() error {
	if !known(resourceTypeNames[:], f.ResourceType) {
		return invalidFilter("resource type %v, want one of %s", f.ResourceType, strings.Join(resourceTypeNames[ResourceAny:], ", "))
	}
	if !known(patternTypeNames[:], f.PatternType) {
		return invalidFilter("pattern type %v, want one of %s", f.PatternType, strings.Join(patternTypeNames[PatternAny:], ", "))
	}
	if !known(operationNames[:], f.Operation) {
		return invalidFilter("operation %v, want one of %s", f.Operation, strings.Join(operationNames[OpAny:], ", "))
	}
	if !known(permissionNames[:], f.Permission) {
		return invalidFilter("permission %v, want one of %s", f.Permission, strings.Join(permissionNames[PermissionAny:], ", "))
	}
	return nil
}

func invalidFilter(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidFilter}, args...)...)
}
