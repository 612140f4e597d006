package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/schema"
)

// Meta is what the registry needs of the metadata group; *meta.Node
// satisfies it.
type Meta interface {
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, error)
	State() *meta.State
	LinearizableState(ctx context.Context) (*meta.State, error)
}

// Registry is the schema registry: the rules of Confluent's Schema
// Registry over the schemas kept in meta. Handler serves it over HTTP;
// Lookup serves the broker's checks on produce. It is safe for concurrent
// use.
type Registry struct {
	meta    Meta
	log     *slog.Logger
	metrics *metrics

	// parsed caches schemas by id: a schema's text and references never
	// change under its id.
	mu     sync.Mutex
	parsed map[int32]schema.Schema
}

// New returns a registry over m. reg receives its metrics (nil: none).
func New(m Meta, log *slog.Logger, reg prometheus.Registerer) (*Registry, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Registry{meta: m, log: log, metrics: newMetrics(), parsed: map[int32]schema.Schema{}}
	if err := r.metrics.register(reg); err != nil {
		return nil, err
	}
	return r, nil
}

// Errors, each one of Confluent's error codes (apiError).
var (
	errSubjectNotFound   = apiError{40401, "Subject not found"}
	errVersionNotFound   = apiError{40402, "Version not found"}
	errSchemaNotFound    = apiError{40403, "Schema not found"}
	errSubjectDeleted    = apiError{40404, "Subject was soft deleted"}
	errSubjectNotDeleted = apiError{40405, "Subject was not deleted first before being permanently deleted"}
	errVersionDeleted    = apiError{40406, "Version was soft deleted"}
	errVersionNotDeleted = apiError{40407, "Version was not deleted first before being permanently deleted"}
	errNoSubjectConfig   = apiError{40408, "Subject has no compatibility level set"}
	errNoSubjectMode     = apiError{40409, "Subject has no mode set"}
	errInvalidSchema     = apiError{42201, "Invalid schema"}
	errInvalidVersion    = apiError{42202, "Invalid version"}
	errInvalidLevel      = apiError{42203, "Invalid compatibility level"}
	errInvalidMode       = apiError{42204, "Invalid mode"}
	errReadOnly          = apiError{42205, "Operation not permitted: the registry or subject is READONLY"}
	errReferenced        = apiError{42206, "One or more references exist to the schema"}
	errInvalidSubject    = apiError{42208, "Invalid subject"}
	errIncompatible      = apiError{409, "Schema being registered is incompatible with an earlier schema"}
)

// checkSubject refuses a subject name to write under that Confluent's
// registry refuses (empty, or holding a control character) and one that
// is not UTF-8: meta's commands are JSON, which would store it under
// another name, with U+FFFD for each bad byte.
func checkSubject(name string) error {
	if name == "" || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return errInvalidSubject.with("subject %q: want UTF-8 without control characters", name)
	}
	return nil
}

// apiError is an error as Confluent's registry answers it: the error code
// (whose first three digits are the HTTP status) and a message.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e apiError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// with returns e with detail added to its message.
func (e apiError) with(format string, args ...any) apiError {
	e.Message += "; " + fmt.Sprintf(format, args...)
	return e
}

// status is the HTTP status of e.
func (e apiError) status() int {
	for c := e.Code; ; c /= 10 {
		if c < 1000 {
			return c
		}
	}
}

// fromMeta turns meta's precondition errors into the registry's.
func fromMeta(err error) error {
	for _, m := range []struct {
		err error
		api apiError
	}{
		{meta.ErrSubjectNotFound, errSubjectNotFound},
		{meta.ErrSchemaVersionNotFound, errVersionNotFound},
		{meta.ErrSubjectSoftDeleted, errSubjectDeleted},
		{meta.ErrVersionSoftDeleted, errVersionDeleted},
		{meta.ErrVersionNotSoftDeleted, errVersionNotDeleted},
		{meta.ErrSchemaReferenced, errReferenced},
		{meta.ErrRegistryReadOnly, errReadOnly},
	} {
		if errors.Is(err, m.err) {
			return m.api.with("%v", err)
		}
	}
	return err
}

