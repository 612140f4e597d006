package meta

import (
	"fmt"
	"iter"
	"slices"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/sasl"
)

// Security in the metadata: users' SCRAM credentials (KIP-554), which
// every broker checks logins against, and the access control lists
// (KIP-11, KIP-290) its authorizer decides by.

func init() {
	registerCommand(cmdAlterScramCredential, "AlterScramCredential", 1, (*AlterScramCredential).apply)
	registerCommand(cmdCreateACLs, "CreateACLs", 1, (*CreateACLs).apply)
	registerCommand(cmdDeleteACLs, "DeleteACLs", 1, (*DeleteACLs).apply)
}

// UserCredential is one user's SCRAM credential for one mechanism: salted
// and hashed, never the password.
type UserCredential struct {
	User string `json:"user"`
	sasl.Credential
}

func (c *UserCredential) check() error {
	if c.User == "" {
		return fmt.Errorf("%w: empty user name", ErrUnacceptableCredential)
	}
	if err := c.Credential.Validate(); err != nil {
		return fmt.Errorf("%w: user %q: %v", ErrUnacceptableCredential, c.User, err)
	}
	return nil
}

func credentialKey(user, mechanism string) []byte {
	return append(append([]byte(user), 0), mechanism...)
}

// AlterScramCredential sets and removes one user's SCRAM credentials, as
// one entry of AlterUserScramCredentials: Upsert replaces the credential of
// each mechanism it holds, Delete removes those of the mechanisms it names
// (ErrCredentialNotFound if there is none).
type AlterScramCredential struct {
	User   string            `json:"user"`
	Upsert []sasl.Credential `json:"upsert,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

func (AlterScramCredential) commandType() CommandType { return cmdAlterScramCredential }

func (c *AlterScramCredential) apply(tx *txn) (int64, error) {
	if c.User == "" {
		return 0, fmt.Errorf("%w: empty user name", ErrUnacceptableCredential)
	}
	seen := map[string]bool{}
	for _, m := range c.Delete {
		if seen[m] {
			return 0, fmt.Errorf("%w: mechanism %s named twice for user %q", ErrUnacceptableCredential, m, c.User)
		}
		seen[m] = true
		if _, ok := tx.st.credentials.Get(credentialKey(c.User, m)); !ok {
			return 0, fmt.Errorf("%w: user %q has no %s credential", ErrCredentialNotFound, c.User, m)
		}
	}
	for _, cred := range c.Upsert {
		if seen[cred.Mechanism] {
			return 0, fmt.Errorf("%w: mechanism %s named twice for user %q", ErrUnacceptableCredential, cred.Mechanism, c.User)
		}
		seen[cred.Mechanism] = true
		uc := UserCredential{User: c.User, Credential: cred}
		if err := uc.check(); err != nil {
			return 0, err
		}
	}
	for _, m := range c.Delete {
		tx.st.credentials, _, _ = tx.st.credentials.Delete(credentialKey(c.User, m))
	}
	for _, cred := range c.Upsert {
		tx.st.credentials, _, _ = tx.st.credentials.Insert(credentialKey(c.User, cred.Mechanism), &UserCredential{User: c.User, Credential: cred})
	}
	tx.changed(Change{Kind: ChangeScramCredential})
	return 0, nil
}

// ScramCredential returns user's credential for mechanism; State is the
// brokers' sasl.Credentials.
func (s *State) ScramCredential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := s.credentials.Get(credentialKey(user, mechanism))
	if !ok {
		return sasl.Credential{}, false
	}
	return c.Credential, true
}

// ScramCredentials returns every stored credential, by user and mechanism.
func (s *State) ScramCredentials() []UserCredential {
	var out []UserCredential
	s.credentials.Root().Walk(func(_ []byte, c *UserCredential) bool {
		out = append(out, *c)
		return false
	})
	return out
}

// ACLResource is every ACL of one resource pattern: the bindings sharing
// its type, pattern type and name, as Kafka keeps them together.
type ACLResource struct {
	Type     acl.ResourceType `json:"type"`
	Pattern  acl.PatternType  `json:"pattern"`
	Name     string           `json:"name"`
	Bindings []acl.Binding    `json:"bindings"`
}

func (r *ACLResource) check() error {
	if len(r.Bindings) == 0 {
		return fmt.Errorf("%w: %s %s %q has no bindings", ErrInvalidACL, r.Type, r.Pattern, r.Name)
	}
	for _, b := range r.Bindings {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidACL, err)
		}
		if b.ResourceType != r.Type || b.PatternType != r.Pattern || b.ResourceName != r.Name {
			return fmt.Errorf("%w: binding %s filed under %s %s %q", ErrInvalidACL, b, r.Type, r.Pattern, r.Name)
		}
	}
	return nil
}

// aclKey orders resource patterns by type, pattern type and name, so the
// prefixed patterns of one type that are prefixes of a name lie on that
// name's path in the tree.
func aclKey(t acl.ResourceType, p acl.PatternType, name string) []byte {
	return append([]byte{byte(t), byte(p)}, name...)
}

// CreateACLs adds bindings; one already present is left as it is.
type CreateACLs struct {
	Bindings []acl.Binding `json:"bindings"`
}

func (CreateACLs) commandType() CommandType { return cmdCreateACLs }

func (c *CreateACLs) apply(tx *txn) (int64, error) {
	for _, b := range c.Bindings {
		if err := b.Validate(); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrInvalidACL, err)
		}
	}
	for _, b := range c.Bindings {
		key := aclKey(b.ResourceType, b.PatternType, b.ResourceName)
		r := &ACLResource{Type: b.ResourceType, Pattern: b.PatternType, Name: b.ResourceName}
		if cur, ok := tx.st.acls.Get(key); ok {
			if slices.Contains(cur.Bindings, b) {
				continue
			}
			r.Bindings = slices.Clone(cur.Bindings)
		}
		r.Bindings = append(r.Bindings, b)
		tx.st.acls, _, _ = tx.st.acls.Insert(key, r)
	}
	tx.changed(Change{Kind: ChangeACL})
	return 0, nil
}

// DeleteACLs removes exactly the bindings named (those a DeleteAcls
// filter matched); one not present is skipped.
type DeleteACLs struct {
	Bindings []acl.Binding `json:"bindings"`
}

func (DeleteACLs) commandType() CommandType { return cmdDeleteACLs }

func (c *DeleteACLs) apply(tx *txn) (int64, error) {
	for _, b := range c.Bindings {
		key := aclKey(b.ResourceType, b.PatternType, b.ResourceName)
		cur, ok := tx.st.acls.Get(key)
		if !ok || !slices.Contains(cur.Bindings, b) {
			continue
		}
		left := slices.DeleteFunc(slices.Clone(cur.Bindings), func(o acl.Binding) bool { return o == b })
		if len(left) == 0 {
			tx.st.acls, _, _ = tx.st.acls.Delete(key)
			continue
		}
		tx.st.acls, _, _ = tx.st.acls.Insert(key, &ACLResource{Type: cur.Type, Pattern: cur.Pattern, Name: cur.Name, Bindings: left})
	}
	tx.changed(Change{Kind: ChangeACL})
	return 0, nil
}

// ACLs returns every binding, by resource pattern.
func (s *State) ACLs() []acl.Binding {
	return collectACLs(s.acls.Root(), nil)
}

// HasACLs reports whether any ACL is set.
func (s *State) HasACLs() bool { return s.acls.Len() > 0 }

// Bindings yields the bindings of type t whose pattern matches name: the
// literal name's, the literal wildcard's, and those of every prefixed
// pattern that is a prefix of name. State is the brokers' acl.Source.
func (s *State) Bindings(t acl.ResourceType, name string) iter.Seq[acl.Binding] {
	return func(yield func(acl.Binding) bool) {
		if r, ok := s.acls.Get(aclKey(t, acl.PatternLiteral, name)); ok && !yieldAll(r.Bindings, yield) {
			return
		}
		if name != acl.Wildcard {
			if r, ok := s.acls.Get(aclKey(t, acl.PatternLiteral, acl.Wildcard)); ok && !yieldAll(r.Bindings, yield) {
				return
			}
		}
		s.acls.Root().WalkPath(aclKey(t, acl.PatternPrefixed, name), func(_ []byte, r *ACLResource) bool {
			return !yieldAll(r.Bindings, yield)
		})
	}
}

// yieldAll yields bindings until yield stops, reporting whether it went on.
func yieldAll(bindings []acl.Binding, yield func(acl.Binding) bool) bool {
	for _, b := range bindings {
		if !yield(b) {
			return false
		}
	}
	return true
}

// BindingsOfType yields every binding of resource type t.
func (s *State) BindingsOfType(t acl.ResourceType) iter.Seq[acl.Binding] {
	return func(yield func(acl.Binding) bool) {
		s.acls.Root().WalkPrefix([]byte{byte(t)}, func(_ []byte, r *ACLResource) bool {
			return !yieldAll(r.Bindings, yield)
		})
	}
}

func collectACLs(root *iradix.Node[*ACLResource], prefix []byte) []acl.Binding {
	var out []acl.Binding
	root.WalkPrefix(prefix, func(_ []byte, r *ACLResource) bool {
		out = append(out, r.Bindings...)
		return false
	})
	return out
}
