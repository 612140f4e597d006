package schema

// Compatibility of JSON Schemas, by Confluent's rules as far as they are
// covered here (see jsonCanRead).

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonCanRead returns why instances valid against writer might not be
// valid against reader, working on the compiled schemas (so $ref
// resolution is the library's). A compatible answer is always right; an
// incompatible one may be too strict.
//
// Covered: type changes (integer to number widens, number to integer and
// an added type where there was none do not); enum and const values
// removed; maxLength, minLength narrowed or added, pattern and format
// added or changed; maximum, minimum (exclusive too) narrowed or added,
// multipleOf added or no longer dividing the old one; for objects, a
// property added to an open content model unless its schema accepts
// anything, a property removed from a closed one, additionalProperties
// closed or narrowed, a newly required property without a default,
// min/maxProperties narrowed; array items and tuples recursively,
// min/maxItems narrowed, uniqueItems added; $ref (cycles too); allOf,
// anyOf and oneOf on either side.
//
// Not covered: not, if/then/else, dependencies, propertyNames, contains,
// the unevaluated* keywords and $dynamicRef, which the reader may have
// only as the writer has them (compared as written); patternProperties
// are matched by pattern text; oneOf's exclusivity.
func jsonCanRead(reader, writer *jsonSchema) []string {
	c := &jsonChecker{reader: reader, writer: writer, pairs: map[[2]*jsonschema.Schema][]jsonProblem{}}
	var out []string
	for _, p := range c.check(reader.compiled, writer.compiled) {
		out = append(out, p.String())
	}
	return out
}

const (
	// jsonMaxProblems caps the problems one check reports.
	jsonMaxProblems = 50
	// jsonMaxDepth bounds how deep the checker follows nesting.
	jsonMaxDepth = 64
)

// jsonProblem is one reason a reader cannot read a writer's instances, at
// path: property names joined by dots, with [] for array items and [i] for
// tuple items ("address.zip", "tags[]", "point[0]").
type jsonProblem struct {
	path    string
	message string
}

func (p jsonProblem) String() string {
	if p.path == "" {
		return p.message
	}
	return fmt.Sprintf("property %q: %s", p.path, p.message)
}

func jsonUnder(step string, problems []jsonProblem) []jsonProblem {
	out := make([]jsonProblem, 0, len(problems))
	for _, p := range problems {
		switch {
		case p.path == "":
			p.path = step
		case strings.HasPrefix(p.path, "["):
			p.path = step + p.path
		default:
			p.path = step + "." + p.path
		}
		out = append(out, p)
	}
	return out
}

func jsonCap(problems []jsonProblem) []jsonProblem {
	if len(problems) > jsonMaxProblems {
		return problems[:jsonMaxProblems]
	}
	return problems
}

// jsonChecker checks one reader against one writer.
type jsonChecker struct {
	reader, writer *jsonSchema
	// pairs holds the problems found for each pair of schema nodes: nil
	// while a pair is being checked, so a recursive $ref reads as
	// compatible with itself where it recurs.
	pairs map[[2]*jsonschema.Schema][]jsonProblem
	depth int // of check calls in progress
}

