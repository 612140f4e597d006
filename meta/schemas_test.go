package meta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// Tests of the schema registry's state: RegisterSchema, DeleteSchemaVersion
// and SetRegistryConfig, the State accessors, and the registry's snapshot
// records. Every command is followed by a check of the registry's
// invariants, and every refusal by a check that nothing changed.

// avro is a RegisterSchema of an AVRO schema under subject whose canonical
// form has fingerprint fp, checked against version latest of the subject.
func avro(subject, fp string, latest int32, refs ...SchemaReference) RegisterSchema {
	return RegisterSchema{
		Subject: subject, Type: "AVRO", Text: `{"type":"record","name":"` + fp + `","fields":[]}`,
		Fingerprint: fp, LatestVersion: latest, References: refs,
	}
}

// schemaRef is a reference to version of subject.
func schemaRef(subject string, version int32) SchemaReference {
	return SchemaReference{Name: subject + ".avsc", Subject: subject, Version: version}
}

func softDelete(subject string, version int32) DeleteSchemaVersion {
	return DeleteSchemaVersion{Subject: subject, Version: version}
}

func hardDelete(subject string, version int32) DeleteSchemaVersion {
	return DeleteSchemaVersion{Subject: subject, Version: version, Permanent: true}
}

func subjectCompatibility(subject, level string) SetRegistryConfig {
	return SetRegistryConfig{Subject: subject, Compatibility: level}
}

func subjectMode(subject, mode string) SetRegistryConfig {
	return SetRegistryConfig{Subject: subject, Mode: mode, SetMode: true}
}

// applyOne applies one command as its own entry, checks the registry's
// invariants and that a command changing the registry published a
// ChangeSchema (and one refused published nothing), and returns the
// command's result and error.
func applyOne(t testing.TB, h *fsmHarness, cmd Command) (int64, error) {
	t.Helper()
	before := viewRegistry(h.f.current())
	var published []Change
	prev := h.f.publish
	h.f.publish = func(_ *State, changes []Change) { published = append(published, changes...) }
	res, ok := h.applyRaw(entry(t, cmd))[0].(applyResult)
	h.f.publish = prev
	if !ok {
		t.Fatalf("%T: no applyResult", cmd)
	}
	checkRegistry(t, h.f.current())
	switch changed := !reflect.DeepEqual(before, viewRegistry(h.f.current())); {
	case res.err != nil && len(published) > 0:
		t.Fatalf("refused %T %+v published changes %+v", cmd, cmd, published)
	case changed && !slices.ContainsFunc(published, func(c Change) bool { return c.Kind == ChangeSchema }):
		t.Fatalf("%T %+v changed the registry but published %+v", cmd, cmd, published)
	}
	return res.epoch, res.err
}

// mustResult applies cmd and returns its result, failing on an error.
func mustResult(t testing.TB, h *fsmHarness, cmd Command) int64 {
	t.Helper()
	res, err := applyOne(t, h, cmd)
	if err != nil {
		t.Fatalf("%+v: %v", cmd, err)
	}
	return res
}

// mustRegistry applies commands one entry each, failing on an error.
func mustRegistry(t testing.TB, h *fsmHarness, cmds ...Command) {
	t.Helper()
	for _, cmd := range cmds {
		mustResult(t, h, cmd)
	}
}

// refuse applies cmd, wants its error to wrap want, and checks that the
// registry is unchanged (applyOne checks that nothing was published).
func refuse(t testing.TB, h *fsmHarness, cmd Command, want error) {
	t.Helper()
	before := viewRegistry(h.f.current())
	_, err := applyOne(t, h, cmd)
	if !errors.Is(err, want) {
		t.Fatalf("%T %+v: error %v, want %v", cmd, cmd, err, want)
	}
	if after := viewRegistry(h.f.current()); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused %T %+v changed the registry:\n%+v\nwas\n%+v", cmd, cmd, after, before)
	}
}

// registryView is the registry's part of a State, read through its public
// accessors. A subject without versions reads as nil versions: a restored
// subject has nil where the live one may hold an empty slice.
type registryView struct {
	Config   RegistryConfig
	Subjects []Subject
	Schemas  []RegisteredSchema
}

func viewRegistry(st *State) registryView {
	v := registryView{Config: st.RegistryConfig()}
	for _, sub := range st.Subjects() {
		if len(sub.Versions) == 0 {
			sub.Versions = nil
		}
		v.Subjects = append(v.Subjects, sub)
	}
	for id := int32(1); id <= v.Config.LastSchemaID+2; id++ {
		if s, ok := st.Schema(id); ok {
			v.Schemas = append(v.Schemas, s)
		}
	}
	return v
}

// checkRegistry checks the registry's invariants: subjects in name order,
// each holding versions or a setting; versions increasing, each naming a
// stored schema; every stored schema used by some version, no id above
// LastSchemaID, and references naming existing subject versions.
func checkRegistry(t testing.TB, st *State) {
	t.Helper()
	last := st.RegistryConfig().LastSchemaID
	subjects := st.Subjects()
	for i, sub := range subjects {
		if i > 0 && subjects[i-1].Name >= sub.Name {
			t.Fatalf("subjects out of order: %q before %q", subjects[i-1].Name, sub.Name)
		}
		if len(sub.Versions) == 0 && sub.Compatibility == "" && sub.Mode == "" {
			t.Fatalf("subject %q is empty but listed", sub.Name)
		}
		if got, ok := st.Subject(sub.Name); !ok || !reflect.DeepEqual(got, sub) {
			t.Fatalf("Subject(%q) = %+v, %v; Subjects() has %+v", sub.Name, got, ok, sub)
		}
		for j, v := range sub.Versions {
			if v.Version <= 0 || (j > 0 && v.Version <= sub.Versions[j-1].Version) {
				t.Fatalf("subject %q: versions %+v not increasing from 1", sub.Name, sub.Versions)
			}
			if _, ok := st.Schema(v.SchemaID); !ok {
				t.Fatalf("subject %q version %d names schema %d, which is not stored", sub.Name, v.Version, v.SchemaID)
			}
		}
	}
	for id := int32(-1); id <= last+2; id++ {
		s, ok := st.Schema(id)
		if !ok {
			continue
		}
		if id < 1 || id > last || s.ID != id {
			t.Fatalf("schema %d (id field %d) stored, last schema id %d", id, s.ID, last)
		}
		if len(st.SchemaUsers(id)) == 0 {
			t.Fatalf("schema %d is stored but no version uses it", id)
		}
		for _, ref := range s.References {
			sub, ok := st.Subject(ref.Subject)
			if !ok {
				t.Fatalf("schema %d references missing subject %q", id, ref.Subject)
			}
			if _, ok := sub.Version(ref.Version); !ok {
				t.Fatalf("schema %d references missing version %d of %q", id, ref.Version, ref.Subject)
			}
		}
	}
}

