package schema

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protobufSchema is a compiled .proto file.
//
// Parsing. The text is compiled with protocompile as a file named
// "schema.proto" (another name if a dependency already has that path), so
// errors read "schema.proto:LINE:COL: …". Each import is looked up first in
// deps, by import path, then among the files protoc ships
// (google/protobuf/timestamp.proto and the other well-known types).
// Confluent's own built-ins (confluent/meta.proto, google/type/*.proto) are
// not built in: pass them in deps. As in Confluent's registry, the text may
// also be a base64 serialized FileDescriptorProto. A file that declares no
// message, enum, service or extension is refused.
//
// Canonical form. The base64 of a deterministically marshalled
// FileDescriptorSet: the compiled schema file (its name cleared), then every
// file it imports, directly or not, that came from deps, sorted by path.
// Well-known imports appear only as import paths, so the form does not move
// when the protobuf module is upgraded. Compiling drops whitespace and
// comments and resolves type names (Foo, pkg.Foo and .pkg.Foo are one
// reference); number syntax (0x10 or 16), string quoting and the order of
// options disappear in the descriptor (custom options too: the compiler
// stores them as extensions, and the fields a serialized descriptor holds
// as unknown are sorted stably by number); imports are sorted. What stays
// significant: the order of messages
// (message indexes in payloads count on it), of fields, enum values, oneofs,
// services and methods, and everything with a meaning on the wire or in
// generated code (names, numbers, labels, types, options, json_name).
//
// Payloads. Decode reads Confluent's message indexes (a zig-zag varint
// count, then that many zig-zag varint indexes; a count of 0, the single
// byte 0, means [0]), picks the message the path names (the first index
// into the file's top-level messages, each next one into the previous
// message's nested messages, counting only declared messages, not the
// entries protoc synthesises for map fields, as Confluent's Java
// serializers count them), unmarshals the rest with dynamicpb and renders
// it with protojson as Confluent's ProtobufSchemaUtils.toJson does: JSON
// field names, fields without presence printed even at their default, no
// insignificant whitespace. Unknown fields are accepted and left out of
// the JSON, as Confluent's deserializer accepts them; unknown fields with
// malformed wire bytes, missing proto2 required fields and invalid UTF-8 in
// proto3 strings are decode errors.
//
// Compatibility follows Confluent's protobuf SchemaDiff; see
// protobufCanRead.
type protobufSchema struct {
	file protoreflect.FileDescriptor
	// types resolves the schema's own messages and extensions, for
	// extensions in payloads and google.protobuf.Any values.
	types     *dynamicpb.Types
	canonical string
}

func (*protobufSchema) Type() Type          { return Protobuf }
func (s *protobufSchema) Canonical() string { return s.canonical }

// protobufFileName is the path the schema text is compiled under.
const protobufFileName = "schema.proto"

