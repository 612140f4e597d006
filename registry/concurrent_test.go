package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// Registrations racing on one subject: each is checked against the
// version it read and proposed with it (RegisterSchema.LatestVersion), so
// one that lost the race is checked again (meta.ErrSchemaConflict) rather
// than slipping past a version it never saw.

// TestConcurrentRegistrations registers different compatible versions to
// one subject at once: each succeeds with a version of its own, the
// versions are consecutive, and the subject holds each schema once.
func TestConcurrentRegistrations(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx := t.Context()
	subject := subjectName(t, "value")
	const writers = 16

	// Version i adds an optional field of its own: any order is
	// compatible at the default level (BACKWARD_TRANSITIVE).
	schemas := make([]sr.Schema, writers)
	for i := range schemas {
		schemas[i] = avroSchema(avroRecord("Race", `{"name":"id","type":"long"}`, fmt.Sprintf(`{"name":"f%d","type":"int","default":%d}`, i, i)))
	}
	var wg sync.WaitGroup
	ids := make([]int, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ids[i], errs[i] = s.client.RegisterSchema(ctx, subject, schemas[i], -1, -1)
		}()
	}
	close(start)
	wg.Wait()

	registered := 0
	for i, err := range errs {
		if err != nil {
			// A clean failure: the registry's error, which the client can
			// retry; never a version it did not check against.
			var re *sr.ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("writer %d: %v", i, err)
			}
			t.Errorf("writer %d failed: %d %s", i, re.ErrorCode, re.Message)
			continue
		}
		registered++
	}
	versions, err := s.client.SubjectVersions(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, registered)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(versions, want) {
		t.Fatalf("versions %v, want %v", versions, want)
	}
	all, err := s.client.Schemas(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, v := range all {
		if prev, dup := seen[v.ID]; dup {
			t.Fatalf("schema %d is both version %d and %d", v.ID, prev, v.Version)
		}
		seen[v.ID] = v.Version
	}
	for i, err := range errs {
		if err == nil {
			if _, ok := seen[ids[i]]; !ok {
				t.Fatalf("writer %d got id %d, which no version holds", i, ids[i])
			}
		}
	}
}

// TestConcurrentSameSchema registers one schema from many writers at
// once: one version, one id.
func TestConcurrentSameSchema(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx := t.Context()
	subject := subjectName(t, "value")
	schema := avroSchema(avroRecord("Same", `{"name":"id","type":"long"}`))
	const writers = 16
	var wg sync.WaitGroup
	ids := make([]int, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = s.client.RegisterSchema(ctx, subject, schema, -1, -1)
		}()
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("writer %d: id %d, %v; writer 0 got %d", i, ids[i], errs[i], ids[0])
		}
	}
	if versions, err := s.client.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1}) {
		t.Fatalf("versions %v, %v", versions, err)
	}
}

// TestConcurrentIncompatible races versions of which only some can
// follow each other: whatever order wins, every registered version is
// compatible with every one before it, and the losers are refused with 409.
func TestConcurrentIncompatible(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	ctx := t.Context()
	subject := subjectName(t, "value")
	// The field "v" as int or as string, and each with a different
	// optional field so that no two texts are one schema: an int can
	// never follow a string or the reverse, so after the first
	// registration only schemas of its type can follow.
	const writers = 12
	schemas := make([]sr.Schema, writers)
	for i := range schemas {
		typ := []string{"int", "string"}[i%2]
		schemas[i] = avroSchema(avroRecord("Flip", `{"name":"v","type":"`+typ+`"}`, fmt.Sprintf(`{"name":"g%d","type":"int","default":0}`, i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.client.RegisterSchema(ctx, subject, schemas[i], -1, -1)
		}()
	}
	wg.Wait()
	all, err := s.client.Schemas(ctx, subject)
	if err != nil || len(all) == 0 {
		t.Fatalf("schemas %v, %v", all, err)
	}
	const vInt = `{"name":"v","type":"int"}`
	first := strings.Contains(all[0].Schema.Schema, vInt)
	for _, v := range all {
		if strings.Contains(v.Schema.Schema, vInt) != first {
			t.Fatalf("version %d changed v's type: %s", v.Version, v.Schema.Schema)
		}
	}
	for i, err := range errs {
		isInt := i%2 == 0
		switch {
		case isInt == first && err != nil:
			t.Errorf("writer %d (compatible) failed: %v", i, err)
		case isInt != first:
			wantCode(t, err, 409)
		}
	}
}