func versionsOf(t testing.TB, h *fsmHarness, subject string) []SubjectVersion {
	t.Helper()
	sub, ok := h.f.current().Subject(subject)
	if !ok {
		t.Fatalf("subject %q not found", subject)
	}
	return sub.Versions
}

func wantVersions(t testing.TB, h *fsmHarness, subject string, want ...SubjectVersion) {
	t.Helper()
	if got := versionsOf(t, h, subject); !reflect.DeepEqual(got, want) {
		t.Fatalf("subject %q versions %+v, want %+v", subject, got, want)
	}
}

func wantNoSubject(t testing.TB, h *fsmHarness, subject string) {
	t.Helper()
	st := h.f.current()
	if sub, ok := st.Subject(subject); ok {
		t.Fatalf("subject %q is still there: %+v", subject, sub)
	}
	for _, sub := range st.Subjects() {
		if sub.Name == subject {
			t.Fatalf("Subjects() still lists %q", subject)
		}
	}
}

func wantLastSchemaID(t testing.TB, h *fsmHarness, want int32) {
	t.Helper()
	if got := h.f.current().RegistryConfig().LastSchemaID; got != want {
		t.Fatalf("last schema id %d, want %d", got, want)
	}
}

func live(version, schemaID int32) SubjectVersion {
	return SubjectVersion{Version: version, SchemaID: schemaID}
}

func softDeleted(version, schemaID int32) SubjectVersion {
	return SubjectVersion{Version: version, SchemaID: schemaID, Deleted: true}
}

func TestRegisterSchemaGivesIDsAndVersions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	protobuf := avro("b", "s1", 1)
	protobuf.Type = "PROTOBUF"
	retext := avro("e", "s1", 0)
	retext.Text = `{"name": "s1", "type": "record", "fields": []}`
	steps := []struct {
		name      string
		cmd       RegisterSchema
		wantID    int32
		versions  []SubjectVersion // of cmd.Subject after the step
		last      int32
		unchanged bool // the registration is answered from the state
	}{
		{"first schema", avro("a", "s1", 0), 1, []SubjectVersion{live(1, 1)}, 1, false},
		{"same schema again", avro("a", "s1", 0), 1, []SubjectVersion{live(1, 1)}, 1, true},
		{"same schema with a stale latest version", avro("a", "s1", 7), 1, []SubjectVersion{live(1, 1)}, 1, true},
		{"second schema", avro("a", "s2", 1), 2, []SubjectVersion{live(1, 1), live(2, 2)}, 2, false},
		{"an earlier version's schema again", avro("a", "s1", 2), 1, []SubjectVersion{live(1, 1), live(2, 2)}, 2, true},
		{"same schema under another subject", avro("b", "s2", 0), 2, []SubjectVersion{live(1, 2)}, 2, false},
		{"same fingerprint, other type", protobuf, 3, []SubjectVersion{live(1, 2), live(2, 3)}, 3, false},
		{"same fingerprint, with references", avro("c", "s1", 0, schemaRef("a", 1)), 4, []SubjectVersion{live(1, 4)}, 4, false},
		{"same references under another subject", avro("d", "s1", 0, schemaRef("a", 1)), 4, []SubjectVersion{live(1, 4)}, 4, false},
		{"same fingerprint, other references", avro("d", "s1", 1, schemaRef("a", 2)), 5, []SubjectVersion{live(1, 4), live(2, 5)}, 5, false},
		{"other text, same canonical form", retext, 1, []SubjectVersion{live(1, 1)}, 5, false},
	}
	for _, step := range steps {
		before := viewRegistry(h.f.current())
		id, err := applyOne(t, h, step.cmd)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if int32(id) != step.wantID {
			t.Fatalf("%s: id %d, want %d", step.name, id, step.wantID)
		}
		if got := versionsOf(t, h, step.cmd.Subject); !reflect.DeepEqual(got, step.versions) {
			t.Fatalf("%s: versions of %q %+v, want %+v", step.name, step.cmd.Subject, got, step.versions)
		}
		if got := h.f.current().RegistryConfig().LastSchemaID; got != step.last {
			t.Fatalf("%s: last schema id %d, want %d", step.name, got, step.last)
		}
		if step.unchanged {
			if after := viewRegistry(h.f.current()); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: re-registering changed the registry:\n%+v\nwas\n%+v", step.name, after, before)
			}
		}
	}

	st := h.f.current()
	wantSchemas := []RegisteredSchema{
		{ID: 1, Type: "AVRO", Text: avro("", "s1", 0).Text, Fingerprint: "s1"},
		{ID: 2, Type: "AVRO", Text: avro("", "s2", 0).Text, Fingerprint: "s2"},
		{ID: 3, Type: "PROTOBUF", Text: avro("", "s1", 0).Text, Fingerprint: "s1"},
		{ID: 4, Type: "AVRO", Text: avro("", "s1", 0).Text, Fingerprint: "s1", References: []SchemaReference{schemaRef("a", 1)}},
		{ID: 5, Type: "AVRO", Text: avro("", "s1", 0).Text, Fingerprint: "s1", References: []SchemaReference{schemaRef("a", 2)}},
	}
	if got := viewRegistry(st).Schemas; !reflect.DeepEqual(got, wantSchemas) {
		t.Fatalf("schemas (the first text kept)\n%+v\nwant\n%+v", got, wantSchemas)
	}
	users := map[int32][]SchemaReference{
		1: {{Subject: "a", Version: 1}, {Subject: "e", Version: 1}},
		2: {{Subject: "a", Version: 2}, {Subject: "b", Version: 1}},
		3: {{Subject: "b", Version: 2}},
		4: {{Subject: "c", Version: 1}, {Subject: "d", Version: 1}},
		5: {{Subject: "d", Version: 2}},
	}
	for id, want := range users {
		if got := st.SchemaUsers(id); !reflect.DeepEqual(got, want) {
			t.Fatalf("SchemaUsers(%d) = %+v, want %+v", id, got, want)
		}
	}
	if got := st.SchemaUsers(9); got != nil {
		t.Fatalf("SchemaUsers(9) = %+v, want none", got)
	}
	for _, c := range []struct {
		subject string
		version int32
		want    []int32
	}{{"a", 1, []int32{4}}, {"a", 2, []int32{5}}, {"b", 1, nil}, {"nope", 1, nil}} {
		if got := st.ReferencedBy(c.subject, c.version); !slices.Equal(got, c.want) {
			t.Fatalf("ReferencedBy(%q, %d) = %v, want %v", c.subject, c.version, got, c.want)
		}
	}
	var names []string
	for _, sub := range st.Subjects() {
		names = append(names, sub.Name)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(names, want) {
		t.Fatalf("Subjects() %v, want %v", names, want)
	}

	// The accessors hand out copies.
	s, _ := st.Schema(4)
	s.References[0].Version = 99
	sub, _ := st.Subject("a")
	sub.Versions[0].SchemaID = 99
	st.Subjects()[0].Versions[1].Deleted = true
	if s, _ := st.Schema(4); s.References[0].Version != 1 {
		t.Fatal("changing a schema's references as returned changed the state")
	}
	if sub, _ := st.Subject("a"); !reflect.DeepEqual(sub.Versions, []SubjectVersion{live(1, 1), live(2, 2)}) {
		t.Fatalf("changing a subject as returned changed the state: %+v", sub.Versions)
	}
}