func parseProtobuf(text string, deps map[string]string) (Schema, error) {
	name := protobufFileName
	for i := 1; ; i++ {
		if _, taken := deps[name]; !taken {
			break
		}
		name = fmt.Sprintf("schema_%d.proto", i)
	}
	serialized := protobufSerializedDescriptor(text)
	if serialized != nil {
		serialized.Name = proto.String(name)
	}
	resolver := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == name {
			if serialized != nil {
				return protocompile.SearchResult{Proto: serialized}, nil
			}
			return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
		}
		if dep, ok := deps[path]; ok {
			return protocompile.SearchResult{Source: strings.NewReader(dep)}, nil
		}
		return protocompile.SearchResult{}, errProtobufNoSuchImport
	})
	compiler := protocompile.Compiler{Resolver: protocompile.WithStandardImports(resolver)}
	files, err := compiler.Compile(context.Background(), name)
	if err != nil {
		var panicked protocompile.PanicError
		if errors.As(err, &panicked) {
			return nil, fmt.Errorf("%w: protobuf compiler failed on %s: %v", ErrInvalidSchema, panicked.File, panicked.Value)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	file := files[0]
	if file.Messages().Len() == 0 && file.Enums().Len() == 0 && file.Services().Len() == 0 && file.Extensions().Len() == 0 {
		return nil, fmt.Errorf("%w: %s declares no message, enum, service or extension", ErrInvalidSchema, name)
	}
	registry, seen := new(protoregistry.Files), map[string]bool{}
	imports := file.Imports()
	for i := range imports.Len() {
		protobufRegister(registry, imports.Get(i).FileDescriptor, seen)
	}
	if serialized != nil {
		// The compiler checks a descriptor less than source (it lets a
		// message have no name): check it as the protobuf runtime does.
		if _, err := protodesc.NewFile(protobufDescriptorProto(file), registry); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
		}
	}
	protobufRegister(registry, file, seen)
	canonical, err := protobufCanonical(file, deps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &protobufSchema{file: file, types: dynamicpb.NewTypes(registry), canonical: canonical}, nil
}

// errProtobufNoSuchImport is why an import does not resolve. The compiler
// prefixes it with the position of the import and its path.
var errProtobufNoSuchImport = fmt.Errorf("not among the schema's references or the well-known imports: %w", fs.ErrNotExist)

// protobufSerializedDescriptor returns text as a FileDescriptorProto when
// it is one in base64, or nil. Source text never decodes: it has spaces,
// quotes or semicolons.
func protobufSerializedDescriptor(text string) *descriptorpb.FileDescriptorProto {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil
	}
	file := new(descriptorpb.FileDescriptorProto)
	if err := proto.Unmarshal(raw, file); err != nil {
		return nil
	}
	file.SourceCodeInfo = nil
	return file
}

// protobufRegister adds file and everything it imports to registry.
func protobufRegister(registry *protoregistry.Files, file protoreflect.FileDescriptor, seen map[string]bool) {
	if seen[file.Path()] {
		return
	}
	seen[file.Path()] = true
	imports := file.Imports()
	for i := range imports.Len() {
		protobufRegister(registry, imports.Get(i).FileDescriptor, seen)
	}
	// The compiler has already refused conflicting symbols.
	_ = registry.RegisterFile(file)
}