// check returns why instances of writer might not be instances of reader.
//
// The writer is first made flat. Its $ref and allOf parts are merged with
// its own assertions into one node (jsonMerge), which may allow more than
// the parts together do but never less, so a compatible answer stays
// right. Its anyOf or oneOf is distributed: each branch, merged with the
// rest of the writer, must be readable. Then the reader's own assertions
// are compared with the flat writer's, and each of the reader's parts
// must read the writer: its $ref, every allOf member, some branch of its
// anyOf and of its oneOf.
func (c *jsonChecker) check(reader, writer *jsonschema.Schema) []jsonProblem {
	reader, writer = jsonDeref(reader), jsonDeref(writer)
	if jsonAcceptsAll(reader) || jsonRejectsAll(writer) {
		return nil
	}
	if jsonRejectsAll(reader) {
		return []jsonProblem{{message: "the reader accepts nothing (false) where the writer writes values"}}
	}
	if c.depth >= jsonMaxDepth {
		return []jsonProblem{{message: fmt.Sprintf("nested more than %d deep: not checked", jsonMaxDepth)}}
	}
	pair := [2]*jsonschema.Schema{reader, writer}
	if problems, ok := c.pairs[pair]; ok {
		return problems
	}
	c.pairs[pair] = nil
	c.depth++
	defer func() { c.depth-- }()

	var problems []jsonProblem
	switch {
	case len(writer.AnyOf) > 0 || len(writer.OneOf) > 0:
		rest := *writer
		branches := writer.AnyOf
		if len(branches) > 0 {
			rest.AnyOf = nil
		} else {
			branches, rest.OneOf = writer.OneOf, nil
		}
		for _, branch := range branches {
			problems = append(problems, c.check(reader, jsonMerge(&rest, jsonFlatten(branch, 0)))...)
		}
	case writer.Ref != nil || len(writer.AllOf) > 0:
		problems = c.check(reader, jsonFlatten(writer, 0))
	default:
		problems = c.compareOwn(reader, writer)
		if reader.Ref != nil {
			problems = append(problems, c.check(reader.Ref, writer)...)
		}
		for _, member := range reader.AllOf {
			problems = append(problems, c.check(member, writer)...)
		}
		problems = append(problems, c.someBranch("anyOf", reader.AnyOf, writer)...)
		problems = append(problems, c.someBranch("oneOf", reader.OneOf, writer)...)
		problems = append(problems, c.unanalysed(reader, writer)...)
	}
	problems = jsonCap(problems)
	c.pairs[pair] = problems
	return problems
}

// someBranch checks a reader's anyOf or oneOf against a flat writer: some
// branch must read all the writer writes. When none does, the problems
// are those of the first branch sharing a type with the writer, else a
// plain refusal.
func (c *jsonChecker) someBranch(keyword string, branches []*jsonschema.Schema, writer *jsonschema.Schema) []jsonProblem {
	if len(branches) == 0 {
		return nil
	}
	var nearest []jsonProblem
	for _, branch := range branches {
		problems := c.check(branch, writer)
		if len(problems) == 0 {
			return nil
		}
		if nearest == nil && jsonTypesOf(jsonDeref(branch))&jsonTypesOf(writer) != 0 {
			nearest = problems
		}
	}
	if nearest != nil {
		return nearest
	}
	return []jsonProblem{{message: fmt.Sprintf("no branch of the reader's %s reads what the writer writes (%s)", keyword, jsonTypesOf(writer))}}
}

// jsonFlatten merges a writer node's own assertions with its $ref and
// allOf parts, recursively, into one node without either.
func jsonFlatten(s *jsonschema.Schema, depth int) *jsonschema.Schema {
	s = jsonDeref(s)
	if s.Ref == nil && len(s.AllOf) == 0 {
		return s
	}
	own := *s
	own.Ref, own.AllOf = nil, nil
	merged := &own
	if depth >= jsonMaxDepth {
		return merged // the parts dropped only widen the node
	}
	if s.Ref != nil {
		merged = jsonMerge(merged, jsonFlatten(s.Ref, depth+1))
	}
	for _, member := range s.AllOf {
		merged = jsonMerge(merged, jsonFlatten(member, depth+1))
	}
	return merged
}

// jsonNothing is the schema false. It is only read.
var jsonNothing = func() *jsonschema.Schema {
	no := false
	return &jsonschema.Schema{Bool: &no}
}()