// Versions are one past the highest a subject has, soft-deleted ones
// included; LatestVersion is the latest live version; a schema whose only
// version is soft-deleted is registered again as a new version, with its
// id.
func TestRegisterSchemaVersionsCountSoftDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, avro("a", "s1", 0), avro("a", "s2", 1), avro("a", "s3", 2))
	if n := mustResult(t, h, softDelete("a", 3)); n != 1 {
		t.Fatalf("soft-deleting one version deleted %d", n)
	}
	refuse(t, h, avro("a", "s4", 3), ErrSchemaConflict)
	if id := mustResult(t, h, avro("a", "s4", 2)); id != 4 {
		t.Fatalf("id %d, want 4", id)
	}
	wantVersions(t, h, "a", live(1, 1), live(2, 2), softDeleted(3, 3), live(4, 4))
	if id := mustResult(t, h, avro("a", "s3", 4)); id != 3 {
		t.Fatalf("a soft-deleted version's schema again: id %d, want 3", id)
	}
	wantVersions(t, h, "a", live(1, 1), live(2, 2), softDeleted(3, 3), live(4, 4), live(5, 3))

	if n := mustResult(t, h, softDelete("a", 0)); n != 4 {
		t.Fatalf("soft-deleting the subject deleted %d versions, want the 4 live ones", n)
	}
	refuse(t, h, avro("a", "s6", 5), ErrSchemaConflict)
	if id := mustResult(t, h, avro("a", "s1", 0)); id != 1 {
		t.Fatalf("registering in a soft-deleted subject: id %d, want 1", id)
	}
	wantVersions(t, h, "a", softDeleted(1, 1), softDeleted(2, 2), softDeleted(3, 3), softDeleted(4, 4), softDeleted(5, 3), live(6, 1))
	wantLastSchemaID(t, h, 4)

	// A subject deleted for good starts again at version 1, as in
	// Confluent's registry; its schemas are gone and ids are not reused.
	mustRegistry(t, h, softDelete("a", 6))
	if n := mustResult(t, h, hardDelete("a", 0)); n != 6 {
		t.Fatalf("deleting the subject for good deleted %d versions, want 6", n)
	}
	wantNoSubject(t, h, "a")
	if id := mustResult(t, h, avro("a", "s1", 0)); id != 5 {
		t.Fatalf("a dropped schema registered again: id %d, want the next id 5", id)
	}
	wantVersions(t, h, "a", live(1, 5))
	wantLastSchemaID(t, h, 5)
}

// registerBase: subject a at version 2; "soft" with version 2
// soft-deleted; "gone" soft-deleted; "hard" with version 2 deleted for
// good; "cfg" holding only a compatibility level.
func registerBase(t testing.TB) *fsmHarness {
	h := newHarness(t)
	mustRegistry(t, h,
		avro("a", "a1", 0), avro("a", "a2", 1),
		avro("soft", "s1", 0), avro("soft", "s2", 1), softDelete("soft", 2),
		avro("gone", "g1", 0), softDelete("gone", 0),
		avro("hard", "h1", 0), avro("hard", "h2", 1), softDelete("hard", 2), hardDelete("hard", 2),
		subjectCompatibility("cfg", "FULL"),
	)
	return h
}

