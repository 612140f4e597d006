package schema

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func mustParseProtobuf(t testing.TB, text string, deps map[string]string) *protobufSchema {
	t.Helper()
	s, err := Parse(Protobuf, text, deps)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return s.(*protobufSchema)
}

func TestProtobufParse(t *testing.T) {
	t.Parallel()
	const dep = `syntax = "proto3";
package shop.common;
import "shop/money.proto";
message Customer { string id = 1; shop.common.Money credit = 2; }
`
	const money = `syntax = "proto3";
package shop.common;
message Money { string currency = 1; int64 units = 2; }
`
	tests := []struct {
		name string
		text string
		deps map[string]string
		// want is "" for a schema that parses, else a piece of the error.
		want string
	}{
		{name: "proto3", text: `syntax = "proto3"; package shop; message Order { int32 id = 1; string note = 2; }`},
		{name: "proto2 required", text: `syntax = "proto2"; message Order { required int32 id = 1; optional string note = 2; }`},
		{name: "editions", text: `edition = "2023"; message Order { int32 id = 1; }`},
		{name: "enum only", text: `syntax = "proto3"; enum Status { UNKNOWN = 0; PAID = 1; }`},
		{
			name: "well-known imports",
			text: `syntax = "proto3";
import "google/protobuf/timestamp.proto";
import "google/protobuf/any.proto";
import "google/protobuf/wrappers.proto";
message Order { google.protobuf.Timestamp at = 1; google.protobuf.Any extra = 2; google.protobuf.StringValue note = 3; }`,
		},
		{
			name: "imports through deps, transitively",
			text: `syntax = "proto3"; package shop; import "shop/customer.proto"; message Order { shop.common.Customer customer = 1; }`,
			deps: map[string]string{"shop/customer.proto": dep, "shop/money.proto": money},
		},
		{
			name: "a dependency named like the schema",
			text: `syntax = "proto3"; import "schema.proto"; message Order { Other other = 1; }`,
			deps: map[string]string{"schema.proto": `syntax = "proto3"; message Other { int32 x = 1; }`},
		},
		{
			name: "syntax error with its position",
			text: "syntax = \"proto3\";\nmessage Order {\n  int32 id = 1\n}\n",
			want: "schema.proto:4:1: syntax error",
		},
		{
			name: "unknown type with its position",
			text: "syntax = \"proto3\";\nmessage Order {\n  Money total = 1;\n}\n",
			want: "schema.proto:3:3: field Order.total: unknown type Money",
		},
		{
			name: "missing reference",
			text: "syntax = \"proto3\";\nimport \"shop/customer.proto\";\nmessage Order { int32 id = 1; }\n",
			want: `schema.proto:2:8: could not resolve path "shop/customer.proto": not among the schema's references`,
		},
		{
			name: "reference of a reference missing",
			text: `syntax = "proto3"; import "shop/customer.proto"; message Order { shop.common.Customer c = 1; }`,
			deps: map[string]string{"shop/customer.proto": dep},
			want: `shop/customer.proto:3:8: could not resolve path "shop/money.proto"`,
		},
		{
			name: "error in a reference",
			text: `syntax = "proto3"; import "bad.proto"; message Order { int32 id = 1; }`,
			deps: map[string]string{"bad.proto": "syntax = \"proto3\";\nmessage Bad { strin x = 1; }\n"},
			want: "bad.proto:2:15: field Bad.x: unknown type strin",
		},
		{name: "duplicate field number", text: `syntax = "proto3"; message Order { int32 a = 1; int32 b = 1; }`, want: "schema.proto:1:"},
		{name: "import cycle", text: `syntax = "proto3"; import "a.proto"; message M { int32 x = 1; }`, deps: map[string]string{"a.proto": `syntax = "proto3"; import "a.proto";`}, want: "cycle"},
		{name: "empty", text: "", want: "declares no message"},
		{name: "only a syntax line", text: `syntax = "proto3";`, want: "declares no message"},
		{name: "not protobuf", text: `{"type": "record"}`, want: "schema.proto:1:1: syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(Protobuf, tt.text, tt.deps)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if s.Type() != Protobuf || s.Canonical() == "" {
					t.Fatalf("Type %q, Canonical %q", s.Type(), s.Canonical())
				}
				return
			}
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error %v, want ErrInvalidSchema with %q", err, tt.want)
			}
		})
	}
}