func protobufCanonical(file protoreflect.FileDescriptor, deps map[string]string) (string, error) {
	main := protobufDescriptorProto(file)
	main.Name = nil
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{main}}

	var fromDeps []protoreflect.FileDescriptor
	seen := map[string]bool{file.Path(): true}
	var walk func(protoreflect.FileDescriptor)
	walk = func(f protoreflect.FileDescriptor) {
		imports := f.Imports()
		for i := range imports.Len() {
			imported := imports.Get(i).FileDescriptor
			if seen[imported.Path()] {
				continue
			}
			seen[imported.Path()] = true
			if _, ok := deps[imported.Path()]; ok {
				fromDeps = append(fromDeps, imported)
			}
			walk(imported)
		}
	}
	walk(file)
	slices.SortFunc(fromDeps, func(a, b protoreflect.FileDescriptor) int { return cmp.Compare(a.Path(), b.Path()) })
	for _, dep := range fromDeps {
		set.File = append(set.File, protobufDescriptorProto(dep))
	}
	for _, f := range set.File {
		protobufSortImports(f)
		protobufSortUnknown(f.ProtoReflect())
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// protobufDescriptorProto returns a copy of file's descriptor proto,
// without source info, that the caller may change.
func protobufDescriptorProto(file protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	var fdp *descriptorpb.FileDescriptorProto
	if res, ok := file.(linker.Result); ok {
		fdp = proto.Clone(res.FileDescriptorProto()).(*descriptorpb.FileDescriptorProto)
	} else {
		fdp = protodesc.ToFileDescriptorProto(file)
	}
	fdp.SourceCodeInfo = nil
	return fdp
}

// protobufSortImports sorts a file's imports, keeping the public and weak
// markers on the imports they mark.
func protobufSortImports(f *descriptorpb.FileDescriptorProto) {
	public := map[string]bool{}
	for _, i := range f.PublicDependency {
		if int(i) >= 0 && int(i) < len(f.Dependency) {
			public[f.Dependency[i]] = true
		}
	}
	weak := map[string]bool{}
	for _, i := range f.WeakDependency {
		if int(i) >= 0 && int(i) < len(f.Dependency) {
			weak[f.Dependency[i]] = true
		}
	}
	slices.Sort(f.Dependency)
	f.PublicDependency, f.WeakDependency = nil, nil
	for i, dep := range f.Dependency {
		if public[dep] {
			f.PublicDependency = append(f.PublicDependency, int32(i))
		}
		if weak[dep] {
			f.WeakDependency = append(f.WeakDependency, int32(i))
		}
	}
}

// protobufSortUnknown sorts the unknown fields of m and of every message
// under it by field number, keeping the order of fields with one number
// (for a repeated field it is the order of the values).
func protobufSortUnknown(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			list := v.List()
			for i := range list.Len() {
				protobufSortUnknown(list.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				protobufSortUnknown(v.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			protobufSortUnknown(v.Message())
		}
		return true
	})
	unknown := m.GetUnknown()
	if len(unknown) == 0 {
		return
	}
	type field struct {
		number protowire.Number
		raw    []byte
	}
	var fields []field
	for rest := unknown; len(rest) > 0; {
		number, _, n := protowire.ConsumeField(rest)
		if n < 0 {
			return // leave bytes we cannot split as they are
		}
		fields = append(fields, field{number, rest[:n]})
		rest = rest[n:]
	}
	slices.SortStableFunc(fields, func(a, b field) int { return cmp.Compare(a.number, b.number) })
	sorted := make([]byte, 0, len(unknown))
	for _, f := range fields {
		sorted = append(sorted, f.raw...)
	}
	m.SetUnknown(sorted)
}

// Decode returns the payload's message as JSON; see protobufSchema.
func (s *protobufSchema) Decode(payload []byte) ([]byte, error) {
	message, rest, err := s.messageAt(payload)
	if err != nil {
		return nil, err
	}
	return s.decodeMessage(message, rest)
}

// decodeMessage decodes b as a message and renders it as JSON. It turns a
// panic into ErrDecode: google.golang.org/protobuf v1.36.12 panics ("cannot
// convert nil to map key") unmarshalling, into a dynamicpb message, a map
// entry whose key field comes twice, the second time with a wrong wire
// type, and no record may take the broker down.
func (s *protobufSchema) decodeMessage(message protoreflect.MessageDescriptor, b []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: message %s: the protobuf runtime failed: %v", ErrDecode, message.FullName(), p)
		}
	}()
	decoded := dynamicpb.NewMessage(message)
	if err := (proto.UnmarshalOptions{Resolver: s.types}).Unmarshal(b, decoded); err != nil {
		return nil, fmt.Errorf("%w: message %s: %v", ErrDecode, message.FullName(), err)
	}
	rendered, err := protojson.MarshalOptions{EmitDefaultValues: true, Resolver: protobufTypes{s.types}}.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("%w: message %s: %v", ErrDecode, message.FullName(), err)
	}
	// protojson varies its whitespace on purpose; compact it to one form.
	var compact bytes.Buffer
	if err := json.Compact(&compact, rendered); err != nil {
		return nil, fmt.Errorf("%w: message %s: %v", ErrDecode, message.FullName(), err)
	}
	return compact.Bytes(), nil
}

