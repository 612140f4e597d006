package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/schema"
)

// schemaSource is what decoding records asks of the registry; *sr.Client
// has it, and tests give a fake.
type schemaSource interface {
	SchemaByID(ctx context.Context, id int) (sr.Schema, error)
	SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
}

// recordDecoder decodes keys and values in the schema registry's wire
// format (magic byte 0, a big-endian four-byte schema id, the payload)
// with their schemas, which it fetches from the registry once per id,
// with the schemas they reference (by subject and version, transitively),
// and parses with package schema. It is used by one goroutine.
type recordDecoder struct {
	source  schemaSource
	timeout time.Duration // per registry request; 0: none
	// explain turns a registry failure into the line to print; nil: as
	// it is.
	explain func(error, registryTarget) error
	schemas map[int]decoderSchema
	// referenced holds the referenced schemas fetched, by subject and
	// version.
	referenced map[sr.SubjectVersion]sr.SubjectSchema
}

// decoderSchema is a schema id's parsed schema, or why records that
// name it do not decode.
type decoderSchema struct {
	schema schema.Schema
	err    error
}

func newRecordDecoder(source schemaSource, timeout time.Duration, explain func(error, registryTarget) error) *recordDecoder {
	return &recordDecoder{
		source: source, timeout: timeout, explain: explain,
		schemas: map[int]decoderSchema{}, referenced: map[sr.SubjectVersion]sr.SubjectSchema{},
	}
}

// undecodableError is why one key or value does not decode: the record
// is skipped and the rest go on. Other errors from decode (the registry
// cannot be reached, or refuses the login) stop the command.
type undecodableError struct{ err error }

func (e *undecodableError) Error() string { return e.err.Error() }
func (e *undecodableError) Unwrap() error { return e.err }

// decode returns data decoded as JSON, and the schema id it named; data
// without the wire format comes back as nil, 0, nil.
func (d *recordDecoder) decode(ctx context.Context, data []byte) ([]byte, int, error) {
	if len(data) < 5 || data[0] != 0 {
		return nil, 0, nil
	}
	id := int(binary.BigEndian.Uint32(data[1:5]))
	s, err := d.schema(ctx, id)
	if err != nil {
		return nil, id, err
	}
	if s.err != nil {
		return nil, id, &undecodableError{s.err}
	}
	out, err := s.schema.Decode(data[5:])
	if err != nil {
		return nil, id, &undecodableError{fmt.Errorf("does not decode with schema id %d: %v", id, strings.TrimPrefix(err.Error(), schema.ErrDecode.Error()+": "))}
	}
	return out, id, nil
}

// schema is the parsed schema with id, fetched and parsed once.
func (d *recordDecoder) schema(ctx context.Context, id int) (decoderSchema, error) {
	if s, ok := d.schemas[id]; ok {
		return s, nil
	}
	var fetched sr.Schema
	err := d.ask(ctx, registryTarget{id: id}, func(ctx context.Context) (err error) {
		fetched, err = d.source.SchemaByID(ctx, id)
		return err
	})
	if err != nil {
		if !notFound(err) {
			return decoderSchema{}, err
		}
		s := decoderSchema{err: fmt.Errorf("names schema id %d, which the registry does not have", id)}
		d.schemas[id] = s
		return s, nil
	}
	deps := map[string]string{}
	if err := d.resolve(ctx, fetched.References, deps); err != nil {
		var bad *undecodableError
		if !errors.As(err, &bad) {
			return decoderSchema{}, err
		}
		s := decoderSchema{err: fmt.Errorf("schema id %d: %w", id, bad.err)}
		d.schemas[id] = s
		return s, nil
	}
	s := decoderSchema{}
	if s.schema, err = schema.Parse(schema.Type(fetched.Type.String()), fetched.Schema, deps); err != nil {
		s = decoderSchema{err: fmt.Errorf("schema id %d does not parse here: %v", id, strings.TrimPrefix(err.Error(), schema.ErrInvalidSchema.Error()+": "))}
	}
	d.schemas[id] = s
	return s, nil
}

// resolve gathers the texts of the schemas refs name, with theirs, by
// reference name, into deps, as the registry resolves them. A reference
// the registry does not have is an undecodableError.
func (d *recordDecoder) resolve(ctx context.Context, refs []sr.SchemaReference, deps map[string]string) error {
	for _, ref := range refs {
		if _, done := deps[ref.Name]; done {
			continue
		}
		key := sr.SubjectVersion{Subject: ref.Subject, Version: ref.Version}
		ss, ok := d.referenced[key]
		if !ok {
			err := d.ask(ctx, registryTarget{subject: ref.Subject, version: strconv.Itoa(ref.Version)}, func(ctx context.Context) (err error) {
				// A record written before its reference was soft-deleted
				// still decodes.
				ss, err = d.source.SchemaByVersion(sr.WithParams(ctx, sr.ShowDeleted), ref.Subject, ref.Version)
				return err
			})
			if err != nil {
				if notFound(err) {
					return &undecodableError{fmt.Errorf("reference %q names subject %q version %d, which the registry does not have", ref.Name, ref.Subject, ref.Version)}
				}
				return err
			}
			d.referenced[key] = ss
		}
		deps[ref.Name] = ss.Schema.Schema
		if err := d.resolve(ctx, ss.References, deps); err != nil {
			return err
		}
	}
	return nil
}

// ask runs one registry request within the decoder's timeout, and
// explains its failure unless it is a not-found the caller reads.
func (d *recordDecoder) ask(ctx context.Context, target registryTarget, request func(context.Context) error) error {
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	err := request(ctx)
	if err == nil || notFound(err) || d.explain == nil {
		return err
	}
	return d.explain(err, target)
}

// notFound reports whether err is the registry answering 404: the id,
// subject or version is not there.
func notFound(err error) bool {
	var answer *sr.ResponseError
	return errors.As(err, &answer) && (answer.StatusCode == http.StatusNotFound || answer.ErrorCode/100 == 404)
}
