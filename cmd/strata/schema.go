package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// The schema registry's commands (`strata schema ...`) talk to a
// Confluent-compatible registry, strata's own (every `strata server`
// serves one on --schema.registry.listen) or Confluent's, through
// franz-go's sr client: --registry names it, the TLS flags secure it, and
// the credential is a user's name and password by HTTP Basic
// authentication (--sasl-user, with --sasl-password-file or
// STRATA_SASL_PASSWORD, as the Kafka commands log in), else the admin
// token as a bearer token. The registry's error codes come back as one
// line naming the subject, version or id and the code ("subject
// \"orders-value\" not found (40401)"), with the fix. `strata consume
// --decode` decodes records with the same flags (recordDecoder, below).

// Synopses of the schema commands, for the command table and their help.
const (
	schemaRegisterSynopsis = "SUBJECT --file F [--type AVRO|PROTOBUF|JSON] [--reference NAME=SUBJECT:VERSION]... [flags]"
	schemaListSynopsis     = "[SUBJECT] [--deleted] [flags]"
	schemaGetSynopsis      = "(SUBJECT [--version N|latest] | --id ID) [flags]"
	schemaCheckSynopsis    = "SUBJECT --file F [--type T] [--version N|latest] [flags]"
	schemaDeleteSynopsis   = "SUBJECT [--version N|latest] [--permanent] [flags]"
	schemaConfigSynopsis   = "[SUBJECT] [--set LEVEL|--reset] [flags]"
	schemaModeSynopsis     = "[SUBJECT] [--set READWRITE|READONLY|--reset] [flags]"
)

// defaultRegistry is where --registry points unless told otherwise: a
// `strata server`'s default --schema.registry.listen.
const defaultRegistry = "127.0.0.1:8081"

// registryFlags are how a command reaches the schema registry: its
// address, and the TLS and login flags it shares with the Kafka client
// flags when the command has them (consume --decode).
type registryFlags struct {
	address   string
	tokenFile string
	tls       *tlsFlags
	sasl      *saslFlags
	// credential names what client() logged in with, for errors: "" none.
	credential string
}

// register adds --registry and --admin-token-file; tls and sasl are the
// command's TLS and login flags.
func (r *registryFlags) register(fs *flag.FlagSet, tls *tlsFlags, sasl *saslFlags) {
	address := os.Getenv("STRATA_REGISTRY")
	if address == "" {
		address = defaultRegistry
	}
	fs.StringVar(&r.address, "registry", address, "the schema registry's `address`: host:port (a server's --schema.registry.listen), over HTTPS when a TLS flag is given, or a URL, http://… or https://…; comma-separated for several (env STRATA_REGISTRY)")
	fs.StringVar(&r.tokenFile, "admin-token-file", "", "`file` holding the admin token, which the registry takes as a bearer token when no --sasl-user is given (else env STRATA_ADMIN_TOKEN)")
	r.tls, r.sasl = tls, sasl
}

// schemaFlags are the flags every schema command has: the registry, TLS
// and a login for it, --json and --timeout. They talk to no broker, so
// there is no --bootstrap, and the login needs no SASL mechanism.
type schemaFlags struct {
	json     bool
	timeout  time.Duration
	tls      tlsFlags
	sasl     saslFlags
	registry registryFlags
}

func (s *schemaFlags) register(fs *flag.FlagSet) {
	s.registry.register(fs, &s.tls, &s.sasl)
	fs.BoolVar(&s.json, "json", false, "print JSON instead of text, and errors as JSON on standard error")
	fs.DurationVar(&s.timeout, "timeout", 15*time.Second, "give up after this long")
	s.tls.register(fs)
	fs.StringVar(&s.sasl.user, "sasl-user", os.Getenv("STRATA_SASL_USER"), "log in to the registry as this `user` (HTTP Basic authentication, checked against the user's SCRAM credential) (env STRATA_SASL_USER)")
	fs.StringVar(&s.sasl.passwordFile, "sasl-password-file", "", "`file` holding the user's password, trailing newline dropped (else env STRATA_SASL_PASSWORD; no flag takes the password itself, as ps would show it)")
}

