package registry

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// The REST API driven by franz-go's schema registry client (pkg/sr), which
// nobody here wrote: what a Confluent client sees of registration, reads,
// lookup, compatibility, configuration, modes, deletes and references, and
// the error codes it gets.

// testSchemas are one schema of each type, and a second version of each
// that a reader of the first can follow (a field added).
var testSchemas = []struct {
	typ    sr.SchemaType
	v1, v2 string
}{
	{
		typ: sr.TypeAvro,
		v1:  avroRecord("Person", `{"name":"name","type":"string"}`),
		v2:  avroRecord("Person", `{"name":"name","type":"string"}`, `{"name":"age","type":"int","default":0}`),
	},
	{
		typ: sr.TypeJSON,
		v1:  `{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}`,
		v2:  `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"additionalProperties":false}`,
	},
	{
		typ: sr.TypeProtobuf,
		v1:  "syntax = \"proto3\";\npackage test;\nmessage Person {\n  string name = 1;\n}\n",
		v2:  "syntax = \"proto3\";\npackage test;\nmessage Person {\n  string name = 1;\n  int32 age = 2;\n}\n",
	},
}

func TestClientRegisterAndRead(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	for _, tc := range testSchemas {
		t.Run(tc.typ.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cl := s.client
			subject, other := subjectName(t, "value"), subjectName(t, "other")
			v1 := sr.Schema{Schema: tc.v1, Type: tc.typ}

			id, err := cl.RegisterSchema(ctx, subject, v1, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.SchemaByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Schema != tc.v1 || got.Type != tc.typ || len(got.References) != 0 {
				t.Fatalf("schema %d is %+v, want %q of type %v", id, got, tc.v1, tc.typ)
			}
			if text, err := cl.SchemaTextByID(ctx, id); err != nil || text != tc.v1 {
				t.Fatalf("text of schema %d: %q, %v", id, text, err)
			}
			if text, err := cl.SchemaTextByVersion(ctx, subject, -1); err != nil || text != tc.v1 {
				t.Fatalf("text of the latest version: %q, %v", text, err)
			}

			// The same schema again: the same id, no new version.
			again, err := cl.RegisterSchema(ctx, subject, v1, -1, -1)
			if err != nil || again != id {
				t.Fatalf("registering again: id %d, %v; want %d", again, err, id)
			}
			if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1}) {
				t.Fatalf("versions %v, %v; want [1]", versions, err)
			}

			// A compatible second version: a new id and version 2.
			v2 := sr.Schema{Schema: tc.v2, Type: tc.typ}
			created, err := cl.CreateSchema(ctx, subject, v2)
			if err != nil {
				t.Fatal(err)
			}
			if created.ID == id || created.Version != 2 || created.Subject != subject || created.Schema.Schema != tc.v2 {
				t.Fatalf("second version %+v (first id %d)", created, id)
			}
			if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1, 2}) {
				t.Fatalf("versions %v, %v; want [1 2]", versions, err)
			}
			for version, want := range map[int]sr.SubjectSchema{
				1:  {Subject: subject, Version: 1, ID: id, Schema: v1},
				2:  {Subject: subject, Version: 2, ID: created.ID, Schema: v2},
				-1: {Subject: subject, Version: 2, ID: created.ID, Schema: v2},
			} {
				got, err := cl.SchemaByVersion(ctx, subject, version)
				if err != nil {
					t.Fatal(err)
				}
				if got.Subject != want.Subject || got.Version != want.Version || got.ID != want.ID ||
					got.Schema.Schema != want.Schema.Schema || got.Type != want.Type {
					t.Fatalf("version %d: %+v, want %+v", version, got, want)
				}
			}
			all, err := cl.Schemas(ctx, subject)
			if err != nil || len(all) != 2 || all[0].ID != id || all[1].ID != created.ID {
				t.Fatalf("Schemas: %+v, %v", all, err)
			}

			// Lookup finds each version by its text.
			for _, want := range []sr.SubjectSchema{{Version: 1, ID: id, Schema: v1}, {Version: 2, ID: created.ID, Schema: v2}} {
				found, err := cl.LookupSchema(ctx, subject, want.Schema)
				if err != nil {
					t.Fatal(err)
				}
				if found.Subject != subject || found.ID != want.ID || found.Version != want.Version || found.Schema.Schema != want.Schema.Schema {
					t.Fatalf("lookup: %+v, want id %d version %d", found, want.ID, want.Version)
				}
			}

			// The same schema under another subject: the same id.
			otherID, err := cl.RegisterSchema(ctx, other, v1, -1, -1)
			if err != nil || otherID != id {
				t.Fatalf("under %q: id %d, %v; want %d", other, otherID, err, id)
			}
			// (Other runs of the test, under -count, hold it too.)
			subjects, err := cl.SubjectsByID(ctx, id)
			if err != nil || !slices.Contains(subjects, subject) || !slices.Contains(subjects, other) {
				t.Fatalf("subjects of %d: %v, %v", id, subjects, err)
			}
			usages, err := cl.SchemaVersionsByID(ctx, id)
			if err != nil || !slices.Contains(usages, sr.SubjectVersion{Subject: subject, Version: 1}) ||
				!slices.Contains(usages, sr.SubjectVersion{Subject: other, Version: 1}) {
				t.Fatalf("versions of %d: %v, %v", id, usages, err)
			}
			listed, err := cl.Subjects(ctx)
			if err != nil || !slices.Contains(listed, subject) || !slices.Contains(listed, other) {
				t.Fatalf("subjects %v, %v", listed, err)
			}
		})
	}
}

