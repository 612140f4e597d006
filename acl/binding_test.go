package acl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestBindingValidate: what CreateAcls accepts, and each refusal naming
// what is wrong and what is wanted.
func TestBindingValidate(t *testing.T) {
	t.Parallel()
	good := allowTopic("orders", "User:alice", OpRead)
	with := func(change func(*Binding)) Binding {
		b := good
		change(&b)
		return b
	}
	for _, b := range []Binding{
		good,
		with(func(b *Binding) { b.PatternType = PatternPrefixed; b.ResourceName = "ord" }),
		with(func(b *Binding) { b.ResourceName = Wildcard }),
		with(func(b *Binding) { b.Principal = "User:*" }),
		with(func(b *Binding) { b.Principal = "Group:eng:ops" }),
		with(func(b *Binding) { b.Host = "10.0.0.1" }),
		with(func(b *Binding) { b.Operation = OpAll; b.Permission = Deny }),
		with(func(b *Binding) { b.Operation = OpDescribeTokens }),
		with(func(b *Binding) {
			b.ResourceType = Cluster
			b.ResourceName = ClusterName
			b.Operation = OpClusterAction
		}),
		with(func(b *Binding) { b.ResourceType = Group; b.PatternType = PatternPrefixed }),
		with(func(b *Binding) { b.ResourceType = TransactionalID }),
		with(func(b *Binding) { b.ResourceType = DelegationToken }),
		with(func(b *Binding) { b.ResourceType = User; b.ResourceName = "User:bob" }),
	} {
		if err := b.Validate(); err != nil {
			t.Errorf("%v: %v", b, err)
		}
	}
	for _, tt := range []struct {
		b    Binding
		want string
	}{
		{with(func(b *Binding) { b.ResourceType = ResourceAny }), "resource type Any, want one of Topic, Group, Cluster, TransactionalId, DelegationToken, User"},
		{with(func(b *Binding) { b.ResourceType = ResourceUnknown }), "resource type Unknown, want"},
		{with(func(b *Binding) { b.ResourceType = 8 }), "resource type ResourceType(8), want"},
		{with(func(b *Binding) { b.PatternType = PatternMatch }), "pattern type MATCH, want LITERAL or PREFIXED"},
		{with(func(b *Binding) { b.PatternType = PatternAny }), "pattern type ANY, want"},
		{with(func(b *Binding) { b.PatternType = PatternUnknown }), "pattern type UNKNOWN, want"},
		{with(func(b *Binding) { b.ResourceName = "" }), `empty resource name, want a name, a prefix or "*"`},
		{with(func(b *Binding) { b.ResourceType = Cluster }), `Cluster resource LITERAL "orders", want the LITERAL name "kafka-cluster"`},
		{with(func(b *Binding) { b.ResourceType = Cluster; b.ResourceName = Wildcard }), `Cluster resource LITERAL "*"`},
		{with(func(b *Binding) {
			b.ResourceType, b.ResourceName, b.PatternType = Cluster, ClusterName, PatternPrefixed
		}), `Cluster resource PREFIXED "kafka-cluster"`},
		{with(func(b *Binding) { b.Principal = "alice" }), `principal "alice", want Type:name, such as User:alice or User:*`},
		{with(func(b *Binding) { b.Principal = "User:" }), `principal "User:"`},
		{with(func(b *Binding) { b.Principal = ":alice" }), `principal ":alice"`},
		{with(func(b *Binding) { b.Principal = "" }), `principal ""`},
		{with(func(b *Binding) { b.Host = "" }), `empty host, want an IP address or "*"`},
		{with(func(b *Binding) { b.Operation = OpAny }), "operation ANY, want one of ALL, READ, WRITE,"},
		{with(func(b *Binding) { b.Operation = OpUnknown }), "operation UNKNOWN, want"},
		{with(func(b *Binding) { b.Operation = 15 }), "operation Operation(15), want"},
		{with(func(b *Binding) { b.Permission = PermissionAny }), "permission ANY, want ALLOW or DENY"},
		{with(func(b *Binding) { b.Permission = PermissionUnknown }), "permission UNKNOWN, want ALLOW or DENY"},
	} {
		err := tt.b.Validate()
		if !errors.Is(err, ErrInvalidBinding) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want ErrInvalidBinding containing %q", tt.b, err, tt.want)
		}
	}
}

func TestBindingString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		b    Binding
		want string
	}{
		{allowTopic("orders", "User:alice", OpRead),
			"Topic:LITERAL:orders (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"},
		{binding(TransactionalID, PatternPrefixed, "tx-", "User:*", "10.0.0.1", OpDescribeConfigs, Deny),
			"TransactionalId:PREFIXED:tx- (principal=User:*, host=10.0.0.1, operation=DESCRIBE_CONFIGS, permissionType=DENY)"},
	} {
		if got := tt.b.String(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// TestBindingJSON pins the stored form: the field names and the wire
// codes as numbers.
func TestBindingJSON(t *testing.T) {
	t.Parallel()
	b := binding(Group, PatternPrefixed, "app-", "User:alice", "*", OpRead, Deny)
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"resource_type":3,"resource_name":"app-","pattern_type":4,"principal":"User:alice","host":"*","operation":3,"permission":2}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back Binding
	if err := json.Unmarshal(got, &back); err != nil || back != b {
		t.Fatalf("round trip: %v, %v", back, err)
	}
}

func TestMatchesResource(t *testing.T) {
	t.Parallel()
	topic := func(pattern PatternType, name string) Binding {
		return binding(Topic, pattern, name, "User:alice", "*", OpRead, Allow)
	}
	for _, tt := range []struct {
		b    Binding
		t    ResourceType
		name string
		want bool
	}{
		{topic(PatternLiteral, "orders"), Topic, "orders", true},
		{topic(PatternLiteral, "orders"), Topic, "orders-eu", false},
		{topic(PatternLiteral, "orders"), Topic, "order", false},
		{topic(PatternLiteral, "orders"), Group, "orders", false},
		{topic(PatternLiteral, "*"), Topic, "orders", true},
		{topic(PatternLiteral, "*"), Topic, "*", true},
		{topic(PatternLiteral, "*"), Group, "orders", false},
		{topic(PatternPrefixed, "ord"), Topic, "orders", true},
		{topic(PatternPrefixed, "orders"), Topic, "orders", true},
		{topic(PatternPrefixed, "orders-"), Topic, "orders", false},
		{topic(PatternPrefixed, "*"), Topic, "orders", false},
		{topic(PatternPrefixed, "*"), Topic, "*orders", true},
		{topic(PatternPrefixed, ""), Topic, "orders", false},
		{topic(PatternLiteral, ""), Topic, "", false},
		{topic(PatternMatch, "orders"), Topic, "orders", false},
		{topic(PatternAny, "orders"), Topic, "orders", false},
		{topic(PatternUnknown, "orders"), Topic, "orders", false},
		{binding(ResourceAny, PatternLiteral, "orders", "User:alice", "*", OpRead, Allow), ResourceAny, "orders", false},
	} {
		if got := tt.b.MatchesResource(tt.t, tt.name); got != tt.want {
			t.Errorf("%v MatchesResource(%v, %q) = %v, want %v", tt.b, tt.t, tt.name, got, tt.want)
		}
	}
}
