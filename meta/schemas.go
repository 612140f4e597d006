package meta

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The schema registry's state (package registry serves it over
// Confluent's REST API): schemas by a global id, subjects holding versions
// of them, and the compatibility level and mode, global and per subject.
// Commands here check only what the state says (a subject's versions, the
// mode, references); parsing schemas and checking compatibility is the
// proposer's work, which names the version it checked against
// (RegisterSchema.LatestVersion), so a registration that raced another is
// refused and checked again.

func init() {
	registerCommand(cmdRegisterSchema, "RegisterSchema", 1, (*RegisterSchema).apply)
	registerCommand(cmdDeleteSchemaVersion, "DeleteSchemaVersion", 1, (*DeleteSchemaVersion).apply)
	registerCommand(cmdSetRegistryConfig, "SetRegistryConfig", 1, (*SetRegistryConfig).apply)
}

// SchemaReference is a schema's reference to a version of another subject,
// by the name the schema uses for it.
type SchemaReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int32  `json:"version"`
}

// RegisteredSchema is one schema, under its global id: its text as first
// registered, its type, references and the SHA-256 fingerprint of its
// canonical form. Registering a schema with the same type, fingerprint and
// references under any subject gives this id again.
type RegisteredSchema struct {
	ID          int32             `json:"id"`
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	References  []SchemaReference `json:"references,omitempty"`
	Fingerprint string            `json:"fingerprint"`
}

func (s *RegisteredSchema) same(t, fingerprint string, refs []SchemaReference) bool {
	return s.Type == t && s.Fingerprint == fingerprint && slices.Equal(s.References, refs)
}

// SubjectVersion is one version of a subject. A soft-deleted version keeps
// its number and schema until it is deleted for good.
type SubjectVersion struct {
	Version  int32 `json:"version"`
	SchemaID int32 `json:"schema_id"`
	Deleted  bool  `json:"deleted,omitempty"`
}

// Subject is a subject's versions, in version order, and its own
// compatibility level and mode ("" follows the global ones).
type Subject struct {
	Name          string           `json:"name"`
	Versions      []SubjectVersion `json:"versions,omitempty"`
	Compatibility string           `json:"compatibility,omitempty"`
	Mode          string           `json:"mode,omitempty"`
}

func (s *Subject) clone() *Subject {
	c := *s
	c.Versions = slices.Clone(s.Versions)
	return &c
}