func TestRegisterSchemaRefusals(t *testing.T) {
	t.Parallel()
	without := func(edit func(*RegisterSchema)) RegisterSchema {
		c := avro("new", "n", 0)
		edit(&c)
		return c
	}
	cases := []struct {
		name string
		cmd  RegisterSchema
		want error
	}{
		{"no subject", without(func(c *RegisterSchema) { c.Subject = "" }), ErrInvalidCommand},
		{"no type", without(func(c *RegisterSchema) { c.Type = "" }), ErrInvalidCommand},
		{"no text", without(func(c *RegisterSchema) { c.Text = "" }), ErrInvalidCommand},
		{"no fingerprint", without(func(c *RegisterSchema) { c.Fingerprint = "" }), ErrInvalidCommand},
		{"checked against an older version", avro("a", "n", 1), ErrSchemaConflict},
		{"checked against a newer version", avro("a", "n", 3), ErrSchemaConflict},
		{"checked against nothing", avro("a", "n", 0), ErrSchemaConflict},
		{"new subject checked against a version", avro("new", "n", 1), ErrSchemaConflict},
		{"checked against a soft-deleted latest version", avro("soft", "n", 2), ErrSchemaConflict},
		{"checked against a soft-deleted subject", avro("gone", "n", 1), ErrSchemaConflict},
		{"checked against a version deleted for good", avro("hard", "n", 2), ErrSchemaConflict},
		{"subject with only a setting, checked against a version", avro("cfg", "n", 1), ErrSchemaConflict},
		{"reference to an unknown subject", avro("new", "n", 0, schemaRef("nope", 1)), ErrSubjectNotFound},
		{"reference to an unknown version", avro("new", "n", 0, schemaRef("a", 3)), ErrSchemaVersionNotFound},
		{"reference to version 0", avro("new", "n", 0, schemaRef("a", 0)), ErrSchemaVersionNotFound},
		{"reference to a version deleted for good", avro("new", "n", 0, schemaRef("hard", 2)), ErrSchemaVersionNotFound},
		{"reference to a subject without versions", avro("new", "n", 0, schemaRef("cfg", 1)), ErrSchemaVersionNotFound},
		{"a bad reference beside a good one", avro("new", "n", 0, schemaRef("a", 1), schemaRef("a", 9)), ErrSchemaVersionNotFound},
		{"known schema with a bad reference", avro("new", "a1", 0, schemaRef("a", 9)), ErrSchemaVersionNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := registerBase(t)
			refuse(t, h, c.cmd, c.want)
			wantLastSchemaID(t, h, 7)
		})
	}
}

func TestDeleteSchemaVersionSoftThenPermanent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, avro("a", "s1", 0), avro("a", "s2", 1), avro("a", "s3", 2), avro("b", "s2", 0))

	if n := mustResult(t, h, softDelete("a", 2)); n != 1 {
		t.Fatalf("soft delete of a version: %d deleted", n)
	}
	wantVersions(t, h, "a", live(1, 1), softDeleted(2, 2), live(3, 3))
	if got := (Subject{Versions: versionsOf(t, h, "a")}).Live(); !reflect.DeepEqual(got, []SubjectVersion{live(1, 1), live(3, 3)}) {
		t.Fatalf("Live() = %+v, want versions 1 and 3", got)
	}
	if _, ok := h.f.current().Schema(2); !ok {
		t.Fatal("a soft delete dropped the schema")
	}
	refuse(t, h, softDelete("a", 2), ErrVersionSoftDeleted)
	refuse(t, h, hardDelete("a", 3), ErrVersionNotSoftDeleted)

	if n := mustResult(t, h, hardDelete("a", 2)); n != 1 {
		t.Fatalf("permanent delete of a version: %d deleted", n)
	}
	wantVersions(t, h, "a", live(1, 1), live(3, 3))
	if _, ok := h.f.current().Schema(2); !ok {
		t.Fatal("schema 2 was dropped though b still uses it")
	}
	refuse(t, h, hardDelete("a", 2), ErrSchemaVersionNotFound)
	refuse(t, h, softDelete("a", 2), ErrSchemaVersionNotFound)
	if id := mustResult(t, h, avro("a", "s4", 3)); id != 4 {
		t.Fatalf("id %d, want 4", id)
	}
	wantVersions(t, h, "a", live(1, 1), live(3, 3), live(4, 4))

	if n := mustResult(t, h, softDelete("a", 0)); n != 3 {
		t.Fatalf("soft delete of the subject: %d deleted, want 3", n)
	}
	wantVersions(t, h, "a", softDeleted(1, 1), softDeleted(3, 3), softDeleted(4, 4))
	refuse(t, h, softDelete("a", 0), ErrSubjectSoftDeleted)
	refuse(t, h, softDelete("a", 1), ErrVersionSoftDeleted)

	if n := mustResult(t, h, hardDelete("a", 0)); n != 3 {
		t.Fatalf("permanent delete of the subject: %d deleted, want 3", n)
	}
	wantNoSubject(t, h, "a")
	refuse(t, h, hardDelete("a", 0), ErrSubjectNotFound)
	refuse(t, h, softDelete("a", 0), ErrSubjectNotFound)
	st := h.f.current()
	for id, want := range map[int32]bool{1: false, 2: true, 3: false, 4: false} {
		if _, ok := st.Schema(id); ok != want {
			t.Fatalf("schema %d stored: %v, want %v", id, ok, want)
		}
	}
	wantLastSchemaID(t, h, 4)
	if id := mustResult(t, h, avro("c", "s1", 0)); id != 5 {
		t.Fatalf("a dropped schema after a permanent delete: id %d, want 5 (ids are not reused)", id)
	}
}