func TestClientSupportedTypes(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	types, err := s.client.SupportedTypes(t.Context())
	if err != nil || !slices.Equal(types, []sr.SchemaType{sr.TypeAvro, sr.TypeProtobuf, sr.TypeJSON}) {
		t.Fatalf("types %v, %v", types, err)
	}
}

func TestClientSubjectsByPrefixAndWithSlashes(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx := t.Context()
	// Subject names are path segments: the client escapes a slash.
	odd := subjectName(t, "a/b c%")
	id, err := s.client.RegisterSchema(ctx, odd, avroSchema(`"string"`), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.client.SchemaByVersion(ctx, odd, 1)
	if err != nil || got.ID != id || got.Subject != odd {
		t.Fatalf("%+v, %v", got, err)
	}
	listed, err := s.client.Subjects(sr.WithParams(ctx, sr.SubjectPrefix(subjectName(t, "")+"-")))
	if err != nil || !slices.Equal(listed, []string{odd}) {
		t.Fatalf("by prefix: %v, %v", listed, err)
	}
}

func TestClientCompatibility(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	subject := subjectName(t, "value")
	v1 := avroSchema(avroRecord("Order", `{"name":"id","type":"int"}`))
	added := avroSchema(avroRecord("Order", `{"name":"id","type":"int"}`, `{"name":"note","type":"string","default":""}`))
	changed := avroSchema(avroRecord("Order", `{"name":"id","type":"string"}`))

	// Against a subject with no versions, anything goes.
	if res, err := cl.CheckCompatibility(ctx, subject, -2, changed); err != nil || !res.Is {
		t.Fatalf("no versions: %+v, %v", res, err)
	}
	// ... but a named version must exist.
	_, err := cl.CheckCompatibility(ctx, subject, -1, changed)
	wantCode(t, err, 40401)

	if _, err := cl.RegisterSchema(ctx, subject, v1, -1, -1); err != nil {
		t.Fatal(err)
	}
	for _, version := range []int{-1, -2, 1} {
		if res, err := cl.CheckCompatibility(ctx, subject, version, added); err != nil || !res.Is || len(res.Messages) != 0 {
			t.Fatalf("version %d, field added: %+v, %v", version, res, err)
		}
		if res, err := cl.CheckCompatibility(ctx, subject, version, changed); err != nil || res.Is || len(res.Messages) != 0 {
			t.Fatalf("version %d, type changed: %+v, %v", version, res, err)
		}
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, -1, changed)
	if err != nil || res.Is || len(res.Messages) == 0 {
		t.Fatalf("verbose: %+v, %v", res, err)
	}
	_, err = cl.CheckCompatibility(ctx, subject, 7, added)
	wantCode(t, err, 40402)
	_, err = cl.CheckCompatibility(ctx, subject, -1, avroSchema(`{"type":"record"`))
	wantCode(t, err, 42201)

	_, err = cl.RegisterSchema(ctx, subject, changed, -1, -1)
	wantCode(t, err, 409)

	// A subject's own level: unset (40408) until set, then it rules.
	cr := cl.Compatibility(ctx, subject)
	wantCode(t, cr[0].Err, 40408)
	cr = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subject)
	if cr[0].Err != nil || cr[0].Level != sr.CompatBackwardTransitive {
		t.Fatalf("default to global: %+v", cr[0])
	}
	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, subject)
	if set[0].Err != nil || set[0].Level != sr.CompatNone {
		t.Fatalf("set: %+v", set[0])
	}
	if cr := cl.Compatibility(ctx, subject); cr[0].Err != nil || cr[0].Level != sr.CompatNone {
		t.Fatalf("after set: %+v", cr[0])
	}
	if _, err := cl.RegisterSchema(ctx, subject, changed, -1, -1); err != nil {
		t.Fatalf("under NONE: %v", err)
	}
	// DELETE answers the level it removed as Confluent's registry does,
	// {"compatibilityLevel": ...}.
	status, body := s.do(t, "DELETE", "/config/"+subject, "")
	var removed struct {
		Level string `json:"compatibilityLevel"`
	}
	if err := json.Unmarshal(body, &removed); status != 200 || err != nil || removed.Level != "NONE" {
		t.Fatalf("DELETE /config/%s: %d %s", subject, status, body)
	}
	wantCode(t, cl.Compatibility(ctx, subject)[0].Err, 40408)
	wantCode(t, cl.ResetCompatibility(ctx, subject)[0].Err, 40408)

	status, body = s.do(t, "PUT", "/config/"+subject, `{"compatibility":"SIDEWAYS"}`)
	if status != 422 || errorCode(body) != 42203 {
		t.Fatalf("invalid level: %d %s", status, body)
	}
}

