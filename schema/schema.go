package schema

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
)

// Type is a schema format, by the names Confluent's registry gives them.
type Type string

const (
	Avro     Type = "AVRO"
	Protobuf Type = "PROTOBUF"
	JSON     Type = "JSON"
)

// ParseType reads a schemaType as a registry client sends it: empty means
// AVRO, as in Confluent's API.
func ParseType(s string) (Type, error) {
	switch t := Type(strings.ToUpper(s)); t {
	case "":
		return Avro, nil
	case Avro, Protobuf, JSON:
		return t, nil
	}
	return "", fmt.Errorf("%w: schema type %q (want AVRO, PROTOBUF or JSON)", ErrInvalidSchema, s)
}

// ErrInvalidSchema means a schema does not parse, or names a reference it
// was not given.
var ErrInvalidSchema = errors.New("schema: invalid schema")

// ErrDecode means a record's payload does not decode with its schema.
var ErrDecode = errors.New("schema: payload does not decode")

// Schema is a parsed schema.
type Schema interface {
	Type() Type
	// Canonical is the schema's canonical form: two schemas with the same
	// canonical form are one schema (a normalised rendering per format:
	// doc.go, "Canonical forms"). Its SHA-256 is the fingerprint the
	// registry keeps unique per subject.
	Canonical() string
	// Decode decodes a record payload written with the schema and
	// returns it as JSON, or an error wrapping ErrDecode that says why it
	// does not decode. payload is what follows the wire format's magic
	// byte and four-byte schema id: for PROTOBUF it starts with the
	// message indexes (a zig-zag varint count, then the indexes; a single
	// 0 byte for the first message).
	Decode(payload []byte) ([]byte, error)
}

// Parse parses a schema of type t. deps maps the name of each reference
// the schema makes (an Avro type's full name, a .proto import path, a JSON
// Schema $ref URL) to the text of the schema it names, with the references
// of those schemas too (the registry resolves them transitively).
func Parse(t Type, text string, deps map[string]string) (Schema, error) {
	switch t {
	case Avro:
		return parseAvro(text, deps)
	case Protobuf:
		return parseProtobuf(text, deps)
	case JSON:
		return parseJSON(text, deps)
	}
	return nil, fmt.Errorf("%w: schema type %q", ErrInvalidSchema, t)
}

// Fingerprint is the SHA-256 of s's canonical form, in hex.
func Fingerprint(s Schema) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(s.Canonical())))
}

// Level is a compatibility level, by Confluent's names.
type Level string

const (
	None               Level = "NONE"
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
)

// DefaultLevel is strata's default compatibility level: BACKWARD_TRANSITIVE,
// so a new version can read everything a subject ever held (Confluent's
// default is BACKWARD, against the latest version only).
const DefaultLevel = BackwardTransitive

// ParseLevel reads a compatibility level.
func ParseLevel(s string) (Level, error) {
	switch l := Level(strings.ToUpper(s)); l {
	case None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive:
		return l, nil
	}
	return "", fmt.Errorf("schema: unknown compatibility level %q (want NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE)", s)
}

// Check returns why next may not follow previous (a subject's versions,
// oldest first) under level, or nothing when it may. BACKWARD: next reads
// what the latest version wrote; FORWARD: the latest reads what next
// writes; FULL: both; the transitive levels ask the same of every version.
func Check(level Level, next Schema, previous []Schema) []string {
	if level == None || len(previous) == 0 {
		return nil
	}
	against := previous[len(previous)-1:]
	if strings.HasSuffix(string(level), "_TRANSITIVE") {
		against = previous
	}
	var problems []string
	for i := len(against) - 1; i >= 0; i-- {
		old, which := against[i], "the latest version"
		switch back := len(against) - 1 - i; back {
		case 0:
		case 1:
			which = "the version before the latest"
		default:
			which = fmt.Sprintf("the version %d back from the latest", back)
		}
		if level != Forward && level != ForwardTransitive {
			for _, p := range CanRead(next, old) {
				problems = append(problems, fmt.Sprintf("the new schema reading data of %s: %s", which, p))
			}
		}
		if level != Backward && level != BackwardTransitive {
			for _, p := range CanRead(old, next) {
				problems = append(problems, fmt.Sprintf("%s reading the new schema's data: %s", which, p))
			}
		}
	}
	return problems
}

// CanRead returns why data written with writer cannot be read with reader,
// by Confluent's rules for their format, or nothing when it can. Schemas
// of different types never can.
func CanRead(reader, writer Schema) []string {
	if reader.Type() != writer.Type() {
		return []string{fmt.Sprintf("the schema type changed from %s to %s", writer.Type(), reader.Type())}
	}
	switch r := reader.(type) {
	case *avroSchema:
		return avroCanRead(r, writer.(*avroSchema))
	case *protobufSchema:
		return protobufCanRead(r, writer.(*protobufSchema))
	case *jsonSchema:
		return jsonCanRead(r, writer.(*jsonSchema))
	}
	return []string{fmt.Sprintf("schema type %s has no compatibility rules", reader.Type())}
}
