package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/schema"
)

// contentType is what Confluent's registry answers with; clients send it,
// application/json, or nothing.
const contentType = "application/vnd.schemaregistry.v1+json"

// maxBody bounds a request body, and maxSchemaBytes a schema's text:
// each registration is one Raft command, which the metadata group keeps
// in memory and in every snapshot.
const (
	maxBody        = 4 << 20
	maxSchemaBytes = 1 << 20
)

// Handler serves Confluent's Schema Registry REST API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h func(*http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			req.Body = http.MaxBytesReader(w, req.Body, maxBody)
			out, err := h(req)
			if req.Method == http.MethodGet && notFound(err) {
				// This broker's state may not have the commit yet that
				// another broker answered a registration with (a
				// serializer registers through one broker, a
				// deserializer reads through another): a miss is asked
				// again of a linearizable read.
				// A metadata group without a leader would hold the read:
				// after a short wait the local answer stands.
				ctx, cancel := context.WithTimeout(req.Context(), linearizableMissWait)
				st, lerr := r.meta.LinearizableState(ctx)
				cancel()
				if lerr == nil {
					out, err = h(req.WithContext(context.WithValue(req.Context(), linearizableState{}, st)))
				}
			}
			r.reply(w, req, out, err)
		})
	}
	route("GET /{$}", func(*http.Request) (any, error) { return struct{}{}, nil })
	route("GET /schemas/types", func(*http.Request) (any, error) {
		return []schema.Type{schema.JSON, schema.Protobuf, schema.Avro}, nil
	})
	route("GET /subjects", r.listSubjects)
	route("POST /subjects/{subject}/versions", r.register)
	route("POST /subjects/{subject}", r.lookup)
	route("GET /subjects/{subject}/versions", r.listVersions)
	route("GET /subjects/{subject}/versions/{version}", r.getVersion)
	route("GET /subjects/{subject}/versions/{version}/schema", r.getVersionSchema)
	route("GET /subjects/{subject}/versions/{version}/referencedby", r.referencedBy)
	route("DELETE /subjects/{subject}/versions/{version}", r.deleteVersion)
	route("DELETE /subjects/{subject}", r.deleteSubject)
	route("GET /schemas", r.listSchemas)
	route("GET /schemas/ids/{id}", r.getSchema)
	route("GET /schemas/ids/{id}/schema", r.getSchemaText)
	route("GET /schemas/ids/{id}/subjects", r.schemaSubjects)
	route("GET /schemas/ids/{id}/versions", r.schemaVersions)
	route("POST /compatibility/subjects/{subject}/versions/{version}", r.compatibility)
	route("POST /compatibility/subjects/{subject}/versions", r.compatibility)
	route("GET /config", r.getConfig)
	route("PUT /config", r.putConfig)
	route("DELETE /config", r.deleteConfig)
	route("GET /config/{subject}", r.getConfig)
	route("PUT /config/{subject}", r.putConfig)
	route("DELETE /config/{subject}", r.deleteConfig)
	route("GET /mode", r.getMode)
	route("PUT /mode", r.putMode)
	route("GET /mode/{subject}", r.getMode)
	route("PUT /mode/{subject}", r.putMode)
	route("DELETE /mode/{subject}", r.deleteMode)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if h, pattern := mux.Handler(req); pattern == "" {
			r.noRoute(w, req, h)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// linearizableMissWait bounds the linearizable read a miss is answered
// again from.
const linearizableMissWait = 2 * time.Second

// linearizableState keys, in a request's context, the state a read
// answered again after a miss is to use.
type linearizableState struct{}

// state is the metadata state req is answered from: this broker's, or
// the linearizable one a miss is answered again from.
func (r *Registry) state(req *http.Request) *meta.State {
	if st, ok := req.Context().Value(linearizableState{}).(*meta.State); ok {
		return st
	}
	return r.meta.State()
}

// notFound reports the errors a state behind the group's may answer:
// subject, version or schema not found.
func notFound(err error) bool {
	var api apiError
	return errors.As(err, &api) && (api.Code == errSubjectNotFound.Code || api.Code == errVersionNotFound.Code || api.Code == errSchemaNotFound.Code)
}

// noRoute answers a request no route takes (ServeMux's 404 or 405, which
// it writes as text) as Confluent's registry does: JSON, error_code the
// HTTP status.
func (r *Registry) noRoute(w http.ResponseWriter, req *http.Request, muxAnswer http.Handler) {
	probe := &statusProbe{header: http.Header{}}
	muxAnswer.ServeHTTP(probe, req)
	status := probe.status
	if status < 400 || status > 499 {
		status = http.StatusNotFound
	}
	if allow := probe.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	r.reply(w, req, nil, apiError{status, "HTTP " + strconv.Itoa(status) + " " + http.StatusText(status)})
}

// statusProbe records the status and headers a handler writes, and
// drops its body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (p *statusProbe) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

// reply writes out as JSON, a string as it is (the /schema endpoints), or
// err as Confluent's error body.
func (r *Registry) reply(w http.ResponseWriter, req *http.Request, out any, err error) {
	if err != nil {
		var api apiError
		if !errors.As(err, &api) {
			api = apiError{50001, "Error in the backend data store: " + err.Error()}
			r.log.Warn("schema registry request failed", "method", req.Method, "path", req.URL.Path, "error", err)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(api.status())
		json.NewEncoder(w).Encode(api)
		return
	}
	if text, ok := out.(rawSchema); ok {
		w.Header().Set("Content-Type", contentType) // as Confluent's, whatever the format
		io.WriteString(w, string(text))
		return
	}
	w.Header().Set("Content-Type", contentType)
	json.NewEncoder(w).Encode(out)
}

// rawSchema is a schema's text, answered as it is.
type rawSchema string

// schemaRequest is the body of a registration, lookup or compatibility
// check.
type schemaRequest struct {
	Schema     string                 `json:"schema"`
	SchemaType string                 `json:"schemaType,omitempty"`
	References []meta.SchemaReference `json:"references,omitempty"`
}

func readSchemaRequest(req *http.Request) (schemaRequest, error) {
	var body schemaRequest
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return body, apiError{42201, "Invalid schema: the body is not a JSON object with a \"schema\" string: " + err.Error()}
	}
	if body.Schema == "" {
		return body, errInvalidSchema.with("empty schema")
	}
	if len(body.Schema) > maxSchemaBytes {
		return body, errInvalidSchema.with("the schema is %d bytes; at most %d (split it with references)", len(body.Schema), maxSchemaBytes)
	}
	for _, ref := range body.References {
		if ref.Name == "" || ref.Subject == "" || ref.Version < 1 && ref.Version != -1 {
			return body, errInvalidSchema.with("reference %+v needs a name, a subject and a version (-1: the latest)", ref)
		}
	}
	return body, nil
}

// versionDoc is a subject version as the API gives it.
type versionDoc struct {
	Subject    string                 `json:"subject"`
	Version    int32                  `json:"version"`
	ID         int32                  `json:"id"`
	SchemaType string                 `json:"schemaType,omitempty"`
	References []meta.SchemaReference `json:"references,omitempty"`
	Schema     string                 `json:"schema"`
}

func newVersionDoc(subject string, v meta.SubjectVersion, rs meta.RegisteredSchema) versionDoc {
	return versionDoc{Subject: subject, Version: v.Version, ID: rs.ID, SchemaType: apiType(rs.Type), References: rs.References, Schema: rs.Text}
}

// apiType is a schema type as the API gives it: omitted for AVRO.
func apiType(t string) string {
	if t == string(schema.Avro) {
		return ""
	}
	return t
}

func flag(req *http.Request, name string) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return v
}