func TestClientMode(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	subject := subjectName(t, "value")
	v1 := avroSchema(avroRecord("Event", `{"name":"id","type":"long"}`))
	v2 := avroSchema(avroRecord("Event", `{"name":"id","type":"long"}`, `{"name":"at","type":"long","default":0}`))
	if _, err := cl.RegisterSchema(ctx, subject, v1, -1, -1); err != nil {
		t.Fatal(err)
	}

	wantCode(t, cl.Mode(ctx, subject)[0].Err, 40409)
	if m := cl.Mode(sr.WithParams(ctx, sr.DefaultToGlobal), subject)[0]; m.Err != nil || m.Mode != sr.ModeReadWrite {
		t.Fatalf("default to global: %+v", m)
	}
	if m := cl.SetMode(ctx, sr.ModeReadOnly, subject)[0]; m.Err != nil || m.Mode != sr.ModeReadOnly {
		t.Fatalf("set: %+v", m)
	}
	if m := cl.Mode(ctx, subject)[0]; m.Err != nil || m.Mode != sr.ModeReadOnly {
		t.Fatalf("get: %+v", m)
	}

	// Read-only: no registration, no delete; reads, lookups and checks go on.
	_, err := cl.RegisterSchema(ctx, subject, v2, -1, -1)
	wantCode(t, err, 42205)
	_, err = cl.DeleteSubject(ctx, subject, sr.SoftDelete)
	wantCode(t, err, 42205)
	wantCode(t, cl.DeleteSchema(ctx, subject, 1, sr.SoftDelete), 42205)
	if _, err := cl.LookupSchema(ctx, subject, v1); err != nil {
		t.Fatal(err)
	}
	if res, err := cl.CheckCompatibility(ctx, subject, -1, v2); err != nil || !res.Is {
		t.Fatalf("check: %+v, %v", res, err)
	}
	// As in Confluent's registry, even what is already there.
	_, err = cl.RegisterSchema(ctx, subject, v1, -1, -1)
	wantCode(t, err, 42205)

	wantCode(t, cl.SetMode(ctx, sr.ModeImport, subject)[0].Err, 42204)
	if m := cl.ResetMode(ctx, subject)[0]; m.Err != nil || m.Mode != sr.ModeReadOnly {
		t.Fatalf("reset: %+v", m)
	}
	if _, err := cl.RegisterSchema(ctx, subject, v2, -1, -1); err != nil {
		t.Fatalf("after reset: %v", err)
	}
}

