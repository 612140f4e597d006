package schema

// Fuzz targets for the AVRO and JSON Schema formats. Run one with, e.g.,
//
//	go test ./schema/ -run '^$' -fuzz '^FuzzParseAvro$' -fuzztime 30s
//
// The seeds below and testdata/fuzz/<target>/ run as tests with go test.

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

// FuzzParseAvro: any text parses or fails with ErrInvalidSchema; a schema
// that parses has a canonical form that parses to itself, and reads itself.
func FuzzParseAvro(f *testing.F) {
	for _, seed := range append(slices.Clone(avroCorpus), avroDecodeSchema, avroCustomer, avroAddress, avroCountry,
		`"null"`, `{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}`,
		`{"type":"fixed","name":"d","size":4,"logicalType":"decimal","precision":6}`,
		`{"type":"record","name":"a.R","fields":[{"name":"x","type":{"type":"record","name":"S","namespace":"","fields":[]}}]}`,
		`{"type":"error","name":"E","fields":[]}`, `[]`, `["int","int"]`) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(Avro, text, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Parse error %v does not wrap ErrInvalidSchema", err)
			}
			return
		}
		again, err := Parse(Avro, s.Canonical(), nil)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", s.Canonical(), err)
		}
		if again.Canonical() != s.Canonical() {
			t.Fatalf("canonical form %s parses to %s", s.Canonical(), again.Canonical())
		}
		if problems := CanRead(s, again); len(problems) > 0 {
			t.Fatalf("%s cannot read itself: %q", text, problems)
		}
		_, _ = s.Decode(nil)
	})
}

// FuzzAvroCanRead: avroCanRead decides as hamba's checker does, away from
// field aliases, where hamba is known to differ from Avro's (see
// avroHambaDiffers).
func FuzzAvroCanRead(f *testing.F) {
	for i, reader := range avroCorpus {
		f.Add(reader, avroCorpus[(i*7+3)%len(avroCorpus)])
	}
	f.Fuzz(func(t *testing.T, readerText, writerText string) {
		if strings.Contains(readerText, "aliases") {
			return
		}
		reader, err := Parse(Avro, readerText, nil)
		if err != nil {
			return
		}
		writer, err := Parse(Avro, writerText, nil)
		if err != nil {
			return
		}
		ours := CanRead(reader, writer)
		theirs := avro.NewSchemaCompatibility().Compatible(reader.(*avroSchema).schema, writer.(*avroSchema).schema)
		if (len(ours) == 0) != (theirs == nil) {
			t.Fatalf("reader %s\nwriter %s\nours: %q\nhamba: %v", readerText, writerText, ours, theirs)
		}
	})
}

// fuzzDecodeAvroSchema covers every kind of type Decode walks, recursion
// and zero-width items included.
const fuzzDecodeAvroSchema = `{"type":"record","name":"F","namespace":"fz","fields":[
	{"name":"e","type":` + avroDecodeSchema + `},
	{"name":"nulls","type":{"type":"array","items":"null"}},
	{"name":"empty","type":{"type":"array","items":{"type":"record","name":"Empty","fields":[]}}},
	{"name":"list","type":["null",{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}]},
	{"name":"nested","type":{"type":"map","values":{"type":"array","items":["null","bytes","double","boolean"]}}},
	{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}
]}`

// FuzzDecodeAvro: any payload decodes to valid JSON or fails with
// ErrDecode, without panicking.
func FuzzDecodeAvro(f *testing.F) {
	s, err := Parse(Avro, fuzzDecodeAvroSchema, nil)
	if err != nil {
		f.Fatal(err)
	}
	good, err := avro.Marshal(s.(*avroSchema).schema, map[string]any{
		"e": map[string]any{
			"id": int64(1), "ok": false, "n": -1, "f": float32(0.25), "d": 2.5, "name": "n", "raw": []byte{1},
			"kind": "A", "hash": [2]byte{}, "tags": []any{"t"}, "attrs": map[string]any{"a": 2},
			"opt": nil, "day": 1, "last": "",
		},
		"nulls": []any{nil, nil}, "empty": []any{map[string]any{}},
		"list":   map[string]any{"fz.Node": map[string]any{"v": 1, "next": map[string]any{"fz.Node": map[string]any{"v": 2, "next": nil}}}},
		"nested": map[string]any{"k": []any{nil, map[string]any{"bytes": []byte("x")}, map[string]any{"double": 1.5}}},
		"dec":    []byte{0x04, 0xd2}, "ts": int64(1700000000000000),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:len(good)/2])
	f.Add(append(good[:len(good):len(good)], 0))
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := s.Decode(payload)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("Decode error %v does not wrap ErrDecode", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Decode returned invalid JSON %s", out)
		}
	})
}

// FuzzParseJSON: any text parses or fails with ErrInvalidSchema; a schema
// that parses has a canonical form that parses to itself, and reads itself.
func FuzzParseJSON(f *testing.F) {
	for _, seed := range append(slices.Clone(jsonCorpus), jsonAddress,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"integer","maximum":3,"exclusiveMaximum":true}}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$ref":"#/$defs/a","$defs":{"a":{"type":"string"}},"maxLength":3}`,
		`{"if":{"type":"string"},"then":{"maxLength":3},"else":{"type":"integer"}}`,
		`{"dependencies":{"a":["b"]},"propertyNames":{"pattern":"^[a-z]+$"}}`,
		`{"type":"number","multipleOf":0.1,"minimum":1e-3}`,
		`{"enum":[{"a":[1,2]},[null],1.0,"<&>"]}`) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(JSON, text, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Parse error %v does not wrap ErrInvalidSchema", err)
			}
			return
		}
		again, err := Parse(JSON, s.Canonical(), nil)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", s.Canonical(), err)
		}
		if again.Canonical() != s.Canonical() {
			t.Fatalf("canonical form %s parses to %s", s.Canonical(), again.Canonical())
		}
		if problems := CanRead(s, again); len(problems) > 0 {
			t.Fatalf("%s cannot read itself: %q", text, problems)
		}
	})
}

// FuzzJSONCanRead: whenever jsonCanRead finds that a reader reads a
// writer, an instance valid against the writer is valid against the
// reader.
func FuzzJSONCanRead(f *testing.F) {
	for i, reader := range jsonCorpus {
		f.Add(reader, jsonCorpus[(i*5+1)%len(jsonCorpus)], jsonInstances[i%len(jsonInstances)])
	}
	f.Fuzz(func(t *testing.T, readerText, writerText, instance string) {
		reader, err := Parse(JSON, readerText, nil)
		if err != nil {
			return
		}
		writer, err := Parse(JSON, writerText, nil)
		if err != nil {
			return
		}
		if len(CanRead(reader, writer)) > 0 {
			return
		}
		if _, err := writer.Decode([]byte(instance)); err != nil {
			return
		}
		if _, err := reader.Decode([]byte(instance)); err != nil {
			t.Fatalf("reader %s said to read writer %s, but refuses its instance %s: %v", readerText, writerText, instance, err)
		}
	})
}

// FuzzDecodeJSON: any payload is returned compacted or fails with
// ErrDecode, without panicking.
func FuzzDecodeJSON(f *testing.F) {
	s, err := Parse(JSON, jsonCorpus[len(jsonCorpus)-2], nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range jsonInstances {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := s.Decode(payload)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("Decode error %v does not wrap ErrDecode", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Decode returned invalid JSON %s", out)
		}
	})
}