// The text of a schema may also be a base64 FileDescriptorProto, as
// Confluent's registry accepts; it compiles to the same schema.
func TestProtobufParseSerialized(t *testing.T) {
	t.Parallel()
	const text = `syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto";
message Order { int32 id = 1; google.protobuf.Timestamp at = 2; map<string, int64> counts = 3; }`
	source := mustParseProtobuf(t, text, nil)
	fdp := protodesc.ToFileDescriptorProto(source.file)
	fdp.Name = proto.String("order.proto")
	raw, err := proto.Marshal(fdp)
	if err != nil {
		t.Fatal(err)
	}
	serialized := mustParseProtobuf(t, base64.StdEncoding.EncodeToString(raw), nil)
	if serialized.Canonical() != source.Canonical() {
		t.Fatalf("serialized descriptor has another canonical form than its source")
	}
	if got := serialized.file.Messages().Get(0).FullName(); got != "shop.Order" {
		t.Fatalf("first message %s", got)
	}

	// Descriptors that do not link, or that protoc could not have written,
	// are invalid schemas too.
	missing := proto.Clone(fdp).(*descriptorpb.FileDescriptorProto)
	missing.Dependency = append(missing.Dependency, "missing.proto")
	nameless := &descriptorpb.FileDescriptorProto{MessageType: []*descriptorpb.DescriptorProto{{}}}
	badPublic := &descriptorpb.FileDescriptorProto{PublicDependency: []int32{52}}
	for _, bad := range []*descriptorpb.FileDescriptorProto{missing, nameless, badPublic} {
		raw, _ = proto.Marshal(bad)
		if _, err := Parse(Protobuf, base64.StdEncoding.EncodeToString(raw), nil); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("Parse(%v): %v, want ErrInvalidSchema", bad, err)
		}
	}
}

