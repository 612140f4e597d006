package schema

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

func mustParseAvro(t testing.TB, text string, deps map[string]string) *avroSchema {
	t.Helper()
	s, err := Parse(Avro, text, deps)
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return s.(*avroSchema)
}

// avroRecord builds a record schema named test.Person with the given
// fields (JSON objects).
func avroRecord(fields ...string) string {
	return `{"type":"record","name":"Person","namespace":"test","fields":[` + strings.Join(fields, ",") + `]}`
}

type schemaCheckCase struct {
	name     string
	previous []string // oldest first
	next     string
	// want maps each level to the problem expected (a substring of one of
	// them), or "" for none.
	want map[Level]string
}

// schemaCheckLevels lists every level, for cases that state them all.
var schemaCheckLevels = []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

func runSchemaCheckCases(t *testing.T, typ Type, cases []schemaCheckCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var previous []Schema
			for _, text := range tc.previous {
				s, err := Parse(typ, text, nil)
				if err != nil {
					t.Fatalf("Parse(%s): %v", text, err)
				}
				previous = append(previous, s)
			}
			next, err := Parse(typ, tc.next, nil)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.next, err)
			}
			for level, want := range tc.want {
				problems := Check(level, next, previous)
				switch {
				case want == "" && len(problems) > 0:
					t.Errorf("%s: want compatible, got %q", level, problems)
				case want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }):
					t.Errorf("%s: want a problem containing %q, got %q", level, want, problems)
				}
			}
		})
	}
}

// levels builds a want map: backward and forward problems for the latest
// version (bw, fw), and for the transitive levels (bwT, fwT).
func schemaCheckWant(bw, bwT, fw, fwT string) map[Level]string {
	first := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return map[Level]string{
		None:               "",
		Backward:           bw,
		BackwardTransitive: bwT,
		Forward:            fw,
		ForwardTransitive:  fwT,
		Full:               first(bw, fw),
		FullTransitive:     first(bwT, fwT),
	}
}