func TestClientErrorCodes(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	subject := subjectName(t, "value")
	id, err := cl.RegisterSchema(ctx, subject, avroSchema(`"long"`), -1, -1)
	if err != nil {
		t.Fatal(err)
	}

	_, err = cl.SubjectVersions(ctx, subjectName(t, "missing"))
	wantCode(t, err, 40401)
	_, err = cl.SchemaByVersion(ctx, subjectName(t, "missing"), 1)
	wantCode(t, err, 40401)
	_, err = cl.LookupSchema(ctx, subjectName(t, "missing"), avroSchema(`"long"`))
	wantCode(t, err, 40401)
	_, err = cl.SchemaByVersion(ctx, subject, 2)
	wantCode(t, err, 40402)
	_, err = cl.SchemaByID(ctx, 1<<30)
	wantCode(t, err, 40403)
	_, err = cl.LookupSchema(ctx, subject, avroSchema(`"int"`))
	wantCode(t, err, 40403)

	for name, body := range map[string]sr.Schema{
		"not JSON":     {Schema: `{"type":"record","name":`},
		"unknown type": {Schema: `{"type":"decimalish"}`},
		"bad proto":    {Schema: "message {", Type: sr.TypeProtobuf},
		"bad JSON":     {Schema: `{"type":`, Type: sr.TypeJSON},
		"missing ref":  {Schema: avroRecord("R", `{"name":"a","type":"com.example.Nowhere"}`)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := cl.RegisterSchema(ctx, subject, body, -1, -1)
			wantCode(t, err, 42201)
		})
	}

	// Subject names Confluent refuses (control characters), and bytes that
	// are not UTF-8, which meta would store under another name.
	for _, name := range []string{subject + "\x98\x98", subject + "\n", "\x00", subject + "\u0085"} {
		_, err := cl.RegisterSchema(ctx, name, avroSchema(`"long"`), -1, -1)
		wantCode(t, err, 42208)
		wantCode(t, cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, name)[0].Err, 42208)
		wantCode(t, cl.SetMode(ctx, sr.ModeReadOnly, name)[0].Err, 42208)
	}
	if _, err := cl.RegisterSchema(ctx, subject+"-é✓", avroSchema(`"long"`), -1, -1); err != nil {
		t.Fatalf("a UTF-8 subject: %v", err)
	}

	// Raw bodies the client would never send.
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/subjects/" + subject + "/versions", `not json`, 42201},
		{"POST", "/subjects/" + subject + "/versions", `{"schema":""}`, 42201},
		{"POST", "/subjects/" + subject + "/versions", `{"schema":"\"int\"","schemaType":"XML"}`, 42201},
		{"POST", "/subjects/" + subject + "/versions", `{"schema":"\"int\"","references":[{"name":"x"}]}`, 42201},
		{"GET", "/subjects/" + subject + "/versions/0", ``, 42202},
		{"GET", "/subjects/" + subject + "/versions/one", ``, 42202},
		{"GET", "/schemas/ids/0", ``, 40403},
		{"GET", "/schemas/ids/x", ``, 40403},
		{"PUT", "/mode", `{"mode":"SOMETIMES"}`, 42204},
		{"PUT", "/config", `[]`, 42203},
		{"GET", "/no/such/path", ``, 404},
		{"PATCH", "/subjects", ``, 405},
	} {
		status, body := s.do(t, tc.method, tc.path, tc.body)
		if errorCode(body) != tc.code || status != httpStatus(tc.code) {
			t.Errorf("%s %s %s: %d %s, want error_code %d", tc.method, tc.path, tc.body, status, body, tc.code)
		}
	}
	if got, err := cl.SchemaByID(ctx, id); err != nil || got.Schema != `"long"` {
		t.Fatalf("schema %d: %+v, %v", id, got, err)
	}
}