// messageAt reads the message indexes at the start of payload and returns
// the message they name and the bytes after them.
func (s *protobufSchema) messageAt(payload []byte) (protoreflect.MessageDescriptor, []byte, error) {
	count, rest, err := protobufZigZag(payload)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: message index count: %v", ErrDecode, err)
	}
	path := []int64{0}
	if count != 0 {
		// Each index takes at least a byte.
		if count < 0 || count > int64(len(rest)) {
			return nil, nil, fmt.Errorf("%w: message index count %d with %d bytes left", ErrDecode, count, len(rest))
		}
		path = make([]int64, count)
		for i := range path {
			if path[i], rest, err = protobufZigZag(rest); err != nil {
				return nil, nil, fmt.Errorf("%w: message index %d: %v", ErrDecode, i, err)
			}
		}
	}
	var message protoreflect.MessageDescriptor
	messages, parent := s.file.Messages(), "the file"
	for _, index := range path {
		if message = protobufNthMessage(messages, index); message == nil {
			return nil, nil, fmt.Errorf("%w: message indexes %v: %s has no message %d", ErrDecode, path, parent, index)
		}
		messages, parent = message.Messages(), "message "+string(message.FullName())
	}
	return message, rest, nil
}

// protobufNthMessage returns the index'th declared message of messages
// (map entries do not count), or nil.
func protobufNthMessage(messages protoreflect.MessageDescriptors, index int64) protoreflect.MessageDescriptor {
	if index < 0 {
		return nil
	}
	for i := range messages.Len() {
		m := messages.Get(i)
		if m.IsMapEntry() {
			continue
		}
		if index == 0 {
			return m
		}
		index--
	}
	return nil
}

// protobufZigZag reads a zig-zag varint that fits in 32 bits, as Confluent
// writes message indexes.
func protobufZigZag(b []byte) (int64, []byte, error) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, nil, protowire.ParseError(n)
	}
	x := protowire.DecodeZigZag(v)
	if x < -1<<31 || x > 1<<31-1 || v > 1<<32-1 {
		return 0, nil, fmt.Errorf("varint %d out of 32-bit range", x)
	}
	return x, b[n:], nil
}

// protobufTypes resolves types for protojson: the schema's own first, then
// the ones linked into the binary (the well-known types among them), for
// google.protobuf.Any values of types the schema does not import.
type protobufTypes struct{ local *dynamicpb.Types }

func (t protobufTypes) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := t.local.FindMessageByName(name); err == nil {
		return mt, nil
	}
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

func (t protobufTypes) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := t.local.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

func (t protobufTypes) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return t.local.FindExtensionByName(name)
}

func (t protobufTypes) FindExtensionByNumber(message protoreflect.FullName, number protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return t.local.FindExtensionByNumber(message, number)
}

// protobufCanRead returns why data written with writer cannot be read with
// reader, by the rules of Confluent's protobuf SchemaDiff (writer is its
// "original", reader its "update"). Refused, as there:
//   - a message of writer's missing from reader (matched by name, at each
//     level of nesting; renaming the first message is removing it);
//   - a package change;
//   - a field number whose type changes kind (scalar or enum, message,
//     map) or, among scalars, wire group: int32, int64, uint32, uint64,
//     bool and enums; sint32 and sint64; fixed32 and sfixed32; fixed64
//     and sfixed64; string and bytes; float; double;
//   - a field number whose message type changes name (without the
//     package) or changes, compared recursively, incompatibly; map keys
//     and values compare the same way;
//   - a numeric scalar or enum field changing between repeated and
//     singular (string, bytes and message fields may);
//   - a required field added or removed;
//   - a field removed from a oneof (unless it stays in the message);
//     several existing fields moved into one oneof; one field moved into
//     a oneof that holds fields from another oneof.
//
// Allowed, as there: adding or removing optional fields, enums, enum
// values and oneofs; adding messages; renaming fields; reordering
// messages; moving one field into a new oneof; changes within a wire group
// (int32 to int64, string to bytes, an enum to int32).
//
// Where strata differs: a change of syntax (proto2, proto3, editions) is
// refused, as the rules for presence, enums and defaults change with it;
// a field changing between required and not is refused for every type,
// as is a numeric field changing between repeated and singular when
// proto3 leaves the label implicit; extension fields are not compared
// (Confluent does not compare them either).
func protobufCanRead(reader, writer *protobufSchema) []string {
	d := protobufDiff{seen: map[string]bool{}, compared: map[[2]protoreflect.FullName]bool{}}
	d.files(writer.file, reader.file)
	return d.problems
}