// A schema stays while any version, soft-deleted or live, of any subject
// uses it, and is dropped with its last user.
func TestDeleteSchemaVersionDropsSchemaWithLastUser(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, avro("a", "s1", 0), softDelete("a", 1), avro("a", "s1", 0), avro("b", "s1", 0))
	wantVersions(t, h, "a", softDeleted(1, 1), live(2, 1))
	steps := []struct {
		cmd    DeleteSchemaVersion
		stored bool
	}{
		{hardDelete("a", 1), true},  // a v2 and b v1 use it
		{softDelete("b", 1), true},  // b v1 soft-deleted still uses it
		{softDelete("a", 2), true},  //
		{hardDelete("a", 2), true},  // b v1 still uses it
		{hardDelete("b", 0), false}, // the last user
	}
	for _, s := range steps {
		mustRegistry(t, h, s.cmd)
		if _, ok := h.f.current().Schema(1); ok != s.stored {
			t.Fatalf("after %+v schema 1 stored: %v, want %v", s.cmd, ok, s.stored)
		}
	}
	if subs := h.f.current().Subjects(); len(subs) != 0 {
		t.Fatalf("subjects left: %+v", subs)
	}
}

// A version another schema references cannot be deleted until the
// referencing schema is gone, which takes every version using it deleted
// for good.
func TestDeleteSchemaVersionReferencesHoldUntilReferrerGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, avro("lib", "l1", 0), avro("lib", "l2", 1),
		avro("app", "p1", 0, schemaRef("lib", 1)), avro("app2", "p1", 0, schemaRef("lib", 1)))
	if got := h.f.current().ReferencedBy("lib", 1); !slices.Equal(got, []int32{3}) {
		t.Fatalf("ReferencedBy(lib, 1) = %v, want [3]", got)
	}
	held := func() {
		t.Helper()
		refuse(t, h, softDelete("lib", 1), ErrSchemaReferenced)
		refuse(t, h, softDelete("lib", 0), ErrSchemaReferenced)
	}
	held()
	mustRegistry(t, h, softDelete("app", 0))
	held()
	mustRegistry(t, h, hardDelete("app", 0))
	held() // app2 still uses schema 3
	mustRegistry(t, h, softDelete("app2", 1))
	held()
	mustRegistry(t, h, hardDelete("app2", 1))
	if got := h.f.current().ReferencedBy("lib", 1); got != nil {
		t.Fatalf("ReferencedBy(lib, 1) = %v after the referrer went", got)
	}
	if n := mustResult(t, h, softDelete("lib", 0)); n != 2 {
		t.Fatalf("soft delete of lib: %d deleted, want 2", n)
	}
	mustRegistry(t, h, hardDelete("lib", 0))
	wantNoSubject(t, h, "lib")
}

// deleteBase: a with versions 1 (live), 2 (soft-deleted), 3 (live);
// "half" with version 1 soft-deleted and 2 live; lib version 1
// referenced by app; "mixed" whose version 2 app2 references; "gone"
// soft-deleted; "cfg" holding only a compatibility level.
func deleteBase(t testing.TB) *fsmHarness {
	h := newHarness(t)
	mustRegistry(t, h,
		avro("a", "a1", 0), avro("a", "a2", 1), avro("a", "a3", 2), softDelete("a", 2),
		avro("half", "h1", 0), avro("half", "h2", 1), softDelete("half", 1),
		avro("lib", "l1", 0), avro("app", "p1", 0, schemaRef("lib", 1)),
		avro("mixed", "m1", 0), avro("mixed", "m2", 1), avro("app2", "p2", 0, schemaRef("mixed", 2)),
		avro("gone", "g1", 0), softDelete("gone", 0),
		subjectCompatibility("cfg", "FULL"),
	)
	return h
}

func TestDeleteSchemaVersionRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cmd  DeleteSchemaVersion
		want error
	}{
		{"unknown subject", softDelete("nope", 0), ErrSubjectNotFound},
		{"unknown subject, a version", softDelete("nope", 1), ErrSubjectNotFound},
		{"unknown subject, for good", hardDelete("nope", 0), ErrSubjectNotFound},
		{"subject with only a setting", softDelete("cfg", 0), ErrSubjectNotFound},
		{"subject with only a setting, for good", hardDelete("cfg", 0), ErrSubjectNotFound},
		{"unknown version", softDelete("a", 9), ErrSchemaVersionNotFound},
		{"unknown version, for good", hardDelete("a", 9), ErrSchemaVersionNotFound},
		{"negative version", softDelete("a", -1), ErrSchemaVersionNotFound},
		{"soft-deleted version again", softDelete("a", 2), ErrVersionSoftDeleted},
		{"soft-deleted subject again", softDelete("gone", 0), ErrSubjectSoftDeleted},
		{"version of a soft-deleted subject", softDelete("gone", 1), ErrVersionSoftDeleted},
		{"live version for good", hardDelete("a", 3), ErrVersionNotSoftDeleted},
		{"subject with live versions for good", hardDelete("a", 0), ErrVersionNotSoftDeleted},
		{"subject whose later version is live, for good", hardDelete("half", 0), ErrVersionNotSoftDeleted},
		{"referenced version", softDelete("lib", 1), ErrSchemaReferenced},
		{"subject with a referenced version", softDelete("lib", 0), ErrSchemaReferenced},
		{"subject whose later version is referenced", softDelete("mixed", 0), ErrSchemaReferenced},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refuse(t, deleteBase(t), c.cmd, c.want)
		})
	}
}

