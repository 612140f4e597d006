package acl

import (
	"errors"
	"strings"
	"testing"
)

// TestRoundTrip: every named value of each type parses back from its
// String, in upper, lower and the printed case.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, s string, parse func(string) (int8, error), want int8) {
		t.Helper()
		for _, in := range []string{s, strings.ToLower(s), strings.ToUpper(s)} {
			got, err := parse(in)
			if err != nil || got != want {
				t.Errorf("parse(%q) = %d, %v; want %d", in, got, err, want)
			}
		}
	}
	for v := range ResourceType(len(resourceTypeNames)) {
		check(t, v.String(), func(s string) (int8, error) { r, err := ParseResourceType(s); return int8(r), err }, int8(v))
	}
	for v := range PatternType(len(patternTypeNames)) {
		check(t, v.String(), func(s string) (int8, error) { r, err := ParsePatternType(s); return int8(r), err }, int8(v))
	}
	for v := range Operation(len(operationNames)) {
		check(t, v.String(), func(s string) (int8, error) { r, err := ParseOperation(s); return int8(r), err }, int8(v))
	}
	for v := range Permission(len(permissionNames)) {
		check(t, v.String(), func(s string) (int8, error) { r, err := ParsePermission(s); return int8(r), err }, int8(v))
	}
}

// TestNames pins each value's printed name and wire code to Kafka's.
func TestNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		got  string
		code int8
		want string
		wire int8
	}{
		{ResourceUnknown.String(), int8(ResourceUnknown), "Unknown", 0},
		{ResourceAny.String(), int8(ResourceAny), "Any", 1},
		{Topic.String(), int8(Topic), "Topic", 2},
		{Group.String(), int8(Group), "Group", 3},
		{Cluster.String(), int8(Cluster), "Cluster", 4},
		{TransactionalID.String(), int8(TransactionalID), "TransactionalId", 5},
		{DelegationToken.String(), int8(DelegationToken), "DelegationToken", 6},
		{User.String(), int8(User), "User", 7},
		{PatternUnknown.String(), int8(PatternUnknown), "UNKNOWN", 0},
		{PatternAny.String(), int8(PatternAny), "ANY", 1},
		{PatternMatch.String(), int8(PatternMatch), "MATCH", 2},
		{PatternLiteral.String(), int8(PatternLiteral), "LITERAL", 3},
		{PatternPrefixed.String(), int8(PatternPrefixed), "PREFIXED", 4},
		{OpUnknown.String(), int8(OpUnknown), "UNKNOWN", 0},
		{OpAny.String(), int8(OpAny), "ANY", 1},
		{OpAll.String(), int8(OpAll), "ALL", 2},
		{OpRead.String(), int8(OpRead), "READ", 3},
		{OpWrite.String(), int8(OpWrite), "WRITE", 4},
		{OpCreate.String(), int8(OpCreate), "CREATE", 5},
		{OpDelete.String(), int8(OpDelete), "DELETE", 6},
		{OpAlter.String(), int8(OpAlter), "ALTER", 7},
		{OpDescribe.String(), int8(OpDescribe), "DESCRIBE", 8},
		{OpClusterAction.String(), int8(OpClusterAction), "CLUSTER_ACTION", 9},
		{OpDescribeConfigs.String(), int8(OpDescribeConfigs), "DESCRIBE_CONFIGS", 10},
		{OpAlterConfigs.String(), int8(OpAlterConfigs), "ALTER_CONFIGS", 11},
		{OpIdempotentWrite.String(), int8(OpIdempotentWrite), "IDEMPOTENT_WRITE", 12},
		{OpCreateTokens.String(), int8(OpCreateTokens), "CREATE_TOKENS", 13},
		{OpDescribeTokens.String(), int8(OpDescribeTokens), "DESCRIBE_TOKENS", 14},
		{PermissionUnknown.String(), int8(PermissionUnknown), "UNKNOWN", 0},
		{PermissionAny.String(), int8(PermissionAny), "ANY", 1},
		{Deny.String(), int8(Deny), "DENY", 2},
		{Allow.String(), int8(Allow), "ALLOW", 3},
		{ResourceType(8).String(), 8, "ResourceType(8)", 8},
		{PatternType(-1).String(), -1, "PatternType(-1)", -1},
		{Operation(15).String(), 15, "Operation(15)", 15},
		{Permission(4).String(), 4, "Permission(4)", 4},
	} {
		if tt.got != tt.want || tt.code != tt.wire {
			t.Errorf("%q (%d), want %q (%d)", tt.got, tt.code, tt.want, tt.wire)
		}
	}
}

// TestParseSpellings: the spellings kafka-acls.sh users type, with - or _
// between words or neither.
func TestParseSpellings(t *testing.T) {
	t.Parallel()
	resources := map[string]ResourceType{
		"topic": Topic, "GROUP": Group, "Cluster": Cluster, "any": ResourceAny,
		"transactional-id": TransactionalID, "TRANSACTIONAL_ID": TransactionalID, "transactionalid": TransactionalID,
		"delegation-token": DelegationToken, "DelegationToken": DelegationToken, "user": User,
	}
	for s, want := range resources {
		if got, err := ParseResourceType(s); err != nil || got != want {
			t.Errorf("ParseResourceType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	patterns := map[string]PatternType{"literal": PatternLiteral, "Prefixed": PatternPrefixed, "match": PatternMatch, "any": PatternAny}
	for s, want := range patterns {
		if got, err := ParsePatternType(s); err != nil || got != want {
			t.Errorf("ParsePatternType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	operations := map[string]Operation{
		"read": OpRead, "All": OpAll, "cluster-action": OpClusterAction, "ClusterAction": OpClusterAction,
		"describe-configs": OpDescribeConfigs, "describe_configs": OpDescribeConfigs, "alter-configs": OpAlterConfigs,
		"IdempotentWrite": OpIdempotentWrite, "idempotent-write": OpIdempotentWrite,
		"create-tokens": OpCreateTokens, "describe_tokens": OpDescribeTokens,
	}
	for s, want := range operations {
		if got, err := ParseOperation(s); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	permissions := map[string]Permission{"allow": Allow, "Deny": Deny, "ANY": PermissionAny}
	for s, want := range permissions {
		if got, err := ParsePermission(s); err != nil || got != want {
			t.Errorf("ParsePermission(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
}

// TestParseErrors: an unknown name is refused with ErrUnknownName and a
// message that names the valid values.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		parse func(string) error
		in    string
		want  string
	}{
		{func(s string) error { _, err := ParseResourceType(s); return err }, "topics",
			`acl: unknown name: resource type "topics", want one of Any, Topic, Group, Cluster, TransactionalId, DelegationToken, User`},
		{func(s string) error { _, err := ParsePatternType(s); return err }, "regex",
			`acl: unknown name: pattern type "regex", want one of ANY, MATCH, LITERAL, PREFIXED`},
		{func(s string) error { _, err := ParseOperation(s); return err }, "",
			`acl: unknown name: operation "", want one of ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS`},
		{func(s string) error { _, err := ParseOperation(s); return err }, "Operation(15)", "ANY, ALL, READ"},
		{func(s string) error { _, err := ParsePermission(s); return err }, "permit",
			`acl: unknown name: permission "permit", want one of ANY, DENY, ALLOW`},
		{func(s string) error { _, err := ParsePermission(s); return err }, "-", "want one of ANY, DENY, ALLOW"},
	} {
		err := tt.parse(tt.in)
		if !errors.Is(err, ErrUnknownName) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%q) = %v, want ErrUnknownName containing %q", tt.in, err, tt.want)
		}
	}
}