// protobufDiff collects the problems of one protobufCanRead.
type protobufDiff struct {
	problems []string
	seen     map[string]bool
	// found counts problems, repeats included, so that a comparison can
	// tell whether it found any.
	found int
	// compared holds, per (writer, reader) message pair, whether the pair
	// is incompatible; false while the pair is being compared, so that
	// recursive types end.
	compared map[[2]protoreflect.FullName]bool
}

func (d *protobufDiff) add(format string, args ...any) {
	d.found++
	problem := fmt.Sprintf(format, args...)
	if !d.seen[problem] {
		d.seen[problem] = true
		d.problems = append(d.problems, problem)
	}
}

func (d *protobufDiff) files(writer, reader protoreflect.FileDescriptor) {
	if writer.Syntax() != reader.Syntax() {
		d.add("syntax changed from %s to %s", writer.Syntax(), reader.Syntax())
	}
	if writer.Package() != reader.Package() {
		d.add("package changed from %q to %q", writer.Package(), reader.Package())
	}
	d.messageLists(writer.Messages(), reader.Messages())
}

// messageLists compares the messages declared at one level, by name, and
// reports whether any is incompatible.
func (d *protobufDiff) messageLists(writer, reader protoreflect.MessageDescriptors) bool {
	byName := map[protoreflect.Name]protoreflect.MessageDescriptor{}
	for i := range reader.Len() {
		if m := reader.Get(i); !m.IsMapEntry() {
			byName[m.Name()] = m
		}
	}
	bad := false
	for i := range writer.Len() {
		w := writer.Get(i)
		if w.IsMapEntry() {
			continue
		}
		r, ok := byName[w.Name()]
		if !ok {
			d.add("message %s was removed", w.FullName())
			bad = true
			continue
		}
		if d.messages(w, r) {
			bad = true
		}
	}
	return bad
}

// messages compares two messages and the messages nested in them, and
// reports whether they are incompatible.
func (d *protobufDiff) messages(writer, reader protoreflect.MessageDescriptor) bool {
	key := [2]protoreflect.FullName{writer.FullName(), reader.FullName()}
	if bad, ok := d.compared[key]; ok {
		return bad
	}
	d.compared[key] = false
	before := d.found
	d.fields(writer, reader)
	nestedBad := d.messageLists(writer.Messages(), reader.Messages())
	bad := nestedBad || d.found > before
	d.compared[key] = bad
	return bad
}

// protobufFields indexes a message's fields by number.
type protobufFields struct {
	all map[protoreflect.FieldNumber]protoreflect.FieldDescriptor
	// outside holds the fields in no oneof (proto3 optional fields, whose
	// oneof is synthetic, among them).
	outside map[protoreflect.FieldNumber]protoreflect.FieldDescriptor
	oneofOf map[protoreflect.FieldNumber]protoreflect.Name
	oneofs  []protoreflect.OneofDescriptor
	byName  map[protoreflect.Name]protoreflect.OneofDescriptor
}

func protobufIndexFields(m protoreflect.MessageDescriptor) protobufFields {
	f := protobufFields{
		all:     map[protoreflect.FieldNumber]protoreflect.FieldDescriptor{},
		outside: map[protoreflect.FieldNumber]protoreflect.FieldDescriptor{},
		oneofOf: map[protoreflect.FieldNumber]protoreflect.Name{},
		byName:  map[protoreflect.Name]protoreflect.OneofDescriptor{},
	}
	fields := m.Fields()
	for i := range fields.Len() {
		field := fields.Get(i)
		f.all[field.Number()] = field
		if oneof := field.ContainingOneof(); oneof != nil && !oneof.IsSynthetic() {
			f.oneofOf[field.Number()] = oneof.Name()
		} else {
			f.outside[field.Number()] = field
		}
	}
	oneofs := m.Oneofs()
	for i := range oneofs.Len() {
		if oneof := oneofs.Get(i); !oneof.IsSynthetic() {
			f.oneofs = append(f.oneofs, oneof)
			f.byName[oneof.Name()] = oneof
		}
	}
	return f
}