// jsonMerge returns a node allowing at least every instance both a and b
// (flat nodes: no $ref or allOf) allow, for the writer side, where
// allowing more is safe: constraints both set are combined where that is
// simple (types, enums, bounds, properties, required), else one is kept
// (pattern, format, multipleOf, items, anyOf, oneOf); the keywords the
// checker does not analyse are dropped from b.
func jsonMerge(a, b *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case jsonRejectsAll(a) || jsonRejectsAll(b):
		return jsonNothing
	case jsonAcceptsAll(b):
		return a
	case jsonAcceptsAll(a):
		return b
	}
	m := *a
	m.Bool = nil
	if b.Types != nil || a.Types != nil {
		types := jsonTypesOf(a).intersect(jsonTypesOf(b))
		if types == 0 {
			return jsonNothing
		}
		m.Types = types.schemaTypes()
	}
	if values := jsonValuesOf(b); values != nil {
		if mine := jsonValuesOf(a); mine != nil {
			values = slices.DeleteFunc(slices.Clone(mine), func(v any) bool { return len(jsonMissing([]any{v}, values)) > 0 })
		}
		if len(values) == 0 {
			return jsonNothing
		}
		m.Const, m.Enum = nil, &jsonschema.Enum{Values: values}
	}
	m.MaxLength, m.MinLength = jsonMinInt(a.MaxLength, b.MaxLength), jsonMaxInt(a.MinLength, b.MinLength)
	m.MaxItems, m.MinItems = jsonMinInt(a.MaxItems, b.MaxItems), jsonMaxInt(a.MinItems, b.MinItems)
	m.MaxProperties, m.MinProperties = jsonMinInt(a.MaxProperties, b.MaxProperties), jsonMaxInt(a.MinProperties, b.MinProperties)
	m.Maximum, m.ExclusiveMaximum = jsonMinRat(a.Maximum, b.Maximum), jsonMinRat(a.ExclusiveMaximum, b.ExclusiveMaximum)
	m.Minimum, m.ExclusiveMinimum = jsonMaxRat(a.Minimum, b.Minimum), jsonMaxRat(a.ExclusiveMinimum, b.ExclusiveMinimum)
	m.Pattern = cmp.Or(a.Pattern, b.Pattern)
	m.Format = cmp.Or(a.Format, b.Format)
	m.MultipleOf = cmp.Or(a.MultipleOf, b.MultipleOf)
	m.UniqueItems = a.UniqueItems || b.UniqueItems
	if a.Items == nil && a.PrefixItems == nil && a.Items2020 == nil {
		m.Items, m.AdditionalItems, m.PrefixItems, m.Items2020 = b.Items, b.AdditionalItems, b.PrefixItems, b.Items2020
	}
	if len(m.AnyOf) == 0 {
		m.AnyOf = b.AnyOf
	}
	if len(m.OneOf) == 0 {
		m.OneOf = b.OneOf
	}

	// A name either declares is allowed as both allow it: refused if one
	// refuses it (its additionalProperties is false), else held to both
	// schemas.
	if len(a.Properties)+len(b.Properties) > 0 {
		m.Properties = map[string]*jsonschema.Schema{}
		for _, name := range slices.Concat(slices.Collect(maps.Keys(a.Properties)), slices.Collect(maps.Keys(b.Properties))) {
			pa, pb := jsonPropertyOf(a, name), jsonPropertyOf(b, name)
			switch {
			case pa.refused || pb.refused:
				// Undeclared, and refused by the merged additionalProperties.
			case pa.open:
				m.Properties[name] = pb.schema
			case pb.open || jsonDeref(pa.schema) == jsonDeref(pb.schema):
				m.Properties[name] = pa.schema
			default:
				m.Properties[name] = &jsonschema.Schema{AllOf: []*jsonschema.Schema{pa.schema, pb.schema}, Location: pa.schema.Location}
			}
		}
	}
	if len(b.PatternProperties) > 0 {
		m.PatternProperties = maps.Clone(a.PatternProperties)
		if m.PatternProperties == nil {
			m.PatternProperties = map[jsonschema.Regexp]*jsonschema.Schema{}
		}
		for pattern, p := range b.PatternProperties {
			m.PatternProperties[pattern] = p
		}
	}
	// Closed if either is closed; each part's additionalProperties only
	// covers names outside its own properties, so the merged node, which
	// declares the names of both, may allow more, never less.
	ra, rb := jsonAdditional(a.AdditionalProperties), jsonAdditional(b.AdditionalProperties)
	switch {
	case ra.refused || rb.refused:
		m.AdditionalProperties = false
	case ra.schema != nil && rb.schema != nil:
		m.AdditionalProperties = &jsonschema.Schema{AllOf: []*jsonschema.Schema{ra.schema, rb.schema}, Location: ra.schema.Location}
	case rb.schema != nil:
		m.AdditionalProperties = rb.schema
	}
	m.Required = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a.Required), b.Required...))))
	return &m
}