// level is the compatibility level in force for subject.
func level(st *meta.State, subject string) schema.Level {
	if sub, ok := st.Subject(subject); ok && sub.Compatibility != "" {
		return schema.Level(sub.Compatibility)
	}
	if l := st.RegistryConfig().Compatibility; l != "" {
		return schema.Level(l)
	}
	return schema.DefaultLevel
}

// mode is the mode in force for subject.
func mode(st *meta.State, subject string) string {
	if sub, ok := st.Subject(subject); ok && sub.Mode != "" {
		return sub.Mode
	}
	if m := st.RegistryConfig().Mode; m != "" {
		return m
	}
	return modeReadWrite
}

const modeReadWrite = "READWRITE"

// Schema returns the parsed schema with id, from the cache or meta.
func (r *Registry) Schema(st *meta.State, id int32) (schema.Schema, meta.RegisteredSchema, error) {
	rs, ok := st.Schema(id)
	if !ok {
		return nil, meta.RegisteredSchema{}, errSchemaNotFound.with("schema %d", id)
	}
	r.mu.Lock()
	s, ok := r.parsed[id]
	r.mu.Unlock()
	if ok {
		return s, rs, nil
	}
	deps, err := resolve(st, rs.References, nil)
	if err != nil {
		return nil, rs, err
	}
	s, err = schema.Parse(schema.Type(rs.Type), rs.Text, deps)
	if err != nil {
		return nil, rs, fmt.Errorf("stored schema %d does not parse: %w", id, err)
	}
	r.mu.Lock()
	r.parsed[id] = s
	r.mu.Unlock()
	return s, rs, nil
}

// pinReferences returns refs with each version -1 (Confluent's "latest")
// replaced by its subject's latest live version, which is what is stored
// and compared.
func pinReferences(st *meta.State, refs []meta.SchemaReference) ([]meta.SchemaReference, error) {
	if !slices.ContainsFunc(refs, func(ref meta.SchemaReference) bool { return ref.Version == -1 }) {
		return refs, nil
	}
	out := slices.Clone(refs)
	for i, ref := range out {
		if ref.Version != -1 {
			continue
		}
		sub, _ := st.Subject(ref.Subject)
		live := sub.Live()
		if len(live) == 0 {
			return nil, errInvalidSchema.with("No schema reference found for subject %q and version -1, its latest (reference %q)", ref.Subject, ref.Name)
		}
		out[i].Version = live[len(live)-1].Version
	}
	return out, nil
}

// resolve gathers the texts of the schemas refs name, with theirs, by
// reference name, into deps (nil: a new map).
func resolve(st *meta.State, refs []meta.SchemaReference, deps map[string]string) (map[string]string, error) {
	if deps == nil {
		deps = map[string]string{}
	}
	for _, ref := range refs {
		if _, done := deps[ref.Name]; done {
			continue
		}
		sub, ok := st.Subject(ref.Subject)
		v, found := sub.Version(ref.Version)
		if !ok || !found {
			// Confluent's answer: the schema is invalid (a 40401 would
			// read as the registration's own subject missing).
			return nil, errInvalidSchema.with("No schema reference found for subject %q and version %d (reference %q)", ref.Subject, ref.Version, ref.Name)
		}
		rs, ok := st.Schema(v.SchemaID)
		if !ok {
			return nil, errSchemaNotFound.with("schema %d", v.SchemaID)
		}
		deps[ref.Name] = rs.Text
		if _, err := resolve(st, rs.References, deps); err != nil {
			return nil, err
		}
	}
	return deps, nil
}

