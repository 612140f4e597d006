package schema

import (
	"errors"
	"strings"
	"testing"
)

func mustParseJSON(t testing.TB, text string, deps map[string]string) *jsonSchema {
	t.Helper()
	s, err := Parse(JSON, text, deps)
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return s.(*jsonSchema)
}

// jsonObject builds an object schema from properties (a JSON object's
// members) and extra keywords.
func jsonObjectSchema(properties string, extra ...string) string {
	members := append([]string{`"type":"object"`, `"properties":{` + properties + `}`}, extra...)
	return "{" + strings.Join(members, ",") + "}"
}

const jsonClosed = `"additionalProperties":false`

func TestJSONCompatibility(t *testing.T) {
	t.Parallel()
	id := `"id":{"type":"integer"}`
	cases := []schemaCheckCase{
		{
			name:     "identical",
			previous: []string{jsonObjectSchema(id)},
			next:     jsonObjectSchema(id),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			// The seeds' example.
			name:     "integer property changed to string",
			previous: []string{jsonObjectSchema(id + `,"age":{"type":"integer"}`)},
			next:     jsonObjectSchema(id + `,"age":{"type":"string"}`),
			want: schemaCheckWant(`property "age": type changed from integer to string`, `property "age"`,
				`property "age": type changed from string to integer`, `property "age"`),
		},
		{
			name:     "integer widened to number",
			previous: []string{jsonObjectSchema(`"n":{"type":"integer"}`)},
			next:     jsonObjectSchema(`"n":{"type":"number"}`),
			want:     schemaCheckWant("", "", `property "n": type changed from number to integer`, `property "n"`),
		},
		{
			name:     "type added to an untyped property",
			previous: []string{jsonObjectSchema(`"n":{}`)},
			next:     jsonObjectSchema(`"n":{"type":["string","null"]}`),
			want:     schemaCheckWant(`property "n": type changed from any type to [null, string]`, `property "n"`, "", ""),
		},
		{
			name:     "property added to an open content model",
			previous: []string{jsonObjectSchema(id)},
			next:     jsonObjectSchema(id + `,"email":{"type":"string"}`),
			want:     schemaCheckWant(`property "email": the writer's content model is open`, `property "email"`, "", ""),
		},
		{
			name:     "property with an empty schema added to an open content model",
			previous: []string{jsonObjectSchema(id)},
			next:     jsonObjectSchema(id + `,"extra":{}`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "property added to a closed content model",
			previous: []string{jsonObjectSchema(id, jsonClosed)},
			next:     jsonObjectSchema(id+`,"email":{"type":"string"}`, jsonClosed),
			want:     schemaCheckWant("", "", `property "email": the reader refuses it (additionalProperties is false)`, `property "email"`),
		},
		{
			name:     "property removed from an open content model",
			previous: []string{jsonObjectSchema(id + `,"email":{"type":"string"}`)},
			next:     jsonObjectSchema(id),
			want:     schemaCheckWant("", "", `property "email": the writer's content model is open`, `property "email"`),
		},
		{
			name:     "property removed from a closed content model",
			previous: []string{jsonObjectSchema(id+`,"email":{"type":"string"}`, jsonClosed)},
			next:     jsonObjectSchema(id, jsonClosed),
			want:     schemaCheckWant(`property "email": the reader refuses it (additionalProperties is false)`, `property "email"`, "", ""),
		},
		{
			name:     "content model closed",
			previous: []string{jsonObjectSchema(id)},
			next:     jsonObjectSchema(id, jsonClosed),
			want:     schemaCheckWant("additionalProperties closed (false)", "additionalProperties closed", "", ""),
		},
		{
			name:     "additionalProperties schema narrowed",
			previous: []string{jsonObjectSchema(id, `"additionalProperties":{"type":"number"}`)},
			next:     jsonObjectSchema(id, `"additionalProperties":{"type":"integer"}`),
			want:     schemaCheckWant("additionalProperties: type changed from number to integer", "additionalProperties", "", ""),
		},
		{
			name:     "required property added",
			previous: []string{jsonObjectSchema(id + `,"email":{"type":"string"}`)},
			next:     jsonObjectSchema(id+`,"email":{"type":"string"}`, `"required":["email"]`),
			want:     schemaCheckWant(`property "email": required by the reader but not by the writer`, `property "email"`, "", ""),
		},
		{
			name:     "required property added with a default",
			previous: []string{jsonObjectSchema(id + `,"email":{"type":"string"}`)},
			next:     jsonObjectSchema(id+`,"email":{"type":"string","default":""}`, `"required":["email"]`),
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "enum value removed",
			previous: []string{jsonObjectSchema(`"c":{"enum":["red","green","blue"]}`)},
			next:     jsonObjectSchema(`"c":{"enum":["red","green"]}`),
			want:     schemaCheckWant(`property "c": enum values removed: "blue"`, `property "c"`, "", ""),
		},
		{
			name:     "enum added, const narrowed",
			previous: []string{jsonObjectSchema(`"c":{"type":"string"},"k":{"enum":[1,2]}`)},
			next:     jsonObjectSchema(`"c":{"type":"string","enum":["a"]},"k":{"const":1.0}`),
			want: schemaCheckWant(`property "c": the reader allows only "a"`, `property "k": enum values removed: 2`,
				"", ""),
		},
		{
			name:     "string constraints narrowed",
			previous: []string{jsonObjectSchema(`"s":{"type":"string","maxLength":10,"minLength":1}`)},
			next:     jsonObjectSchema(`"s":{"type":"string","maxLength":5,"minLength":2,"pattern":"^a"}`),
			want: map[Level]string{
				Backward: `property "s": maxLength narrowed from 10 to 5`,
				Forward:  "",
				Full:     `property "s": pattern "^a" added`,
			},
		},
		{
			name:     "minLength narrowed",
			previous: []string{jsonObjectSchema(`"s":{"type":"string","minLength":1}`)},
			next:     jsonObjectSchema(`"s":{"type":"string","minLength":2}`),
			want:     schemaCheckWant(`property "s": minLength narrowed from 1 to 2`, "minLength", "", ""),
		},
		{
			name:     "pattern changed",
			previous: []string{jsonObjectSchema(`"s":{"type":"string","pattern":"^a"}`)},
			next:     jsonObjectSchema(`"s":{"type":"string","pattern":"^b"}`),
			want:     schemaCheckWant(`property "s": pattern changed from "^a" to "^b"`, "pattern", "pattern", "pattern"),
		},
		{
			name:     "string constraints widened",
			previous: []string{jsonObjectSchema(`"s":{"type":"string","maxLength":5,"pattern":"^a"}`)},
			next:     jsonObjectSchema(`"s":{"type":"string","maxLength":10}`),
			want:     schemaCheckWant("", "", `property "s": maxLength narrowed from 10 to 5`, "maxLength"),
		},
		{
			name:     "numeric bounds narrowed",
			previous: []string{jsonObjectSchema(`"n":{"type":"number","minimum":0,"maximum":100}`)},
			next:     jsonObjectSchema(`"n":{"type":"number","minimum":0,"exclusiveMaximum":100}`),
			want:     schemaCheckWant(`property "n": maximum narrowed from 100 to exclusive 100`, "maximum", "", ""),
		},
		{
			name:     "numeric bound added, multipleOf changed",
			previous: []string{jsonObjectSchema(`"n":{"type":"integer","multipleOf":4}`)},
			next:     jsonObjectSchema(`"n":{"type":"integer","minimum":1,"multipleOf":2}`),
			want: map[Level]string{
				Backward: `property "n": minimum narrowed from none to 1`,
				Forward:  `property "n": multipleOf changed from 2 to 4`,
			},
		},
		{
			name:     "array items changed",
			previous: []string{jsonObjectSchema(`"tags":{"type":"array","items":{"type":"string"}}`)},
			next:     jsonObjectSchema(`"tags":{"type":"array","items":{"type":"integer"},"maxItems":3}`),
			want: map[Level]string{
				Backward: `property "tags[]": type changed from string to integer`,
				Full:     `property "tags": maxItems narrowed from none to 3`,
			},
		},
		{
			name:     "nested object property changed",
			previous: []string{jsonObjectSchema(`"address":` + jsonObjectSchema(`"zip":{"type":"integer"}`))},
			next:     jsonObjectSchema(`"address":` + jsonObjectSchema(`"zip":{"type":"string"}`)),
			want: schemaCheckWant(`property "address.zip": type changed from integer to string`, `property "address.zip"`,
				`property "address.zip": type changed from string to integer`, `property "address.zip"`),
		},
		{
			name: "change behind a $ref",
			previous: []string{`{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},` +
				`"definitions":{"A":{"type":"string","maxLength":10}}}`},
			next: `{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},` +
				`"definitions":{"A":{"type":"string","maxLength":3}}}`,
			want: schemaCheckWant(`property "a": maxLength narrowed from 10 to 3`, "maxLength", "", ""),
		},
		{
			name:     "oneOf branch added and removed",
			previous: []string{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`},
			next:     `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`,
			want:     schemaCheckWant("", "", "no branch of the reader's oneOf reads what the writer writes (boolean)", "oneOf"),
		},
		{
			name:     "anyOf branch widened",
			previous: []string{`{"anyOf":[{"type":"string","maxLength":3},{"type":"null"}]}`},
			next:     `{"anyOf":[{"type":"string"},{"type":"null"}]}`,
			want:     schemaCheckWant("", "", "maxLength 3 added", "maxLength"),
		},
		{
			name:     "allOf in the reader",
			previous: []string{`{"type":"object","properties":{"a":{"type":"string"}}}`},
			next:     `{"allOf":[{"type":"object"},{"properties":{"a":{"type":"string","maxLength":2}}}]}`,
			want:     schemaCheckWant(`property "a": maxLength 2 added`, "maxLength", "", ""),
		},
		{
			name:     "unanalysed keyword added, then unchanged",
			previous: []string{`{"type":"object","not":{"required":["x"]}}`},
			next:     `{"type":"object","not":{"required":["x"]}}`,
			want:     schemaCheckWant("", "", "", ""),
		},
		{
			name:     "unanalysed keyword changed",
			previous: []string{`{"type":"object","not":{"required":["x"]}}`},
			next:     `{"type":"object","not":{"required":["y"]}}`,
			want:     schemaCheckWant("not differs from the writer's", "not differs", "not differs", "not differs"),
		},
		{
			// v2 requires b but gives it a default; v3 drops the default:
			// v3 reads v2 (which requires b) but not v1 (which may lack it).
			name: "transitive: default dropped from a required property",
			previous: []string{
				jsonObjectSchema(id + `,"b":{"type":"string"}`),
				jsonObjectSchema(id+`,"b":{"type":"string","default":"x"}`, `"required":["b"]`),
			},
			next: jsonObjectSchema(id+`,"b":{"type":"string"}`, `"required":["b"]`),
			want: schemaCheckWant("", `property "b": required by the reader but not by the writer`, "", ""),
		},
		{
			// Closed models: v1 requires b; v2 no longer does; v3 drops b.
			// v2 reads what v3 writes, v1 does not.
			name: "transitive: required property dropped",
			previous: []string{
				jsonObjectSchema(id+`,"b":{"type":"string"}`, jsonClosed, `"required":["id","b"]`),
				jsonObjectSchema(id+`,"b":{"type":"string"}`, jsonClosed, `"required":["id"]`),
			},
			next: jsonObjectSchema(id, jsonClosed, `"required":["id"]`),
			want: schemaCheckWant(`property "b": the reader refuses it`, `property "b": the reader refuses it`,
				"", `property "b": required by the reader but not by the writer`),
		},
	}
	runSchemaCheckCases(t, JSON, cases)
}

func TestJSONCanonical(t *testing.T) {
	t.Parallel()
	variants := []string{
		`{"type":"object","properties":{"b":{"type":"string","pattern":"<a&b>"},"a":{"type":"integer","maximum":10}},"required":["a"]}`,
		"{\n  \"required\": [\"a\"],\n  \"properties\": {\n    \"a\": {\"maximum\": 10, \"type\": \"integer\"},\n    \"b\": {\"pattern\": \"<a&b>\", \"type\": \"string\"}\n  },\n  \"type\": \"object\"\n}\n",
		` {"properties":{"a":{"type":"integer","maximum":10},"b":{"type":"string","pattern":"\u003ca\u0026b\u003e"}},"type":"object","required":["a"]} `,
	}
	want := `{"properties":{"a":{"maximum":10,"type":"integer"},"b":{"pattern":"<a&b>","type":"string"}},"required":["a"],"type":"object"}`
	first := mustParseJSON(t, variants[0], nil)
	for _, text := range variants {
		s := mustParseJSON(t, text, nil)
		if got := s.Canonical(); got != want {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", text, got, want)
		}
		if Fingerprint(s) != Fingerprint(first) {
			t.Errorf("Fingerprint(%s) differs", text)
		}
	}
	for _, text := range []string{
		`{"type":"object","properties":{"b":{"type":"string","pattern":"<a&b>"},"a":{"type":"integer","maximum":11}},"required":["a"]}`,
		`{"type":"object","properties":{"b":{"type":"string","pattern":"<a&b>"},"a":{"type":"integer","maximum":10}},"required":["b"]}`,
		`{"type":"object","properties":{"b":{"type":"string","pattern":"<a&b>"},"a":{"type":"integer","maximum":10}}}`,
	} {
		if Fingerprint(mustParseJSON(t, text, nil)) == Fingerprint(first) {
			t.Errorf("%s shares the fingerprint of %s", text, variants[0])
		}
	}
}

const jsonAddress = `{"type":"object","properties":{"zip":{"type":"string","maxLength":10}},"required":["zip"]}`

func TestJSONReferences(t *testing.T) {
	t.Parallel()
	order := `{"type":"object","properties":{"ship":{"$ref":"address.json"}},"required":["ship"]}`
	s := mustParseJSON(t, order, map[string]string{"address.json": jsonAddress})
	if _, err := s.Decode([]byte(`{"ship":{"zip":"12345678901"}}`)); !errors.Is(err, ErrDecode) {
		t.Errorf("Decode of a zip too long for the referenced schema: err = %v, want ErrDecode", err)
	}
	if _, err := s.Decode([]byte(`{"ship":{"zip":"1234"}}`)); err != nil {
		t.Errorf("Decode: %v", err)
	}

	// Relative references resolve against $id; absolute ones stand.
	withID := `{"$id":"https://example.com/schemas/order.json","type":"object","properties":{"ship":{"$ref":"address.json"},"bill":{"$ref":"https://other.example/a.json"}}}`
	mustParseJSON(t, withID, map[string]string{"address.json": jsonAddress, "https://other.example/a.json": jsonAddress})

	for name, deps := range map[string]map[string]string{
		"none":      nil,
		"other":     {"customer.json": jsonAddress},
		"not JSON":  {"address.json": `{"type":`},
		"not valid": {"address.json": `{"type":5}`},
	} {
		if _, err := Parse(JSON, order, deps); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("deps %s: err = %v, want ErrInvalidSchema", name, err)
		}
	}
	// Nothing is loaded from outside what is given.
	for _, ref := range []string{"file:///etc/passwd", "http://127.0.0.1:1/x.json"} {
		if _, err := Parse(JSON, `{"$ref":"`+ref+`"}`, nil); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("$ref %s: err = %v, want ErrInvalidSchema", ref, err)
		}
	}

	// A change inside a reference is a change of the schema's.
	old := mustParseJSON(t, order, map[string]string{"address.json": jsonAddress})
	narrowed := mustParseJSON(t, order, map[string]string{"address.json": strings.Replace(jsonAddress, "10", "5", 1)})
	if got := Check(Backward, narrowed, []Schema{old}); len(got) != 1 || got[0] != `the new schema reading data of the latest version: property "ship.zip": maxLength narrowed from 10 to 5` {
		t.Errorf("Check = %q", got)
	}
}

func TestJSONParseInvalid(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		``,
		`{"type":`,
		`{"type":"object"} {}`,
		`{"type":5}`,
		`{"type":"strin"}`,
		`{"pattern":"("}`,
		`{"properties":{"a":{"$ref":"#/definitions/missing"}}}`,
		`{"maximum":1e100000000}`,
	} {
		if _, err := Parse(JSON, text, nil); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("Parse(%q): err = %v, want ErrInvalidSchema", text, err)
		}
	}
}

func TestJSONDecode(t *testing.T) {
	t.Parallel()
	s := mustParseJSON(t, jsonObjectSchema(`"id":{"type":"integer"},"name":{"type":"string"},"score":{"type":"number","maximum":10}`, `"required":["id"]`), nil)
	got, err := s.Decode([]byte("{ \"id\" : 7,\n \"name\": \"<x>\", \"score\": 1.50 }"))
	if want := `{"id":7,"name":"<x>","score":1.50}`; err != nil || string(got) != want {
		t.Errorf("Decode = %s, %v; want %s", got, err, want)
	}
	for _, payload := range []string{
		``,
		`{"id":7`,                    // truncated
		`{"id":7} x`,                 // trailing garbage
		`{"id":7}{"id":8}`,           // two values
		`{"id":"7"}`,                 // wrong type
		`{"name":"x"}`,               // required property missing
		`{"id":7,"score":11}`,        // beyond maximum
		`{"id":7,"score":1e1000000}`, // beyond what the validator handles
		`[1]`,
	} {
		if got, err := s.Decode([]byte(payload)); !errors.Is(err, ErrDecode) {
			t.Errorf("Decode(%s) = %s, %v; want ErrDecode", payload, got, err)
		}
	}
	if _, err := s.Decode([]byte(`{"id":"7"}`)); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Decode error %q, want one line", err)
	}

	// Draft-07, the default, asserts format; 2020-12 only annotates it.
	email := mustParseJSON(t, `{"type":"string","format":"email"}`, nil)
	if _, err := email.Decode([]byte(`"not an address"`)); !errors.Is(err, ErrDecode) {
		t.Errorf("draft-07 format: err = %v, want ErrDecode", err)
	}
	email2020 := mustParseJSON(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string","format":"email"}`, nil)
	if _, err := email2020.Decode([]byte(`"not an address"`)); err != nil {
		t.Errorf("2020-12 format: err = %v, want none", err)
	}
}

func TestJSONMagnitude(t *testing.T) {
	t.Parallel()
	for n, want := range map[string]int{
		"0": 0, "-0.0": 0, "7": 0, "123": 2, "0.00123": -3, "1.5e3": 3, "12e-5": -4, "0.1E+2": 1, "000.5": -1,
	} {
		if got, ok := jsonMagnitude(n); !ok || got != want {
			t.Errorf("jsonMagnitude(%s) = %d, %v; want %d", n, got, ok, want)
		}
	}
	if _, ok := jsonMagnitude("1e99999999999999999999"); ok {
		t.Errorf("jsonMagnitude of an exponent beyond int: ok")
	}
}

// jsonCorpus is a family of schemas differing in the ways jsonCanRead
// cares about; jsonInstances are values to try them on.
var jsonCorpus = []string{
	`{}`,
	`true`,
	`false`,
	`{"type":"integer"}`,
	`{"type":"number"}`,
	`{"type":"number","maximum":10}`,
	`{"type":"number","exclusiveMaximum":10}`,
	`{"type":"integer","minimum":0,"multipleOf":2}`,
	`{"type":"integer","multipleOf":4}`,
	`{"type":"string"}`,
	`{"type":"string","maxLength":3}`,
	`{"type":"string","minLength":2}`,
	`{"type":"string","pattern":"^a"}`,
	`{"type":["string","null"]}`,
	`{"enum":["a","b",1]}`,
	`{"enum":["a"]}`,
	`{"const":1}`,
	`{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
	`{"oneOf":[{"type":"string","maxLength":3},{"type":"null"}]}`,
	`{"allOf":[{"type":"number"},{"minimum":1}]}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{"a":{"type":"integer"}}}`,
	`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`,
	`{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"additionalProperties":false}`,
	`{"type":"object","properties":{"b":{"type":"string"}}}`,
	`{"type":"object","additionalProperties":{"type":"integer"}}`,
	`{"type":"object","patternProperties":{"^a":{"type":"string"}}}`,
	`{"type":"object","allOf":[{"properties":{"a":{"type":"integer"}}},{"required":["a"]}]}`,
	`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`,
	`{"type":"object","not":{"required":["b"]}}`,
	`{"type":"array"}`,
	`{"type":"array","items":{"type":"integer"}}`,
	`{"type":"array","items":{"type":"number"},"maxItems":2}`,
	`{"type":"array","items":[{"type":"integer"},{"type":"string"}],"additionalItems":false}`,
	`{"type":"array","uniqueItems":true}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`,
	`{"definitions":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/definitions/n"}}}},"$ref":"#/definitions/n"}`,
	`{"definitions":{"n":{"type":"object","properties":{"v":{"type":"number"},"next":{"$ref":"#/definitions/n"}}}},"$ref":"#/definitions/n"}`,
}

var jsonInstances = []string{
	`null`, `true`, `0`, `1`, `2`, `4`, `8`, `10`, `11`, `1.5`, `-3`,
	`""`, `"a"`, `"b"`, `"abc"`, `"abcd"`, `"ba"`,
	`{}`, `{"a":1}`, `{"a":1.5}`, `{"a":"x"}`, `{"b":"x"}`, `{"b":1}`, `{"a":1,"b":"x"}`, `{"c":1}`, `{"ab":"x"}`, `{"ab":1}`,
	`{"v":1,"next":{"v":2}}`, `{"v":1,"next":{"v":2.5}}`,
	`[]`, `[1]`, `[1,2,3]`, `[1.5]`, `[1,"x"]`, `[1,"x","y"]`, `[1,1]`, `["x"]`,
}

// TestJSONCanReadIsSound holds jsonCanRead to the validator: whenever it
// finds a reader able to read a writer, every instance the writer accepts
// must be one the reader accepts. And each schema reads itself.
func TestJSONCanReadIsSound(t *testing.T) {
	t.Parallel()
	var schemas []*jsonSchema
	for _, text := range jsonCorpus {
		schemas = append(schemas, mustParseJSON(t, text, nil))
	}
	valid := func(s *jsonSchema, instance string) bool {
		_, err := s.Decode([]byte(instance))
		return err == nil
	}
	compatible := 0
	for i, reader := range schemas {
		if problems := jsonCanRead(reader, reader); len(problems) > 0 {
			t.Errorf("%s cannot read itself: %q", jsonCorpus[i], problems)
		}
		for j, writer := range schemas {
			if len(jsonCanRead(reader, writer)) > 0 {
				continue
			}
			compatible++
			for _, instance := range jsonInstances {
				if valid(writer, instance) && !valid(reader, instance) {
					t.Errorf("reader %s said to read writer %s, but refuses its instance %s", jsonCorpus[i], jsonCorpus[j], instance)
				}
			}
		}
	}
	if compatible <= len(schemas) || compatible == len(schemas)*len(schemas) {
		t.Fatalf("%d of %d pairs compatible: the corpus proves little", compatible, len(schemas)*len(schemas))
	}
}