// client checks the flags, reads the credential and builds the registry
// client; nothing is sent yet.
func (r *registryFlags) client() (*sr.Client, error) {
	var urls []string
	anyHTTPS := false
	for _, a := range strings.Split(r.address, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		scheme, rest := "http", a
		if r.tls.on() {
			scheme = "https"
		}
		if s, after, ok := strings.Cut(a, "://"); ok {
			scheme, rest = strings.ToLower(s), after
			if scheme != "http" && scheme != "https" {
				return nil, usageError("--registry %q: the scheme is http or https", a)
			}
		}
		if rest = strings.TrimSuffix(rest, "/"); rest == "" {
			return nil, usageError("--registry %q names no host", a)
		}
		anyHTTPS = anyHTTPS || scheme == "https"
		urls = append(urls, scheme+"://"+rest)
	}
	if len(urls) == 0 {
		return nil, usageError("--registry is empty: give the registry's host:port or URL")
	}
	transport, err := httpTransport(r.tls, anyHTTPS)
	if err != nil {
		return nil, err
	}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.HTTPClient(&http.Client{Transport: transport}), sr.UserAgent("strata-cli")}
	switch {
	case r.sasl.user != "":
		password, err := secretFrom("sasl-password-file", r.sasl.passwordFile, "STRATA_SASL_PASSWORD")
		if err != nil {
			return nil, err
		}
		if password == "" {
			return nil, withFix(usageError("--sasl-user %s has no password", r.sasl.user), "give --sasl-password-file FILE, or set STRATA_SASL_PASSWORD")
		}
		opts = append(opts, sr.BasicAuth(r.sasl.user, password))
		r.credential = fmt.Sprintf("user %q", r.sasl.user)
	case r.sasl.passwordFile != "":
		return nil, withFix(usageError("--sasl-password-file needs a user to log in as"), "give --sasl-user (or STRATA_SASL_USER)")
	default:
		token, err := secretFrom("admin-token-file", r.tokenFile, "STRATA_ADMIN_TOKEN")
		if err != nil {
			return nil, err
		}
		if token = strings.TrimSpace(token); token != "" { // as the server reads its token file
			opts = append(opts, sr.BearerToken(token))
			r.credential = "the admin token"
		}
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, usageError("--registry %q: %v", r.address, err)
	}
	return cl, nil
}

// registryTarget is what a registry request was about, for its errors:
// a subject, one of its versions ("3", "latest"), or a schema id.
type registryTarget struct {
	subject string
	version string
	id      int
}

func (t registryTarget) String() string {
	switch {
	case t.subject != "" && t.version != "":
		return fmt.Sprintf("subject %q version %s", t.subject, t.version)
	case t.subject != "":
		return fmt.Sprintf("subject %q", t.subject)
	case t.id != 0:
		return fmt.Sprintf("schema id %d", t.id)
	}
	return "the registry"
}

// registryAPIError is an answer of the registry's as one line; it
// matches the sr.ResponseError it explains with errors.As.
type registryAPIError struct {
	text string
	err  error
}

func (e *registryAPIError) Error() string { return e.text }
func (e *registryAPIError) Unwrap() error { return e.err }

// explain turns a failed registry request about t into one line naming
// the problem, with the fix when there is one: the registry's error code
// in the words of what was asked, or why it could not be reached.
func (r *registryFlags) explain(err error, t registryTarget) error {
	var answer *sr.ResponseError
	if !errors.As(err, &answer) {
		return r.reachError(err)
	}
	message := strings.Join(strings.Fields(answer.Message), " ")
	// strata's messages are Confluent's text, "; ", then what it was about
	// (or why); Confluent's own are one sentence.
	detail := message
	if _, after, ok := strings.Cut(message, "; "); ok {
		detail = after
	}
	line := func(format string, args ...any) error {
		return &registryAPIError{fmt.Sprintf(format, args...) + fmt.Sprintf(" (%d)", answer.ErrorCode), err}
	}
	aboutReference := strings.Contains(message, "reference")
	version := t.version
	if version == "" {
		version = "latest"
	}
	switch code := answer.ErrorCode; {
	case answer.StatusCode == http.StatusBadRequest && strings.Contains(string(answer.Raw), "HTTP request to an HTTPS server"):
		return withFix(fmt.Errorf("the schema registry at %s serves HTTPS", r.address), "give --tls-ca (or --tls), or --registry https://…")
	case answer.StatusCode == http.StatusUnauthorized && r.credential == "":
		return withFix(fmt.Errorf("the schema registry at %s asks for a credential: %s", r.address, message),
			"give --sasl-user and its password (--sasl-password-file or STRATA_SASL_PASSWORD), the admin token (--admin-token-file or STRATA_ADMIN_TOKEN), or a client certificate (--tls-cert and --tls-key)")
	case answer.StatusCode == http.StatusUnauthorized:
		return withFix(fmt.Errorf("the schema registry at %s refused %s: %s", r.address, r.credential, message),
			"check the user and its password (`strata user list` shows the users), or the admin token against the server's --admin.token.file")
	case code == 0:
		// Not a registry's answer: a proxy's, or another service's.
		body := strings.Join(strings.Fields(string(answer.Raw)), " ")
		if len(body) > 200 {
			body = body[:200] + "…"
		}
		return withFix(fmt.Errorf("%s %s answered %d, not as a schema registry does: %s", answer.Method, answer.URL, answer.StatusCode, body),
			"check that --registry names a schema registry (a server's --schema.registry.listen)")
	case code == 40401 && t.subject != "" && !aboutReference:
		return withFix(line("subject %q not found", t.subject), "`strata schema list` shows the subjects; --deleted adds the soft-deleted ones")
	case code == 40402 && t.subject != "" && !aboutReference:
		return withFix(line("subject %q has no version %s", t.subject, version), fmt.Sprintf("`strata schema list %s` shows its versions", t.subject))
	case code == 40403 && t.id != 0:
		return withFix(line("schema id %d not found", t.id), "`strata schema list SUBJECT` shows the ids a subject's versions hold")
	case code == 40404:
		return withFix(line("subject %q was soft-deleted", t.subject), fmt.Sprintf("`strata schema list --deleted` shows it; register a schema under it to use it again, or delete it for good with `strata schema delete %s --permanent`", t.subject))
	case code == 40405 || (code == 40407 && t.version == ""):
		return withFix(line("subject %q has versions that were not soft-deleted first", t.subject), fmt.Sprintf("run `strata schema delete %s` first, then again with --permanent", t.subject))
	case code == 40406:
		return withFix(line("subject %q version %s was soft-deleted", t.subject, version), fmt.Sprintf("`strata schema list %s --deleted` shows it; give --deleted to read it", t.subject))
	case code == 40407:
		return withFix(line("subject %q version %s was not soft-deleted first", t.subject, version), fmt.Sprintf("run `strata schema delete %s --version %s` first, then again with --permanent", t.subject, version))
	case code == 40408:
		return line("subject %q has no compatibility level of its own", t.subject)
	case code == 40409:
		return line("subject %q has no mode of its own", t.subject)
	case code == 409:
		return withFix(line("the schema is incompatible with %s: %s", t, detail),
			fmt.Sprintf("change the schema, or the subject's level with `strata schema config %s --set LEVEL`; `strata schema check` lists why", t.subject))
	case code == 42201:
		return line("invalid schema: %s", detail)
	case code == 42202:
		return line("invalid version %s: %s", version, detail)
	case code == 42203:
		return line("invalid compatibility level: %s", detail)
	case code == 42204:
		return line("invalid mode: %s", detail)
	case code == 42205:
		return withFix(line("%s is READONLY", t), "`strata schema mode` shows the modes; `strata schema mode [SUBJECT] --set READWRITE` takes writes again")
	case code == 42206:
		return withFix(line("%s is referenced by other schemas: %s", t, detail), "delete the versions that reference it first (GET /subjects/SUBJECT/versions/N/referencedby lists them)")
	}
	return line("%s", message)
}