func TestRegistryModeAndConfigGlobalAndSubject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, avro("a", "s1", 0))
	type subjectWant struct {
		name, compatibility, mode string
	}
	steps := []struct {
		name     string
		cmd      SetRegistryConfig
		global   RegistryConfig
		subjects []subjectWant // every subject, by name
	}{
		{"global level", SetRegistryConfig{Compatibility: "FULL"},
			RegistryConfig{Compatibility: "FULL", LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"global mode leaves the level", SetRegistryConfig{Compatibility: "NONE", Mode: "READWRITE", SetMode: true},
			RegistryConfig{Compatibility: "FULL", Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"global level back to the default leaves the mode", SetRegistryConfig{Mode: "READONLY"},
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"level of a subject without versions", subjectCompatibility("x", "NONE"),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}, {"x", "NONE", ""}}},
		{"mode of that subject", subjectMode("x", ModeReadOnly),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}, {"x", "NONE", ModeReadOnly}}},
		{"its level back to the global one", subjectCompatibility("x", ""),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}, {"x", "", ModeReadOnly}}},
		{"its mode back: the subject is gone", subjectMode("x", ""),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"level of a subject with versions", subjectCompatibility("a", "BACKWARD_TRANSITIVE"),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "BACKWARD_TRANSITIVE", ""}}},
		{"its level back: the subject stays", subjectCompatibility("a", ""),
			RegistryConfig{Mode: "READWRITE", LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"global mode back to the default", SetRegistryConfig{SetMode: true},
			RegistryConfig{LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
		{"clearing a setting nothing holds", subjectMode("y", ""),
			RegistryConfig{LastSchemaID: 1}, []subjectWant{{"a", "", ""}}},
	}
	for _, s := range steps {
		mustRegistry(t, h, s.cmd)
		st := h.f.current()
		if got := st.RegistryConfig(); got != s.global {
			t.Fatalf("%s: global %+v, want %+v", s.name, got, s.global)
		}
		var got []subjectWant
		for _, sub := range st.Subjects() {
			got = append(got, subjectWant{sub.Name, sub.Compatibility, sub.Mode})
		}
		if !reflect.DeepEqual(got, s.subjects) {
			t.Fatalf("%s: subjects %+v, want %+v", s.name, got, s.subjects)
		}
	}
	wantVersions(t, h, "a", live(1, 1))
	wantNoSubject(t, h, "x")
	wantNoSubject(t, h, "y")
	refuse(t, h, softDelete("x", 0), ErrSubjectNotFound)
}

func TestRegistryModeAndConfigReadOnlyRefuses(t *testing.T) {
	t.Parallel()
	globalMode := func(mode string) SetRegistryConfig { return SetRegistryConfig{Mode: mode, SetMode: true} }
	cases := []struct {
		name  string
		setup []Command
		cmd   Command
		want  error // nil: applied
	}{
		{"global: register", []Command{globalMode(ModeReadOnly)}, avro("a", "n", 2), ErrRegistryReadOnly},
		{"global: register what is registered", []Command{globalMode(ModeReadOnly)}, avro("a", "s1", 2), ErrRegistryReadOnly},
		{"global: register a new subject", []Command{globalMode(ModeReadOnly)}, avro("new", "n", 0), ErrRegistryReadOnly},
		{"global: soft delete", []Command{globalMode(ModeReadOnly)}, softDelete("a", 1), ErrRegistryReadOnly},
		{"global: soft delete a subject", []Command{globalMode(ModeReadOnly)}, softDelete("b", 0), ErrRegistryReadOnly},
		{"global: permanent delete", []Command{globalMode(ModeReadOnly)}, hardDelete("a", 3), ErrRegistryReadOnly},
		{"subject: register", []Command{subjectMode("a", ModeReadOnly)}, avro("a", "n", 2), ErrRegistryReadOnly},
		{"subject: soft delete", []Command{subjectMode("a", ModeReadOnly)}, softDelete("a", 0), ErrRegistryReadOnly},
		{"subject: permanent delete", []Command{subjectMode("a", ModeReadOnly)}, hardDelete("a", 3), ErrRegistryReadOnly},
		{"subject without versions: register", []Command{subjectMode("new", ModeReadOnly)}, avro("new", "n", 0), ErrRegistryReadOnly},
		{"another subject: register", []Command{subjectMode("a", ModeReadOnly)}, avro("b", "n", 1), nil},
		{"another subject: delete", []Command{subjectMode("a", ModeReadOnly)}, softDelete("b", 0), nil},
		{"subject read-write under global read-only: register", []Command{globalMode(ModeReadOnly), subjectMode("a", "READWRITE")}, avro("a", "n", 2), nil},
		{"subject read-write under global read-only: delete", []Command{globalMode(ModeReadOnly), subjectMode("a", "READWRITE")}, hardDelete("a", 3), nil},
		{"subject read-write under global read-only: another subject", []Command{globalMode(ModeReadOnly), subjectMode("a", "READWRITE")}, avro("b", "n", 1), ErrRegistryReadOnly},
		{"global back to read-write", []Command{globalMode(ModeReadOnly), globalMode("READWRITE")}, avro("a", "n", 2), nil},
		{"global back to the default", []Command{globalMode(ModeReadOnly), globalMode("")}, softDelete("a", 1), nil},
		{"subject back to the global mode", []Command{subjectMode("a", ModeReadOnly), subjectMode("a", "")}, avro("a", "n", 2), nil},
		{"settings change under read-only", []Command{globalMode(ModeReadOnly), subjectMode("a", ModeReadOnly)}, subjectCompatibility("a", "NONE"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// a: version 1 and 2 live, 3 soft-deleted; b: version 1.
			h := newHarness(t)
			mustRegistry(t, h, avro("a", "s1", 0), avro("a", "s2", 1), avro("a", "s3", 2), softDelete("a", 3), avro("b", "s1", 0))
			mustRegistry(t, h, c.setup...)
			if c.want != nil {
				refuse(t, h, c.cmd, c.want)
				return
			}
			mustRegistry(t, h, c.cmd)
		})
	}
}

// Deleting a whole subject for good clears its settings; deleting its
// versions one by one leaves a subject holding only its settings.
func TestRegistryModeAndConfigClearedByPermanentDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mustRegistry(t, h, SetRegistryConfig{Compatibility: "NONE"},
		avro("a", "s1", 0), subjectCompatibility("a", "FULL"), subjectMode("a", "READWRITE"),
		softDelete("a", 0), hardDelete("a", 0))
	wantNoSubject(t, h, "a")
	mustRegistry(t, h, avro("a", "s2", 0))
	if sub, _ := h.f.current().Subject("a"); sub.Compatibility != "" || sub.Mode != "" {
		t.Fatalf("a subject registered again after a permanent delete has settings %q, %q", sub.Compatibility, sub.Mode)
	}
	if got := h.f.current().RegistryConfig().Compatibility; got != "NONE" {
		t.Fatalf("global level %q, want NONE", got)
	}

	mustRegistry(t, h, avro("b", "s3", 0), subjectCompatibility("b", "FORWARD"), softDelete("b", 1), hardDelete("b", 1))
	sub, ok := h.f.current().Subject("b")
	if !ok || len(sub.Versions) != 0 || sub.Compatibility != "FORWARD" {
		t.Fatalf("subject b after its last version went for good: %+v, %v; want only its level", sub, ok)
	}
	refuse(t, h, softDelete("b", 0), ErrSubjectNotFound)
	if id := mustResult(t, h, avro("b", "s4", 0)); id != 4 {
		t.Fatalf("id %d, want 4", id)
	}
	wantVersions(t, h, "b", live(1, 4))
}