// Live returns the versions that are not soft-deleted.
func (s Subject) Live() []SubjectVersion {
	var out []SubjectVersion
	for _, v := range s.Versions {
		if !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

// Version returns version n of the subject.
func (s Subject) Version(n int32) (SubjectVersion, bool) {
	i := slices.IndexFunc(s.Versions, func(v SubjectVersion) bool { return v.Version == n })
	if i < 0 {
		return SubjectVersion{}, false
	}
	return s.Versions[i], true
}

// RegistryConfig is the registry's global settings and its id sequence.
type RegistryConfig struct {
	// Compatibility and Mode are the global level and mode; "" is the
	// default (registry's).
	Compatibility string `json:"compatibility,omitempty"`
	Mode          string `json:"mode,omitempty"`
	// LastSchemaID is the highest schema id given out.
	LastSchemaID int32 `json:"last_schema_id"`
}

// ModeReadOnly refuses registrations and deletes, globally or for one
// subject.
const ModeReadOnly = "READONLY"

func schemaKey(id int32) []byte     { return binary.BigEndian.AppendUint32(nil, uint32(id)) }
func subjectKey(name string) []byte { return []byte(name) }

// Schema returns the schema with id.
func (s *State) Schema(id int32) (RegisteredSchema, bool) {
	r, ok := s.schemas.Get(schemaKey(id))
	if !ok {
		return RegisteredSchema{}, false
	}
	c := *r
	c.References = slices.Clone(r.References)
	return c, true
}

// Subject returns a subject, soft-deleted versions included.
func (s *State) Subject(name string) (Subject, bool) {
	sub, ok := s.subjects.Get(subjectKey(name))
	if !ok {
		return Subject{}, false
	}
	return *sub.clone(), true
}

// Subjects returns every subject, by name.
func (s *State) Subjects() []Subject {
	var out []Subject
	s.subjects.Root().Walk(func(_ []byte, sub *Subject) bool {
		out = append(out, *sub.clone())
		return false
	})
	return out
}

// RegistryConfig returns the registry's global settings.
func (s *State) RegistryConfig() RegistryConfig { return s.registry }

// SchemaUsers returns the subject versions that use schema id, by subject
// and version, soft-deleted ones included.
func (s *State) SchemaUsers(id int32) []SchemaReference {
	var out []SchemaReference
	s.subjects.Root().Walk(func(_ []byte, sub *Subject) bool {
		for _, v := range sub.Versions {
			if v.SchemaID == id {
				out = append(out, SchemaReference{Subject: sub.Name, Version: v.Version})
			}
		}
		return false
	})
	return out
}

// ReferencedBy returns the ids of the schemas whose references name
// version of subject.
func (s *State) ReferencedBy(subject string, version int32) []int32 {
	var out []int32
	s.schemas.Root().Walk(func(_ []byte, r *RegisteredSchema) bool {
		for _, ref := range r.References {
			if ref.Subject == subject && ref.Version == version {
				out = append(out, r.ID)
				break
			}
		}
		return false
	})
	return out
}

func (tx *txn) subject(name string) *Subject {
	if sub, ok := tx.st.subjects.Get(subjectKey(name)); ok {
		return sub.clone()
	}
	return &Subject{Name: name}
}

// putSubject stores sub, or removes it when it holds nothing.
func (tx *txn) putSubject(sub *Subject) {
	if len(sub.Versions) == 0 && sub.Compatibility == "" && sub.Mode == "" {
		tx.st.subjects, _, _ = tx.st.subjects.Delete(subjectKey(sub.Name))
	} else {
		tx.st.subjects, _, _ = tx.st.subjects.Insert(subjectKey(sub.Name), sub)
	}
	tx.changed(Change{Kind: ChangeSchema})
}

// mode is the mode in force for subject.
func (tx *txn) mode(sub *Subject) string {
	if sub.Mode != "" {
		return sub.Mode
	}
	return tx.st.registry.Mode
}

// RegisterSchema registers a schema under a subject. A live version of the
// subject with the same schema (type, fingerprint, references) answers
// with its id and changes nothing. Otherwise LatestVersion must be the
// subject's latest live version (0 for none), the one the proposer checked
// compatibility against (else ErrSchemaConflict); every reference must
// name an existing version; the new version is one past the highest the
// subject holds (soft-deleted versions count; versions deleted for good
// do not, as in Confluent's registry), and the schema takes the id of the same schema
// registered elsewhere, or the next id. The result is the schema id.
type RegisterSchema struct {
	Subject       string            `json:"subject"`
	Type          string            `json:"type"`
	Text          string            `json:"text"`
	References    []SchemaReference `json:"references,omitempty"`
	Fingerprint   string            `json:"fingerprint"`
	LatestVersion int32             `json:"latest_version"`
}

func (RegisterSchema) commandType() CommandType { return cmdRegisterSchema }

func (c *RegisterSchema) apply(tx *txn) (int64, error) {
	if c.Subject == "" || c.Type == "" || c.Text == "" || c.Fingerprint == "" {
		return 0, fmt.Errorf("%w: a schema needs a subject, a type, its text and fingerprint", ErrInvalidCommand)
	}
	sub := tx.subject(c.Subject)
	if tx.mode(sub) == ModeReadOnly {
		return 0, fmt.Errorf("%w: subject %q", ErrRegistryReadOnly, c.Subject)
	}
	live := sub.Live()
	for _, v := range live {
		if r, ok := tx.st.schemas.Get(schemaKey(v.SchemaID)); ok && r.same(c.Type, c.Fingerprint, c.References) {
			return int64(r.ID), nil
		}
	}
	latest := int32(0)
	if len(live) > 0 {
		latest = live[len(live)-1].Version
	}
	if c.LatestVersion != latest {
		return 0, fmt.Errorf("%w: subject %q is at version %d, not %d", ErrSchemaConflict, c.Subject, latest, c.LatestVersion)
	}
	for _, ref := range c.References {
		other, ok := tx.st.subjects.Get(subjectKey(ref.Subject))
		if !ok {
			return 0, fmt.Errorf("%w: reference %q: subject %q", ErrSubjectNotFound, ref.Name, ref.Subject)
		}
		if _, ok := other.Version(ref.Version); !ok {
			return 0, fmt.Errorf("%w: reference %q: subject %q version %d", ErrSchemaVersionNotFound, ref.Name, ref.Subject, ref.Version)
		}
	}
	id := int32(0)
	tx.st.schemas.Root().Walk(func(_ []byte, r *RegisteredSchema) bool {
		if r.same(c.Type, c.Fingerprint, c.References) {
			id = r.ID
		}
		return id != 0
	})
	if id == 0 {
		tx.st.registry.LastSchemaID++
		id = tx.st.registry.LastSchemaID
		tx.st.schemas, _, _ = tx.st.schemas.Insert(schemaKey(id), &RegisteredSchema{
			ID: id, Type: c.Type, Text: c.Text, References: slices.Clone(c.References), Fingerprint: c.Fingerprint,
		})
	}
	next := int32(1)
	if n := len(sub.Versions); n > 0 {
		next = sub.Versions[n-1].Version + 1
	}
	sub.Versions = append(sub.Versions, SubjectVersion{Version: next, SchemaID: id})
	tx.putSubject(sub)
	return int64(id), nil
}

// DeleteSchemaVersion deletes versions of a subject, as Confluent's
// registry does: Version 0 means every version (the subject); soft (not
// Permanent) marks live versions deleted, Permanent removes versions
// already soft-deleted (ErrVersionNotSoftDeleted otherwise). A version
// another schema references cannot be deleted (ErrSchemaReferenced). A
// schema no version uses any more is dropped. The result is the number of
// versions deleted.
type DeleteSchemaVersion struct {
	Subject   string `json:"subject"`
	Version   int32  `json:"version,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
}

func (DeleteSchemaVersion) commandType() CommandType { return cmdDeleteSchemaVersion }

func (c *DeleteSchemaVersion) apply(tx *txn) (int64, error) {
	old, ok := tx.st.subjects.Get(subjectKey(c.Subject))
	if !ok || len(old.Versions) == 0 {
		return 0, fmt.Errorf("%w: %q", ErrSubjectNotFound, c.Subject)
	}
	sub := old.clone()
	if tx.mode(sub) == ModeReadOnly {
		return 0, fmt.Errorf("%w: subject %q", ErrRegistryReadOnly, c.Subject)
	}
	var targets []int
	for i, v := range sub.Versions {
		if c.Version == 0 || v.Version == c.Version {
			targets = append(targets, i)
		}
	}
	if len(targets) == 0 {
		return 0, fmt.Errorf("%w: subject %q version %d", ErrSchemaVersionNotFound, c.Subject, c.Version)
	}
	if !c.Permanent && c.Version == 0 && len(sub.Live()) == 0 {
		return 0, fmt.Errorf("%w: subject %q", ErrSubjectSoftDeleted, c.Subject)
	}
	deleted := 0
	for _, i := range targets {
		v := &sub.Versions[i]
		switch {
		case c.Permanent && !v.Deleted:
			if c.Version == 0 {
				return 0, fmt.Errorf("%w: subject %q must be soft-deleted first", ErrVersionNotSoftDeleted, c.Subject)
			}
			return 0, fmt.Errorf("%w: subject %q version %d must be soft-deleted first", ErrVersionNotSoftDeleted, c.Subject, v.Version)
		case !c.Permanent && v.Deleted:
			if c.Version != 0 {
				return 0, fmt.Errorf("%w: subject %q version %d", ErrVersionSoftDeleted, c.Subject, v.Version)
			}
			continue
		}
		if ids := tx.st.ReferencedBy(c.Subject, v.Version); len(ids) > 0 {
			return 0, fmt.Errorf("%w: subject %q version %d is referenced by schema %d", ErrSchemaReferenced, c.Subject, v.Version, ids[0])
		}
		v.Deleted = true
		deleted++
	}
	if c.Permanent {
		var dropped []int32
		sub.Versions = slices.DeleteFunc(sub.Versions, func(v SubjectVersion) bool {
			gone := c.Version == 0 || v.Version == c.Version
			if gone {
				dropped = append(dropped, v.SchemaID)
			}
			return gone
		})
		if c.Version == 0 {
			sub.Compatibility, sub.Mode = "", ""
		}
		tx.putSubject(sub)
		for _, id := range dropped {
			if len(tx.st.SchemaUsers(id)) == 0 {
				tx.st.schemas, _, _ = tx.st.schemas.Delete(schemaKey(id))
			}
		}
		return int64(deleted), nil
	}
	tx.putSubject(sub)
	return int64(deleted), nil
}

// SetRegistryConfig sets the compatibility level or the mode, globally
// (Subject "") or of one subject; an empty value for a subject returns it
// to the global one. The values are checked by the proposer (package
// schema's levels; READWRITE or READONLY).
type SetRegistryConfig struct {
	Subject       string `json:"subject,omitempty"`
	Compatibility string `json:"compatibility,omitempty"`
	Mode          string `json:"mode,omitempty"`
	// SetMode says the command sets the mode; otherwise it sets the
	// compatibility level.
	SetMode bool `json:"set_mode,omitempty"`
}

func (SetRegistryConfig) commandType() CommandType { return cmdSetRegistryConfig }

func (c *SetRegistryConfig) apply(tx *txn) (int64, error) {
	if c.Subject == "" {
		if c.SetMode {
			tx.st.registry.Mode = c.Mode
		} else {
			tx.st.registry.Compatibility = c.Compatibility
		}
		tx.changed(Change{Kind: ChangeSchema})
		return 0, nil
	}
	sub := tx.subject(c.Subject)
	if c.SetMode {
		sub.Mode = c.Mode
	} else {
		sub.Compatibility = c.Compatibility
	}
	tx.putSubject(sub)
	return 0, nil
}