func TestProtobufCanonical(t *testing.T) {
	t.Parallel()
	const base = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "shop/money.proto";
option java_package = "com.example.shop";
option go_package = "example.com/shop";
message Order {
  int32 id = 1;
  shop.Money total = 2 [deprecated = true, json_name = "sum"];
  google.protobuf.Timestamp at = 3;
  reserved 10 to 12;
}
`
	// The same schema, written otherwise.
	const same = `// An order.
syntax='proto3';package shop ;
/* imports, in another order */
import 'shop/money.proto';   import "google/protobuf/timestamp.proto";
option go_package = "example.com/shop";
option java_package = "com.example.shop";   // options swapped
message Order
{
	int32 id = 0x1;                                  // hex
	.shop.Money total = 2 [json_name = "sum", deprecated = true];
	google.protobuf.Timestamp at = 3;
	reserved 10 to 12;
}
`
	money := map[string]string{"shop/money.proto": `syntax = "proto3"; package shop; message Money { int64 units = 1; }`}
	want := mustParseProtobuf(t, base, money)
	if got := mustParseProtobuf(t, same, money); got.Canonical() != want.Canonical() || Fingerprint(got) != Fingerprint(want) {
		t.Fatalf("whitespace, comments, quoting and order of options change the canonical form:\n%s\n%s", got.Canonical(), want.Canonical())
	}
	// The canonical form is a FileDescriptorSet: the schema, then its references.
	raw, err := base64.StdEncoding.DecodeString(want.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.File) != 2 || set.File[0].GetName() != "" || set.File[1].GetName() != "shop/money.proto" {
		t.Fatalf("canonical form holds files %v", set.File)
	}

	differs := []struct {
		name string
		text string
		deps map[string]string
	}{
		{"field type", strings.Replace(base, "int32 id", "int64 id", 1), money},
		{"field name", strings.Replace(base, "int32 id", "int32 order_id", 1), money},
		{"field number", strings.Replace(base, "id = 1", "id = 4", 1), money},
		{"field option", strings.Replace(base, "deprecated = true, ", "", 1), money},
		{"file option", strings.Replace(base, "com.example.shop", "com.example.orders", 1), money},
		{"package", strings.Replace(base, "package shop;", "package shop; option cc_enable_arenas = true;", 1), money},
		{"reserved", strings.Replace(base, "10 to 12", "10 to 13", 1), money},
		{"reference text", base, map[string]string{"shop/money.proto": `syntax = "proto3"; package shop; message Money { int64 cents = 1; }`}},
	}
	for _, d := range differs {
		if got := mustParseProtobuf(t, d.text, d.deps); got.Canonical() == want.Canonical() || Fingerprint(got) == Fingerprint(want) {
			t.Errorf("%s: changing it leaves the canonical form alone", d.name)
		}
	}

	// Custom options are stored as unknown fields: their order in the
	// source does not matter either.
	options := map[string]string{"opts.proto": `syntax = "proto3"; import "google/protobuf/descriptor.proto";
extend google.protobuf.MessageOptions { string owner = 50001; int32 tier = 50002; }`}
	a := mustParseProtobuf(t, `syntax = "proto3"; import "opts.proto"; message M { option (owner) = "team"; option (tier) = 2; int32 x = 1; }`, options)
	b := mustParseProtobuf(t, `syntax = "proto3"; import "opts.proto"; message M { option (tier) = 2; option (owner) = "team"; int32 x = 1; }`, options)
	c := mustParseProtobuf(t, `syntax = "proto3"; import "opts.proto"; message M { option (tier) = 3; option (owner) = "team"; int32 x = 1; }`, options)
	if a.Canonical() != b.Canonical() {
		t.Errorf("the order of custom options changes the canonical form")
	}
	if a.Canonical() == c.Canonical() {
		t.Errorf("a custom option's value leaves the canonical form alone")
	}

	// A serialized descriptor carries custom options as unknown fields,
	// in the order its writer chose.
	owner := protowire.AppendString(protowire.AppendTag(nil, 50001, protowire.BytesType), "team")
	tier := protowire.AppendVarint(protowire.AppendTag(nil, 50002, protowire.VarintType), 2)
	for _, unknown := range [][]byte{append(slices.Clip(owner), tier...), append(slices.Clip(tier), owner...)} {
		fdp := protodesc.ToFileDescriptorProto(a.file)
		fdp.MessageType[0].Options = new(descriptorpb.MessageOptions)
		fdp.MessageType[0].Options.ProtoReflect().SetUnknown(unknown)
		raw, err := proto.Marshal(fdp)
		if err != nil {
			t.Fatal(err)
		}
		serialized := mustParseProtobuf(t, base64.StdEncoding.EncodeToString(raw), options)
		if serialized.Canonical() != a.Canonical() {
			t.Errorf("serialized descriptor with options %x: another canonical form than its source", unknown)
		}
	}
}

// protobufLevels are the results Check gives at each level for a schema
// next following one previous version: backward is whether next reads
// data previous wrote, forward whether previous reads data next writes.
func protobufLevels(backward, forward bool) map[Level]bool {
	return map[Level]bool{
		None:               true,
		Backward:           backward,
		BackwardTransitive: backward,
		Forward:            forward,
		ForwardTransitive:  forward,
		Full:               backward && forward,
		FullTransitive:     backward && forward,
	}
}

var allLevels = []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

func TestProtobufCompatibility(t *testing.T) {
	t.Parallel()
	const order = `syntax = "proto3";
message Order {
  int32 id = 1;
  int32 amount = 2;
  repeated string tags = 3;
  repeated int32 codes = 4;
  Customer customer = 5;
  map<string, int32> counts = 6;
  Status status = 7;
  oneof payment {
    string card = 8;
    string iban = 9;
  }
  string note = 10;
  string memo = 11;
  message Line { int32 sku = 1; fixed32 qty = 2; }
  repeated Line lines = 12;
}
message Customer { string name = 1; sint32 age = 2; }
enum Status { UNKNOWN = 0; PAID = 1; SHIPPED = 2; }
`
	edit := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(order) }
	tests := []struct {
		name              string
		previous, next    string
		backward, forward bool
		// problem is part of what CanRead(next, previous) says when
		// backward fails, or CanRead(previous, next) when only forward
		// does.
		problem string
	}{
		{name: "same", previous: order, next: order, backward: true, forward: true},
		{name: "add field", previous: order, next: edit("string memo = 11;", "string memo = 11; int64 total = 13;"), backward: true, forward: true},
		{name: "remove field", previous: order, next: edit("int32 amount = 2;", ""), backward: true, forward: true},
		{name: "rename field", previous: order, next: edit("int32 amount = 2;", "int32 amount_cents = 2;"), backward: true, forward: true},
		{
			name: "int32 to string", previous: order, next: edit("int32 amount = 2;", "string amount = 2;"),
			problem: `message Order field 2 ("amount"): type changed from int32 to string`,
		},
		{name: "int32 to int64", previous: order, next: edit("int32 amount = 2;", "int64 amount = 2;"), backward: true, forward: true},
		{name: "int32 to bool and uint64", previous: order, next: edit("int32 id = 1;", "bool id = 1;", "int32 amount = 2;", "uint64 amount = 2;"), backward: true, forward: true},
		{name: "enum to int32", previous: order, next: edit("Status status = 7;", "int32 status = 7;"), backward: true, forward: true},
		{name: "string to bytes", previous: order, next: edit("string note = 10;", "bytes note = 10;"), backward: true, forward: true},
		{name: "fixed32 to sfixed32", previous: order, next: edit("fixed32 qty", "sfixed32 qty"), backward: true, forward: true},
		{
			name: "int32 to sint32", previous: order, next: edit("int32 amount = 2;", "sint32 amount = 2;"),
			problem: `message Order field 2 ("amount"): type changed from int32 to sint32`,
		},
		{
			name: "fixed32 to fixed64 in a nested message", previous: order, next: edit("fixed32 qty", "fixed64 qty"),
			problem: `message Order.Line field 2 ("qty"): type changed from fixed32 to fixed64`,
		},
		{
			name: "field number reused with another type", previous: order, next: edit("int32 amount = 2;", "string comment = 2;"),
			problem: `message Order field 2 ("comment", was "amount"): type changed from int32 to string`,
		},
		{
			name: "scalar to message", previous: order, next: edit("int32 amount = 2;", "Customer amount = 2;"),
			problem: `message Order field 2 ("amount"): type changed from int32 to message Customer`,
		},
		{
			name: "message type renamed", previous: order, next: edit("Customer customer = 5;", "Order.Line customer = 5;"),
			problem: `message Order field 5 ("customer"): type changed from message Customer to message Order.Line`,
		},
		{
			name: "field of a referenced message changed", previous: order, next: edit("sint32 age = 2;", "string age = 2;"),
			problem: `message Order field 5 ("customer"): message type Customer changed incompatibly`,
		},
		{
			name: "map value type changed", previous: order, next: edit("map<string, int32> counts", "map<string, string> counts"),
			problem: `message Order field 6 ("counts") map value: type changed from int32 to string`,
		},
		{name: "map value widened", previous: order, next: edit("map<string, int32> counts", "map<string, int64> counts"), backward: true, forward: true},
		{
			name: "map to repeated message", previous: order, next: edit("map<string, int32> counts", "repeated Customer counts"),
			problem: `message Order field 6 ("counts"): type changed from map<string, int32> to repeated message Customer`,
		},
		{
			name: "repeated number to singular", previous: order, next: edit("repeated int32 codes", "int32 codes"),
			problem: `message Order field 4 ("codes"): changed from repeated int32 to int32`,
		},
		{name: "repeated string to singular", previous: order, next: edit("repeated string tags", "string tags"), backward: true, forward: true},
		{name: "repeated message to singular", previous: order, next: edit("repeated Line lines", "Line lines"), backward: true, forward: true},
		{
			name: "message removed", previous: order, next: edit("message Customer { string name = 1; sint32 age = 2; }", "", "Customer customer = 5;", ""),
			backward: false, forward: true, problem: "message Customer was removed",
		},
		{
			name: "nested message removed", previous: order, next: edit("message Line { int32 sku = 1; fixed32 qty = 2; }", "", "repeated Line lines = 12;", ""),
			backward: false, forward: true, problem: "message Order.Line was removed",
		},
		{
			name: "first message renamed", previous: order, next: edit("message Order {", "message Purchase {", "Order.Line", "Purchase.Line"),
			problem: "message Order was removed",
		},
		{name: "messages reordered", previous: order, next: edit("message Customer { string name = 1; sint32 age = 2; }", "") + "message Customer { string name = 1; sint32 age = 2; }", backward: true, forward: true},
		{name: "enum value added and removed", previous: order, next: edit("SHIPPED = 2;", "CANCELLED = 3;"), backward: true, forward: true},
		{name: "package added", previous: order, next: edit(`syntax = "proto3";`, `syntax = "proto3"; package shop;`), problem: `package changed from "" to "shop"`},
		{name: "field moved into a new oneof", previous: order, next: edit("string note = 10;", "oneof remark { string note = 10; }"), backward: true, forward: true},
		{
			name: "fields moved into one oneof", previous: order, next: edit("string note = 10;", "", "string memo = 11;", "oneof remark { string note = 10; string memo = 11; }"),
			backward: false, forward: true, problem: `message Order: fields 10 ("note"), 11 ("memo") were moved into oneof "remark"`,
		},
		{
			name: "field moved into an existing oneof", previous: order, next: edit("string note = 10;", "", "string iban = 9;", "string iban = 9; string note = 10;"),
			backward: false, forward: true, problem: `message Order: field 10 ("note") was moved into oneof "payment", which holds fields of another oneof`,
		},
		{
			name: "field removed from a oneof", previous: order, next: edit("string iban = 9;", ""),
			backward: false, forward: true, problem: `message Order oneof "payment": field 9 ("iban") was removed`,
		},
		// The reverse of moving a field into an existing oneof.
		{
			name: "field moved out of a oneof", previous: order, next: edit("string iban = 9;", "", "string memo = 11;", "string memo = 11; string iban = 9;"),
			backward: true, forward: false, problem: `message Order: field 9 ("iban") was moved into oneof "payment", which holds fields of another oneof`,
		},
		{name: "oneof renamed", previous: order, next: edit("oneof payment", "oneof method"), backward: true, forward: true},
		{name: "oneof added", previous: order, next: edit("string memo = 11;", "string memo = 11; oneof extra { int32 a = 20; int32 b = 21; }"), backward: true, forward: true},
		{
			name: "type changed inside a oneof", previous: order, next: edit("string card = 8;", "int64 card = 8;"),
			problem: `message Order field 8 ("card"): type changed from string to int64`,
		},
		{
			name: "type changed while moving into a oneof", previous: order, next: edit("string note = 10;", "oneof remark { int32 note = 10; }"),
			problem: `message Order field 10 ("note"): type changed from string to int32`,
		},
		{
			name: "proto2 to proto3", previous: `syntax = "proto2"; message M { optional int32 x = 1; }`, next: `syntax = "proto3"; message M { optional int32 x = 1; }`,
			problem: "syntax changed from proto2 to proto3",
		},
		{name: "proto3 optional added", previous: order, next: edit("int32 amount = 2;", "optional int32 amount = 2;"), backward: true, forward: true},
		{
			name: "required field added", previous: `syntax = "proto2"; message M { optional int32 x = 1; }`, next: `syntax = "proto2"; message M { optional int32 x = 1; required int32 y = 2; }`,
			problem: `message M field 2 ("y"): required field was added`,
		},
		{name: "optional field added in proto2", previous: `syntax = "proto2"; message M { optional int32 x = 1; }`, next: `syntax = "proto2"; message M { optional int32 x = 1; optional int32 y = 2; }`, backward: true, forward: true},
		{
			name: "required field removed", previous: `syntax = "proto2"; message M { optional int32 x = 1; required int32 y = 2; }`, next: `syntax = "proto2"; message M { optional int32 x = 1; }`,
			problem: `message M field 2 ("y"): required field was removed`,
		},
		{
			name: "optional made required", previous: `syntax = "proto2"; message M { optional string x = 1; }`, next: `syntax = "proto2"; message M { required string x = 1; }`,
			problem: `message M field 1 ("x"): changed from optional to required`,
		},
		{
			name: "recursive message changed", previous: `syntax = "proto3"; message Node { string name = 1; repeated Node children = 2; }`, next: `syntax = "proto3"; message Node { bytes name = 1; repeated Node children = 2; int32 depth = 3; }`,
			backward: true, forward: true,
		},
		{
			name: "recursive message broken", previous: `syntax = "proto3"; message Node { string name = 1; repeated Node children = 2; }`, next: `syntax = "proto3"; message Node { double name = 1; repeated Node children = 2; }`,
			problem: `message Node field 1 ("name"): type changed from string to double`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			previous, next := mustParseProtobuf(t, tt.previous, nil), mustParseProtobuf(t, tt.next, nil)
			if tt.backward && tt.forward && tt.problem != "" {
				t.Fatal("a compatible case with a problem to look for")
			}
			for level, ok := range protobufLevels(tt.backward, tt.forward) {
				problems := Check(level, next, []Schema{previous})
				if ok != (len(problems) == 0) {
					t.Errorf("%s: problems %q, want compatible %v", level, problems, ok)
				}
				// Forward-only levels do not run the backward check.
				backwardChecked := level != Forward && level != ForwardTransitive
				textChecked := tt.backward || backwardChecked
				if !ok && textChecked && tt.problem != "" &&
					!slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.problem) }) {
					t.Errorf("%s: problems %q do not say %q", level, problems, tt.problem)
				}
			}
		})
	}
}

// A referenced message's changes count through its reference.
func TestProtobufCompatibilityThroughReferences(t *testing.T) {
	t.Parallel()
	const text = `syntax = "proto3"; package shop; import "shop/customer.proto"; message Order { shop.common.Customer customer = 1; }`
	v1 := mustParseProtobuf(t, text, map[string]string{"shop/customer.proto": `syntax = "proto3"; package shop.common; message Customer { int32 id = 1; }`})
	v2 := mustParseProtobuf(t, text, map[string]string{"shop/customer.proto": `syntax = "proto3"; package shop.common; message Customer { int64 id = 1; string name = 2; }`})
	v3 := mustParseProtobuf(t, text, map[string]string{"shop/customer.proto": `syntax = "proto3"; package shop.common; message Customer { string id = 1; }`})
	if problems := Check(FullTransitive, v2, []Schema{v1}); len(problems) != 0 {
		t.Fatalf("widening a referenced field: %q", problems)
	}
	want := []string{
		`the new schema reading data of the latest version: message shop.common.Customer field 1 ("id"): type changed from int64 to string`,
		`the new schema reading data of the latest version: message shop.Order field 1 ("customer"): message type shop.common.Customer changed incompatibly`,
	}
	if problems := Check(Backward, v3, []Schema{v1, v2}); !slices.Equal(problems, want) {
		t.Fatalf("problems %q, want %q", problems, want)
	}
}

// v3 reads what v2 wrote but not what v1 did: only the transitive levels
// see it.
func TestProtobufCompatibilityTransitive(t *testing.T) {
	t.Parallel()
	v1 := mustParseProtobuf(t, `syntax = "proto3"; message Order { int32 id = 1; int32 amount = 2; }`, nil)
	v2 := mustParseProtobuf(t, `syntax = "proto3"; message Order { int32 id = 1; }`, nil)
	v3 := mustParseProtobuf(t, `syntax = "proto3"; message Order { int32 id = 1; string amount = 2; }`, nil)
	history := []Schema{v1, v2}
	for _, level := range allLevels {
		want := !strings.HasSuffix(string(level), "_TRANSITIVE")
		problems := Check(level, v3, history)
		if want != (len(problems) == 0) {
			t.Errorf("%s: problems %q, want compatible %v", level, problems, want)
		}
		if !want && !slices.Contains(problems, `the new schema reading data of the version before the latest: message Order field 2 ("amount"): type changed from int32 to string`) &&
			!slices.Contains(problems, `the version before the latest reading the new schema's data: message Order field 2 ("amount"): type changed from string to int32`) {
			t.Errorf("%s: problems %q do not name the field", level, problems)
		}
	}
	// The default level is transitive.
	if problems := Check(DefaultLevel, v3, history); len(problems) == 0 {
		t.Errorf("the default level lets v3 follow v1")
	}
}