// reachError explains a registry request that got no answer.
func (r *registryFlags) reachError(err error) error {
	var (
		urlErr    *url.Error
		unknownCA x509.UnknownAuthorityError
	)
	cause := err
	if errors.As(err, &urlErr) {
		cause = urlErr.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return withFix(fmt.Errorf("the schema registry at %s did not answer in time: %w", r.address, err), "check that it is up and --registry is right, or raise --timeout")
	case errors.Is(err, syscall.ECONNREFUSED):
		return withFix(fmt.Errorf("cannot reach the schema registry at %s: %w", r.address, cause),
			"start `strata server`, which serves it on --schema.registry.listen, "+defaultRegistry+" by default, or point --registry or STRATA_REGISTRY at a running one")
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return withFix(fmt.Errorf("the schema registry at %s serves plain HTTP, not HTTPS", r.address),
			"give --registry http://…; the TLS flags then hold for the Kafka listener alone")
	case errors.As(err, &unknownCA):
		return withFix(fmt.Errorf("cannot reach the schema registry at %s: its certificate is not signed by a CA this client trusts", r.address),
			"give the CA that signed the server's certificate with --tls-ca (or STRATA_TLS_CA)")
	case hungUp(err) && !r.tls.on() && !strings.Contains(r.address, "https://"):
		return withFix(fmt.Errorf("cannot reach the schema registry at %s: it closed the connection (a secured server serves it over HTTPS)", r.address),
			"give --tls-ca (or --tls), or --registry https://…")
	}
	return fmt.Errorf("cannot reach the schema registry at %s: %w", r.address, cause)
}

// checkSubject refuses an empty subject name, which no path can carry.
func checkSubject(subject string) error {
	if strings.TrimSpace(subject) == "" {
		return usageError("the subject is empty")
	}
	return nil
}

// oneSubject is the one positional argument a command takes, a subject.
func oneSubject(rest []string) (string, error) {
	if len(rest) != 1 {
		return "", usageError("give exactly one subject")
	}
	return rest[0], checkSubject(rest[0])
}

