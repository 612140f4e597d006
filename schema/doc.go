// Package schema is the three schema formats of a Confluent-compatible
// schema registry, AVRO, PROTOBUF and JSON (JSON Schema), each parsed by a
// maintained library (hamba/avro, protocompile with dynamicpb,
// santhosh-tekuri/jsonschema): parsing with references, a canonical form
// whose SHA-256 (Fingerprint) identifies a schema, compatibility by
// Confluent's rules at the seven levels (Check, CanRead), and decoding a
// record's payload to JSON (Schema.Decode). It imports nothing of strata's:
// package registry keeps the schemas and serves them.
//
// # Usage
//
//	s, err := schema.Parse(schema.Avro, text, deps) // deps: each reference's text, by name
//	id := schema.Fingerprint(s)                    // the same schema, the same fingerprint
//	problems := schema.Check(schema.BackwardTransitive, s, previousVersions)
//	json, err := s.Decode(payload)                 // payload: after the 5-byte wire header
//
// # Canonical forms
//
// AVRO: the schema as hamba writes it out, full names and every attribute
// that bears on reading (defaults and aliases, which Avro's Parsing
// Canonical Form drops, are kept: compatibility depends on them). PROTOBUF:
// the compiled file descriptor (and those of its references), marshalled
// deterministically, so whitespace, comments and option order drop out.
// JSON: the schema's JSON with sorted keys and no whitespace.
//
// # Compatibility
//
// Check asks, for BACKWARD, that the new schema read what the latest
// version wrote; FORWARD, the reverse; FULL, both; the transitive levels
// ask it of every version. Each problem names the version and the
// direction, then the field ("the new schema reading data of the latest
// version: field "age": type changed from int to string"). Per format:
// avro.go (the Avro specification's resolution rules), protobuf.go
// (Confluent's wire-compatibility rules; a syntax change is refused,
// stricter than Confluent), json_compat.go (the main of Confluent's
// content-model rules; what is not analysed must be unchanged).
//
// # Decoding
//
// Decode refuses, with ErrDecode, a payload that does not decode whole:
// truncated, trailing bytes, a bad union or enum index, invalid UTF-8,
// PROTOBUF message indexes that name no message. Panics two libraries
// raised on hostile input (a repeated map key in protobuf-go, numbers near
// 1e1000000 in jsonschema) are contained. The fuzz targets
// (fuzz_*_test.go) keep their corpus in testdata/fuzz.
package schema
