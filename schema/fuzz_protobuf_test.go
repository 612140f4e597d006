package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzParseProtobuf: any schema text, with one reference, either fails
// with ErrInvalidSchema or parses to a schema that parses again to the
// same canonical form, reads its own data, and decodes an empty message.
// The text's bytes are also tried as a serialized FileDescriptorProto.
func FuzzParseProtobuf(f *testing.F) {
	f.Add(`syntax = "proto3"; package shop; message Order { int32 id = 1; string note = 2; }`, "")
	f.Add(`syntax = "proto2"; message M { required int32 id = 1; optional group G = 2 { optional int32 x = 3; } extensions 100 to 200; }`, "")
	f.Add(`edition = "2023"; message M { int32 x = 1 [features.field_presence = IMPLICIT]; }`, "")
	f.Add(`syntax = "proto3"; import "dep.proto"; message M { Dep d = 1; map<string, Dep> m = 2; oneof o { int32 a = 3; string b = 4; } }`,
		`syntax = "proto3"; message Dep { repeated Dep children = 1; enum E { Z = 0; } E e = 2; }`)
	f.Add(`syntax = "proto3"; import "google/protobuf/descriptor.proto"; extend google.protobuf.MessageOptions { string owner = 50001; } message M { option (owner) = "x"; }`, "")
	f.Add(`syntax = "proto3"; import public "dep.proto"; service S { rpc Get(Dep) returns (stream Dep); }`, `syntax = "proto3"; message Dep {}`)
	f.Add(`syntax = "proto3"; message M { int32 x = 1`, "")
	// A serialized descriptor, in base64 and as raw bytes.
	const serialized = `CgxzY2hlbWEucHJvdG8iZAoBTRIMCgF4GAEgASgFUgF4EhcKAW0YAiADKAsyCS5NLk1FbnRyeVIBbRo4CgZNRW50cnkSEAoDa2V5GAEgASgJUgNrZXkSGAoFdmFsdWUYAiABKAsyAi5NUgV2YWx1ZToCOAFiBnByb3RvMw==`
	f.Add(serialized, "")
	raw, err := base64.StdEncoding.DecodeString(serialized)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(raw), "")
	f.Fuzz(func(t *testing.T, text, dep string) {
		deps := map[string]string{"dep.proto": dep}
		checkParseProtobuf(t, text, deps)
		checkParseProtobuf(t, base64.StdEncoding.EncodeToString([]byte(text)), deps)
	})
}

func checkParseProtobuf(t *testing.T, text string, deps map[string]string) {
	s, err := Parse(Protobuf, text, deps)
	if err != nil {
		if !errors.Is(err, ErrInvalidSchema) {
			t.Fatalf("Parse error %v does not wrap ErrInvalidSchema", err)
		}
		return
	}
	again, err := Parse(Protobuf, text, deps)
	if err != nil {
		t.Fatalf("parses once, then not: %v", err)
	}
	if again.Canonical() != s.Canonical() {
		t.Fatalf("two canonical forms:\n%s\n%s", s.Canonical(), again.Canonical())
	}
	if problems := CanRead(again, s); len(problems) != 0 {
		t.Fatalf("cannot read its own data: %q", problems)
	}
	out, err := s.Decode([]byte{0})
	if err != nil && !errors.Is(err, ErrDecode) {
		t.Fatalf("Decode error %v does not wrap ErrDecode", err)
	}
	if err == nil && !json.Valid(out) {
		t.Fatalf("Decode returned invalid JSON %q", out)
	}
}

// fuzzDecodeProtobufSchema has a little of everything a payload can hold.
const fuzzDecodeProtobufSchema = `syntax = "proto3";
package fuzz;
import "google/protobuf/any.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/wrappers.proto";
message Record {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
  float fl = 11; double db = 12; bool b = 13; string s = 14; bytes by = 15;
  Kind kind = 16;
  repeated int32 packed = 17;
  repeated string names = 18;
  map<string, Record> children = 19;
  map<int64, Kind> kinds = 20;
  oneof choice { string text = 21; Record nested = 22; }
  optional int32 maybe = 23;
  google.protobuf.Any any = 24;
  google.protobuf.Timestamp at = 25;
  google.protobuf.Duration took = 26;
  google.protobuf.Struct doc = 27;
  google.protobuf.Value value = 28;
  google.protobuf.Int64Value wrapped = 29;
  message Inner { string note = 1; message Deeper { bytes raw = 1; } }
  Inner inner = 30;
}
message Other { repeated Record records = 1; }
enum Kind { KIND_UNKNOWN = 0; KIND_A = 1; }
`

// FuzzDecodeProtobuf: any payload decodes to valid JSON or fails with
// ErrDecode, and never panics.
func FuzzDecodeProtobuf(f *testing.F) {
	s, err := Parse(Protobuf, fuzzDecodeProtobufSchema, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0})
	f.Add([]byte{0, 0x08, 0x96, 0x01, 0x72, 0x02, 'h', 'i'})                    // i32 = 150, s = "hi"
	f.Add([]byte{2, 2, 0x0a, 0x00})                                             // Other, one empty record
	f.Add([]byte{4, 0, 0, 0x0a, 0x02, 0x08, 0x01})                              // Record.Inner
	f.Add([]byte{6, 0, 0, 0, 0x0a, 0x01, 0xff})                                 // Record.Inner.Deeper
	f.Add([]byte{0, 0xca, 0x01, 0x04, 0x08, 0xff, 0xff, 0x7f})                  // at
	f.Add([]byte{0, 0x9a, 0x01, 0x07, 0x0a, 0x01, 'a', 0x12, 0x02, 0x08, 0x01}) // children
	// any, holding an Other.
	other := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x08, 0x07})
	anyValue := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "type.googleapis.com/fuzz.Other")
	anyValue = protowire.AppendBytes(protowire.AppendTag(anyValue, 2, protowire.BytesType), other)
	f.Add(protowire.AppendBytes(protowire.AppendTag([]byte{0}, 24, protowire.BytesType), anyValue))
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := s.Decode(payload)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("Decode error %v does not wrap ErrDecode", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Decode returned invalid JSON %q", out)
		}
	})
}