// registrySnapshotState builds a registry in every shape the snapshot
// must keep, on top of preconditionBase's records of every other kind.
func registrySnapshotState(t testing.TB) *fsmHarness {
	h, _ := preconditionBase(t)
	mustRegistry(t, h,
		// a: ids 1-3, version 2 soft-deleted.
		avro("a", "s1", 0), avro("a", "s2", 1), avro("a", "s3", 2), softDelete("a", 2),
		// b: id 2 shared with a, id 4 referencing a's version 1.
		avro("b", "s2", 0), avro("b", "s4", 1, schemaRef("a", 1)),
		// c: id 1 shared, its own level (and mode, below).
		avro("c", "s1", 0), subjectCompatibility("c", "FULL_TRANSITIVE"),
		// d: deleted for good, id 5 dropped.
		avro("d", "s5", 0), softDelete("d", 0), hardDelete("d", 0),
		// e: only a level.
		subjectCompatibility("e", "NONE"),
		// f: its only version deleted for good (id 6 dropped), its level kept.
		avro("f", "s6", 0), subjectCompatibility("f", "FORWARD"), softDelete("f", 1), hardDelete("f", 1),
		SetRegistryConfig{Compatibility: "BACKWARD"},
		SetRegistryConfig{Mode: "READWRITE", SetMode: true},
		subjectMode("c", ModeReadOnly),
	)
	return h
}

func TestSnapshotKeepsRegistry(t *testing.T) {
	t.Parallel()
	h := registrySnapshotState(t)
	orig := h.f.current()
	view := viewRegistry(orig)
	if want := (RegistryConfig{Compatibility: "BACKWARD", Mode: "READWRITE", LastSchemaID: 6}); view.Config != want {
		t.Fatalf("registry %+v, want %+v", view.Config, want)
	}
	if len(view.Subjects) != 5 || len(view.Schemas) != 4 {
		t.Fatalf("built %d subjects and %d schemas, want 5 (a b c e f) and 4 (1-4)", len(view.Subjects), len(view.Schemas))
	}

	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	restored := newHarness(t)
	if err := restored.f.Restore(readCloser(sink.Bytes())); err != nil {
		t.Fatal(err)
	}
	st := restored.f.current()
	checkRegistry(t, st)
	if got := viewRegistry(st); !reflect.DeepEqual(got, view) {
		t.Fatalf("restored registry\n%+v\nwant\n%+v", got, view)
	}
	assertSameState(t, orig, st)
	for id := int32(1); id <= 6; id++ {
		if a, b := orig.SchemaUsers(id), st.SchemaUsers(id); !reflect.DeepEqual(a, b) {
			t.Fatalf("SchemaUsers(%d): %+v, restored %+v", id, a, b)
		}
	}
	if got := st.ReferencedBy("a", 1); !slices.Equal(got, []int32{4}) {
		t.Fatalf("restored ReferencedBy(a, 1) = %v, want [4]", got)
	}
	if !bytes.Equal(sink.Bytes(), snapshotBytes(t, st)) {
		t.Fatal("the restored state snapshots to other bytes")
	}

	// Both go on alike: the next id is 7 (5 and 6 are not reused, a
	// dropped schema gets a new one), c stays read-only, a's soft-deleted
	// version can go for good.
	restored.index = h.index
	next := []struct {
		cmd    Command
		result int64
		err    error
	}{
		{avro("g", "s7", 0), 7, nil},
		{avro("h", "s5", 0), 8, nil},
		{avro("a", "s8", 3), 9, nil},
		{avro("c", "s9", 1), 0, ErrRegistryReadOnly},
		{hardDelete("a", 2), 1, nil},
		{softDelete("a", 1), 0, ErrSchemaReferenced},
	}
	for _, n := range next {
		for name, hh := range map[string]*fsmHarness{"original": h, "restored": restored} {
			res, err := applyOne(t, hh, n.cmd)
			if !errors.Is(err, n.err) || (err == nil && res != n.result) {
				t.Fatalf("%s: %+v: %d, %v; want %d, %v", name, n.cmd, res, err, n.result, n.err)
			}
		}
	}
	if !bytes.Equal(snapshotBytes(t, h.f.current()), snapshotBytes(t, restored.f.current())) {
		t.Fatal("the original and the restored state diverged under the same commands")
	}
}

// registryRecord is one snapshot record of kind with a JSON body.
func registryRecord(kind byte, body string) []byte {
	return append(binary.AppendUvarint([]byte{kind}, uint64(len(body))), body...)
}

// registrySnapshot frames records as a snapshot with a correct trailer and
// CRC.
func registrySnapshot(records ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString(snapshotMagic)
	b.Write(binary.BigEndian.AppendUint16(nil, snapshotVersion))
	for _, r := range records {
		b.Write(r)
	}
	b.Write(binary.BigEndian.AppendUint64([]byte{recordTrailer}, uint64(len(records))))
	b.Write(crcOf(b.Bytes()))
	return b.Bytes()
}