const decodeSchema = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/any.proto";
message Order {
  int32 id = 1;
  string note = 2;
  map<string, int32> counts = 3;
  message Line {
    int64 sku = 1;
    Status status = 2;
    message Detail { string text = 1; }
  }
  repeated Line lines = 4;
  google.protobuf.Timestamp at = 5;
  google.protobuf.Any extra = 6;
  bytes blob = 7;
}
message Customer { string name = 1; }
enum Status { UNKNOWN = 0; PAID = 1; }
`

// protobufPayload is Confluent's message indexes for path, then message.
func protobufPayload(path []int64, message []byte) []byte {
	var b []byte
	if len(path) == 1 && path[0] == 0 {
		b = []byte{0}
	} else {
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(len(path))))
		for _, i := range path {
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(i))
		}
	}
	return append(b, message...)
}

func TestProtobufDecode(t *testing.T) {
	t.Parallel()
	s := mustParseProtobuf(t, decodeSchema, nil)
	order := s.file.Messages().ByName("Order")

	// An order built with dynamicpb.
	m := dynamicpb.NewMessage(order)
	m.Set(order.Fields().ByName("id"), protoreflect.ValueOfInt32(7))
	counts := m.Mutable(order.Fields().ByName("counts")).Map()
	counts.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfInt32(2))
	lines := m.Mutable(order.Fields().ByName("lines")).List()
	lineType := order.Messages().ByName("Line")
	line := dynamicpb.NewMessage(lineType)
	line.Set(lineType.Fields().ByName("sku"), protoreflect.ValueOfInt64(1234567890123))
	line.Set(lineType.Fields().ByName("status"), protoreflect.ValueOfEnum(1))
	lines.Append(protoreflect.ValueOfMessage(line))
	at := m.Mutable(order.Fields().ByName("at")).Message()
	at.Set(at.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1700000000))
	customer := dynamicpb.NewMessage(s.file.Messages().ByName("Customer"))
	customer.Set(customer.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString("Ada"))
	customerBytes, _ := proto.Marshal(customer)
	extra := m.Mutable(order.Fields().ByName("extra")).Message()
	extra.Set(extra.Descriptor().Fields().ByName("type_url"), protoreflect.ValueOfString("type.googleapis.com/shop.Customer"))
	extra.Set(extra.Descriptor().Fields().ByName("value"), protoreflect.ValueOfBytes(customerBytes))
	orderBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const orderJSON = `{"id":7,"note":"","counts":{"a":2},"lines":[{"sku":"1234567890123","status":"PAID"}],` +
		`"at":"2023-11-14T22:13:20Z","extra":{"@type":"type.googleapis.com/shop.Customer","name":"Ada"},"blob":""}`

	// A Line.Detail written with protowire, field by field.
	detail := protowire.AppendTag(nil, 1, protowire.BytesType)
	detail = protowire.AppendString(detail, "fragile")
	// A field the schema does not know, and then a known one.
	withUnknown := protowire.AppendTag(nil, 99, protowire.VarintType)
	withUnknown = protowire.AppendVarint(withUnknown, 5)
	withUnknown = protowire.AppendTag(withUnknown, 1, protowire.BytesType)
	withUnknown = protowire.AppendString(withUnknown, "Grace")

	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"first message, by the 0 byte", protobufPayload([]int64{0}, orderBytes), orderJSON},
		{"first message, by a full path", append([]byte{2, 0}, orderBytes...), orderJSON},
		{"empty message prints its defaults", []byte{0}, `{"id":0,"note":"","counts":{},"lines":[],"blob":""}`},
		{"second message", protobufPayload([]int64{1}, customerBytes), `{"name":"Ada"}`},
		// Order's nested messages are [CountsEntry, Line] in the
		// descriptor; Confluent counts declared messages only, so
		// Line is 0.
		{"nested message after a map field", protobufPayload([]int64{0, 0}, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 9)), `{"sku":"9","status":"UNKNOWN"}`},
		{"nested two deep", protobufPayload([]int64{0, 0, 0}, detail), `{"text":"fragile"}`},
		{"unknown fields are skipped", protobufPayload([]int64{1}, withUnknown), `{"name":"Grace"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Decode(tt.payload)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("Decode:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestProtobufDecodeErrors(t *testing.T) {
	t.Parallel()
	s := mustParseProtobuf(t, decodeSchema, nil)
	proto2 := mustParseProtobuf(t, `syntax = "proto2"; message M { required int32 id = 1; optional string s = 2; }`, nil)
	truncated := protowire.AppendTag(nil, 2, protowire.BytesType)
	truncated = protowire.AppendVarint(truncated, 10)
	truncated = append(truncated, "abc"...)
	badUTF8 := protowire.AppendTag(nil, 2, protowire.BytesType)
	badUTF8 = protowire.AppendBytes(badUTF8, []byte{0xff, 0xfe})
	badUnknown := protowire.AppendTag(nil, 50, protowire.BytesType) // length missing
	// A counts entry whose key comes twice, the second time as a varint:
	// the protobuf runtime panics on it.
	entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "a")
	entry = protowire.AppendVarint(protowire.AppendTag(entry, 1, protowire.VarintType), 1)
	doubleKey := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), entry)

	tests := []struct {
		name    string
		schema  *protobufSchema
		payload []byte
		want    string
	}{
		{"no message indexes", s, nil, "message index count"},
		{"truncated count", s, []byte{0x80}, "message index count"},
		{"count past the payload", s, []byte{8, 0}, "message index count 4"},
		{"negative count", s, []byte{1}, "message index count -1"},
		{"truncated index", s, []byte{2, 0x80}, "message index 0"},
		{"index past the messages", s, protobufPayload([]int64{2}, nil), "the file has no message 2"},
		{"negative index", s, protobufPayload([]int64{-1}, nil), "the file has no message -1"},
		{"nested index past the messages", s, protobufPayload([]int64{0, 1}, nil), "message shop.Order has no message 1"},
		{"index into a message without nested ones", s, protobufPayload([]int64{1, 0}, nil), "message shop.Customer has no message 0"},
		{"index out of 32 bits", s, append([]byte{2}, protowire.AppendVarint(nil, 1<<33)...), "out of 32-bit range"},
		{"truncated message", s, protobufPayload([]int64{0}, truncated), "message shop.Order"},
		{"invalid UTF-8 in a proto3 string", s, protobufPayload([]int64{0}, badUTF8), "UTF-8"},
		{"malformed unknown field", s, protobufPayload([]int64{0}, badUnknown), "message shop.Order"},
		{"map key twice, once with the wrong wire type", s, protobufPayload([]int64{0}, doubleKey), "the protobuf runtime failed"},
		{"missing required field", proto2, protobufPayload([]int64{0}, nil), "required field"},
		{"invalid UTF-8 in a proto2 string", proto2, protobufPayload([]int64{0}, append(protowire.AppendVarint([]byte{8}, 1), badUTF8...)), "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.schema.Decode(tt.payload)
			if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode = %s, %v; want ErrDecode saying %q", got, err, tt.want)
			}
		})
	}
}
