package schema

// AVRO schemas, by github.com/hamba/avro/v2: parsing with references, the
// canonical form, decoding a payload to Avro's JSON encoding, and the Avro
// specification's schema-resolution rules as compatibility checks.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
)

// avroSchema is a parsed AVRO schema.
type avroSchema struct {
	schema    avro.Schema
	canonical string
}

func (*avroSchema) Type() Type { return Avro }

// Canonical is the schema as hamba writes it out (json.Marshal of the
// parsed schema): full names, every attribute that bears on reading
// (defaults, aliases, logical types, order) and doc, in a fixed key order
// with no whitespace. It is not Avro's Parsing Canonical Form, which drops
// defaults and aliases: two versions that differ only in a default are
// different schemas to the registry (compatibility depends on defaults),
// as they are to Confluent's, which compares the schemas' text. Named
// types defined in a reference are inlined where first used, so the form
// parses without the references.
func (s *avroSchema) Canonical() string { return s.canonical }

// parseAvro parses an AVRO schema. deps are the schemas its references
// name, by the full name of the type each defines; they are parsed first,
// into a cache of this parse alone (never hamba's global one: subjects may
// reuse names), in whatever order lets each find the types it uses.
func parseAvro(text string, deps map[string]string) (Schema, error) {
	cache := &avro.SchemaCache{}
	if err := parseAvroDeps(deps, cache); err != nil {
		return nil, err
	}
	parsed, err := parseAvroText(text, cache)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	canonical, err := json.Marshal(parsed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &avroSchema{schema: parsed, canonical: string(canonical)}, nil
}

// parseAvroText parses one schema into cache. The text must be JSON: hamba
// would take anything else as the name of a type.
func parseAvroText(text string, cache *avro.SchemaCache) (avro.Schema, error) {
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("avro: schema is not JSON")
	}
	return avro.ParseWithCache(text, "", cache)
}

// parseAvroDeps parses the referenced schemas into cache. A reference may
// use types another one defines, so each round parses those it can, until
// none are left or a round makes no progress.
func parseAvroDeps(deps map[string]string, cache *avro.SchemaCache) error {
	pending := slices.Sorted(maps.Keys(deps))
	for len(pending) > 0 {
		var failed []string
		var lastErr error
		for _, name := range pending {
			if _, err := parseAvroText(deps[name], cache); err != nil {
				failed = append(failed, name)
				lastErr = fmt.Errorf("reference %q: %v", name, err)
			}
		}
		if len(failed) == len(pending) {
			return fmt.Errorf("%w: %v", ErrInvalidSchema, lastErr)
		}
		pending = failed
	}
	return nil
}

// Avro decoding limits, against payloads built to exhaust the decoder.
const (
	// avroMaxDepth bounds the nesting of values (recursive types).
	avroMaxDepth = 10_000
	// avroSpareItems is how many array or map items a payload may hold
	// beyond one per byte: items of a zero-width type such as null cost
	// no bytes, so a block count alone could claim billions of them.
	avroSpareItems = 1 << 16
)