// parse parses a schema a client sent, resolving its references.
func parse(st *meta.State, typ, text string, refs []meta.SchemaReference) (schema.Schema, error) {
	t, err := schema.ParseType(typ)
	if err != nil {
		return nil, errInvalidSchema.with("%v", err)
	}
	deps, err := resolve(st, refs, nil)
	if err != nil {
		return nil, err
	}
	s, err := schema.Parse(t, text, deps)
	if err != nil {
		return nil, errInvalidSchema.with("%v", err)
	}
	return s, nil
}

// liveSchemas returns the parsed schemas of a subject's live versions,
// oldest first, and the latest live version (0 for none).
func (r *Registry) liveSchemas(st *meta.State, subject string) ([]schema.Schema, int32, error) {
	sub, _ := st.Subject(subject)
	var out []schema.Schema
	var latest int32
	for _, v := range sub.Live() {
		s, _, err := r.Schema(st, v.SchemaID)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s)
		latest = v.Version
	}
	return out, latest, nil
}

// maxRegisterAttempts bounds how often Register checks a schema again
// after another registration to the subject got in first. Each conflict
// means one more version committed, so a registration racing n others
// needs at most n+1 attempts; the bound only stops a subject that never
// stops changing.
const maxRegisterAttempts = 100

// Register registers a schema under subject, checking it against the
// subject's versions at its compatibility level, and returns its id. The
// same schema registered again returns its id.
func (r *Registry) Register(ctx context.Context, subject, typ, text string, refs []meta.SchemaReference) (int32, error) {
	if err := checkSubject(subject); err != nil {
		return 0, err
	}
	for attempt := 0; ; attempt++ {
		st := r.meta.State()
		if mode(st, subject) == meta.ModeReadOnly {
			return 0, errReadOnly.with("subject %q", subject)
		}
		refs, err := pinReferences(st, refs)
		if err != nil {
			return 0, err
		}
		s, err := parse(st, typ, text, refs)
		if err != nil {
			return 0, err
		}
		fingerprint := schema.Fingerprint(s)
		if id, _, ok := r.find(st, subject, s, refs, false); ok {
			return id, nil
		}
		previous, latest, err := r.liveSchemas(st, subject)
		if err != nil {
			return 0, err
		}
		if problems := schema.Check(level(st, subject), s, previous); len(problems) > 0 {
			r.metrics.incompatible.Inc()
			return 0, errIncompatible.with("%s", joinProblems(problems))
		}
		res, err := r.meta.Propose(ctx, &meta.RegisterSchema{
			Subject: subject, Type: string(s.Type()), Text: text, References: refs,
			Fingerprint: fingerprint, LatestVersion: latest,
		})
		if errors.Is(err, meta.ErrSchemaConflict) && attempt < maxRegisterAttempts && ctx.Err() == nil {
			continue // another registration got in first: check again
		}
		if err != nil {
			return 0, fromMeta(err)
		}
		r.metrics.registered.Inc()
		return int32(res.Epoch), nil
	}
}

// find returns the live version of subject that holds s (same type,
// canonical form and references), if one does; with deleted, failing
// that, the latest soft-deleted one.
func (r *Registry) find(st *meta.State, subject string, s schema.Schema, refs []meta.SchemaReference, deleted bool) (int32, meta.SubjectVersion, bool) {
	sub, ok := st.Subject(subject)
	if !ok {
		return 0, meta.SubjectVersion{}, false
	}
	fingerprint := schema.Fingerprint(s)
	var found meta.SubjectVersion
	for _, v := range sub.Versions {
		if v.Deleted && !deleted {
			continue
		}
		rs, ok := st.Schema(v.SchemaID)
		if ok && rs.Type == string(s.Type()) && rs.Fingerprint == fingerprint && slices.Equal(rs.References, refs) {
			if !v.Deleted {
				return rs.ID, v, true
			}
			found = v
		}
	}
	return found.SchemaID, found, found.Version != 0
}

func joinProblems(problems []string) string {
	out := ""
	for i, p := range problems {
		if i > 0 {
			out += "; "
		}
		out += p
	}
	return out
}