// versionFlag reads a --version: a version number from 1, or latest
// (-1, as sr takes it).
func versionFlag(value string) (int, error) {
	if strings.EqualFold(value, "latest") || value == "-1" {
		return -1, nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 {
		return 0, usageError("--version %q: give a version number from 1, or latest", value)
	}
	return int(n), nil
}

// versionName is a version as sr takes it, for messages.
func versionName(v int) string {
	if v == -1 {
		return "latest"
	}
	return strconv.Itoa(v)
}

// schemaTypeFlag reads --type; without one, a .proto file is PROTOBUF
// and anything else AVRO, Confluent's default.
func schemaTypeFlag(value, file string) (sr.SchemaType, error) {
	if value == "" {
		if strings.HasSuffix(strings.ToLower(file), ".proto") {
			return sr.TypeProtobuf, nil
		}
		return sr.TypeAvro, nil
	}
	var t sr.SchemaType
	if err := t.UnmarshalText([]byte(value)); err != nil {
		return 0, usageError("--type %q: want AVRO, PROTOBUF or JSON", value)
	}
	return t, nil
}

// readSchemaFile reads --file: a file, or standard input for "-".
func readSchemaFile(stdin io.Reader, file string) (string, error) {
	var (
		data []byte
		err  error
	)
	switch file {
	case "":
		return "", usageError("give the schema with --file FILE (- reads standard input)")
	case "-":
		data, err = io.ReadAll(stdin)
	default:
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return "", usageError("--file: %v", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return "", usageError("--file %s holds no schema", file)
	}
	return string(data), nil
}

// referenceFlag is one --reference NAME=SUBJECT:VERSION, VERSION a number
// or latest (-1, resolved before the schema is sent).
type referenceFlag struct {
	name, subject string
	version       int
}

func parseReferences(values []string) ([]referenceFlag, error) {
	var out []referenceFlag
	for _, v := range values {
		name, rest, ok := strings.Cut(v, "=")
		colon := strings.LastIndexByte(rest, ':')
		if !ok || name == "" || colon <= 0 {
			return nil, usageError("--reference %q: want NAME=SUBJECT:VERSION, such as com.acme.Address=com.acme.Address:1 (NAME is what the schema calls it: an Avro full name, a .proto import path, a JSON Schema $ref)", v)
		}
		version, err := versionFlag(rest[colon+1:])
		if err != nil {
			return nil, usageError("--reference %q: the version is a number from 1, or latest", v)
		}
		out = append(out, referenceFlag{name: name, subject: rest[:colon], version: version})
	}
	return out, nil
}

// resolveReferences gives each reference its version number, asking the
// registry for the latest where the flag said latest: a reference names
// one version for good.
func resolveReferences(ctx context.Context, cl *sr.Client, reg *registryFlags, refs []referenceFlag) ([]sr.SchemaReference, error) {
	var out []sr.SchemaReference
	for _, ref := range refs {
		version := ref.version
		if version == -1 {
			ss, err := cl.SchemaByVersion(ctx, ref.subject, -1)
			if err != nil {
				return nil, fmt.Errorf("--reference %s: %w", ref.name, reg.explain(err, registryTarget{subject: ref.subject, version: "latest"}))
			}
			version = ss.Version
		}
		out = append(out, sr.SchemaReference{Name: ref.name, Subject: ref.subject, Version: version})
	}
	return out, nil
}

// schemaVersionDocument is one version of a subject in JSON.
type schemaVersionDocument struct {
	Subject    string               `json:"subject"`
	Version    int                  `json:"version"`
	ID         int                  `json:"id"`
	Type       string               `json:"type"`
	References []sr.SchemaReference `json:"references"`
	Deleted    bool                 `json:"deleted,omitempty"`
	Schema     string               `json:"schema,omitempty"`
}

func versionDocument(ss sr.SubjectSchema) schemaVersionDocument {
	return schemaVersionDocument{
		Subject: ss.Subject, Version: ss.Version, ID: ss.ID, Type: ss.Type.String(),
		References: orNoReferences(ss.References), Schema: ss.Schema.Schema,
	}
}

func orNoReferences(refs []sr.SchemaReference) []sr.SchemaReference {
	if refs == nil {
		return []sr.SchemaReference{}
	}
	return refs
}

// referencesText prints references as NAME=SUBJECT:VERSION, comma-separated,
// "-" for none.
func referencesText(refs []sr.SchemaReference) string {
	if len(refs) == 0 {
		return "-"
	}
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = fmt.Sprintf("%s=%s:%d", r.Name, r.Subject, r.Version)
	}
	return strings.Join(parts, ",")
}

// schemaInput is the schema a command sends: --file, --type and
// --reference, as register and check take them.
type schemaInput struct {
	file, typ  string
	references stringList
	refs       []referenceFlag
	t          sr.SchemaType
}

func (in *schemaInput) register(fs *flag.FlagSet) {
	fs.StringVar(&in.file, "file", "", "`file` holding the schema's text (- reads standard input)")
	fs.StringVar(&in.typ, "type", "", "the schema's `type`: AVRO, PROTOBUF or JSON (JSON Schema); default PROTOBUF for a .proto file, else AVRO")
	fs.Var(&in.references, "reference", "a schema it references, `NAME=SUBJECT:VERSION` (VERSION a number or latest; repeatable): NAME is the Avro full name, .proto import path or JSON Schema $ref it is known by")
}

// check checks the flags, before anything is read or sent.
func (in *schemaInput) check() error {
	var err error
	if in.t, err = schemaTypeFlag(in.typ, in.file); err != nil {
		return err
	}
	in.refs, err = parseReferences(in.references)
	return err
}

// read reads the schema's text and builds the registry client, resolving
// the references' versions through it.
func (in *schemaInput) read(ctx context.Context, e *env, flags *schemaFlags) (*sr.Client, sr.Schema, error) {
	text, err := readSchemaFile(e.stdin, in.file)
	if err != nil {
		return nil, sr.Schema{}, err
	}
	cl, err := flags.registry.client()
	if err != nil {
		return nil, sr.Schema{}, err
	}
	s := sr.Schema{Schema: text, Type: in.t}
	if s.References, err = resolveReferences(ctx, cl, &flags.registry, in.refs); err != nil {
		return nil, sr.Schema{}, err
	}
	return cl, s, nil
}

// runSchemaRegister is `strata schema register SUBJECT --file F`: it
// registers the schema under the subject (checked against the subject's
// versions at its compatibility level) and prints its id and version. A
// schema the subject holds already is not registered again: its version
// and id are printed.
func runSchemaRegister(ctx context.Context, e *env, args []string) error {
	var (
		flags schemaFlags
		input schemaInput
	)
	fs := newFlagSet(e, "schema register", schemaRegisterSynopsis)
	flags.register(fs)
	input.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	subject, err := oneSubject(rest)
	if err != nil {
		return err
	}
	if err := input.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	cl, s, err := input.read(ctx, e, &flags)
	if err != nil {
		return err
	}
	target := registryTarget{subject: subject}
	if _, err := cl.RegisterSchema(ctx, subject, s, -1, -1); err != nil {
		return withTypeHint(flags.registry.explain(err, target), input.typ, s.Type)
	}
	// The registration answers the id alone; the lookup, the version too.
	ss, err := cl.LookupSchema(ctx, subject, s)
	if err != nil {
		return fmt.Errorf("registered, but looking up its version: %w", flags.registry.explain(err, target))
	}
	if flags.json {
		doc := versionDocument(ss)
		doc.Subject, doc.Schema = subject, ""
		return printJSON(e.stdout, doc)
	}
	_, err = fmt.Fprintf(e.stdout, "subject %s version %d: schema id %d\n", subject, ss.Version, ss.ID)
	return err
}

// withTypeHint adds to an invalid-schema error, when --type was left
// out, that the type was guessed; not to one about a reference that
// does not exist, which the type does not explain.
func withTypeHint(err error, typeFlag string, t sr.SchemaType) error {
	var answer *sr.ResponseError
	if typeFlag != "" || !errors.As(err, &answer) || answer.ErrorCode != 42201 || strings.Contains(answer.Message, "No schema reference found") {
		return err
	}
	return withFix(err, fmt.Sprintf("it was sent as %s, as no --type was given: give --type PROTOBUF or JSON if it is not %s", t, t))
}

// runSchemaList is `strata schema list [SUBJECT]`: the subjects, or one
// subject's versions with their ids, types and references. --deleted
// adds the soft-deleted ones, marked.
func runSchemaList(ctx context.Context, e *env, args []string) error {
	var (
		flags   schemaFlags
		deleted bool
	)
	fs := newFlagSet(e, "schema list", schemaListSynopsis)
	flags.register(fs)
	fs.BoolVar(&deleted, "deleted", false, "list soft-deleted subjects and versions too, marked as such")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return usageError("give one subject, or none to list them all")
	}
	if len(rest) == 1 {
		if err := checkSubject(rest[0]); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	cl, err := flags.registry.client()
	if err != nil {
		return err
	}
	if len(rest) == 1 {
		return listSubjectVersions(ctx, e, cl, &flags, rest[0], deleted)
	}
	live, err := cl.Subjects(ctx)
	if err != nil {
		return flags.registry.explain(err, registryTarget{})
	}
	all := live
	if deleted {
		if all, err = cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted)); err != nil {
			return flags.registry.explain(err, registryTarget{})
		}
	}
	slices.Sort(all)
	type subjectDocument struct {
		Subject string `json:"subject"`
		Deleted bool   `json:"deleted,omitempty"`
	}
	out := []subjectDocument{}
	for _, s := range all {
		out = append(out, subjectDocument{Subject: s, Deleted: !slices.Contains(live, s)})
	}
	if flags.json {
		return printJSON(e.stdout, out)
	}
	header := []string{"SUBJECT"}
	if deleted {
		header = append(header, "DELETED")
	}
	tw := newTable(e.stdout, header...)
	for _, s := range out {
		if deleted {
			tw.row(s.Subject, yesOrEmpty(s.Deleted))
		} else {
			tw.row(s.Subject)
		}
	}
	return tw.flush()
}