func (d *protobufDiff) fields(writer, reader protoreflect.MessageDescriptor) {
	w, r := protobufIndexFields(writer), protobufIndexFields(reader)
	name := reader.FullName()

	// Fields moving into a oneof.
	wOutside := maps.Clone(w.outside)
	for _, oneof := range r.oneofs {
		var moved []string
		existing := 0
		fields := oneof.Fields()
		for i := range fields.Len() {
			number := fields.Get(i).Number()
			if old, ok := wOutside[number]; ok {
				moved = append(moved, protobufFieldRef(old, fields.Get(i)))
				delete(wOutside, number)
			} else if _, ok := w.oneofOf[number]; ok {
				existing++
			}
		}
		switch {
		case len(moved) > 1:
			d.add("message %s: fields %s were moved into oneof %q", name, strings.Join(moved, ", "), oneof.Name())
		case len(moved) == 1 && existing > 0:
			d.add("message %s: field %s was moved into oneof %q, which holds fields of another oneof", name, moved[0], oneof.Name())
		}
	}

	// Fields of a oneof that both have.
	for _, oneof := range w.oneofs {
		ro, ok := r.byName[oneof.Name()]
		if !ok {
			continue
		}
		numbers := protobufOneofNumbers(oneof, ro)
		for _, number := range numbers {
			wf, rf := oneof.Fields().ByNumber(number), ro.Fields().ByNumber(number)
			switch {
			case rf == nil && r.all[number] == nil:
				d.add("message %s oneof %q: field %s was removed", name, oneof.Name(), protobufFieldRef(wf, nil))
			case wf != nil && rf != nil:
				d.field(name, wf, rf)
			}
		}
	}

	// Fields in no oneof.
	for _, number := range protobufNumbers(wOutside, r.outside) {
		wf, rf := wOutside[number], r.outside[number]
		switch {
		case rf == nil:
			if wf.Cardinality() == protoreflect.Required {
				d.add("message %s field %s: required field was removed", name, protobufFieldRef(wf, nil))
			}
		case wf == nil:
			if rf.Cardinality() == protoreflect.Required {
				d.add("message %s field %s: required field was added", name, protobufFieldRef(nil, rf))
			}
		default:
			d.field(name, wf, rf)
		}
	}

	// Fields whose oneof changed: into or out of one, or to another.
	for _, number := range protobufNumbers(w.all, r.all) {
		wf, rf := w.all[number], r.all[number]
		if wf == nil || rf == nil {
			continue
		}
		wo, wIn := w.oneofOf[number]
		ro, rIn := r.oneofOf[number]
		if (!wIn && !rIn) || (wIn && rIn && wo == ro) {
			continue
		}
		d.field(name, wf, rf)
	}
}

// protobufNumbers returns the field numbers of a and b, in order.
func protobufNumbers(a, b map[protoreflect.FieldNumber]protoreflect.FieldDescriptor) []protoreflect.FieldNumber {
	var numbers []protoreflect.FieldNumber
	for n := range a {
		numbers = append(numbers, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			numbers = append(numbers, n)
		}
	}
	slices.Sort(numbers)
	return numbers
}

func protobufOneofNumbers(a, b protoreflect.OneofDescriptor) []protoreflect.FieldNumber {
	seen := map[protoreflect.FieldNumber]bool{}
	var numbers []protoreflect.FieldNumber
	for _, o := range []protoreflect.OneofDescriptor{a, b} {
		for i := range o.Fields().Len() {
			if n := o.Fields().Get(i).Number(); !seen[n] {
				seen[n] = true
				numbers = append(numbers, n)
			}
		}
	}
	slices.Sort(numbers)
	return numbers
}

// protobufFieldRef names a field by number and name, and by its old name
// too when it was renamed.
func protobufFieldRef(writer, reader protoreflect.FieldDescriptor) string {
	switch {
	case reader == nil:
		return fmt.Sprintf("%d (%q)", writer.Number(), writer.Name())
	case writer == nil || writer.Name() == reader.Name():
		return fmt.Sprintf("%d (%q)", reader.Number(), reader.Name())
	}
	return fmt.Sprintf("%d (%q, was %q)", reader.Number(), reader.Name(), writer.Name())
}