func jsonMinInt(a, b *int) *int {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

func jsonMaxInt(a, b *int) *int {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func jsonMinRat(a, b *big.Rat) *big.Rat {
	if a == nil || (b != nil && b.Cmp(a) < 0) {
		return b
	}
	return a
}

func jsonMaxRat(a, b *big.Rat) *big.Rat {
	if a == nil || (b != nil && b.Cmp(a) > 0) {
		return b
	}
	return a
}

// compareOwn checks the reader node's own assertions against a flat
// writer node's.
func (c *jsonChecker) compareOwn(reader, writer *jsonschema.Schema) []jsonProblem {
	if !jsonHasOwn(reader) {
		return nil
	}
	var problems []jsonProblem
	add := func(format string, args ...any) {
		problems = append(problems, jsonProblem{message: fmt.Sprintf(format, args...)})
	}
	writes := jsonTypesOf(writer)

	if reader.Types != nil {
		if writes.unreadableBy(jsonTypesFrom(*reader.Types)) != 0 {
			add("type changed from %s to %s", writes, jsonTypesFrom(*reader.Types))
		}
	}
	if readerValues := jsonValuesOf(reader); readerValues != nil {
		writerValues := jsonValuesOf(writer)
		if writerValues == nil {
			add("the reader allows only %s; the writer is not limited to them", jsonList(readerValues))
		} else if removed := jsonMissing(writerValues, readerValues); len(removed) > 0 {
			add("enum values removed: %s", jsonList(removed))
		}
	}
	if writes.has(jsonString) {
		compareOwnString(reader, writer, add)
	}
	if writes.has(jsonNumber) || writes.has(jsonInteger) {
		compareOwnNumber(reader, writer, add)
	}
	if writes.has(jsonObject) {
		problems = append(problems, c.compareOwnObject(reader, writer, add)...)
	}
	if writes.has(jsonArray) {
		problems = append(problems, c.compareOwnArray(reader, writer, add)...)
	}
	return problems
}

func compareOwnString(reader, writer *jsonschema.Schema, add func(string, ...any)) {
	if reader.MaxLength != nil {
		switch {
		case writer.MaxLength == nil:
			add("maxLength %d added", *reader.MaxLength)
		case *writer.MaxLength > *reader.MaxLength:
			add("maxLength narrowed from %d to %d", *writer.MaxLength, *reader.MaxLength)
		}
	}
	if reader.MinLength != nil && *reader.MinLength > 0 {
		switch {
		case writer.MinLength == nil:
			add("minLength %d added", *reader.MinLength)
		case *writer.MinLength < *reader.MinLength:
			add("minLength narrowed from %d to %d", *writer.MinLength, *reader.MinLength)
		}
	}
	if reader.Pattern != nil {
		switch {
		case writer.Pattern == nil:
			add("pattern %q added", reader.Pattern.String())
		case writer.Pattern.String() != reader.Pattern.String():
			add("pattern changed from %q to %q", writer.Pattern.String(), reader.Pattern.String())
		}
	}
	if reader.Format != nil {
		switch {
		case writer.Format == nil:
			add("format %q added", reader.Format.Name)
		case writer.Format.Name != reader.Format.Name:
			add("format changed from %q to %q", writer.Format.Name, reader.Format.Name)
		}
	}
}

// jsonBound is one side of a numeric range: nil value for none.
type jsonBound struct {
	value     *big.Rat
	exclusive bool
}

func (b jsonBound) String() string {
	if b.value == nil {
		return "none"
	}
	if b.exclusive {
		return "exclusive " + b.value.RatString()
	}
	return b.value.RatString()
}

// jsonTighter returns the tighter of an inclusive and an exclusive bound;
// upper says which side they bound.
func jsonTighter(inclusive, exclusive *big.Rat, upper bool) jsonBound {
	switch {
	case inclusive == nil && exclusive == nil:
		return jsonBound{}
	case inclusive == nil:
		return jsonBound{exclusive, true}
	case exclusive == nil:
		return jsonBound{inclusive, false}
	}
	cmp := exclusive.Cmp(inclusive)
	if (upper && cmp <= 0) || (!upper && cmp >= 0) {
		return jsonBound{exclusive, true}
	}
	return jsonBound{inclusive, false}
}

// jsonWithin reports whether every number within writer's bound is within
// reader's, upper saying which side they bound.
func jsonWithin(reader, writer jsonBound, upper bool) bool {
	if reader.value == nil {
		return true
	}
	if writer.value == nil {
		return false
	}
	cmp := writer.value.Cmp(reader.value)
	if !upper {
		cmp = -cmp
	}
	return cmp < 0 || (cmp == 0 && (!reader.exclusive || writer.exclusive))
}

func compareOwnNumber(reader, writer *jsonschema.Schema, add func(string, ...any)) {
	for _, upper := range []bool{true, false} {
		var r, w jsonBound
		name := "maximum"
		if upper {
			r = jsonTighter(reader.Maximum, reader.ExclusiveMaximum, true)
			w = jsonTighter(writer.Maximum, writer.ExclusiveMaximum, true)
		} else {
			name = "minimum"
			r = jsonTighter(reader.Minimum, reader.ExclusiveMinimum, false)
			w = jsonTighter(writer.Minimum, writer.ExclusiveMinimum, false)
		}
		if !jsonWithin(r, w, upper) {
			add("%s narrowed from %s to %s", name, w, r)
		}
	}
	if reader.MultipleOf != nil {
		switch {
		case writer.MultipleOf == nil:
			add("multipleOf %s added", reader.MultipleOf.RatString())
		case !new(big.Rat).Quo(writer.MultipleOf, reader.MultipleOf).IsInt():
			add("multipleOf changed from %s to %s", writer.MultipleOf.RatString(), reader.MultipleOf.RatString())
		}
	}
}

// jsonPropertySchema is what a node allows under a property name: the
// property's schema, else a matching patternProperties schema, else
// additionalProperties. declared says the name is in properties; open
// that nothing constrains it (additionalProperties absent or true).
type jsonPropertySchema struct {
	schema   *jsonschema.Schema // nil when refused or open
	refused  bool               // additionalProperties is false
	declared bool
	open     bool
}

func jsonPropertyOf(s *jsonschema.Schema, name string) jsonPropertySchema {
	if p, ok := s.Properties[name]; ok {
		return jsonPropertySchema{schema: p, declared: true}
	}
	for _, pattern := range jsonPatterns(s) {
		if pattern.MatchString(name) {
			return jsonPropertySchema{schema: s.PatternProperties[pattern]}
		}
	}
	return jsonAdditional(s.AdditionalProperties)
}

func jsonAdditional(additional any) jsonPropertySchema {
	switch a := additional.(type) {
	case bool:
		return jsonPropertySchema{refused: !a, open: a}
	case *jsonschema.Schema:
		return jsonPropertySchema{schema: a}
	}
	return jsonPropertySchema{open: true}
}

// jsonPatterns returns a node's patternProperties patterns in a fixed order.
func jsonPatterns(s *jsonschema.Schema) []jsonschema.Regexp {
	patterns := make([]jsonschema.Regexp, 0, len(s.PatternProperties))
	for p := range s.PatternProperties {
		patterns = append(patterns, p)
	}
	sort.Slice(patterns, func(i, j int) bool { return patterns[i].String() < patterns[j].String() })
	return patterns
}

// readProperty checks what reader allows under a name against what writer
// may write under it.
func (c *jsonChecker) readProperty(reader, writer jsonPropertySchema) []jsonProblem {
	switch {
	case writer.refused, reader.open:
		return nil
	case reader.refused:
		return []jsonProblem{{message: "the reader refuses it (additionalProperties is false) but the writer may write it"}}
	case writer.open:
		if len(c.check(reader.schema, jsonAnything)) == 0 {
			return nil
		}
		return []jsonProblem{{message: "the writer's content model is open (additionalProperties is not false), so its instances may hold any value where the reader now has a schema"}}
	}
	return c.check(reader.schema, writer.schema)
}

func (c *jsonChecker) compareOwnObject(reader, writer *jsonschema.Schema, add func(string, ...any)) []jsonProblem {
	var problems []jsonProblem
	names := map[string]bool{}
	for name := range reader.Properties {
		names[name] = true
	}
	for name := range writer.Properties {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		r, w := jsonPropertyOf(reader, name), jsonPropertyOf(writer, name)
		problems = append(problems, jsonUnder(name, c.readProperty(r, w))...)
	}
	// Names neither declares: each writer pattern against the reader's,
	// each reader pattern against what the writer allows under it, and the
	// rest additionalProperties against additionalProperties.
	for _, pattern := range jsonPatterns(writer) {
		r := jsonAdditional(reader.AdditionalProperties)
		for rp, schema := range reader.PatternProperties {
			if rp.String() == pattern.String() {
				r = jsonPropertySchema{schema: schema}
			}
		}
		for _, p := range c.readProperty(r, jsonPropertySchema{schema: writer.PatternProperties[pattern]}) {
			problems = append(problems, jsonProblem{message: fmt.Sprintf("properties matching %q: %s", pattern, p)})
		}
	}
	for _, pattern := range jsonPatterns(reader) {
		if slices.ContainsFunc(jsonPatterns(writer), func(p jsonschema.Regexp) bool { return p.String() == pattern.String() }) {
			continue
		}
		w := jsonAdditional(writer.AdditionalProperties)
		for _, p := range c.readProperty(jsonPropertySchema{schema: reader.PatternProperties[pattern]}, w) {
			problems = append(problems, jsonProblem{message: fmt.Sprintf("properties matching %q: %s", pattern, p)})
		}
	}
	r, w := jsonAdditional(reader.AdditionalProperties), jsonAdditional(writer.AdditionalProperties)
	switch {
	case r.refused && !w.refused:
		add("additionalProperties closed (false): the writer's instances may hold properties the reader does not declare")
	default:
		for _, p := range c.readProperty(r, w) {
			problems = append(problems, jsonProblem{path: p.path, message: "additionalProperties: " + p.message})
		}
	}

	writerRequires := map[string]bool{}
	for _, name := range writer.Required {
		writerRequires[name] = true
	}
	for _, name := range reader.Required {
		if writerRequires[name] {
			continue
		}
		if p, ok := reader.Properties[name]; ok && jsonDeref(p).Default != nil {
			continue
		}
		problems = append(problems, jsonProblem{path: name, message: "required by the reader but not by the writer, and the reader gives no default"})
	}
	jsonCountBounds("properties", reader.MinProperties, reader.MaxProperties, writer.MinProperties, writer.MaxProperties, add)
	return problems
}

// jsonCountBounds checks a minimum and maximum count (properties, items).
func jsonCountBounds(what string, readerMin, readerMax, writerMin, writerMax *int, add func(string, ...any)) {
	if readerMax != nil && (writerMax == nil || *writerMax > *readerMax) {
		add("max%s narrowed from %s to %d", strings.ToUpper(what[:1])+what[1:], jsonCount(writerMax), *readerMax)
	}
	if readerMin != nil && *readerMin > 0 && (writerMin == nil || *writerMin < *readerMin) {
		add("min%s narrowed from %s to %d", strings.ToUpper(what[:1])+what[1:], jsonCount(writerMin), *readerMin)
	}
}

func jsonCount(n *int) string {
	if n == nil {
		return "none"
	}
	return strconv.Itoa(*n)
}

// jsonItems is a node's array items: prefix for the first positions, rest
// for the others (nil for any, refused when additionalItems is false).
type jsonItems struct {
	prefix  []*jsonschema.Schema
	rest    *jsonschema.Schema
	refused bool
}

func jsonItemsOf(s *jsonschema.Schema) jsonItems {
	var items jsonItems
	switch i := s.Items.(type) {
	case *jsonschema.Schema:
		items.rest = i
	case []*jsonschema.Schema:
		items.prefix = i
		switch a := s.AdditionalItems.(type) {
		case bool:
			items.refused = !a
		case *jsonschema.Schema:
			items.rest = a
		}
	}
	if s.PrefixItems != nil {
		items.prefix = s.PrefixItems
	}
	if s.Items2020 != nil {
		items.rest = s.Items2020
	}
	return items
}

func (it jsonItems) at(i int) jsonPropertySchema {
	switch {
	case i < len(it.prefix):
		return jsonPropertySchema{schema: it.prefix[i]}
	case it.refused:
		return jsonPropertySchema{refused: true}
	case it.rest == nil:
		return jsonPropertySchema{open: true}
	}
	return jsonPropertySchema{schema: it.rest}
}

func (c *jsonChecker) compareOwnArray(reader, writer *jsonschema.Schema, add func(string, ...any)) []jsonProblem {
	r, w := jsonItemsOf(reader), jsonItemsOf(writer)
	var problems []jsonProblem
	positions := max(len(r.prefix), len(w.prefix))
	for i := range positions {
		step := fmt.Sprintf("[%d]", i)
		for _, p := range c.readItem(r.at(i), w.at(i)) {
			problems = append(problems, jsonUnder(step, []jsonProblem{p})...)
		}
	}
	for _, p := range c.readItem(r.at(positions), w.at(positions)) {
		problems = append(problems, jsonUnder("[]", []jsonProblem{p})...)
	}
	jsonCountBounds("items", reader.MinItems, reader.MaxItems, writer.MinItems, writer.MaxItems, add)
	if reader.UniqueItems && !writer.UniqueItems {
		add("uniqueItems added")
	}
	return problems
}

func (c *jsonChecker) readItem(reader, writer jsonPropertySchema) []jsonProblem {
	switch {
	case writer.refused, reader.open:
		return nil
	case reader.refused:
		return []jsonProblem{{message: "the reader allows no item here but the writer may write one"}}
	case writer.open:
		return c.check(reader.schema, jsonAnything)
	}
	return c.check(reader.schema, writer.schema)
}

// unanalysed checks the reader's keywords that strata does not reason
// about: each is accepted only if the writer has it, written the same.
func (c *jsonChecker) unanalysed(reader, writer *jsonschema.Schema) []jsonProblem {
	present := map[string]bool{
		"not":                   reader.Not != nil,
		"if":                    reader.If != nil,
		"then":                  reader.If != nil && reader.Then != nil,
		"else":                  reader.If != nil && reader.Else != nil,
		"dependencies":          reader.Dependencies != nil,
		"dependentRequired":     reader.DependentRequired != nil,
		"dependentSchemas":      reader.DependentSchemas != nil,
		"propertyNames":         reader.PropertyNames != nil,
		"contains":              reader.Contains != nil,
		"minContains":           reader.MinContains != nil,
		"maxContains":           reader.MaxContains != nil,
		"unevaluatedProperties": reader.UnevaluatedProperties != nil,
		"unevaluatedItems":      reader.UnevaluatedItems != nil,
		"$dynamicRef":           reader.DynamicRef != nil,
		"$recursiveRef":         reader.RecursiveRef != nil,
	}
	readerRaw, _ := c.reader.raw(reader.Location).(map[string]any)
	writerRaw, _ := c.writer.raw(writer.Location).(map[string]any)
	var problems []jsonProblem
	for _, keyword := range slices.Sorted(maps.Keys(present)) {
		if !present[keyword] {
			continue
		}
		r, rok := readerRaw[keyword]
		w, wok := writerRaw[keyword]
		if rok && wok && jsonEqual(r, w) {
			continue
		}
		problems = append(problems, jsonProblem{message: fmt.Sprintf(
			"%s differs from the writer's, and strata does not analyse %s: only an unchanged one is accepted", keyword, keyword)})
	}
	return problems
}

// raw returns the JSON a compiled node was compiled from, by its location
// (a document URL, #, and a JSON pointer), or nil.
func (s *jsonSchema) raw(location string) any {
	at, pointer, _ := strings.Cut(location, "#")
	v, ok := s.documents[at]
	if !ok || pointer == "" {
		return v
	}
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if unescaped, err := url.PathUnescape(token); err == nil {
			token = unescaped
		}
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch node := v.(type) {
		case map[string]any:
			v = node[token]
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			v = node[i]
		default:
			return nil
		}
	}
	return v
}

// jsonAnything stands for what an open content model or an unconstrained
// array may hold: any value. It is only read.
var jsonAnything = &jsonschema.Schema{}

// jsonDeref follows $ref from nodes that assert nothing else.
func jsonDeref(s *jsonschema.Schema) *jsonschema.Schema {
	for range jsonMaxDepth {
		if s.Ref == nil || jsonHasOwn(s) || len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 || jsonHasUnanalysed(s) {
			return s
		}
		s = s.Ref
	}
	return s
}

// jsonHasOwn reports whether a node asserts anything compareOwn checks.
func jsonHasOwn(s *jsonschema.Schema) bool {
	return s.Types != nil || s.Enum != nil || s.Const != nil || s.Format != nil ||
		s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil ||
		s.Maximum != nil || s.Minimum != nil || s.ExclusiveMaximum != nil || s.ExclusiveMinimum != nil || s.MultipleOf != nil ||
		len(s.Properties) > 0 || len(s.PatternProperties) > 0 || s.AdditionalProperties != nil || len(s.Required) > 0 ||
		s.MinProperties != nil || s.MaxProperties != nil ||
		s.Items != nil || s.AdditionalItems != nil || s.PrefixItems != nil || s.Items2020 != nil ||
		s.MinItems != nil || s.MaxItems != nil || s.UniqueItems
}

func jsonHasUnanalysed(s *jsonschema.Schema) bool {
	return s.Not != nil || s.If != nil || s.Dependencies != nil || s.DependentRequired != nil ||
		s.DependentSchemas != nil || s.PropertyNames != nil || s.Contains != nil ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil || s.DynamicRef != nil || s.RecursiveRef != nil
}

// jsonAcceptsAll reports whether a node accepts every instance.
func jsonAcceptsAll(s *jsonschema.Schema) bool {
	if s.Bool != nil {
		return *s.Bool
	}
	return !jsonHasOwn(s) && s.Ref == nil && len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) == 0 && !jsonHasUnanalysed(s)
}