func TestAvroCompatibility(t *testing.T) {
	t.Parallel()
	id := `{"name":"id","type":"long"}`
	cases := []schemaCheckCase{
		{
			name:     "identical",
			previous: []string{avroRecord(id)},
			next:     avroRecord(id),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			// The seeds' example.
			name:     "int field changed to string",
			previous: []string{avroRecord(id, `{"name":"age","type":"int"}`)},
			next:     avroRecord(id, `{"name":"age","type":"string"}`),
			want: schemaCheckWant(`field "age": type changed from int to string`, `field "age": type changed from int to string`,
				`field "age": type changed from string to int`, `field "age": type changed from string to int`),
		},
		{
			name:     "field added with a default",
			previous: []string{avroRecord(id)},
			next:     avroRecord(id, `{"name":"email","type":"string","default":""}`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "field added without a default",
			previous: []string{avroRecord(id)},
			next:     avroRecord(id, `{"name":"email","type":"string"}`),
			want: schemaCheckWant(`field "email": the writer has no such field and the reader gives it no default`,
				`field "email"`, "", ""),
		},
		{
			name:     "field without a default removed",
			previous: []string{avroRecord(id, `{"name":"email","type":"string"}`)},
			next:     avroRecord(id),
			want:     schemaCheckWant("", "", `field "email": the writer has no such field`, `field "email"`),
		},
		{
			name:     "field with a default removed",
			previous: []string{avroRecord(id, `{"name":"email","type":"string","default":""}`)},
			next:     avroRecord(id),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "optional field added with a null default",
			previous: []string{avroRecord(id)},
			next:     avroRecord(id, `{"name":"email","type":["null","string"],"default":null}`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "int promoted to long",
			previous: []string{avroRecord(`{"name":"n","type":"int"}`)},
			next:     avroRecord(`{"name":"n","type":"long"}`),
			want: schemaCheckWant("", "", `field "n": type changed from long to int`,
				`field "n": type changed from long to int`),
		},
		{
			name:     "float promoted to double, long to float",
			previous: []string{avroRecord(`{"name":"f","type":"float"}`, `{"name":"l","type":"long"}`)},
			next:     avroRecord(`{"name":"f","type":"double"}`, `{"name":"l","type":"float"}`),
			want:     schemaCheckWant("", "", `field "f": type changed from double to float`, `field "l": type changed from float to long`),
		},
		{
			name:     "string and bytes read each other",
			previous: []string{avroRecord(`{"name":"s","type":"string"}`)},
			next:     avroRecord(`{"name":"s","type":"bytes"}`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "enum symbol added",
			previous: []string{avroRecord(`{"name":"c","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}}`)},
			next:     avroRecord(`{"name":"c","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}}`),
			want: schemaCheckWant("", "", `field "c": enum test.Color lacks the writer's symbols BLUE and has no default`,
				`lacks the writer's symbols BLUE`),
		},
		{
			name:     "enum symbol added, old reader has a default",
			previous: []string{avroRecord(`{"name":"c","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","OTHER"],"default":"OTHER"}}`)},
			next:     avroRecord(`{"name":"c","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","OTHER","BLUE"],"default":"OTHER"}}`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "union branch added",
			previous: []string{avroRecord(`{"name":"v","type":["null","string"]}`)},
			next:     avroRecord(`{"name":"v","type":["null","string","int"]}`),
			want: schemaCheckWant("", "", `field "v": the writer's union branch int cannot be read as union[null,string]`,
				`field "v"`),
		},
		{
			name:     "field made optional",
			previous: []string{avroRecord(`{"name":"v","type":"string"}`)},
			next:     avroRecord(`{"name":"v","type":["null","string"]}`),
			want: schemaCheckWant("", "", `field "v": the writer's union branch null cannot be read as string`,
				`field "v"`),
		},
		{
			name:     "record renamed with an alias",
			previous: []string{avroRecord(id)},
			next:     `{"type":"record","name":"Human","namespace":"test","aliases":["Person"],"fields":[` + id + `]}`,
			want:     schemaCheckWant("", "", "record name changed from test.Human to test.Person", "record name changed"),
		},
		{
			name:     "record renamed without an alias",
			previous: []string{avroRecord(id)},
			next:     `{"type":"record","name":"Human","namespace":"test","fields":[` + id + `]}`,
			want:     schemaCheckWant("record name changed from test.Person to test.Human", "record name changed", "record name changed", "record name changed"),
		},
		{
			name:     "field renamed with an alias",
			previous: []string{avroRecord(`{"name":"mail","type":"string"}`)},
			next:     avroRecord(`{"name":"email","type":"string","aliases":["mail"]}`),
			want:     schemaCheckWant("", "", `field "mail": the writer has no such field`, `field "mail"`),
		},
		{
			name:     "fixed size changed",
			previous: []string{avroRecord(`{"name":"h","type":{"type":"fixed","name":"Hash","size":16}}`)},
			next:     avroRecord(`{"name":"h","type":{"type":"fixed","name":"Hash","size":32}}`),
			want: schemaCheckWant(`field "h": fixed test.Hash size changed from 16 to 32`, "size changed",
				`field "h": fixed test.Hash size changed from 32 to 16`, "size changed"),
		},
		{
			name:     "array items and map values",
			previous: []string{avroRecord(`{"name":"xs","type":{"type":"array","items":"int"}}`, `{"name":"m","type":{"type":"map","values":"int"}}`)},
			next:     avroRecord(`{"name":"xs","type":{"type":"array","items":"long"}}`, `{"name":"m","type":{"type":"map","values":"string"}}`),
			want: schemaCheckWant(`field "m{}": type changed from int to string`, `field "m{}"`,
				`field "xs[]": type changed from long to int`, `field "xs[]"`),
		},
		{
			name: "nested record field changed",
			previous: []string{avroRecord(
				`{"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"zip","type":"int"}]}}`)},
			next: avroRecord(
				`{"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"zip","type":"string"}]}}`),
			want: schemaCheckWant(`field "address.zip": type changed from int to string`, `field "address.zip"`,
				`field "address.zip": type changed from string to int`, `field "address.zip"`),
		},
		{
			name:     "top-level type changed",
			previous: []string{`"int"`},
			next:     `"string"`,
			want:     schemaCheckWant("type changed from int to string", "type changed", "type changed", "type changed"),
		},
		{
			// v3 reads v2 (which gave b a default) but not v1, which has no
			// b at all: BACKWARD passes, BACKWARD_TRANSITIVE does not.
			name: "transitive: default dropped",
			previous: []string{
				avroRecord(id),
				avroRecord(id, `{"name":"b","type":"string","default":"x"}`),
			},
			next: avroRecord(id, `{"name":"b","type":"string"}`),
			want: schemaCheckWant("", `field "b": the writer has no such field and the reader gives it no default`, "", ""),
		},
		{
			// v1 needs b; v2 gave it a default; v3 drops it: v2 reads v3,
			// v1 does not.
			name: "transitive: field dropped after a default was added",
			previous: []string{
				avroRecord(id, `{"name":"b","type":"string"}`),
				avroRecord(id, `{"name":"b","type":"string","default":"x"}`),
			},
			next: avroRecord(id),
			want: schemaCheckWant("", "", "", `field "b": the writer has no such field and the reader gives it no default`),
		},
		{
			// Each step widens int -> long -> double, each readable by the
			// next; reading back forward fails at every step.
			name: "transitive: promotion chain",
			previous: []string{
				avroRecord(`{"name":"n","type":"int"}`),
				avroRecord(`{"name":"n","type":"long"}`),
			},
			next: avroRecord(`{"name":"n","type":"double"}`),
			want: schemaCheckWant("", "", "type changed from double to long", "type changed from double to int"),
		},
	}
	runSchemaCheckCases(t, Avro, cases)
}

// TestAvroCompatibilityLevelsStated pins Check's handling of every level
// on one transitive history, by name.
func TestAvroCompatibilityLevelsStated(t *testing.T) {
	t.Parallel()
	v1 := mustParseAvro(t, avroRecord(`{"name":"a","type":"int"}`), nil)
	v2 := mustParseAvro(t, avroRecord(`{"name":"a","type":"int"}`, `{"name":"b","type":"string","default":"x"}`), nil)
	v3 := mustParseAvro(t, avroRecord(`{"name":"a","type":"int"}`, `{"name":"b","type":"string"}`), nil)
	want := map[Level]bool{ // compatible?
		None: true, Backward: true, BackwardTransitive: false,
		Forward: true, ForwardTransitive: true, Full: true, FullTransitive: false,
	}
	for _, level := range schemaCheckLevels {
		got := len(Check(level, v3, []Schema{v1, v2})) == 0
		if got != want[level] {
			t.Errorf("%s: compatible = %v, want %v", level, got, want[level])
		}
	}
}

// avroCorpus is a family of schemas of one record, differing in the ways
// resolution cares about, for comparing avroCanRead with hamba's checker
// on every pair.
var avroCorpus = []string{
	avroRecord(`{"name":"a","type":"int"}`),
	avroRecord(`{"name":"a","type":"long"}`),
	avroRecord(`{"name":"a","type":"double"}`),
	avroRecord(`{"name":"a","type":"string"}`),
	avroRecord(`{"name":"a","type":"bytes"}`),
	avroRecord(`{"name":"a","type":["null","int"],"default":null}`),
	avroRecord(`{"name":"a","type":["null","long","string"]}`),
	avroTwoFields,
	avroTwoFieldsDefault,
	avroAliasedField,
	avroRecord(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X","Y"]}}`),
	avroRecord(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X"]}}`),
	avroRecord(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X","Z"],"default":"X"}}`),
	avroRecord(`{"name":"a","type":{"type":"enum","name":"F","symbols":["X","Y"]}}`),
	avroRecord(`{"name":"a","type":{"type":"fixed","name":"H","size":4}}`),
	avroRecord(`{"name":"a","type":{"type":"fixed","name":"H","size":8}}`),
	avroRecord(`{"name":"a","type":{"type":"array","items":"int"}}`),
	avroRecord(`{"name":"a","type":{"type":"array","items":"long"}}`),
	avroRecord(`{"name":"a","type":{"type":"map","values":"int"}}`),
	avroRecord(`{"name":"a","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}}`),
	avroRecord(`{"name":"a","type":{"type":"record","name":"In","fields":[{"name":"x","type":"long"},{"name":"y","type":"int","default":0}]}}`),
	avroRecord(`{"name":"a","type":{"type":"record","name":"In","fields":[{"name":"y","type":"int"}]}}`),
	avroRecord(`{"name":"a","type":["null",{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}]}`),
	`{"type":"record","name":"Other","namespace":"test","fields":[{"name":"a","type":"int"}]}`,
	`{"type":"record","name":"Other","namespace":"test","aliases":["test.Person"],"fields":[{"name":"a","type":"int"}]}`,
	`{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`,
	`{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"]}]}`,
	`["null","int","string"]`,
	`"int"`,
	`"long"`,
}

var (
	avroTwoFields        = avroRecord(`{"name":"a","type":"int"}`, `{"name":"b","type":"string"}`)
	avroTwoFieldsDefault = avroRecord(`{"name":"a","type":"int"}`, `{"name":"b","type":"string","default":""}`)
	avroAliasedField     = avroRecord(`{"name":"b","type":"string","aliases":["a"]}`)
)

// avroHambaDiffers lists the corpus pairs (reader, writer) on which hamba
// is known to answer differently from Avro's own checker, which Confluent
// uses, and avroCanRead follows Avro's.
var avroHambaDiffers = map[[2]string]string{
	// A reader field "b" aliased "a", a writer with both "a" and "b":
	// Avro's SchemaCompatibility.lookupWriterField matches by name first
	// and reads "b" from "b"; hamba takes the first writer field matching
	// the name or an alias, "a", an int.
	{avroAliasedField, avroTwoFields}:        "field name before alias",
	{avroAliasedField, avroTwoFieldsDefault}: "field name before alias",
}

// TestAvroCanReadAgreesWithHamba holds avroCanRead to hamba's decisions on
// every ordered pair of the corpus.
func TestAvroCanReadAgreesWithHamba(t *testing.T) {
	t.Parallel()
	var parsed []*avroSchema
	for _, text := range avroCorpus {
		parsed = append(parsed, mustParseAvro(t, text, nil))
	}
	incompatible := 0
	for i, reader := range parsed {
		for j, writer := range parsed {
			ours := avroCanRead(reader, writer)
			theirs := avro.NewSchemaCompatibility().Compatible(reader.schema, writer.schema)
			_, differs := avroHambaDiffers[[2]string{avroCorpus[i], avroCorpus[j]}]
			if differs == ((len(ours) == 0) == (theirs == nil)) {
				t.Errorf("reader %s\nwriter %s\nours: %q\nhamba: %v", avroCorpus[i], avroCorpus[j], ours, theirs)
			}
			if len(ours) > 0 {
				incompatible++
			}
		}
	}
	// Both answers occur, or the comparison proves little.
	if incompatible == 0 || incompatible == len(parsed)*len(parsed) {
		t.Fatalf("%d of %d pairs incompatible", incompatible, len(parsed)*len(parsed))
	}
}

func TestAvroCanonical(t *testing.T) {
	t.Parallel()
	variants := []string{
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
		"{\n  \"fields\": [\n    {\"type\": \"long\", \"name\": \"id\"},\n    {\"name\": \"tags\", \"type\": {\"items\": \"string\", \"type\": \"array\"}}\n  ],\n  \"name\": \"Person\",\n  \"namespace\": \"test\",\n  \"type\": \"record\"\n}",
		`{"type":"record","name":"test.Person","fields":[{"name":"id","type":{"type":"long"}},{"name":"tags","type":{"type":"array","items":{"type":"string"}}}]}`,
	}
	want := `{"name":"test.Person","type":"record","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}}]}`
	for _, text := range variants {
		s := mustParseAvro(t, text, nil)
		if got := s.Canonical(); got != want {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", text, got, want)
		}
		if Fingerprint(s) != Fingerprint(mustParseAvro(t, variants[0], nil)) {
			t.Errorf("Fingerprint(%s) differs", text)
		}
	}
	different := []string{
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"id","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"tags","type":{"type":"array","items":"string"}},{"name":"id","type":"long"}]}`,
		`{"type":"record","name":"Person","namespace":"other","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
		// A default, an alias or a doc makes another schema: the
		// registry must not take it for one registered already.
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"},"default":[]}]}`,
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"id","type":"long","aliases":["key"]},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
		`{"type":"record","name":"Person","namespace":"test","doc":"a person","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
		// A logical type is kept (see Canonical).
		`{"type":"record","name":"Person","namespace":"test","fields":[{"name":"id","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"tags","type":{"type":"array","items":"string"}}]}`,
	}
	seen := map[string]string{Fingerprint(mustParseAvro(t, variants[0], nil)): variants[0]}
	for _, text := range different {
		f := Fingerprint(mustParseAvro(t, text, nil))
		if other, ok := seen[f]; ok {
			t.Errorf("%s and %s share a fingerprint", text, other)
		}
		seen[f] = text
	}
}

const avroAddress = `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"zip","type":"string"},{"name":"country","type":"com.acme.Country"}]}`
const avroCountry = `{"type":"enum","name":"Country","namespace":"com.acme","symbols":["FR","NZ"]}`
const avroCustomer = `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"home","type":"com.acme.Address"},{"name":"work","type":["null","com.acme.Address"],"default":null}]}`

func TestAvroReferences(t *testing.T) {
	t.Parallel()
	deps := map[string]string{"com.acme.Address": avroAddress, "com.acme.Country": avroCountry}
	s := mustParseAvro(t, avroCustomer, deps)

	// The canonical form inlines the referenced types where first used,
	// and so parses alone, to itself.
	if !strings.Contains(s.Canonical(), `"name":"com.acme.Address"`) || strings.Count(s.Canonical(), `"symbols"`) != 1 {
		t.Errorf("Canonical() = %s, want Address and Country defined once", s.Canonical())
	}
	if again := mustParseAvro(t, s.Canonical(), nil); again.Canonical() != s.Canonical() {
		t.Errorf("canonical form re-parses to %s", again.Canonical())
	}

	for name, deps := range map[string]map[string]string{
		"none":           nil,
		"transitive one": {"com.acme.Address": avroAddress},
		"unrelated":      {"com.acme.Other": `{"type":"fixed","name":"Other","namespace":"com.acme","size":1}`},
		"broken":         {"com.acme.Address": `{"type":"record"`, "com.acme.Country": avroCountry},
	} {
		if _, err := Parse(Avro, avroCustomer, deps); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("deps %s: err = %v, want ErrInvalidSchema", name, err)
		}
	}

	// Each parse has its own names: two subjects may define test.Person
	// differently, and hamba's global cache stays empty.
	a := mustParseAvro(t, avroRecord(`{"name":"a","type":"int"}`), nil)
	b := mustParseAvro(t, avroRecord(`{"name":"b","type":"string"}`), nil)
	if a.Canonical() == b.Canonical() {
		t.Errorf("two definitions of test.Person got one canonical form")
	}
	if avro.DefaultSchemaCache.Get("test.Person") != nil || avro.DefaultSchemaCache.Get("com.acme.Address") != nil {
		t.Errorf("a parse wrote to hamba's global schema cache")
	}
	if _, err := Parse(Avro, `{"type":"record","name":"X","fields":[{"name":"p","type":"test.Person"}]}`, nil); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("a name from an earlier parse resolved: err = %v", err)
	}
}

func TestAvroParseInvalid(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		``,
		`int`, // not JSON, though hamba would take it as a type name
		`{"type":"record","name":"R"}`,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}`,
		`{"type":"enum","name":"E","symbols":[]}`,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}`,
		`{"type":"fixed","name":"F"}`,
		`"int" "long"`,
	} {
		if _, err := Parse(Avro, text, nil); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("Parse(%q): err = %v, want ErrInvalidSchema", text, err)
		}
	}
}

// avroDecodeSchema has a field of every kind Decode handles.
const avroDecodeSchema = `{"type":"record","name":"Event","namespace":"test","fields":[
	{"name":"id","type":"long"},
	{"name":"ok","type":"boolean"},
	{"name":"n","type":"int"},
	{"name":"f","type":"float"},
	{"name":"d","type":"double"},
	{"name":"name","type":"string"},
	{"name":"raw","type":"bytes"},
	{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}},
	{"name":"hash","type":{"type":"fixed","name":"Hash","size":2}},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"attrs","type":{"type":"map","values":"int"}},
	{"name":"opt","type":["null","string","Kind"]},
	{"name":"day","type":{"type":"int","logicalType":"date"}},
	{"name":"last","type":"string"}
]}`

func avroEncode(t *testing.T, s *avroSchema, v any) []byte {
	t.Helper()
	b, err := avro.Marshal(s.schema, v)
	if err != nil {
		t.Fatalf("avro.Marshal: %v", err)
	}
	return b
}

func TestAvroDecode(t *testing.T) {
	t.Parallel()
	s := mustParseAvro(t, avroDecodeSchema, nil)
	event := map[string]any{
		"id": int64(-7), "ok": true, "n": 42, "f": float32(1.5), "d": math.Inf(-1),
		"name": "<é>", "raw": []byte{0, 0xff, 'a'}, "kind": "B", "hash": [2]byte{1, 2},
		"tags": []any{"x", "y"}, "attrs": map[string]any{"k": 1},
		"opt": map[string]any{"test.Kind": "A"}, "day": 19000, "last": "end",
	}
	good := avroEncode(t, s, event)
	got, err := s.Decode(good)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := `{"id":-7,"ok":true,"n":42,"f":1.5,"d":"-Infinity","name":"<é>","raw":"\u0000ÿa","kind":"B","hash":"\u0001\u0002",` +
		`"tags":["x","y"],"attrs":{"k":1},"opt":{"test.Kind":"A"},"day":19000,"last":"end"}`
	if string(got) != want {
		t.Errorf("Decode\n got %s\nwant %s", got, want)
	}

	// Unions: null bare, a primitive branch by its type name.
	event["opt"], event["d"] = nil, math.NaN()
	if got, err := s.Decode(avroEncode(t, s, event)); err != nil || !strings.Contains(string(got), `"d":"NaN"`) || !strings.Contains(string(got), `"opt":null`) {
		t.Errorf("Decode = %s, %v; want NaN as a string and a null union", got, err)
	}
	event["opt"] = map[string]any{"string": "x"}
	if got, err := s.Decode(avroEncode(t, s, event)); err != nil || !strings.Contains(string(got), `"opt":{"string":"x"}`) {
		t.Errorf("Decode = %s, %v; want {\"string\":\"x\"}", got, err)
	}

	for i := range good {
		if _, err := s.Decode(good[:i]); !errors.Is(err, ErrDecode) {
			t.Errorf("Decode of the first %d of %d bytes: err = %v, want ErrDecode", i, len(good), err)
		}
	}
	if _, err := s.Decode(append(slices.Clone(good), 0)); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "bytes remain") {
		t.Errorf("Decode with a trailing byte: err = %v, want ErrDecode (bytes remain)", err)
	}
}

func TestAvroDecodeInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		schema  string
		payload []byte
		want    string
	}{
		{"wrong type: string where a long is", `"long"`, []byte{0x06, 'a', 'b', 'c'}, "bytes remain"},
		{"bool byte", `"boolean"`, []byte{2}, "invalid bool"},
		{"enum index", `{"type":"enum","name":"E","symbols":["A"]}`, []byte{2}, "has no symbol 1"},
		{"negative enum index", `{"type":"enum","name":"E","symbols":["A"]}`, []byte{1}, "has no symbol -1"},
		{"union index", `["null","int"]`, []byte{4}, "has no branch 2"},
		{"string length beyond the payload", `"string"`, []byte{0x80, 0x01, 'a'}, "length 64"},
		{"negative string length", `"string"`, []byte{0x01}, "length -1"},
		{"string not UTF-8", `"string"`, []byte{2, 0xff}, "not UTF-8"},
		{"map key twice", `{"type":"map","values":"int"}`, []byte{4, 2, 'k', 2, 2, 'k', 4, 0}, `"k" appears twice`},
		{"billions of nulls", `{"type":"array","items":"null"}`, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0}, "claims"},
		{"varint too long", `"int"`, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ""},
		{"fixed longer than the payload", `{"type":"fixed","name":"F","size":1000}`, []byte{1}, "longer than the payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustParseAvro(t, tc.schema, nil)
			got, err := s.Decode(tc.payload)
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode(% x) = %s, %v; want ErrDecode containing %q", tc.payload, got, err, tc.want)
			}
		})
	}

	// A zero-width item is allowed as often as the payload could hold
	// items anyway.
	s := mustParseAvro(t, `{"type":"array","items":"null"}`, nil)
	if got, err := s.Decode([]byte{6, 0}); err != nil || string(got) != "[null,null,null]" {
		t.Errorf("Decode(three nulls) = %s, %v", got, err)
	}
}
