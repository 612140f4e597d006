package acl

import (
	"testing"

	"pgregory.net/rapid"
)

// The generators draw from small sets, and bindings lean towards the
// request's type, principal, host and operation, so that they collide
// often. Names use the letters a and b and the wildcard; "~" never appears
// in a drawn name, so a name ending in it is covered only by the patterns
// that are prefixes of it.
var (
	drawnNames      = []string{"a", "ab", "b", "ba", Wildcard}
	requestNames    = []string{"a", "ab", "abb", "b", "c", Wildcard}
	drawnOperations = []Operation{OpAll, OpRead, OpWrite, OpCreate, OpDescribe, OpAlterConfigs, OpDescribeConfigs}
)

func drawRequest(t *rapid.T) Request {
	return Request{
		Principal: rapid.SampledFrom([]string{alice, bob}).Draw(t, "request principal"),
		Host:      rapid.SampledFrom([]string{aliceHost, otherHost}).Draw(t, "request host"),
		Operation: rapid.SampledFrom(drawnOperations).Draw(t, "request operation"),
		Type:      Topic,
		Name:      rapid.SampledFrom(requestNames).Draw(t, "request name"),
	}
}

// drawBinding draws a valid binding, of permission perm unless that is
// PermissionAny, that may or may not apply to r.
func drawBinding(t *rapid.T, label string, perm Permission, r Request) Binding {
	if perm == PermissionAny {
		perm = rapid.SampledFrom([]Permission{Allow, Deny}).Draw(t, label+" permission")
	}
	b := Binding{
		ResourceType: rapid.SampledFrom([]ResourceType{r.Type, r.Type, Group}).Draw(t, label+" type"),
		ResourceName: rapid.SampledFrom(drawnNames).Draw(t, label+" name"),
		PatternType:  rapid.SampledFrom([]PatternType{PatternLiteral, PatternPrefixed}).Draw(t, label+" pattern"),
		Principal:    rapid.SampledFrom([]string{r.Principal, r.Principal, r.Principal, "User:*", "User:carol"}).Draw(t, label+" principal"),
		Host:         rapid.SampledFrom([]string{Wildcard, Wildcard, r.Host, "10.9.9.9"}).Draw(t, label+" host"),
		Operation:    rapid.SampledFrom([]Operation{r.Operation, r.Operation, r.Operation, OpAll, OpRead, OpDescribe}).Draw(t, label+" operation"),
		Permission:   perm,
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("drew an invalid binding: %v", err)
	}
	return b
}

func drawBindings(t *rapid.T, r Request) []Binding {
	n := rapid.IntRange(0, 8).Draw(t, "bindings")
	out := make([]Binding, n)
	for i := range out {
		out[i] = drawBinding(t, "binding", PermissionAny, r)
	}
	return out
}

func drawAuthorizer(t *rapid.T) Authorizer {
	a := Authorizer{AllowIfNoACL: rapid.Bool().Draw(t, "AllowIfNoACL")}
	if rapid.Bool().Draw(t, "bob is a super user") {
		a.SuperUsers = []string{bob}
	}
	return a
}

func hasBindingFor(bindings []Binding, t ResourceType, name string) bool {
	for _, b := range bindings {
		if b.MatchesResource(t, name) {
			return true
		}
	}
	return false
}

func hasLiteralWildcard(bindings []Binding, t ResourceType) bool {
	for _, b := range bindings {
		if b.ResourceType == t && b.PatternType == PatternLiteral && b.ResourceName == Wildcard {
			return true
		}
	}
	return false
}

// TestDenyNeverAllows: for any bindings S, request r and Deny binding d,
// if r is denied under S it is denied under S plus d; and likewise for
// AuthorizeAny about r's principal, host, operation and type.
func TestDenyNeverAllows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, r := drawAuthorizer(t), drawRequest(t)
		before, d := drawBindings(t, r), drawBinding(t, "deny", Deny, r)
		after := append(before[:len(before):len(before)], d)
		if !a.Authorize(sliceSource(before), r) && a.Authorize(sliceSource(after), r) {
			t.Fatalf("adding %v allowed %+v", d, r)
		}
		if !a.AuthorizeAny(sliceSource(before), r.Principal, r.Host, r.Operation, r.Type) &&
			a.AuthorizeAny(sliceSource(after), r.Principal, r.Host, r.Operation, r.Type) {
			t.Fatalf("adding %v allowed %v on some %v to %s", d, r.Operation, r.Type, r.Principal)
		}
	})
}