// field compares two fields with one number.
func (d *protobufDiff) field(message protoreflect.FullName, writer, reader protoreflect.FieldDescriptor) {
	where := fmt.Sprintf("message %s field %s", message, protobufFieldRef(writer, reader))
	wRequired, rRequired := writer.Cardinality() == protoreflect.Required, reader.Cardinality() == protoreflect.Required
	if wRequired != rRequired {
		d.add("%s: changed from %s to %s", where, protobufLabel(writer), protobufLabel(reader))
	}
	d.fieldType(where, writer, reader, true)
}

func (d *protobufDiff) fieldType(where string, writer, reader protoreflect.FieldDescriptor, labels bool) {
	wKind, rKind := protobufKindOf(writer), protobufKindOf(reader)
	if wKind != rKind {
		d.add("%s: type changed from %s to %s", where, protobufTypeName(writer), protobufTypeName(reader))
		return
	}
	switch wKind {
	case "map":
		d.fieldType(where+" map key", writer.MapKey(), reader.MapKey(), false)
		d.fieldType(where+" map value", writer.MapValue(), reader.MapValue(), false)
	case "message", "group":
		wm, rm := writer.Message(), reader.Message()
		if protobufLocalName(wm) != protobufLocalName(rm) {
			d.add("%s: type changed from %s to %s", where, protobufTypeName(writer), protobufTypeName(reader))
			return
		}
		if d.messages(wm, rm) {
			d.add("%s: message type %s changed incompatibly", where, rm.FullName())
		}
	case "scalar":
		wGroup, rGroup := protobufWireGroup(writer.Kind()), protobufWireGroup(reader.Kind())
		if wGroup != rGroup {
			d.add("%s: type changed from %s to %s", where, protobufTypeName(writer), protobufTypeName(reader))
			return
		}
		if labels && writer.IsList() != reader.IsList() && wGroup != "length-delimited" {
			d.add("%s: changed from %s to %s (a number cannot change between repeated and singular)", where, protobufTypeName(writer), protobufTypeName(reader))
		}
	}
}

func protobufKindOf(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map"
	case f.Kind() == protoreflect.MessageKind:
		return "message"
	case f.Kind() == protoreflect.GroupKind:
		return "group"
	}
	return "scalar"
}

// protobufWireGroup groups the scalar kinds that read each other's values,
// as Confluent's FieldSchemaDiff does.
func protobufWireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "length-delimited"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	}
	return k.String() // float, double
}

// protobufTypeName renders a field's type as a .proto file writes it.
func protobufTypeName(f protoreflect.FieldDescriptor) string {
	var name string
	switch {
	case f.IsMap():
		return fmt.Sprintf("map<%s, %s>", protobufTypeName(f.MapKey()), protobufTypeName(f.MapValue()))
	case f.Kind() == protoreflect.MessageKind:
		name = "message " + string(f.Message().FullName())
	case f.Kind() == protoreflect.GroupKind:
		name = "group " + string(f.Message().FullName())
	case f.Kind() == protoreflect.EnumKind:
		name = "enum " + string(f.Enum().FullName())
	default:
		name = f.Kind().String()
	}
	if f.IsList() {
		name = "repeated " + name
	}
	return name
}

func protobufLabel(f protoreflect.FieldDescriptor) string {
	switch f.Cardinality() {
	case protoreflect.Required:
		return "required"
	case protoreflect.Repeated:
		return "repeated"
	}
	return "optional"
}

// protobufLocalName is a message's full name without its file's package.
func protobufLocalName(m protoreflect.MessageDescriptor) string {
	name := string(m.FullName())
	if pkg := string(m.ParentFile().Package()); pkg != "" {
		name = strings.TrimPrefix(name, pkg+".")
	}
	return name
}
