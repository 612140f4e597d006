package acl

import (
	"errors"
	"strings"
	"testing"
)

// TestFilterMatches: Kafka's ResourcePatternFilter and
// AccessControlEntryFilter semantics over a fixed set of bindings.
func TestFilterMatches(t *testing.T) {
	t.Parallel()
	var (
		literal     = allowTopic("orders", "User:alice", OpRead)
		wildcard    = allowTopic("*", "User:alice", OpRead)
		prefix      = binding(Topic, PatternPrefixed, "ord", "User:alice", "*", OpRead, Allow)
		whole       = binding(Topic, PatternPrefixed, "orders", "User:alice", "*", OpRead, Allow)
		longer      = binding(Topic, PatternPrefixed, "orders-", "User:alice", "*", OpRead, Allow)
		short       = allowTopic("ord", "User:alice", OpRead)
		group       = binding(Group, PatternLiteral, "orders", "User:alice", "*", OpRead, Allow)
		everyone    = allowTopic("orders", "User:*", OpRead)
		fromHost    = binding(Topic, PatternLiteral, "orders", "User:alice", "10.0.0.1", OpRead, Allow)
		all         = allowTopic("orders", "User:alice", OpAll)
		deny        = denyTopic("orders", "User:alice", OpRead)
		allBindings = []Binding{literal, wildcard, prefix, whole, longer, short, group, everyone, fromHost, all, deny}
	)
	with := func(change func(*Filter)) Filter {
		f := AnyFilter()
		change(&f)
		return f
	}
	for _, tt := range []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any", AnyFilter(), allBindings},
		{"zero value matches nothing valid", Filter{}, nil},
		{"resource type", with(func(f *Filter) { f.ResourceType = Group }), []Binding{group}},
		{"prefixed pattern, no name", with(func(f *Filter) { f.PatternType = PatternPrefixed }), []Binding{prefix, whole, longer}},
		{"literal name: exact, no wildcard, no prefixes",
			with(func(f *Filter) { f.PatternType, f.ResourceName = PatternLiteral, ptr("orders") }),
			[]Binding{literal, group, everyone, fromHost, all, deny}},
		{"literal name * matches only the wildcard binding",
			with(func(f *Filter) { f.PatternType, f.ResourceName = PatternLiteral, ptr("*") }),
			[]Binding{wildcard}},
		{"prefixed name: exact prefix only",
			with(func(f *Filter) { f.PatternType, f.ResourceName = PatternPrefixed, ptr("ord") }),
			[]Binding{prefix}},
		{"any pattern with name: exact name, either pattern",
			with(func(f *Filter) { f.ResourceType, f.ResourceName = Topic, ptr("orders") }),
			[]Binding{literal, whole, everyone, fromHost, all, deny}},
		{"match: literal, wildcard and covering prefixes",
			with(func(f *Filter) { f.ResourceType, f.PatternType, f.ResourceName = Topic, PatternMatch, ptr("orders") }),
			[]Binding{literal, wildcard, prefix, whole, everyone, fromHost, all, deny}},
		{"match *: the wildcard binding only, no prefix of *",
			with(func(f *Filter) { f.PatternType, f.ResourceName = PatternMatch, ptr("*") }),
			[]Binding{wildcard}},
		{"match without a name is any",
			with(func(f *Filter) { f.ResourceType, f.PatternType = Topic, PatternMatch }),
			[]Binding{literal, wildcard, prefix, whole, longer, short, everyone, fromHost, all, deny}},
		{"principal exact, no wildcard expansion",
			with(func(f *Filter) { f.Principal = ptr("User:*") }),
			[]Binding{everyone}},
		{"host exact", with(func(f *Filter) { f.Host = ptr("10.0.0.1") }), []Binding{fromHost}},
		{"host * is the literal host", with(func(f *Filter) { f.Host, f.ResourceType = ptr("*"), Group }), []Binding{group}},
		{"operation exact: ALL selects only ALL bindings", with(func(f *Filter) { f.Operation = OpAll }), []Binding{all}},
		{"permission", with(func(f *Filter) { f.Permission = Deny }), []Binding{deny}},
	} {
		var got []Binding
		for _, b := range allBindings {
			if tt.f.Matches(b) {
				got = append(got, b)
			}
		}
		if !equalBindings(got, tt.want) {
			t.Errorf("%s: got\n%v\nwant\n%v", tt.name, got, tt.want)
		}
	}
}

func equalBindings(a, b []Binding) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFilterValidate(t *testing.T) {
	t.Parallel()
	with := func(change func(*Filter)) Filter {
		f := AnyFilter()
		change(&f)
		return f
	}
	for _, f := range []Filter{
		AnyFilter(),
		with(func(f *Filter) { f.PatternType, f.ResourceName = PatternMatch, ptr("orders") }),
		with(func(f *Filter) {
			f.ResourceType, f.PatternType, f.Operation, f.Permission = User, PatternPrefixed, OpDescribeTokens, Allow
		}),
		with(func(f *Filter) { f.Operation = OpAll }),
	} {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	for _, tt := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "resource type Unknown, want one of Any, Topic,"},
		{with(func(f *Filter) { f.ResourceType = 8 }), "resource type ResourceType(8), want"},
		{with(func(f *Filter) { f.PatternType = PatternUnknown }), "pattern type UNKNOWN, want one of ANY, MATCH, LITERAL, PREFIXED"},
		{with(func(f *Filter) { f.PatternType = 5 }), "pattern type PatternType(5)"},
		{with(func(f *Filter) { f.Operation = OpUnknown }), "operation UNKNOWN, want one of ANY, ALL, READ,"},
		{with(func(f *Filter) { f.Operation = -1 }), "operation Operation(-1)"},
		{with(func(f *Filter) { f.Permission = PermissionUnknown }), "permission UNKNOWN, want one of ANY, DENY, ALLOW"},
	} {
		err := tt.f.Validate()
		if !errors.Is(err, ErrInvalidFilter) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want ErrInvalidFilter containing %q", tt.f, err, tt.want)
		}
	}
}