func TestClientDeletes(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	subject := subjectName(t, "value")
	// Schemas of this run's own: the test checks they go with the subject.
	item := uniqueName(t, "Item")
	v1 := avroSchema(avroRecord(item, `{"name":"sku","type":"string"}`))
	v2 := avroSchema(avroRecord(item, `{"name":"sku","type":"string"}`, `{"name":"qty","type":"int","default":1}`))
	v3 := avroSchema(avroRecord(item, `{"name":"sku","type":"string"}`, `{"name":"qty","type":"int","default":1}`, `{"name":"tag","type":"string","default":""}`))
	var ids []int
	for _, v := range []sr.Schema{v1, v2, v3} {
		id, err := cl.RegisterSchema(ctx, subject, v, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}

	// A hard delete needs a soft delete first.
	wantCode(t, cl.DeleteSchema(ctx, subject, 3, sr.HardDelete), 40407)
	_, err := cl.DeleteSubject(ctx, subject, sr.HardDelete)
	wantCode(t, err, 40405)

	// Soft-delete version 3: gone from reads, there with ?deleted=true.
	if err := cl.DeleteSchema(ctx, subject, 3, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	wantCode(t, cl.DeleteSchema(ctx, subject, 3, sr.SoftDelete), 40406)
	wantCode(t, cl.DeleteSchema(ctx, subject, 9, sr.SoftDelete), 40402)
	_, err = cl.SchemaByVersion(ctx, subject, 3)
	wantCode(t, err, 40402)
	if got, err := cl.SchemaByVersion(sr.WithParams(ctx, sr.ShowDeleted), subject, 3); err != nil || got.ID != ids[2] {
		t.Fatalf("deleted version 3: %+v, %v", got, err)
	}
	if latest, err := cl.SchemaByVersion(ctx, subject, -1); err != nil || latest.Version != 2 {
		t.Fatalf("latest after deleting 3: %+v, %v", latest, err)
	}
	if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions %v, %v", versions, err)
	}
	if versions, err := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), subject); err != nil || !slices.Equal(versions, []int{1, 2, 3}) {
		t.Fatalf("versions with deleted %v, %v", versions, err)
	}
	// deletedOnly: the soft-deleted versions alone (it was ignored, and
	// the live ones came back).
	if versions, err := cl.SubjectVersions(sr.WithParams(ctx, sr.DeletedOnly), subject); err != nil || !slices.Equal(versions, []int{3}) {
		t.Fatalf("versions deleted only %v, %v; want [3]", versions, err)
	}
	// The schema is still readable by id, though no live version uses it.
	if _, err := cl.SchemaByID(ctx, ids[2]); err != nil {
		t.Fatalf("soft-deleted schema by id: %v", err)
	}
	// Registering it again makes a new version with the same id.
	if id, err := cl.RegisterSchema(ctx, subject, v3, -1, -1); err != nil || id != ids[2] {
		t.Fatalf("registering a soft-deleted schema again: %d, %v", id, err)
	}
	if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1, 2, 4}) {
		t.Fatalf("versions %v, %v", versions, err)
	}

	// Hard-delete version 3.
	if err := cl.DeleteSchema(ctx, subject, 3, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	if versions, err := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), subject); err != nil || !slices.Equal(versions, []int{1, 2, 4}) {
		t.Fatalf("versions with deleted after a hard delete %v, %v", versions, err)
	}

	// Soft-delete the subject: every live version.
	if listed, err := cl.Subjects(sr.WithParams(ctx, sr.DeletedOnly)); err != nil || slices.Contains(listed, subject) {
		t.Fatalf("subjects deleted only, the subject live: %v, %v", listed, err)
	}
	deleted, err := cl.DeleteSubject(ctx, subject, sr.SoftDelete)
	if err != nil || !slices.Equal(deleted, []int{1, 2, 4}) {
		t.Fatalf("soft delete: %v, %v", deleted, err)
	}
	if listed, err := cl.Subjects(sr.WithParams(ctx, sr.DeletedOnly)); err != nil || !slices.Contains(listed, subject) {
		t.Fatalf("subjects deleted only, the subject soft-deleted: %v, %v", listed, err)
	}
	if listed, err := cl.Subjects(ctx); err != nil || slices.Contains(listed, subject) {
		t.Fatalf("subjects after soft delete %v, %v", listed, err)
	}
	if listed, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted)); err != nil || !slices.Contains(listed, subject) {
		t.Fatalf("subjects with deleted %v, %v", listed, err)
	}
	_, err = cl.SubjectVersions(ctx, subject)
	wantCode(t, err, 40401)
	_, err = cl.LookupSchema(ctx, subject, v1)
	wantCode(t, err, 40401)
	if found, err := cl.LookupSchema(sr.WithParams(ctx, sr.ShowDeleted), subject, v1); err != nil || found.ID != ids[0] || found.Version != 1 {
		t.Fatalf("lookup in a soft-deleted subject with deleted=true: %+v, %v", found, err)
	}
	_, err = cl.DeleteSubject(ctx, subject, sr.SoftDelete)
	wantCode(t, err, 40404)

	// Hard-delete it: gone everywhere, and its schemas with it.
	deleted, err = cl.DeleteSubject(ctx, subject, sr.HardDelete)
	if err != nil || !slices.Equal(deleted, []int{1, 2, 4}) {
		t.Fatalf("hard delete: %v, %v", deleted, err)
	}
	if listed, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted)); err != nil || slices.Contains(listed, subject) {
		t.Fatalf("subjects with deleted after hard delete %v, %v", listed, err)
	}
	for _, id := range ids {
		_, err = cl.SchemaByID(ctx, id)
		wantCode(t, err, 40403)
	}
	_, err = cl.DeleteSubject(ctx, subject, sr.HardDelete)
	wantCode(t, err, 40401)

	// After a hard delete the subject starts again at version 1.
	if _, err := cl.RegisterSchema(ctx, subject, v1, -1, -1); err != nil {
		t.Fatal(err)
	}
	if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1}) {
		t.Fatalf("versions after re-creating %v, %v", versions, err)
	}
}