// Decode decodes payload, Avro binary written with the schema, into Avro's
// JSON encoding (the specification's "JSON Encoding", which Confluent's
// console consumer prints):
//
//   - null, boolean, int, long, string: JSON null, boolean, number, string;
//   - float and double: numbers, except NaN and the infinities, which JSON
//     has no numbers for: the strings "NaN", "Infinity" and "-Infinity";
//   - bytes and fixed: a string with one code point (U+0000 to U+00FF) per
//     byte;
//   - record: an object with the fields in schema order; enum: the symbol;
//     array: an array; map: an object with the keys in payload order;
//   - union: null for the null branch, otherwise {"<branch>": value}, the
//     branch named by its full name (named types) or type ("int",
//     "array", "map"), as in {"string":"x"};
//   - logical types as their underlying type: a date is its int of days, a
//     decimal its bytes.
//
// It fails, wrapping ErrDecode, if the bytes end early, bytes remain after
// the value, a union or enum index is out of range, a string is not UTF-8,
// a map repeats a key, or the payload claims more items than it can hold.
func (s *avroSchema) Decode(payload []byte) ([]byte, error) {
	d := &avroDecoder{
		reader:    avro.NewReader(nil, 0).Reset(payload),
		size:      len(payload),
		itemsLeft: len(payload) + avroSpareItems,
	}
	if err := d.value(s.schema, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	if d.reader.Peek(); d.reader.Error == nil {
		return nil, fmt.Errorf("%w: bytes remain after the value", ErrDecode)
	}
	return d.out, nil
}

// avroDecoder walks a schema, reading the payload with hamba's Reader and
// writing the value's JSON encoding to out.
type avroDecoder struct {
	reader    *avro.Reader
	size      int // of the payload: no length read may exceed it
	itemsLeft int // array and map items the payload may still claim
	out       []byte
}

// readErr reports the reader's error, if a read failed. hamba reports a
// read past the end as io.EOF, which its own Unmarshal then ignores: here
// every error fails the decode.
func (d *avroDecoder) readErr() error {
	if d.reader.Error != nil {
		return fmt.Errorf("%v", d.reader.Error)
	}
	return nil
}

func (d *avroDecoder) value(s avro.Schema, depth int) error {
	if depth > avroMaxDepth {
		return fmt.Errorf("values nest deeper than %d", avroMaxDepth)
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return d.value(s.Schema(), depth)
	case *avro.NullSchema:
		d.out = append(d.out, "null"...)
		return nil
	case *avro.PrimitiveSchema:
		return d.primitive(s.Type())
	case *avro.RecordSchema:
		d.out = append(d.out, '{')
		for i, f := range s.Fields() {
			if i > 0 {
				d.out = append(d.out, ',')
			}
			d.out = appendJSONString(d.out, f.Name())
			d.out = append(d.out, ':')
			if err := d.value(f.Type(), depth+1); err != nil {
				return err
			}
		}
		d.out = append(d.out, '}')
		return nil
	case *avro.EnumSchema:
		index := d.reader.ReadInt()
		if err := d.readErr(); err != nil {
			return err
		}
		if index < 0 || int(index) >= len(s.Symbols()) {
			return fmt.Errorf("enum %s has no symbol %d", s.FullName(), index)
		}
		d.out = appendJSONString(d.out, s.Symbols()[index])
		return nil
	case *avro.FixedSchema:
		if s.Size() > d.size {
			return fmt.Errorf("fixed %s of %d bytes is longer than the payload", s.FullName(), s.Size())
		}
		b := make([]byte, s.Size())
		d.reader.Read(b)
		if err := d.readErr(); err != nil {
			return err
		}
		d.out = appendJSONString(d.out, avroBytesAsString(b))
		return nil
	case *avro.ArraySchema:
		d.out = append(d.out, '[')
		first := true
		err := d.blocks(func() error {
			if !first {
				d.out = append(d.out, ',')
			}
			first = false
			return d.value(s.Items(), depth+1)
		})
		d.out = append(d.out, ']')
		return err
	case *avro.MapSchema:
		d.out = append(d.out, '{')
		keys := map[string]bool{}
		err := d.blocks(func() error {
			key, err := d.text("map key")
			if err != nil {
				return err
			}
			if keys[key] {
				return fmt.Errorf("map key %q appears twice", key)
			}
			if len(keys) > 0 {
				d.out = append(d.out, ',')
			}
			keys[key] = true
			d.out = appendJSONString(d.out, key)
			d.out = append(d.out, ':')
			return d.value(s.Values(), depth+1)
		})
		d.out = append(d.out, '}')
		return err
	case *avro.UnionSchema:
		index := d.reader.ReadLong()
		if err := d.readErr(); err != nil {
			return err
		}
		if index < 0 || index >= int64(len(s.Types())) {
			return fmt.Errorf("union %s has no branch %d", avroLabel(s), index)
		}
		branch := avroDeref(s.Types()[index])
		if branch.Type() == avro.Null {
			d.out = append(d.out, "null"...)
			return nil
		}
		d.out = append(d.out, '{')
		d.out = appendJSONString(d.out, avroBranchName(branch))
		d.out = append(d.out, ':')
		if err := d.value(branch, depth+1); err != nil {
			return err
		}
		d.out = append(d.out, '}')
		return nil
	}
	return fmt.Errorf("schema type %s cannot be decoded", s.Type())
}

// primitive decodes a value of a primitive type other than null.
func (d *avroDecoder) primitive(t avro.Type) error {
	var err error
	switch t {
	case avro.Boolean:
		v := d.reader.ReadBool()
		d.out = strconv.AppendBool(d.out, v)
	case avro.Int:
		v := d.reader.ReadInt()
		d.out = strconv.AppendInt(d.out, int64(v), 10)
	case avro.Long:
		v := d.reader.ReadLong()
		d.out = strconv.AppendInt(d.out, v, 10)
	case avro.Float:
		v := d.reader.ReadFloat()
		d.out = appendJSONFloat(d.out, float64(v), 32)
	case avro.Double:
		v := d.reader.ReadDouble()
		d.out = appendJSONFloat(d.out, v, 64)
	case avro.Bytes:
		var b []byte
		if b, err = d.bytes("bytes"); err == nil {
			d.out = appendJSONString(d.out, avroBytesAsString(b))
		}
	case avro.String:
		var s string
		if s, err = d.text("string"); err == nil {
			d.out = appendJSONString(d.out, s)
		}
	default:
		return fmt.Errorf("schema type %s cannot be decoded", t)
	}
	if err != nil {
		return err
	}
	return d.readErr()
}

// bytes reads a length-prefixed byte string. hamba's ReadBytes would
// allocate whatever length the payload claims, up to a megabyte; a length
// longer than the payload is refused before any allocation.
func (d *avroDecoder) bytes(what string) ([]byte, error) {
	n := d.reader.ReadLong()
	if err := d.readErr(); err != nil {
		return nil, err
	}
	if n < 0 || n > int64(d.size) {
		return nil, fmt.Errorf("%s of length %d in a payload of %d bytes", what, n, d.size)
	}
	b := make([]byte, n)
	d.reader.Read(b)
	return b, d.readErr()
}

// text reads a string, which must be UTF-8.
func (d *avroDecoder) text(what string) (string, error) {
	b, err := d.bytes(what)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s is not UTF-8", what)
	}
	return string(b), nil
}