// jsonRejectsAll reports whether a node is the schema false.
func jsonRejectsAll(s *jsonschema.Schema) bool {
	return s.Bool != nil && !*s.Bool
}

// jsonTypes is a set of JSON Schema types.
type jsonTypes uint8

const (
	jsonNull jsonTypes = 1 << iota
	jsonBoolean
	jsonInteger
	jsonNumber
	jsonString
	jsonArray
	jsonObject
	jsonAllTypes = 1<<iota - 1
)

var jsonTypeNames = []string{"null", "boolean", "integer", "number", "string", "array", "object"}

func jsonTypesFrom(t jsonschema.Types) jsonTypes {
	var set jsonTypes
	for _, name := range t.ToStrings() {
		if i := slices.Index(jsonTypeNames, name); i >= 0 {
			set |= 1 << i
		}
	}
	return set
}

// jsonTypesOf is the set of types a node's own assertions let through: its
// type keyword, else the types of its enum or const values, else all.
func jsonTypesOf(s *jsonschema.Schema) jsonTypes {
	if jsonRejectsAll(s) {
		return 0
	}
	if s.Types != nil {
		return jsonTypesFrom(*s.Types)
	}
	if values := jsonValuesOf(s); values != nil {
		var set jsonTypes
		for _, v := range values {
			set |= jsonTypeOfValue(v)
		}
		return set
	}
	return jsonAllTypes
}