// TestAllowNeverDenies: for any bindings S, request r and Allow binding
// a, if r is allowed under S it is allowed under S plus a, with one
// exception: S has no binding for r's resource, a is one, and
// AllowIfNoACL. Then r is allowed under S plus a exactly when its
// principal is a super user, or a applies to r and allows its operation.
//
// For AuthorizeAny the exception is: AllowIfNoACL, no binding of S is the
// literal "*" of r's type, and a is. Then every name has bindings, and the
// answer is true exactly when a applies to r's principal and host and is
// of r's operation or All, or S allows without AllowIfNoACL.
func TestAllowNeverDenies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		auth, r := drawAuthorizer(t), drawRequest(t)
		before, a := drawBindings(t, r), drawBinding(t, "allow", Allow, r)
		after := append(before[:len(before):len(before)], a)
		superUser := auth.isSuperUser(r.Principal)

		was, is := auth.Authorize(sliceSource(before), r), auth.Authorize(sliceSource(after), r)
		if auth.AllowIfNoACL && !hasBindingFor(before, r.Type, r.Name) && a.MatchesResource(r.Type, r.Name) {
			want := superUser || (a.appliesTo(r.Principal, r.Host) && allowCovers(a.Operation, r.Operation))
			if is != want {
				t.Fatalf("first binding %v for %+v: allowed %v, want %v", a, r, is, want)
			}
		} else if was && !is {
			t.Fatalf("adding %v denied %+v", a, r)
		}

		was = auth.AuthorizeAny(sliceSource(before), r.Principal, r.Host, r.Operation, r.Type)
		is = auth.AuthorizeAny(sliceSource(after), r.Principal, r.Host, r.Operation, r.Type)
		if auth.AllowIfNoACL && !hasLiteralWildcard(before, r.Type) && hasLiteralWildcard([]Binding{a}, r.Type) {
			strict := Authorizer{SuperUsers: auth.SuperUsers}
			want := strict.AuthorizeAny(sliceSource(before), r.Principal, r.Host, r.Operation, r.Type) ||
				(a.appliesTo(r.Principal, r.Host) && operationMatches(a.Operation, r.Operation))
			if is != want {
				t.Fatalf("first literal * %v: AuthorizeAny %v for %+v, want %v", a, is, r, want)
			}
		} else if was && !is {
			t.Fatalf("adding %v denied %v on some %v to %s", a, r.Operation, r.Type, r.Principal)
		}
	})
}

// TestSourceExtrasIgnored: Authorize and AuthorizeAny answer the same
// from a Source that returns every binding it holds, invalid ones
// included, as from one that returns only what MatchesResource selects.
func TestSourceExtrasIgnored(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, r := drawAuthorizer(t), drawRequest(t)
		bindings := drawBindings(t, r)
		sloppy := append(bindings[:len(bindings):len(bindings)], rapid.Custom(func(t *rapid.T) Binding {
			b := drawBinding(t, "junk", PermissionAny, r)
			b.PatternType = rapid.SampledFrom([]PatternType{PatternUnknown, PatternAny, PatternMatch, 5}).Draw(t, "junk pattern")
			return b
		}).Draw(t, "junk"))
		if want, got := a.Authorize(sliceSource(bindings), r), a.Authorize(sloppySource(sloppy), r); got != want {
			t.Fatalf("Authorize(%+v) = %v from a sloppy source, %v from an exact one", r, got, want)
		}
		want := a.AuthorizeAny(sliceSource(bindings), r.Principal, r.Host, r.Operation, r.Type)
		if got := a.AuthorizeAny(sloppySource(sloppy), r.Principal, r.Host, r.Operation, r.Type); got != want {
			t.Fatalf("AuthorizeAny(%+v) = %v from a sloppy source, %v from an exact one", r, got, want)
		}
	})
}

// TestAuthorizeAnyIsSomeName: for an operation that no Allow implies (not
// Describe or DescribeConfigs), AuthorizeAny is true exactly when
// Authorize allows the operation on some name of the type. The names
// worth trying are each binding's name, each binding's name plus "~"
// (outside every longer prefix), and "~" (outside every binding but the
// literal "*").
func TestAuthorizeAnyIsSomeName(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, r := drawAuthorizer(t), drawRequest(t)
		bindings := drawBindings(t, r)
		if r.Operation == OpDescribe || r.Operation == OpDescribeConfigs {
			t.Skip("an implied operation")
		}
		candidates := []string{"~"}
		for _, b := range bindings {
			candidates = append(candidates, b.ResourceName, b.ResourceName+"~")
		}
		some := ""
		for _, name := range candidates {
			if a.Authorize(sliceSource(bindings), r.on(r.Type, name)) {
				some = name
				break
			}
		}
		if got := a.AuthorizeAny(sliceSource(bindings), r.Principal, r.Host, r.Operation, r.Type); got != (some != "") {
			t.Fatalf("AuthorizeAny(%s, %s, %v, %v) = %v; Authorize allows name %q (\"\" for none)",
				r.Principal, r.Host, r.Operation, r.Type, got, some)
		}
	})
}

// TestMatchFilterSelectsSource: a MATCH filter for a type and name
// selects exactly the valid bindings that MatchesResource says a Source
// must return for them.
func TestMatchFilterSelectsSource(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRequest(t)
		b := drawBinding(t, "binding", PermissionAny, r)
		r.Type = rapid.SampledFrom([]ResourceType{Topic, Group}).Draw(t, "type")
		f := AnyFilter()
		f.ResourceType, f.PatternType, f.ResourceName = r.Type, PatternMatch, &r.Name
		if got, want := f.Matches(b), b.MatchesResource(r.Type, r.Name); got != want {
			t.Fatalf("MATCH %v %q selects %v: %v; MatchesResource: %v", r.Type, r.Name, b, got, want)
		}
	})
}