// A subject whose only version is soft-deleted can still have it deleted
// for good, version by version, as Confluent allows.
func TestClientHardDeleteLastSoftDeletedVersion(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	subject := subjectName(t, "value")
	id, err := cl.RegisterSchema(ctx, subject, avroSchema(avroRecord(uniqueName(t, "Solo"), `{"name":"a","type":"int"}`)), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteSchema(ctx, subject, 1, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteSchema(ctx, subject, 1, sr.HardDelete); err != nil {
		t.Fatalf("hard delete of the soft-deleted last version: %v", err)
	}
	_, err = cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), subject)
	wantCode(t, err, 40401)
	_, err = cl.SchemaByID(ctx, id)
	wantCode(t, err, 40403)
}

func TestClientReferences(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	base, user := subjectName(t, "address"), subjectName(t, "user-value")
	address := avroRecord("Address", `{"name":"street","type":"string"}`)
	baseID, err := cl.RegisterSchema(ctx, base, avroSchema(address), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	refs := []sr.SchemaReference{{Name: "com.example.Address", Subject: base, Version: 1}}
	userSchema := sr.Schema{
		Schema:     avroRecord("User", `{"name":"name","type":"string"}`, `{"name":"home","type":"com.example.Address"}`),
		References: refs,
	}
	created, err := cl.CreateSchema(ctx, user, userSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created.References, refs) {
		t.Fatalf("created %+v", created)
	}
	got, err := cl.SchemaByID(ctx, created.ID)
	if err != nil || !slices.Equal(got.References, refs) {
		t.Fatalf("by id: %+v, %v", got, err)
	}
	found, err := cl.LookupSchema(ctx, user, userSchema)
	if err != nil || found.ID != created.ID {
		t.Fatalf("lookup: %+v, %v", found, err)
	}
	// Without its references the text names a type nobody defines.
	_, err = cl.LookupSchema(ctx, user, sr.Schema{Schema: userSchema.Schema})
	wantCode(t, err, 42201)
	referrers, err := cl.SchemaReferences(ctx, base, 1)
	if err != nil || len(referrers) != 1 || referrers[0].ID != created.ID || referrers[0].Subject != user {
		t.Fatalf("referenced by: %+v, %v", referrers, err)
	}
	// A second version of the user compatible with the first.
	v2 := sr.Schema{
		Schema:     avroRecord("User", `{"name":"name","type":"string"}`, `{"name":"home","type":"com.example.Address"}`, `{"name":"age","type":"int","default":0}`),
		References: refs,
	}
	if _, err := cl.RegisterSchema(ctx, user, v2, -1, -1); err != nil {
		t.Fatal(err)
	}

	// A reference to a version or a subject that does not exist makes
	// the schema invalid, as in Confluent's registry (a 40401 or 40402
	// would read as the registration's own subject missing).
	_, err = cl.RegisterSchema(ctx, subjectName(t, "dangling"), sr.Schema{
		Schema:     userSchema.Schema,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: base, Version: 9}},
	}, -1, -1)
	wantCode(t, err, 42201)
	_, err = cl.RegisterSchema(ctx, subjectName(t, "dangling"), sr.Schema{
		Schema:     userSchema.Schema,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: subjectName(t, "nowhere"), Version: 1}},
	}, -1, -1)
	wantCode(t, err, 42201)

	// Version -1 is the referenced subject's latest, stored as its number.
	latestRef, err := cl.RegisterSchema(ctx, subjectName(t, "latest"), sr.Schema{
		Schema:     userSchema.Schema,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: base, Version: -1}},
	}, -1, -1)
	if err != nil {
		t.Fatalf("a reference to version -1: %v", err)
	}
	if got, err := cl.SchemaByID(ctx, latestRef); err != nil || !slices.Equal(got.References, refs) {
		t.Fatalf("a reference to version -1 is stored as %+v (%v), want %+v", got.References, err, refs)
	}
	if _, err := cl.DeleteSubject(ctx, subjectName(t, "latest"), sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, subjectName(t, "latest"), sr.HardDelete); err != nil {
		t.Fatal(err)
	}

	// What is referenced cannot be deleted.
	wantCode(t, cl.DeleteSchema(ctx, base, 1, sr.SoftDelete), 42206)
	_, err = cl.DeleteSubject(ctx, base, sr.SoftDelete)
	wantCode(t, err, 42206)
	if _, err := cl.SchemaByID(ctx, baseID); err != nil {
		t.Fatal(err)
	}

	// Once the referrers are gone for good, it can.
	if _, err := cl.DeleteSubject(ctx, user, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, user, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, base, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, base, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
}