// blocks reads the blocks of an array or map, calling item for each item.
func (d *avroDecoder) blocks(item func() error) error {
	for {
		count, _ := d.reader.ReadBlockHeader()
		if err := d.readErr(); err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		if count < 0 || count > int64(d.itemsLeft) {
			return fmt.Errorf("a block claims %d items, more than a payload of %d bytes holds", count, d.size)
		}
		d.itemsLeft -= int(count)
		for range count {
			if err := item(); err != nil {
				return err
			}
		}
	}
}

// avroBytesAsString maps each byte to the code point of the same value, as
// Avro's JSON encoding writes bytes and fixed.
func avroBytesAsString(b []byte) string {
	runes := make([]rune, len(b))
	for i, c := range b {
		runes[i] = rune(c)
	}
	return string(runes)
}

// appendJSONFloat writes f as a JSON number, or NaN and the infinities as
// strings.
func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// appendJSONString writes s as a JSON string, leaving <, > and & as they
// are (encoding/json's Marshal would escape them for HTML).
func appendJSONString(dst []byte, s string) []byte {
	if plainJSON(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// plainJSON reports whether s is printable ASCII that JSON writes as it
// is, between quotes: most strings, which then skip the encoder.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// avroBranchName is how Avro's JSON encoding names a union branch.
func avroBranchName(s avro.Schema) string {
	if named, ok := s.(avro.NamedSchema); ok {
		return named.FullName()
	}
	return string(s.Type())
}

// avroDeref returns the schema a reference to a named type stands for.
func avroDeref(s avro.Schema) avro.Schema {
	for {
		ref, ok := s.(*avro.RefSchema)
		if !ok {
			return s
		}
		s = ref.Schema()
	}
}

// avroLabel names a type for a message: a primitive or named type by its
// (full) name, the others by their structure, as in array<string> or
// union[null,int].
func avroLabel(s avro.Schema) string {
	switch s := avroDeref(s).(type) {
	case avro.NamedSchema:
		return s.FullName()
	case *avro.ArraySchema:
		return "array<" + avroLabel(s.Items()) + ">"
	case *avro.MapSchema:
		return "map<" + avroLabel(s.Values()) + ">"
	case *avro.UnionSchema:
		labels := make([]string, len(s.Types()))
		for i, t := range s.Types() {
			labels[i] = avroLabel(t)
		}
		return "union[" + strings.Join(labels, ",") + "]"
	default:
		return string(s.Type())
	}
}

// avroCanRead applies the Avro specification's schema-resolution rules,
// the ones Confluent's AvroCompatibilityChecker applies through Avro's
// SchemaCompatibility, and says where each is broken:
//
//   - records match by unqualified name, or when a reader alias is the
//     writer's full name; a reader field missing from the writer (by name,
//     or by a reader field alias) needs a default; writer fields the reader
//     lacks are skipped;
//   - int reads as long, float or double; long as float or double; float as
//     double; string and bytes read as each other;
//   - an enum matches by name; a writer symbol the reader lacks is
//     refused unless the reader enum has a default;
//   - fixed types match by name and size; arrays and maps by their items
//     and values;
//   - every branch of a writer union must be readable by the reader (by a
//     branch of it, if it is a union); a non-union writer must be readable
//     by some branch of a reader union.
//
// It decides as hamba's avro.SchemaCompatibility does (the tests and
// FuzzAvroCanRead hold the two to the same answers) but reports every
// problem with its field path where hamba stops at the first, without one,
// and, like Avro's own checker, matches a reader field to a writer field
// of its name before one named by an alias, where hamba takes whichever
// comes first in the writer.
func avroCanRead(reader, writer *avroSchema) []string {
	r := avroResolver{records: map[avroRecordPair][]avroProblem{}}
	var messages []string
	for _, p := range r.check(reader.schema, writer.schema) {
		messages = append(messages, p.String())
	}
	return messages
}

// avroMaxProblems bounds the problems one check reports: a broken record
// type used in many places is reported in each, which could otherwise grow
// without bound.
const avroMaxProblems = 100

// avroProblem is one reason a reader cannot read a writer's data, at path:
// the fields leading to it, joined by dots, with [] for array items and {}
// for map values ("address.zip", "tags[]", "attrs{}.x").
type avroProblem struct {
	path     string
	message  string
	mismatch bool // the types themselves do not match, at path
}

func (p avroProblem) String() string {
	if p.path == "" {
		return p.message
	}
	return fmt.Sprintf("field %q: %s", p.path, p.message)
}

// avroUnder puts problems found inside a field, item or value under step.
func avroUnder(step string, problems []avroProblem) []avroProblem {
	out := make([]avroProblem, 0, len(problems))
	for _, p := range problems {
		switch {
		case p.path == "":
			p.path = step
		case strings.HasPrefix(p.path, "[") || strings.HasPrefix(p.path, "{"):
			p.path = step + p.path
		default:
			p.path = step + "." + p.path
		}
		out = append(out, p)
	}
	return out
}

type avroRecordPair struct{ reader, writer *avro.RecordSchema }

// avroResolver checks one reader against one writer.
type avroResolver struct {
	// records holds the problems found for each pair of records, relative
	// to the records: nil while a pair is being checked, so a recursive
	// type reads as compatible with itself where it recurs.
	records map[avroRecordPair][]avroProblem
}

func (c *avroResolver) check(reader, writer avro.Schema) []avroProblem {
	reader, writer = avroDeref(reader), avroDeref(writer)
	readerUnion, readerIsUnion := reader.(*avro.UnionSchema)
	if writerUnion, ok := writer.(*avro.UnionSchema); ok {
		var problems []avroProblem
		for _, branch := range writerUnion.Types() {
			found := c.check(reader, branch)
			if len(found) == 1 && found[0].path == "" && found[0].mismatch {
				found[0].message = fmt.Sprintf("the writer's union branch %s cannot be read as %s", avroLabel(branch), avroLabel(reader))
			}
			problems = append(problems, found...)
		}
		return avroCap(problems)
	}
	if readerIsUnion {
		return c.checkReaderUnion(readerUnion, writer)
	}
	if message := avroMismatch(reader, writer); message != "" {
		return []avroProblem{{message: message, mismatch: true}}
	}
	switch reader := reader.(type) {
	case *avro.RecordSchema:
		return c.checkRecord(reader, writer.(*avro.RecordSchema))
	case *avro.EnumSchema:
		return avroCheckEnum(reader, writer.(*avro.EnumSchema))
	case *avro.ArraySchema:
		return avroUnder("[]", c.check(reader.Items(), writer.(*avro.ArraySchema).Items()))
	case *avro.MapSchema:
		return avroUnder("{}", c.check(reader.Values(), writer.(*avro.MapSchema).Values()))
	}
	return nil
}

// checkReaderUnion checks a writer that is not a union against a reader
// union: some branch must read it. When none does, the problems are those
// of the first branch of the writer's kind, else a type change.
func (c *avroResolver) checkReaderUnion(reader *avro.UnionSchema, writer avro.Schema) []avroProblem {
	var nearest []avroProblem
	for _, branch := range reader.Types() {
		if avroMismatch(avroDeref(branch), writer) != "" {
			continue
		}
		problems := c.check(branch, writer)
		if len(problems) == 0 {
			return nil
		}
		if nearest == nil {
			nearest = problems
		}
	}
	if nearest != nil {
		return nearest
	}
	return []avroProblem{{
		message:  fmt.Sprintf("type changed from %s to %s", avroLabel(writer), avroLabel(reader)),
		mismatch: true,
	}}
}

func (c *avroResolver) checkRecord(reader, writer *avro.RecordSchema) []avroProblem {
	pair := avroRecordPair{reader, writer}
	if problems, ok := c.records[pair]; ok {
		return problems
	}
	c.records[pair] = nil
	var problems []avroProblem
	for _, field := range reader.Fields() {
		written := avroWriterField(writer, field)
		if written == nil {
			if !field.HasDefault() {
				problems = append(problems, avroProblem{
					path:    field.Name(),
					message: "the writer has no such field and the reader gives it no default",
				})
			}
			continue
		}
		problems = append(problems, avroUnder(field.Name(), c.check(field.Type(), written.Type()))...)
	}
	problems = avroCap(problems)
	c.records[pair] = problems
	return problems
}

// avroWriterField finds the writer's field for a reader field: by name, or
// by one of the reader field's aliases.
func avroWriterField(writer *avro.RecordSchema, field *avro.Field) *avro.Field {
	for _, f := range writer.Fields() {
		if f.Name() == field.Name() {
			return f
		}
	}
	for _, f := range writer.Fields() {
		if slices.Contains(field.Aliases(), f.Name()) {
			return f
		}
	}
	return nil
}

func avroCheckEnum(reader, writer *avro.EnumSchema) []avroProblem {
	var missing []string
	for _, symbol := range writer.Symbols() {
		if !slices.Contains(reader.Symbols(), symbol) {
			missing = append(missing, symbol)
		}
	}
	if len(missing) == 0 || reader.HasDefault() {
		return nil
	}
	return []avroProblem{{message: fmt.Sprintf(
		"enum %s lacks the writer's symbols %s and has no default",
		reader.FullName(), strings.Join(missing, ", "))}}
}

// avroMismatch says why a reader type cannot read a writer type at all,
// neither being a union, or returns "" when it may (records, enums,
// arrays and maps still to be checked inside).
func avroMismatch(reader, writer avro.Schema) string {
	if reader.Type() != writer.Type() {
		if avroPromotes(writer.Type(), reader.Type()) {
			return ""
		}
		return fmt.Sprintf("type changed from %s to %s", avroLabel(writer), avroLabel(reader))
	}
	r, named := reader.(avro.NamedSchema)
	if !named {
		return ""
	}
	w := writer.(avro.NamedSchema)
	if r.Name() != w.Name() && !slices.Contains(r.Aliases(), w.FullName()) {
		return fmt.Sprintf("%s name changed from %s to %s", reader.Type(), w.FullName(), r.FullName())
	}
	if rf, ok := reader.(*avro.FixedSchema); ok {
		if wf := writer.(*avro.FixedSchema); rf.Size() != wf.Size() {
			return fmt.Sprintf("fixed %s size changed from %d to %d", rf.FullName(), wf.Size(), rf.Size())
		}
	}
	return ""
}

// avroPromotes reports whether the specification lets a reader of type
// reader read a writer's value of type writer.
func avroPromotes(writer, reader avro.Type) bool {
	switch writer {
	case avro.Int:
		return reader == avro.Long || reader == avro.Float || reader == avro.Double
	case avro.Long:
		return reader == avro.Float || reader == avro.Double
	case avro.Float:
		return reader == avro.Double
	case avro.String:
		return reader == avro.Bytes
	case avro.Bytes:
		return reader == avro.String
	}
	return false
}

func avroCap(problems []avroProblem) []avroProblem {
	if len(problems) > avroMaxProblems {
		return problems[:avroMaxProblems]
	}
	return problems
}
