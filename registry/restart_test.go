package registry

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/meta"
)

// The registry keeps nothing of its own: its state is meta's, so it
// survives a restart of the metadata node, from a snapshot and the log
// after it.

func TestRegistrySurvivesRestart(t *testing.T) {
	t.Parallel()
	node, cfg := newMeta(t, func(c *meta.Config) {
		c.SnapshotThreshold = 4
		c.TrailingLogs = 2
		c.SnapshotInterval = 20 * time.Millisecond
	})
	s := serve(t, node)
	ctx, cl := t.Context(), s.client

	type registered struct {
		subject string
		version int
		id      int
		schema  sr.Schema
	}
	var before []registered
	register := func(s *served, subject string, schema sr.Schema) {
		t.Helper()
		got, err := s.client.CreateSchema(ctx, subject, schema)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, registered{subject, got.Version, got.ID, schema})
	}
	for i := range 6 {
		fields := []string{`{"name":"id","type":"long"}`}
		for j := range i {
			fields = append(fields, fmt.Sprintf(`{"name":"f%d","type":"int","default":0}`, j))
		}
		register(s, "snap-value", avroSchema(avroRecord("Snap", fields...)))
	}
	for _, tc := range testSchemas {
		register(s, "types-"+tc.typ.String(), sr.Schema{Schema: tc.v1, Type: tc.typ})
	}
	register(s, "base", avroSchema(avroRecord("Address", `{"name":"street","type":"string"}`)))
	register(s, "user-value", sr.Schema{
		Schema:     avroRecord("User", `{"name":"home","type":"com.example.Address"}`),
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "base", Version: 1}},
	})
	if set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "snap-value"); set[0].Err != nil {
		t.Fatal(set[0].Err)
	}
	if m := cl.SetMode(ctx, sr.ModeReadOnly, "types-AVRO"); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	if err := cl.DeleteSchema(ctx, "snap-value", 2, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a snapshot", func() bool { return node.Status().LastSnapshotIndex > 0 })
	// And some after it, to come back from the log.
	if _, err := cl.DeleteSubject(ctx, "types-JSON", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	register(s, "after-snapshot-value", avroSchema(`"bytes"`))
	lastID := before[len(before)-1].id

	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := serve(t, reopenMeta(t, cfg))
	cl = s2.client

	for _, r := range before {
		ctx := sr.WithParams(ctx, sr.ShowDeleted) // types-JSON and snap-value 2 are soft-deleted
		got, err := cl.SchemaByVersion(ctx, r.subject, r.version)
		if err != nil {
			t.Fatalf("%s version %d: %v", r.subject, r.version, err)
		}
		if got.ID != r.id || got.Schema.Schema != r.schema.Schema || got.Type != r.schema.Type || !slices.Equal(got.References, r.schema.References) {
			t.Fatalf("%s version %d after restart: %+v, want id %d %+v", r.subject, r.version, got, r.id, r.schema)
		}
		byID, err := cl.SchemaByID(ctx, r.id)
		if err != nil || byID.Schema != r.schema.Schema {
			t.Fatalf("schema %d after restart: %+v, %v", r.id, byID, err)
		}
		// The same schema again: the same id, and no new version.
		if r.subject != "types-AVRO" && r.subject != "types-JSON" && r.subject != "snap-value" {
			if id, err := cl.RegisterSchema(ctx, r.subject, r.schema, -1, -1); err != nil || id != r.id {
				t.Fatalf("%s registered again: %d, %v; want %d", r.subject, id, err, r.id)
			}
		}
	}
	if versions, err := cl.SubjectVersions(ctx, "snap-value"); err != nil || !slices.Equal(versions, []int{1, 3, 4, 5, 6}) {
		t.Fatalf("snap-value versions %v, %v", versions, err)
	}
	if cr := cl.Compatibility(ctx, "snap-value"); cr[0].Err != nil || cr[0].Level != sr.CompatFull {
		t.Fatalf("snap-value level %+v", cr[0])
	}
	if m := cl.Mode(ctx, "types-AVRO"); m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Fatalf("types-AVRO mode %+v", m[0])
	}
	_, err := cl.SubjectVersions(ctx, "types-JSON")
	wantCode(t, err, 40401)
	if refs, err := cl.SchemaReferences(ctx, "base", 1); err != nil || len(refs) != 1 || refs[0].Subject != "user-value" {
		t.Fatalf("base referenced by %+v, %v", refs, err)
	}

	// The id sequence goes on where it was.
	id, err := cl.RegisterSchema(ctx, "new-value", avroSchema(`"double"`), -1, -1)
	if err != nil || id != lastID+1 {
		t.Fatalf("first id after restart %d, %v; want %d", id, err, lastID+1)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