func jsonTypeOfValue(v any) jsonTypes {
	switch v := v.(type) {
	case nil:
		return jsonNull
	case bool:
		return jsonBoolean
	case json.Number:
		if r, ok := new(big.Rat).SetString(v.String()); ok && r.IsInt() {
			return jsonInteger
		}
		return jsonNumber
	case string:
		return jsonString
	case []any:
		return jsonArray
	case map[string]any:
		return jsonObject
	}
	return jsonNumber
}

func (t jsonTypes) has(u jsonTypes) bool { return t&u != 0 }

// intersect returns the types both t and u allow: an integer is a number.
func (t jsonTypes) intersect(u jsonTypes) jsonTypes {
	both := t & u
	if t.has(jsonNumber) && u.has(jsonInteger) || u.has(jsonNumber) && t.has(jsonInteger) {
		both |= jsonInteger
	}
	return both
}

// schemaTypes returns t as the validator's type set.
func (t jsonTypes) schemaTypes() *jsonschema.Types {
	var types jsonschema.Types
	for i, name := range jsonTypeNames {
		if t.has(1 << i) {
			types.Add(name)
		}
	}
	return &types
}

// unreadableBy returns the types in t that a reader allowing reader cannot
// read: an integer reads as a number, not the other way round.
func (t jsonTypes) unreadableBy(reader jsonTypes) jsonTypes {
	if reader.has(jsonNumber) {
		reader |= jsonInteger
	}
	return t &^ reader
}

func (t jsonTypes) String() string {
	if t == jsonAllTypes {
		return "any type"
	}
	var names []string
	for i, name := range jsonTypeNames {
		if t.has(1 << i) {
			names = append(names, name)
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// jsonValuesOf returns the values an enum or const allows, or nil.
func jsonValuesOf(s *jsonschema.Schema) []any {
	switch {
	case s.Const != nil:
		return []any{*s.Const}
	case s.Enum != nil:
		return s.Enum.Values
	}
	return nil
}

// jsonMissing returns the values of want not in have.
func jsonMissing(want, have []any) []any {
	var missing []any
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h any) bool { return jsonEqual(w, h) }) {
			missing = append(missing, w)
		}
	}
	return missing
}

// jsonEqual compares two JSON values, numbers by value.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ar, aok := new(big.Rat).SetString(a.String())
		br, bok := new(big.Rat).SetString(bn.String())
		if aok && bok {
			return ar.Cmp(br) == 0
		}
		return a == bn
	case []any:
		bs, ok := b.([]any)
		return ok && slices.EqualFunc(a, bs, jsonEqual)
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func jsonList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		s, err := canonicalJSON(v)
		if err != nil {
			s = fmt.Sprint(v)
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}