var (
	registryHeader = registryRecord(recordHeader, `{"index":5,"cluster_id":"c","next_broker_epoch":1}`)
	registryA      = registryRecord(recordSubject, `{"name":"a","versions":[{"version":1,"schema_id":1},{"version":2,"schema_id":2,"deleted":true}],"compatibility":"FULL"}`)
	registryConfig = registryRecord(recordRegistry, `{"compatibility":"NONE","last_schema_id":2}`)
)

func schemaRecord(id int32) []byte {
	return registryRecord(recordSchema, fmt.Sprintf(`{"id":%d,"type":"AVRO","text":"\"string\"","fingerprint":"f%d"}`, id, id))
}

func readRegistrySnapshot(records ...[]byte) (*State, error) {
	return readSnapshot(bufio.NewReader(bytes.NewReader(registrySnapshot(records...))))
}

// Structurally wrong registry records with a correct CRC are refused.
func TestSnapshotRefusesInconsistentRegistry(t *testing.T) {
	t.Parallel()
	st, err := readRegistrySnapshot(registryHeader, schemaRecord(1), schemaRecord(2), registryA, registryConfig)
	if err != nil {
		t.Fatalf("the valid base case failed: %v", err)
	}
	checkRegistry(t, st)
	want := registryView{
		Config:   RegistryConfig{Compatibility: "NONE", LastSchemaID: 2},
		Subjects: []Subject{{Name: "a", Versions: []SubjectVersion{live(1, 1), softDeleted(2, 2)}, Compatibility: "FULL"}},
		Schemas: []RegisteredSchema{
			{ID: 1, Type: "AVRO", Text: `"string"`, Fingerprint: "f1"},
			{ID: 2, Type: "AVRO", Text: `"string"`, Fingerprint: "f2"},
		},
	}
	if got := viewRegistry(st); !reflect.DeepEqual(got, want) {
		t.Fatalf("base case read as\n%+v\nwant\n%+v", got, want)
	}

	subject := func(body string) []byte { return registryRecord(recordSubject, body) }
	cases := map[string][][]byte{
		"registry not JSON":          {registryHeader, schemaRecord(1), schemaRecord(2), registryA, registryRecord(recordRegistry, `{"last_schema_id":`)},
		"registry with a new field":  {registryHeader, schemaRecord(1), schemaRecord(2), registryA, registryRecord(recordRegistry, `{"last_schema_id":2,"x":1}`)},
		"registry twice":             {registryHeader, schemaRecord(1), schemaRecord(2), registryA, registryConfig, registryConfig},
		"registry before subjects":   {registryHeader, schemaRecord(1), schemaRecord(2), registryConfig, registryA},
		"subjects before schemas":    {registryHeader, registryA, schemaRecord(1), schemaRecord(2), registryConfig},
		"schemas out of order":       {registryHeader, schemaRecord(2), schemaRecord(1), registryA, registryConfig},
		"schema twice":               {registryHeader, schemaRecord(1), schemaRecord(1), schemaRecord(2), registryA, registryConfig},
		"schema id 0":                {registryHeader, schemaRecord(0), schemaRecord(1), schemaRecord(2), registryA, registryConfig},
		"schema without fingerprint": {registryHeader, registryRecord(recordSchema, `{"id":1,"type":"AVRO","text":"x","fingerprint":""}`), registryConfig},
		"subject naming an unknown schema": {registryHeader, schemaRecord(1), schemaRecord(2),
			subject(`{"name":"a","versions":[{"version":1,"schema_id":3}]}`), registryConfig},
		"subject versions out of order": {registryHeader, schemaRecord(1), schemaRecord(2),
			subject(`{"name":"a","versions":[{"version":2,"schema_id":2},{"version":1,"schema_id":1}]}`), registryConfig},
		"subject version repeated": {registryHeader, schemaRecord(1), schemaRecord(2),
			subject(`{"name":"a","versions":[{"version":1,"schema_id":1},{"version":1,"schema_id":2}]}`), registryConfig},
		"subject version 0": {registryHeader, schemaRecord(1), schemaRecord(2),
			subject(`{"name":"a","versions":[{"version":0,"schema_id":1},{"version":1,"schema_id":2}]}`), registryConfig},
		"subjects out of order": {registryHeader, schemaRecord(1), schemaRecord(2),
			subject(`{"name":"b","versions":[{"version":1,"schema_id":2}]}`), registryA, registryConfig},
		"record kind after the registry's": {registryHeader, registryConfig, registryRecord(recordRegistry+1, `{}`)},
	}
	for name, records := range cases {
		if _, err := readRegistrySnapshot(records...); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The id sequence must cover every stored schema: a restored LastSchemaID
// below a schema's id would give that id out again, and the next
// registration would replace a schema that versions still use.
func TestSnapshotRefusesRegistryBehindSchemaIDs(t *testing.T) {
	t.Parallel()
	cases := map[string][][]byte{
		"last schema id below a schema's": {registryHeader, schemaRecord(1), schemaRecord(2), registryA,
			registryRecord(recordRegistry, `{"last_schema_id":1}`)},
		"no registry record beside schemas": {registryHeader, schemaRecord(1), schemaRecord(2), registryA},
		"negative last schema id":           {registryHeader, registryRecord(recordRegistry, `{"last_schema_id":-1}`)},
	}
	for name, records := range cases {
		st, err := readRegistrySnapshot(records...)
		if errors.Is(err, ErrCorruptSnapshot) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// Show what accepting it leads to.
		h := newHarness(t)
		h.f.store(st, nil)
		h.index = st.Index()
		res := h.applyRaw(entry(t, avro("z", "new", 0)))[0].(applyResult)
		after := h.f.current()
		a, _ := after.Subject("a")
		var users []SchemaReference
		if res.err == nil {
			users = after.SchemaUsers(int32(res.epoch))
		}
		t.Errorf("%s: accepted (last schema id %d); registering a new schema then gives id %d (err %v), used by %+v; subject a: %+v",
			name, st.RegistryConfig().LastSchemaID, res.epoch, res.err, users, a.Versions)
	}
}
