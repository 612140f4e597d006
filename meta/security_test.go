package meta

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/sasl"
)

func binding(t acl.ResourceType, p acl.PatternType, name, principal string, op acl.Operation, perm acl.Permission) acl.Binding {
	return acl.Binding{ResourceType: t, ResourceName: name, PatternType: p, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func credential(t testing.TB, mechanism, password string) sasl.Credential {
	c, err := sasl.FromPassword(mechanism, password, sasl.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bindings finds, for a resource, its literal ACLs, the literal wildcard's
// and every prefixed pattern that is a prefix of its name, and nothing
// else; the state round-trips through a snapshot.
func TestACLsAndCredentials(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	exact := binding(acl.Topic, acl.PatternLiteral, "orders-eu", "User:alice", acl.OpRead, acl.Allow)
	wildcard := binding(acl.Topic, acl.PatternLiteral, acl.Wildcard, "User:bob", acl.OpDescribe, acl.Allow)
	prefix := binding(acl.Topic, acl.PatternPrefixed, "orders-", "User:carol", acl.OpWrite, acl.Allow)
	shortPrefix := binding(acl.Topic, acl.PatternPrefixed, "o", "User:dave", acl.OpWrite, acl.Deny)
	otherPrefix := binding(acl.Topic, acl.PatternPrefixed, "ordersX", "User:erin", acl.OpWrite, acl.Allow)
	otherType := binding(acl.Group, acl.PatternLiteral, "orders-eu", "User:alice", acl.OpRead, acl.Allow)
	h.mustApply(&CreateACLs{Bindings: []acl.Binding{exact, wildcard, prefix, shortPrefix, otherPrefix, otherType, exact}})
	h.mustApply(&AlterScramCredential{User: "alice", Upsert: []sasl.Credential{credential(t, sasl.ScramSHA256, "a"), credential(t, sasl.ScramSHA512, "a")}})
	st := h.f.current()

	got := slices.Collect(st.Bindings(acl.Topic, "orders-eu"))
	want := []acl.Binding{exact, wildcard, shortPrefix, prefix}
	if !sameBindings(got, want) {
		t.Fatalf("Bindings(Topic, orders-eu) = %v, want %v", got, want)
	}
	if got := slices.Collect(st.Bindings(acl.Topic, "payments")); !sameBindings(got, []acl.Binding{wildcard}) {
		t.Fatalf("Bindings(Topic, payments) = %v", got)
	}
	if got := slices.Collect(st.BindingsOfType(acl.Group)); !sameBindings(got, []acl.Binding{otherType}) {
		t.Fatalf("BindingsOfType(Group) = %v", got)
	}
	if n := len(st.ACLs()); n != 6 {
		t.Fatalf("%d ACLs stored, want 6 (a repeated binding is stored once)", n)
	}
	if c, ok := st.ScramCredential("alice", sasl.ScramSHA512); !ok || !c.Check("a") {
		t.Fatal("alice's SCRAM-SHA-512 credential is missing or wrong")
	}

	restored, err := readSnapshot(bufio.NewReader(bytes.NewReader(snapshotBytes(t, st))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(restored.ACLs(), st.ACLs()) || !reflect.DeepEqual(restored.ScramCredentials(), st.ScramCredentials()) {
		t.Fatal("ACLs or credentials differ after a snapshot round trip")
	}

	h.mustApply(&DeleteACLs{Bindings: []acl.Binding{prefix, exact, otherPrefix}})
	h.mustApply(&AlterScramCredential{User: "alice", Delete: []string{sasl.ScramSHA256}})
	st = h.f.current()
	if got := slices.Collect(st.Bindings(acl.Topic, "orders-eu")); !sameBindings(got, []acl.Binding{wildcard, shortPrefix}) {
		t.Fatalf("after deletes, Bindings = %v", got)
	}
	if _, ok := st.ScramCredential("alice", sasl.ScramSHA256); ok {
		t.Fatal("the deleted credential is still there")
	}
}

func TestSecurityCommandRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	good := credential(t, sasl.ScramSHA256, "pw")
	short := good
	short.StoredKey = short.StoredKey[:3]
	for _, tc := range []struct {
		name string
		cmd  Command
		want error
	}{
		{"empty user", &AlterScramCredential{Upsert: []sasl.Credential{good}}, ErrUnacceptableCredential},
		{"bad credential", &AlterScramCredential{User: "u", Upsert: []sasl.Credential{short}}, ErrUnacceptableCredential},
		{"mechanism twice", &AlterScramCredential{User: "u", Upsert: []sasl.Credential{good, good}}, ErrUnacceptableCredential},
		{"delete what is not there", &AlterScramCredential{User: "u", Delete: []string{sasl.ScramSHA512}}, ErrCredentialNotFound},
		{"invalid binding", &CreateACLs{Bindings: []acl.Binding{binding(acl.Topic, acl.PatternLiteral, "t", "alice", acl.OpRead, acl.Allow)}}, ErrInvalidACL},
	} {
		if err := h.apply(tc.cmd)[0]; !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if st := h.f.current(); st.HasACLs() || len(st.ScramCredentials()) != 0 {
		t.Fatal("a refused command changed the state")
	}
}

func sameBindings(got, want []acl.Binding) bool {
	key := func(b acl.Binding) string { return b.String() }
	a, b := make([]string, len(got)), make([]string, len(want))
	for i := range got {
		a[i] = key(got[i])
	}
	for i := range want {
		b[i] = key(want[i])
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
