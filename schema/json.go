package schema

// JSON Schema schemas, by github.com/santhosh-tekuri/jsonschema/v6:
// compiling with references, the canonical form, validating payloads, and
// Confluent's JSON Schema compatibility rules.

// jsonMainURL is where a schema is compiled from: its relative references
// resolve against it (or against its $id).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const jsonMainURL = "mem:///main.json"

// jsonSchema is a compiled JSON Schema.
type jsonSchema struct {
	compiled  *jsonschema.Schema
	canonical string
	// documents are the schema's JSON and its references', by URL, for
	// keywords compared as written (see jsonChecker.unanalysed).
	documents map[string]any
}

func (*jsonSchema) Type() Type { return JSON }

// Canonical is the schema's JSON with object keys sorted, no insignificant
// whitespace, <, > and & unescaped, and numbers as written (1.0 and 1
// differ). References are not inlined: the form is the schema's own text.
func (s *jsonSchema) Canonical() string { return s.canonical }

// parseJSON compiles a JSON Schema. deps are the schemas its $refs name, by
// the URL each $ref gives, relative ones resolved against the schema's
// $id, if it has one. Nothing else is loaded: a $ref to anything not given
// is an invalid schema. Without a $schema keyword it is draft-07, as in
// Confluent's registry; draft-07 and older assert "format".
func parseJSON(text string, deps map[string]string) (Schema, error) {
	doc, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalidSchema, err)
	}
	if err := jsonCheckNumbers(doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	canonical, err := canonicalJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(jsonNoLoader{})
	documents := map[string]any{jsonMainURL: doc}
	if err := c.AddResource(jsonMainURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	base := jsonBase(doc)
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		ref, err := url.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, name, err)
		}
		depDoc, err := decodeJSON([]byte(deps[name]))
		if err == nil {
			err = jsonCheckNumbers(depDoc)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, name, err)
		}
		at := base.ResolveReference(ref).String()
		if err := c.AddResource(at, depDoc); err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, name, err)
		}
		documents[at] = depDoc
	}
	compiled, err := c.Compile(jsonMainURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidSchema, oneLine(err.Error()))
	}
	return &jsonSchema{compiled: compiled, canonical: canonical, documents: documents}, nil
}

// jsonBase is the URL a schema's relative references resolve against: its
// $id (id before draft 6) if it has one, else jsonMainURL.
func jsonBase(doc any) *url.URL {
	base, _ := url.Parse(jsonMainURL)
	if obj, ok := doc.(map[string]any); ok {
		for _, key := range []string{"$id", "id"} {
			if id, ok := obj[key].(string); ok {
				if u, err := url.Parse(id); err == nil {
					return base.ResolveReference(u)
				}
			}
		}
	}
	return base
}

// jsonNoLoader refuses every URL: a schema sees only what it is given, so
// a $ref cannot read a file or reach the network.
type jsonNoLoader struct{}

func (jsonNoLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("reference %q was not given", u)
}

// decodeJSON decodes one JSON value, numbers kept as written, and nothing
// after it.
func decodeJSON(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text follows the JSON value")
	}
	return v, nil
}

// canonicalJSON encodes v with object keys sorted and no whitespace.
func canonicalJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// oneLine joins a multi-line message (the validator's) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ; ")), " ")
}

// jsonMaxMagnitude bounds the decimal order of magnitude of the numbers in
// schemas and payloads. The validator works on math/big rationals: it
// panics on a number they refuse (about 1e1000000 and beyond), takes
// milliseconds over each one near that, and silently drops a "maximum" it
// cannot convert. float64 spans about 1e-324 to 1e308.
const jsonMaxMagnitude = 1000

// jsonCheckNumbers refuses any number in v beyond jsonMaxMagnitude.
func jsonCheckNumbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		if m, ok := jsonMagnitude(v.String()); !ok || m > jsonMaxMagnitude || m < -jsonMaxMagnitude {
			return fmt.Errorf("number %.40s is out of range (beyond 1e±%d)", v, jsonMaxMagnitude)
		}
	case []any:
		for _, e := range v {
			if err := jsonCheckNumbers(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range v {
			if err := jsonCheckNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonMagnitude returns the decimal exponent of a JSON number's leading
// significant digit (2 for 123, -3 for 0.00123, 0 for zero), or false if
// its exponent does not fit an int.
func jsonMagnitude(n string) (int, bool) {
	mantissa, exponent, hasExponent := strings.Cut(strings.ToLower(strings.TrimPrefix(n, "-")), "e")
	exp := 0
	if hasExponent {
		var err error
		if exp, err = strconv.Atoi(exponent); err != nil {
			return 0, false
		}
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	if whole = strings.TrimLeft(whole, "0"); whole != "" {
		return exp + len(whole) - 1, true
	}
	trimmed := strings.TrimLeft(fraction, "0")
	if trimmed == "" {
		return 0, true
	}
	return exp - (len(fraction) - len(trimmed)) - 1, true
}

// Decode checks that payload is JSON valid against the schema and returns
// it compacted. It fails, wrapping ErrDecode, with the validator's message,
// or if a number is beyond 1e±1000 (see jsonMaxMagnitude).
func (s *jsonSchema) Decode(payload []byte) (_ []byte, err error) {
	v, err := decodeJSON(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrDecode, err)
	}
	if err := jsonCheckNumbers(v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	// A payload is the client's: should it still make the validator
	// panic, that is the payload's failure, not the server's.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: the validator failed: %v", ErrDecode, p)
		}
	}()
	if err := s.compiled.Validate(v); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrDecode, oneLine(err.Error()))
	}
	var out bytes.Buffer
	if err := json.Compact(&out, payload); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	return out.Bytes(), nil
}