// listSubjects lists the subjects with live versions; with deleted=true
// the soft-deleted ones too, with deletedOnly=true only those (Confluent's
// parameters, as clients' cleanup before a permanent delete sends them).
func (r *Registry) listSubjects(req *http.Request) (any, error) {
	deleted, deletedOnly := flag(req, "deleted"), flag(req, "deletedOnly")
	prefix := req.URL.Query().Get("subjectPrefix")
	out := []string{}
	for _, sub := range r.state(req).Subjects() {
		live := len(sub.Live()) > 0
		if len(sub.Versions) > 0 && (deletedOnly && !live || !deletedOnly && (deleted || live)) && strings.HasPrefix(sub.Name, prefix) {
			out = append(out, sub.Name)
		}
	}
	return out, nil
}

// subject returns a subject that has versions, live ones unless deleted.
func subject(st *meta.State, name string, deleted bool) (meta.Subject, error) {
	sub, ok := st.Subject(name)
	if !ok || len(sub.Versions) == 0 || (!deleted && len(sub.Live()) == 0) {
		return meta.Subject{}, errSubjectNotFound.with("subject %q", name)
	}
	return sub, nil
}

// listVersions lists a subject's live versions; with deleted=true the
// soft-deleted ones too, with deletedOnly=true only those.
func (r *Registry) listVersions(req *http.Request) (any, error) {
	deleted, deletedOnly := flag(req, "deleted"), flag(req, "deletedOnly")
	sub, err := subject(r.state(req), req.PathValue("subject"), deleted || deletedOnly)
	if err != nil {
		return nil, err
	}
	out := []int32{}
	for _, v := range sub.Versions {
		if deletedOnly && v.Deleted || !deletedOnly && (deleted || !v.Deleted) {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// version finds the version a path names: a number, or "latest" (or -1).
// Soft-deleted versions are found only with ?deleted=true.
func version(st *meta.State, req *http.Request) (meta.Subject, meta.SubjectVersion, error) {
	return findVersion(st, req.PathValue("subject"), req.PathValue("version"), flag(req, "deleted"))
}

// isLatest reports whether a version in a path names the latest one.
func isLatest(name string) bool { return name == "latest" || name == "-1" }

// findVersion finds version name of subject; soft-deleted versions only
// when deleted.
func findVersion(st *meta.State, subjectName, name string, deleted bool) (meta.Subject, meta.SubjectVersion, error) {
	sub, err := subject(st, subjectName, deleted)
	if err != nil {
		return sub, meta.SubjectVersion{}, err
	}
	if isLatest(name) {
		live := sub.Live()
		if deleted || len(live) == 0 {
			live = sub.Versions
		}
		return sub, live[len(live)-1], nil
	}
	n, err := strconv.ParseInt(name, 10, 32)
	if err != nil || n < 1 {
		return sub, meta.SubjectVersion{}, errInvalidVersion.with("%q: want a version number from 1, or latest", name)
	}
	v, ok := sub.Version(int32(n))
	if !ok || (v.Deleted && !deleted) {
		return sub, meta.SubjectVersion{}, errVersionNotFound.with("subject %q version %d", sub.Name, n)
	}
	return sub, v, nil
}

func (r *Registry) getVersion(req *http.Request) (any, error) {
	st := r.state(req)
	sub, v, err := version(st, req)
	if err != nil {
		return nil, err
	}
	rs, ok := st.Schema(v.SchemaID)
	if !ok {
		return nil, errSchemaNotFound.with("schema %d", v.SchemaID)
	}
	return newVersionDoc(sub.Name, v, rs), nil
}

func (r *Registry) getVersionSchema(req *http.Request) (any, error) {
	doc, err := r.getVersion(req)
	if err != nil {
		return nil, err
	}
	return rawSchema(doc.(versionDoc).Schema), nil
}

func (r *Registry) referencedBy(req *http.Request) (any, error) {
	st := r.state(req)
	sub, v, err := version(st, req)
	if err != nil {
		return nil, err
	}
	return append([]int32{}, st.ReferencedBy(sub.Name, v.Version)...), nil
}

func (r *Registry) register(req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	id, err := r.Register(req.Context(), req.PathValue("subject"), body.SchemaType, body.Schema, body.References)
	if err != nil {
		return nil, err
	}
	return struct {
		ID int32 `json:"id"`
	}{id}, nil
}

// lookup answers whether a schema is registered under a subject, and as
// which version.
func (r *Registry) lookup(req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	st := r.state(req)
	name := req.PathValue("subject")
	if _, err := subject(st, name, flag(req, "deleted")); err != nil {
		return nil, err
	}
	refs, err := pinReferences(st, body.References)
	if err != nil {
		return nil, err
	}
	s, err := parse(st, body.SchemaType, body.Schema, refs)
	if err != nil {
		return nil, err
	}
	id, v, ok := r.find(st, name, s, refs, flag(req, "deleted"))
	if !ok {
		return nil, errSchemaNotFound.with("the schema is not registered under %q", name)
	}
	rs, _ := st.Schema(id)
	return newVersionDoc(name, v, rs), nil
}

// deleteVersion deletes a version, as Confluent's registry does: a
// numbered version is found among the soft-deleted ones too, so deleting
// it softly again is 40406 and deleting a live one permanently 40407 (meta
// decides both); "latest" is the latest live version for a soft delete and
// the latest of all for a permanent one.
func (r *Registry) deleteVersion(req *http.Request) (any, error) {
	st := r.state(req)
	permanent := flag(req, "permanent")
	name := req.PathValue("version")
	sub, v, err := findVersion(st, req.PathValue("subject"), name, permanent || !isLatest(name))
	if err != nil {
		return nil, err
	}
	_, err = r.meta.Propose(req.Context(), &meta.DeleteSchemaVersion{Subject: sub.Name, Version: v.Version, Permanent: permanent})
	if err != nil {
		return nil, fromMeta(err)
	}
	return v.Version, nil
}

// deleteSubject deletes every version of a subject: softly (40404 when
// they all are already), or permanently (40405 unless they all are).
func (r *Registry) deleteSubject(req *http.Request) (any, error) {
	permanent := flag(req, "permanent")
	sub, err := subject(r.state(req), req.PathValue("subject"), true)
	if err != nil {
		return nil, err
	}
	if !permanent && len(sub.Live()) == 0 {
		return nil, errSubjectDeleted.with("subject %q: delete it with permanent=true", sub.Name)
	}
	_, err = r.meta.Propose(req.Context(), &meta.DeleteSchemaVersion{Subject: sub.Name, Permanent: permanent})
	if permanent && errors.Is(err, meta.ErrVersionNotSoftDeleted) {
		return nil, errSubjectNotDeleted.with("subject %q", sub.Name)
	}
	if err != nil {
		return nil, fromMeta(err)
	}
	out := []int32{}
	for _, v := range sub.Versions {
		if permanent || !v.Deleted {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// listSchemas lists every subject's live versions with their schemas
// (Confluent's GET /schemas, franz-go's AllSchemas), by subject then
// version: subjectPrefix keeps the subjects it starts, deleted=true adds
// soft-deleted versions, latestOnly=true keeps each subject's latest.
func (r *Registry) listSchemas(req *http.Request) (any, error) {
	st := r.state(req)
	prefix := req.URL.Query().Get("subjectPrefix")
	deleted, latestOnly := flag(req, "deleted"), flag(req, "latestOnly")
	out := []versionDoc{}
	for _, sub := range st.Subjects() {
		if !strings.HasPrefix(sub.Name, prefix) {
			continue
		}
		var docs []versionDoc
		for _, v := range sub.Versions {
			if rs, ok := st.Schema(v.SchemaID); ok && (deleted || !v.Deleted) {
				docs = append(docs, newVersionDoc(sub.Name, v, rs))
			}
		}
		if latestOnly && len(docs) > 0 {
			docs = docs[len(docs)-1:]
		}
		out = append(out, docs...)
	}
	return out, nil
}

// schemaID reads the id in a path.
func schemaID(req *http.Request) (int32, error) {
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 32)
	if err != nil || id < 1 {
		return 0, errSchemaNotFound.with("schema id %q", req.PathValue("id"))
	}
	return int32(id), nil
}

// idDoc is a schema by id as the API gives it.
type idDoc struct {
	Schema     string                 `json:"schema"`
	SchemaType string                 `json:"schemaType,omitempty"`
	References []meta.SchemaReference `json:"references,omitempty"`
}

func (r *Registry) getSchema(req *http.Request) (any, error) {
	id, err := schemaID(req)
	if err != nil {
		return nil, err
	}
	rs, ok := r.state(req).Schema(id)
	if !ok {
		return nil, errSchemaNotFound.with("schema %d", id)
	}
	return idDoc{Schema: rs.Text, SchemaType: apiType(rs.Type), References: rs.References}, nil
}

func (r *Registry) getSchemaText(req *http.Request) (any, error) {
	doc, err := r.getSchema(req)
	if err != nil {
		return nil, err
	}
	return rawSchema(doc.(idDoc).Schema), nil
}

func (r *Registry) schemaUsers(req *http.Request) ([]meta.SchemaReference, error) {
	id, err := schemaID(req)
	if err != nil {
		return nil, err
	}
	st := r.state(req)
	if _, ok := st.Schema(id); !ok {
		return nil, errSchemaNotFound.with("schema %d", id)
	}
	deleted := flag(req, "deleted")
	var out []meta.SchemaReference
	for _, u := range st.SchemaUsers(id) {
		sub, _ := st.Subject(u.Subject)
		if v, _ := sub.Version(u.Version); deleted || !v.Deleted {
			out = append(out, u)
		}
	}
	return out, nil
}

func (r *Registry) schemaSubjects(req *http.Request) (any, error) {
	users, err := r.schemaUsers(req)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, u := range users {
		if !slices.Contains(out, u.Subject) {
			out = append(out, u.Subject)
		}
	}
	return out, nil
}

func (r *Registry) schemaVersions(req *http.Request) (any, error) {
	users, err := r.schemaUsers(req)
	if err != nil {
		return nil, err
	}
	type subjectVersion struct {
		Subject string `json:"subject"`
		Version int32  `json:"version"`
	}
	out := []subjectVersion{}
	for _, u := range users {
		out = append(out, subjectVersion{u.Subject, u.Version})
	}
	return out, nil
}

// compatibility checks a schema against one version of a subject (at the
// subject's level, as the level's direction, not transitively), or against
// every version the level asks (no version in the path).
func (r *Registry) compatibility(req *http.Request) (any, error) {
	body, err := readSchemaRequest(req)
	if err != nil {
		return nil, err
	}
	st := r.state(req)
	name := req.PathValue("subject")
	refs, err := pinReferences(st, body.References)
	if err != nil {
		return nil, err
	}
	s, err := parse(st, body.SchemaType, body.Schema, refs)
	if err != nil {
		return nil, err
	}
	var against []schema.Schema
	lvl := level(st, name)
	if req.PathValue("version") == "" {
		if against, _, err = r.liveSchemas(st, name); err != nil {
			return nil, err
		}
	} else {
		_, v, err := version(st, req)
		if err != nil {
			return nil, err
		}
		old, _, err := r.Schema(st, v.SchemaID)
		if err != nil {
			return nil, err
		}
		against = []schema.Schema{old}
		lvl = schema.Level(strings.TrimSuffix(string(lvl), "_TRANSITIVE"))
	}
	problems := schema.Check(lvl, s, against)
	if len(problems) > 0 {
		r.metrics.incompatible.Inc()
	}
	out := struct {
		Compatible bool     `json:"is_compatible"`
		Messages   []string `json:"messages,omitempty"`
	}{Compatible: len(problems) == 0}
	if flag(req, "verbose") {
		out.Messages = problems
	}
	return out, nil
}

// configDoc is a compatibility level as GET answers it.
type configDoc struct {
	Level string `json:"compatibilityLevel"`
}

func (r *Registry) getConfig(req *http.Request) (any, error) {
	st := r.state(req)
	name := req.PathValue("subject")
	if name == "" {
		return configDoc{string(level(st, ""))}, nil
	}
	if sub, ok := st.Subject(name); ok && sub.Compatibility != "" {
		return configDoc{sub.Compatibility}, nil
	}
	if !flag(req, "defaultToGlobal") {
		return nil, errNoSubjectConfig.with("subject %q", name)
	}
	return configDoc{string(level(st, ""))}, nil
}

func (r *Registry) putConfig(req *http.Request) (any, error) {
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, errInvalidLevel.with("the body is not a JSON object with \"compatibility\": %v", err)
	}
	l, err := schema.ParseLevel(body.Compatibility)
	if err != nil {
		return nil, errInvalidLevel.with("%v", err)
	}
	if name := req.PathValue("subject"); name != "" {
		if err := checkSubject(name); err != nil {
			return nil, err
		}
	}
	if _, err := r.meta.Propose(req.Context(), &meta.SetRegistryConfig{Subject: req.PathValue("subject"), Compatibility: string(l)}); err != nil {
		return nil, fromMeta(err)
	}
	return struct {
		Compatibility string `json:"compatibility"`
	}{string(l)}, nil
}

// deleteConfig removes a subject's level, which then falls back to the
// global one, or (DELETE /config) resets the global level to the
// default, answering the level that was set.
func (r *Registry) deleteConfig(req *http.Request) (any, error) {
	st := r.state(req)
	name := req.PathValue("subject")
	var was string
	if name == "" {
		was = string(level(st, ""))
	} else {
		sub, ok := st.Subject(name)
		if !ok || sub.Compatibility == "" {
			return nil, errNoSubjectConfig.with("subject %q", name)
		}
		was = sub.Compatibility
	}
	if _, err := r.meta.Propose(req.Context(), &meta.SetRegistryConfig{Subject: name}); err != nil {
		return nil, fromMeta(err)
	}
	// Confluent's registry answers compatibilityLevel here; franz-go's
	// client reads compatibility. Both are given.
	return struct {
		Level         string `json:"compatibilityLevel"`
		Compatibility string `json:"compatibility"`
	}{was, was}, nil
}

type modeDoc struct {
	Mode string `json:"mode"`
}

func (r *Registry) getMode(req *http.Request) (any, error) {
	st := r.state(req)
	name := req.PathValue("subject")
	if name == "" {
		return modeDoc{mode(st, "")}, nil
	}
	if sub, ok := st.Subject(name); ok && sub.Mode != "" {
		return modeDoc{sub.Mode}, nil
	}
	if !flag(req, "defaultToGlobal") {
		return nil, errNoSubjectMode.with("subject %q", name)
	}
	return modeDoc{mode(st, "")}, nil
}

func (r *Registry) putMode(req *http.Request) (any, error) {
	var body modeDoc
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, errInvalidMode.with("the body is not a JSON object with \"mode\": %v", err)
	}
	m := strings.ToUpper(body.Mode)
	if m != modeReadWrite && m != meta.ModeReadOnly {
		return nil, errInvalidMode.with("mode %q: want READWRITE or READONLY (IMPORT is not supported)", body.Mode)
	}
	if name := req.PathValue("subject"); name != "" {
		if err := checkSubject(name); err != nil {
			return nil, err
		}
	}
	if _, err := r.meta.Propose(req.Context(), &meta.SetRegistryConfig{Subject: req.PathValue("subject"), Mode: m, SetMode: true}); err != nil {
		return nil, fromMeta(err)
	}
	return modeDoc{m}, nil
}

func (r *Registry) deleteMode(req *http.Request) (any, error) {
	st := r.state(req)
	name := req.PathValue("subject")
	sub, ok := st.Subject(name)
	if !ok || sub.Mode == "" {
		return nil, errNoSubjectMode.with("subject %q", name)
	}
	if _, err := r.meta.Propose(req.Context(), &meta.SetRegistryConfig{Subject: name, SetMode: true}); err != nil {
		return nil, fromMeta(err)
	}
	return modeDoc{sub.Mode}, nil
}