// listSubjectVersions prints a subject's versions, one row each.
func listSubjectVersions(ctx context.Context, e *env, cl *sr.Client, flags *schemaFlags, subject string, deleted bool) error {
	target := registryTarget{subject: subject}
	live, err := cl.SubjectVersions(ctx, subject)
	var answer *sr.ResponseError
	if err != nil && !(deleted && errors.As(err, &answer) && answer.ErrorCode == 40401) {
		return flags.registry.explain(err, target)
	}
	all := live
	if deleted {
		if all, err = cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), subject); err != nil {
			return flags.registry.explain(err, target)
		}
	}
	slices.Sort(all)
	out := []schemaVersionDocument{}
	for _, v := range all {
		gone := !slices.Contains(live, v)
		vctx := ctx
		if gone {
			vctx = sr.WithParams(ctx, sr.ShowDeleted)
		}
		ss, err := cl.SchemaByVersion(vctx, subject, v)
		if err != nil {
			return flags.registry.explain(err, registryTarget{subject: subject, version: strconv.Itoa(v)})
		}
		doc := versionDocument(ss)
		doc.Subject, doc.Version, doc.Deleted, doc.Schema = subject, v, gone, ""
		out = append(out, doc)
	}
	if flags.json {
		return printJSON(e.stdout, out)
	}
	header := []string{"VERSION", "ID", "TYPE", "REFERENCES"}
	if deleted {
		header = append(header, "DELETED")
	}
	tw := newTable(e.stdout, header...)
	for _, d := range out {
		cells := []any{d.Version, d.ID, d.Type, referencesText(d.References)}
		if deleted {
			cells = append(cells, yesOrEmpty(d.Deleted))
		}
		tw.row(cells...)
	}
	return tw.flush()
}