// The seeds' example: a field changed from int to string is refused under
// BACKWARD and under the default, BACKWARD_TRANSITIVE; the transitive
// level also refuses what only an older version cannot read. A node of its
// own, since it reads and changes the global level.
func TestIntToStringRefused(t *testing.T) {
	t.Parallel()
	node, _ := newMeta(t, nil)
	s := serve(t, node)
	ctx, cl := t.Context(), s.client

	status, body := s.do(t, "GET", "/config", "")
	var cfg struct {
		Level string `json:"compatibilityLevel"`
	}
	if err := json.Unmarshal(body, &cfg); status != 200 || err != nil || cfg.Level != "BACKWARD_TRANSITIVE" {
		t.Fatalf("GET /config: %d %s", status, body)
	}
	if cr := cl.Compatibility(ctx)[0]; cr.Err != nil || cr.Level != sr.CompatBackwardTransitive {
		t.Fatalf("global level %+v", cr)
	}
	if m := cl.Mode(ctx)[0]; m.Err != nil || m.Mode != sr.ModeReadWrite {
		t.Fatalf("global mode %+v", m)
	}
	// The global level set, then reset (DELETE /config, franz-go's
	// ResetCompatibility without subjects): back to the default.
	if cr := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone})[0]; cr.Err != nil {
		t.Fatalf("setting the global level: %v", cr.Err)
	}
	if cr := cl.ResetCompatibility(ctx)[0]; cr.Err != nil || cr.Level != sr.CompatNone {
		t.Fatalf("resetting the global level: %+v, want the level it had, NONE", cr)
	}
	if cr := cl.Compatibility(ctx)[0]; cr.Err != nil || cr.Level != sr.CompatBackwardTransitive {
		t.Fatalf("global level after the reset: %+v, want the default", cr)
	}

	intField := avroRecord("Reading", `{"name":"value","type":"int"}`)
	stringField := avroRecord("Reading", `{"name":"value","type":"string"}`)
	register := func(subject, text string) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"schema": text})
		return s.do(t, "POST", "/subjects/"+subject+"/versions", string(b))
	}
	for _, level := range []string{"", "BACKWARD"} {
		subject := "readings-" + strings.ToLower(level) + "-value"
		if level != "" {
			if status, body := s.do(t, "PUT", "/config/"+subject, `{"compatibility":"`+level+`"}`); status != 200 {
				t.Fatalf("PUT /config/%s: %d %s", subject, status, body)
			}
		}
		if status, body := register(subject, intField); status != 200 {
			t.Fatalf("v1: %d %s", status, body)
		}
		status, body := register(subject, stringField)
		if status != 409 || errorCode(body) != 409 || !strings.Contains(string(body), "value") {
			t.Fatalf("level %q: int to string answered %d %s", level, status, body)
		}
	}

	// v1 {value: int}; v2 drops value; v3 has value as a string with a
	// default. BACKWARD checks v3 against v2 only and takes it;
	// BACKWARD_TRANSITIVE checks it against v1 too and refuses it.
	dropped := avroRecord("Reading")
	withDefault := avroRecord("Reading", `{"name":"value","type":"string","default":""}`)
	for level, want := range map[string]int{"BACKWARD": 200, "BACKWARD_TRANSITIVE": 409} {
		subject := "transitive-" + strings.ToLower(level) + "-value"
		if status, body := s.do(t, "PUT", "/config/"+subject, `{"compatibility":"`+level+`"}`); status != 200 {
			t.Fatalf("PUT /config/%s: %d %s", subject, status, body)
		}
		for _, text := range []string{intField, dropped} {
			if status, body := register(subject, text); status != 200 {
				t.Fatalf("%s: %d %s", subject, status, body)
			}
		}
		if status, body := register(subject, withDefault); status != want {
			t.Fatalf("%s: v3 answered %d %s, want %d", level, status, body, want)
		}
	}

	// Changing the global level is seen by subjects without their own.
	if set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}); set[0].Err != nil {
		t.Fatal(set[0].Err)
	}
	if status, body := register("readings--value", stringField); status != 200 {
		t.Fatalf("under global NONE: %d %s", status, body)
	}
	// The global mode: READONLY refuses every subject without its own.
	if m := cl.SetMode(ctx, sr.ModeReadOnly); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	_, err := cl.RegisterSchema(ctx, "elsewhere-value", avroSchema(`"int"`), -1, -1)
	wantCode(t, err, 42205)
	if m := cl.SetMode(ctx, sr.ModeReadWrite, "elsewhere-value"); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	if _, err := cl.RegisterSchema(ctx, "elsewhere-value", avroSchema(`"int"`), -1, -1); err != nil {
		t.Fatalf("a READWRITE subject under a READONLY registry: %v", err)
	}
}