func yesOrEmpty(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// runSchemaGet is `strata schema get`: a version's schema (the latest
// unless --version says) or a schema by id, its metadata, then its text.
func runSchemaGet(ctx context.Context, e *env, args []string) error {
	var (
		flags          schemaFlags
		versionValue   string
		id             int
		includeDeleted bool
	)
	fs := newFlagSet(e, "schema get", schemaGetSynopsis)
	flags.register(fs)
	fs.StringVar(&versionValue, "version", "latest", "the subject's `version`: a number, or latest")
	fs.IntVar(&id, "id", 0, "the schema with this global `id` (as records carry it), instead of a subject's version")
	fs.BoolVar(&includeDeleted, "deleted", false, "find a soft-deleted version too")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	byID := flagGiven(fs, "id")
	switch {
	case byID && len(rest) > 0:
		return usageError("give a subject or --id, not both")
	case byID && flagGiven(fs, "version"):
		return usageError("--version goes with a subject, not --id: an id names one schema")
	case byID && (id < 1 || id > 1<<31-1):
		return usageError("--id %d: schema ids go from 1 to 2147483647", id)
	case !byID && len(rest) == 0:
		return usageError("give a subject, or --id ID")
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	if byID {
		cl, err := flags.registry.client()
		if err != nil {
			return err
		}
		return getSchemaByID(ctx, e, cl, &flags, id)
	}
	subject, err := oneSubject(rest)
	if err != nil {
		return err
	}
	version, err := versionFlag(versionValue)
	if err != nil {
		return err
	}
	cl, err := flags.registry.client()
	if err != nil {
		return err
	}
	if includeDeleted {
		ctx = sr.WithParams(ctx, sr.ShowDeleted)
	}
	ss, err := cl.SchemaByVersion(ctx, subject, version)
	if err != nil {
		return flags.registry.explain(err, registryTarget{subject: subject, version: versionName(version)})
	}
	doc := versionDocument(ss)
	doc.Subject = subject
	if flags.json {
		return printJSON(e.stdout, doc)
	}
	return printSchema(e.stdout, [][2]string{
		{"subject", subject}, {"version", strconv.Itoa(doc.Version)}, {"id", strconv.Itoa(doc.ID)},
		{"type", doc.Type}, {"references", referencesText(doc.References)},
	}, doc.Schema)
}

// getSchemaByID prints the schema with a global id, and the subject
// versions that hold it.
func getSchemaByID(ctx context.Context, e *env, cl *sr.Client, flags *schemaFlags, id int) error {
	target := registryTarget{id: id}
	s, err := cl.SchemaByID(ctx, id)
	if err != nil {
		return flags.registry.explain(err, target)
	}
	versions, err := cl.SchemaVersionsByID(ctx, id)
	if err != nil {
		return flags.registry.explain(err, target)
	}
	if versions == nil {
		versions = []sr.SubjectVersion{}
	}
	if flags.json {
		return printJSON(e.stdout, struct {
			ID         int                  `json:"id"`
			Type       string               `json:"type"`
			References []sr.SchemaReference `json:"references"`
			Versions   []sr.SubjectVersion  `json:"versions"`
			Schema     string               `json:"schema"`
		}{id, s.Type.String(), orNoReferences(s.References), versions, s.Schema})
	}
	usedBy := make([]string, len(versions))
	for i, v := range versions {
		usedBy[i] = fmt.Sprintf("%s:%d", v.Subject, v.Version)
	}
	if len(usedBy) == 0 {
		usedBy = []string{"- (no live version holds it)"}
	}
	return printSchema(e.stdout, [][2]string{
		{"id", strconv.Itoa(id)}, {"type", s.Type.String()}, {"references", referencesText(s.References)},
		{"versions", strings.Join(usedBy, ",")},
	}, s.Schema)
}

// printSchema prints a schema's metadata, one "name  value" line each,
// a blank line, and its text.
func printSchema(w io.Writer, fields [][2]string, text string) error {
	for _, f := range fields {
		fmt.Fprintf(w, "%-12s%s\n", f[0], f[1])
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, err := fmt.Fprintf(w, "\n%s", text)
	return err
}

// runSchemaCheck is `strata schema check SUBJECT --file F`: whether the
// registry would take the schema as the subject's next version (against
// the versions the subject's level asks, or --version's alone), with the
// reasons when not. An incompatible schema exits 1.
func runSchemaCheck(ctx context.Context, e *env, args []string) error {
	var (
		flags        schemaFlags
		input        schemaInput
		versionValue string
	)
	fs := newFlagSet(e, "schema check", schemaCheckSynopsis)
	flags.register(fs)
	input.register(fs)
	fs.StringVar(&versionValue, "version", "", "check against this `version` alone (a number, or latest), in the direction of the subject's level (default: every version the level asks)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	subject, err := oneSubject(rest)
	if err != nil {
		return err
	}
	if err := input.check(); err != nil {
		return err
	}
	version := -2 // sr: every version the level asks
	if versionValue != "" {
		if version, err = versionFlag(versionValue); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	cl, s, err := input.read(ctx, e, &flags)
	if err != nil {
		return err
	}
	target := registryTarget{subject: subject}
	against := fmt.Sprintf("subject %q at its compatibility level", subject)
	if version != -2 {
		target.version = versionName(version)
		against = fmt.Sprintf("subject %q version %s", subject, versionName(version))
	}
	result, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, version, s)
	if err != nil {
		return withTypeHint(flags.registry.explain(err, target), input.typ, s.Type)
	}
	if result.Messages == nil {
		result.Messages = []string{}
	}
	if flags.json {
		if err := printJSON(e.stdout, struct {
			Subject    string   `json:"subject"`
			Version    string   `json:"version,omitempty"`
			Compatible bool     `json:"compatible"`
			Messages   []string `json:"messages"`
		}{subject, target.version, result.Is, result.Messages}); err != nil {
			return err
		}
	} else if result.Is {
		_, err := fmt.Fprintf(e.stdout, "compatible with %s\n", against)
		return err
	} else {
		fmt.Fprintf(e.stdout, "incompatible with %s:\n", against)
		for _, m := range result.Messages {
			fmt.Fprintf(e.stdout, "  %s\n", m)
		}
	}
	if result.Is {
		return nil
	}
	return withFix(fmt.Errorf("the schema is incompatible with %s", against),
		fmt.Sprintf("change the schema, or the subject's level with `strata schema config %s --set LEVEL`", subject))
}

// runSchemaDelete is `strata schema delete SUBJECT`: it soft-deletes the
// subject's versions, or one with --version; --permanent then removes
// soft-deleted ones for good, as Confluent's registry has it (a version
// must be soft-deleted first).
func runSchemaDelete(ctx context.Context, e *env, args []string) error {
	var (
		flags        schemaFlags
		versionValue string
		permanent    bool
	)
	fs := newFlagSet(e, "schema delete", schemaDeleteSynopsis)
	flags.register(fs)
	fs.StringVar(&versionValue, "version", "", "delete this `version` alone (a number, or latest) instead of every version")
	fs.BoolVar(&permanent, "permanent", false, "delete for good what was soft-deleted before (ids and texts go once nothing holds them)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	subject, err := oneSubject(rest)
	if err != nil {
		return err
	}
	version := 0
	if versionValue != "" {
		if version, err = versionFlag(versionValue); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	cl, err := flags.registry.client()
	if err != nil {
		return err
	}
	how := sr.SoftDelete
	if permanent {
		how = sr.HardDelete
	}
	var deleted []int
	if version == 0 {
		if deleted, err = cl.DeleteSubject(ctx, subject, how); err != nil {
			return flags.registry.explain(err, registryTarget{subject: subject})
		}
	} else {
		target := registryTarget{subject: subject, version: versionName(version)}
		if version == -1 {
			// Name the version deleted: latest is whichever it is now.
			lctx := ctx
			if permanent {
				lctx = sr.WithParams(ctx, sr.ShowDeleted)
			}
			ss, err := cl.SchemaByVersion(lctx, subject, -1)
			if err != nil {
				return flags.registry.explain(err, target)
			}
			version, target.version = ss.Version, strconv.Itoa(ss.Version)
		}
		if err := cl.DeleteSchema(ctx, subject, version, how); err != nil {
			return flags.registry.explain(err, target)
		}
		deleted = []int{version}
	}
	if deleted == nil {
		deleted = []int{}
	}
	if flags.json {
		return printJSON(e.stdout, struct {
			Subject   string `json:"subject"`
			Versions  []int  `json:"versions"`
			Permanent bool   `json:"permanent"`
		}{subject, deleted, permanent})
	}
	versions := make([]string, len(deleted))
	for i, v := range deleted {
		versions[i] = strconv.Itoa(v)
	}
	noun, them := "versions", "them"
	if len(deleted) == 1 {
		noun, them = "version", "it"
	}
	if permanent {
		_, err = fmt.Fprintf(e.stdout, "subject %s: %s %s deleted for good\n", subject, noun, strings.Join(versions, ", "))
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "subject %s: %s %s soft-deleted (`strata schema list %s --deleted` still lists %s; --permanent removes %s for good)\n",
		subject, noun, strings.Join(versions, ", "), subject, them, them)
	return err
}

// registrySetting is one of the two settings the registry keeps globally
// and per subject: the compatibility level and the mode.
type registrySetting struct {
	command  string // "schema config"
	name     string // "compatibility", as JSON and the text name it
	noneCode int    // the error code for a subject with none of its own
	parse    func(string) (string, error)
	get      func(ctx context.Context, cl *sr.Client, subject string) (string, error)
	set      func(ctx context.Context, cl *sr.Client, subject, value string) (string, error)
	reset    func(ctx context.Context, cl *sr.Client, subject string) (string, error)
}

var compatibilitySetting = registrySetting{
	command: "schema config", name: "compatibility", noneCode: 40408,
	parse: func(v string) (string, error) {
		var l sr.CompatibilityLevel
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return "", usageError("--set %q: want NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE", v)
		}
		return l.String(), nil
	},
	get: func(ctx context.Context, cl *sr.Client, subject string) (string, error) {
		r := cl.Compatibility(ctx, subject)[0]
		return r.Level.String(), r.Err
	},
	set: func(ctx context.Context, cl *sr.Client, subject, value string) (string, error) {
		var l sr.CompatibilityLevel
		l.UnmarshalText([]byte(value))
		r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: l}, subject)[0]
		return r.Level.String(), r.Err
	},
	reset: func(ctx context.Context, cl *sr.Client, subject string) (string, error) {
		// Confluent's registry, and strata's, answer the level dropped as
		// compatibilityLevel, which sr's ResetCompatibility does not read.
		var dropped struct {
			Level         string `json:"compatibilityLevel"`
			Compatibility string `json:"compatibility"`
		}
		err := cl.Do(ctx, http.MethodDelete, "/config/"+url.PathEscape(subject), nil, &dropped)
		return cmp.Or(dropped.Level, dropped.Compatibility), err
	},
}

var modeSetting = registrySetting{
	command: "schema mode", name: "mode", noneCode: 40409,
	parse: func(v string) (string, error) {
		switch m := strings.ToUpper(v); m {
		case "READWRITE", "READONLY":
			return m, nil
		}
		return "", usageError("--set %q: want READWRITE or READONLY", v)
	},
	get: func(ctx context.Context, cl *sr.Client, subject string) (string, error) {
		r := cl.Mode(ctx, subject)[0]
		return r.Mode.String(), r.Err
	},
	set: func(ctx context.Context, cl *sr.Client, subject, value string) (string, error) {
		var m sr.Mode
		m.UnmarshalText([]byte(value))
		r := cl.SetMode(ctx, m, subject)[0]
		return r.Mode.String(), r.Err
	},
	reset: func(ctx context.Context, cl *sr.Client, subject string) (string, error) {
		r := cl.ResetMode(ctx, subject)[0]
		return r.Mode.String(), r.Err
	},
}

func runSchemaConfig(ctx context.Context, e *env, args []string) error {
	return runRegistrySetting(ctx, e, args, compatibilitySetting, schemaConfigSynopsis,
		"set the compatibility `level`: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL or FULL_TRANSITIVE")
}

func runSchemaMode(ctx context.Context, e *env, args []string) error {
	return runRegistrySetting(ctx, e, args, modeSetting, schemaModeSynopsis,
		"set the `mode`: READWRITE, or READONLY (registrations and deletions refused)")
}

// runRegistrySetting is `strata schema config` and `strata schema mode`:
// the setting in force, globally or for a subject (its own, else the
// global one, said so), or --set it, or --reset a subject's own.
func runRegistrySetting(ctx context.Context, e *env, args []string, setting registrySetting, synopsis, setUsage string) error {
	var (
		flags    schemaFlags
		setValue string
		reset    bool
	)
	fs := newFlagSet(e, setting.command, synopsis)
	flags.register(fs)
	fs.StringVar(&setValue, "set", "", setUsage+", the global one or, with SUBJECT, the subject's own")
	fs.BoolVar(&reset, "reset", false, "drop the subject's own "+setting.name+", so the global one applies")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return usageError("give one subject, or none for the global %s", setting.name)
	}
	subject := ""
	if len(rest) == 1 {
		subject = rest[0]
		if err := checkSubject(subject); err != nil {
			return err
		}
	}
	set := flagGiven(fs, "set")
	switch {
	case set && reset:
		return usageError("--set and --reset: give one of them")
	case reset && subject == "":
		return usageError("--reset drops a subject's own %s: give the subject", setting.name)
	}
	value := ""
	if set {
		if value, err = setting.parse(setValue); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, flags.timeout)
	defer cancel()
	cl, err := flags.registry.client()
	if err != nil {
		return err
	}
	target := registryTarget{subject: subject}
	// global: the value is the registry's, for want of the subject's own.
	current, global, removed := "", subject == "", false
	switch {
	case set:
		if current, err = setting.set(ctx, cl, subject, value); err != nil {
			return flags.registry.explain(err, target)
		}
	case reset:
		if current, err = setting.reset(ctx, cl, subject); err != nil {
			return flags.registry.explain(err, target)
		}
		removed = true
	default:
		current, err = setting.get(ctx, cl, subject)
		var answer *sr.ResponseError
		if subject != "" && errors.As(err, &answer) && answer.ErrorCode == setting.noneCode {
			global = true
			current, err = setting.get(ctx, cl, "")
		}
		if err != nil {
			return flags.registry.explain(err, target)
		}
	}
	if flags.json {
		out := map[string]any{setting.name: current, "global": global}
		if subject != "" {
			out["subject"] = subject
		}
		if removed {
			out["removed"] = true
		}
		return printJSON(e.stdout, out)
	}
	switch {
	case subject == "":
		_, err = fmt.Fprintf(e.stdout, "%s %s (global)\n", setting.name, current)
	case removed:
		_, err = fmt.Fprintf(e.stdout, "subject %s: its own %s %s dropped; the global one applies\n", subject, setting.name, current)
	case global:
		_, err = fmt.Fprintf(e.stdout, "subject %s: %s %s (the global one: it has none of its own)\n", subject, setting.name, current)
	default:
		_, err = fmt.Fprintf(e.stdout, "subject %s: %s %s\n", subject, setting.name, current)
	}
	return err
}