// TestAllSchemas: GET /schemas (franz-go's AllSchemas) lists every
// subject's live versions with their schemas; subjectPrefix, deleted and
// latestOnly narrow or widen it as in Confluent's registry. It was 404.
func TestAllSchemas(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx, cl := t.Context(), s.client
	prefix := subjectName(t, "")
	a, b := prefix+"a-value", prefix+"b-value"
	for _, reg := range []struct {
		subject string
		schema  string
	}{
		{a, avroRecord("A", `{"name":"x","type":"int"}`)},
		{a, avroRecord("A", `{"name":"x","type":"int"}`, `{"name":"y","type":"int","default":0}`)},
		{b, `"string"`},
	} {
		if _, err := cl.RegisterSchema(ctx, reg.subject, avroSchema(reg.schema), -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.DeleteSchema(ctx, a, 1, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	listed := func(params ...sr.Param) []string {
		t.Helper()
		all, err := cl.AllSchemas(sr.WithParams(ctx, append(params, sr.SubjectPrefix(prefix))...))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range all {
			if s.Schema.Schema == "" || s.ID == 0 {
				t.Fatalf("listed %+v without its schema", s)
			}
			out = append(out, s.Subject+"/"+strconv.Itoa(s.Version))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		params []sr.Param
		want   []string
	}{
		{"live", nil, []string{a + "/2", b + "/1"}},
		{"with deleted", []sr.Param{sr.ShowDeleted}, []string{a + "/1", a + "/2", b + "/1"}},
		{"latest only", []sr.Param{sr.LatestOnly}, []string{a + "/2", b + "/1"}},
	} {
		if got := listed(tc.params...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
