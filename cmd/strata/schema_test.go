package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/registry"
)

// startRegistry serves strata's schema registry, over a one-voter
// metadata group, on an httptest server closed with the test; it returns
// the server's URL.
func startRegistry(t *testing.T) string {
	t.Helper()
	reg, err := registry.New(startMetaNode(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// startMetaNode starts a one-voter metadata group, closed with the test.
func startMetaNode(t *testing.T) *meta.Node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := meta.DefaultConfig()
	cfg.NodeID = "schema-cli-test"
	cfg.Listener = l
	cfg.BindAddr = l.Addr().String()
	cfg.DataDir = t.TempDir()
	cfg.HeartbeatTimeout = 200 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	node, err := meta.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })
	if err := node.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return node
}

// Avro schemas for the tests: an order, a compatible next version (a
// field with a default), an incompatible one (a field without), and a
// customer that references an address by its full name.
const (
	orderV1         = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}`
	orderV2         = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
	orderNoDefault  = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"qty","type":"int"}]}`
	addressSchema   = `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}`
	customerSchema  = `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"name","type":"string"},{"name":"address","type":"com.acme.Address"}]}`
	jsonSchemaOrder = `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`
)

func writeSchemaFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSchemaCommands runs the schema commands in order against a real
// registry: each step's exit code, and what its output and its one error
// line say.
func TestSchemaCommands(t *testing.T) {
	t.Parallel()
	registryURL := startRegistry(t)
	dir := writeSchemaFiles(t, map[string]string{
		"order1.avsc": orderV1, "order2.avsc": orderV2, "bad.avsc": orderNoDefault,
		"address.avsc": addressSchema, "customer.avsc": customerSchema,
		"order.json": jsonSchemaOrder, "broken.avsc": `{"type":"record"`,
	})
	file := func(name string) string { return filepath.Join(dir, name) }
	for _, step := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout []string // each in standard output
		stderr string   // in the one line of standard error ("" none)
	}{
		{"register", []string{"register", "orders-value", "--file", file("order1.avsc")}, "", 0, []string{"subject orders-value version 1: schema id 1\n"}, ""},
		{"register again is the same version", []string{"register", "orders-value", "--file", file("order1.avsc")}, "", 0, []string{"subject orders-value version 1: schema id 1\n"}, ""},
		{"register from stdin", []string{"register", "orders-value", "--file", "-"}, orderV2, 0, []string{"subject orders-value version 2: schema id 2\n"}, ""},
		{"register incompatible", []string{"register", "orders-value", "--file", file("bad.avsc")}, "", 1, nil,
			`the schema is incompatible with subject "orders-value": `},
		{"register invalid, type guessed", []string{"register", "orders-value", "--file", file("broken.avsc")}, "", 1, nil,
			"(42201) (it was sent as AVRO, as no --type was given: give --type PROTOBUF or JSON if it is not AVRO)"},
		{"register JSON Schema", []string{"register", "orders-json-value", "--file", file("order.json"), "--type", "json"}, "", 0, []string{"subject orders-json-value version 1: schema id 3\n"}, ""},
		{"register the referenced", []string{"register", "com.acme.Address", "--file", file("address.avsc")}, "", 0, []string{"version 1: schema id 4"}, ""},
		{"register with a reference", []string{"register", "customers-value", "--file", file("customer.avsc"), "--reference", "com.acme.Address=com.acme.Address:latest"}, "", 0,
			[]string{"subject customers-value version 1: schema id 5\n"}, ""},
		{"reference to a missing subject", []string{"register", "x-value", "--file", file("customer.avsc"), "--reference", "com.acme.Address=nope:1"}, "", 1, nil, `No schema reference found for subject "nope" and version 1 (reference "com.acme.Address") (42201)` + "\n"},
		{"reference without it", []string{"register", "x-value", "--file", file("customer.avsc")}, "", 1, nil, "invalid schema: "},

		{"list subjects", []string{"list"}, "", 0, []string{"SUBJECT\ncom.acme.Address\ncustomers-value\norders-json-value\norders-value\n"}, ""},
		{"list versions", []string{"list", "orders-value"}, "", 0, []string{"VERSION  ID  TYPE  REFERENCES\n1        1   AVRO  -\n2        2   AVRO  -\n"}, ""},
		{"list references", []string{"list", "customers-value"}, "", 0, []string{"com.acme.Address=com.acme.Address:1"}, ""},
		{"list a missing subject", []string{"list", "nope"}, "", 1, nil, `subject "nope" not found (40401) (` + "`strata schema list` shows the subjects"},

		{"get latest", []string{"get", "orders-value"}, "", 0, []string{"subject     orders-value\nversion     2\nid          2\ntype        AVRO\nreferences  -\n\n" + orderV2 + "\n"}, ""},
		{"get a version", []string{"get", "orders-value", "--version", "1"}, "", 0, []string{"version     1\n", orderV1}, ""},
		{"get by id", []string{"get", "--id", "5"}, "", 0, []string{"id          5\ntype        AVRO\nreferences  com.acme.Address=com.acme.Address:1\nversions    customers-value:1\n\n" + customerSchema}, ""},
		{"get a missing version", []string{"get", "orders-value", "--version", "9"}, "", 1, nil, `subject "orders-value" has no version 9 (40402) (` + "`strata schema list orders-value` shows its versions)"},
		{"get a missing id", []string{"get", "--id", "99"}, "", 1, nil, "schema id 99 not found (40403)"},
		{"get a missing subject", []string{"get", "nope"}, "", 1, nil, `subject "nope" not found (40401)`},

		{"check compatible", []string{"check", "orders-value", "--file", file("order2.avsc")}, "", 0, []string{`compatible with subject "orders-value" at its compatibility level` + "\n"}, ""},
		{"check incompatible", []string{"check", "orders-value", "--file", file("bad.avsc")}, "", 1, []string{`incompatible with subject "orders-value" at its compatibility level:` + "\n  "},
			`the schema is incompatible with subject "orders-value" at its compatibility level (change the schema, or the subject's level with ` + "`strata schema config orders-value --set LEVEL`)"},
		{"check against one version", []string{"check", "orders-value", "--file", file("order1.avsc"), "--version", "2"}, "", 0, []string{`compatible with subject "orders-value" version 2`}, ""},

		{"config global", []string{"config"}, "", 0, []string{"compatibility BACKWARD_TRANSITIVE (global)\n"}, ""},
		{"config of a subject without its own", []string{"config", "orders-value"}, "", 0, []string{"subject orders-value: compatibility BACKWARD_TRANSITIVE (the global one: it has none of its own)\n"}, ""},
		{"config set", []string{"config", "orders-value", "--set", "none"}, "", 0, []string{"subject orders-value: compatibility NONE\n"}, ""},
		{"check under NONE", []string{"check", "orders-value", "--file", file("bad.avsc")}, "", 0, []string{"compatible with"}, ""},
		{"config reset", []string{"config", "orders-value", "--reset"}, "", 0, []string{"subject orders-value: its own compatibility NONE dropped; the global one applies\n"}, ""},
		{"config reset again", []string{"config", "orders-value", "--reset"}, "", 1, nil, `subject "orders-value" has no compatibility level of its own (40408)`},

		{"mode read-only", []string{"mode", "orders-value", "--set", "readonly"}, "", 0, []string{"subject orders-value: mode READONLY\n"}, ""},
		{"register while read-only", []string{"register", "orders-value", "--file", file("order2.avsc")}, "", 1, nil,
			`subject "orders-value" is READONLY (42205) (` + "`strata schema mode` shows the modes; `strata schema mode [SUBJECT] --set READWRITE` takes writes again)"},
		{"mode global", []string{"mode"}, "", 0, []string{"mode READWRITE (global)\n"}, ""},
		{"mode reset", []string{"mode", "orders-value", "--reset"}, "", 0, []string{"subject orders-value: its own mode READONLY dropped; the global one applies\n"}, ""},

		{"permanent before soft", []string{"delete", "orders-value", "--version", "1", "--permanent"}, "", 1, nil,
			`subject "orders-value" version 1 was not soft-deleted first (40407) (run ` + "`strata schema delete orders-value --version 1` first, then again with --permanent)"},
		{"delete a version", []string{"delete", "orders-value", "--version", "1"}, "", 0, []string{"subject orders-value: version 1 soft-deleted"}, ""},
		{"list without the deleted", []string{"list", "orders-value"}, "", 0, []string{"VERSION  ID  TYPE  REFERENCES\n2        2   AVRO  -\n"}, ""},
		{"list with the deleted", []string{"list", "orders-value", "--deleted"}, "", 0, []string{"1        1   AVRO  -           yes\n2        2   AVRO  -           \n"}, ""},
		{"get a deleted version", []string{"get", "orders-value", "--version", "1"}, "", 1, nil, `subject "orders-value" has no version 1 (40402)`},
		{"get a deleted version with --deleted", []string{"get", "orders-value", "--version", "1", "--deleted"}, "", 0, []string{orderV1}, ""},
		{"delete it for good", []string{"delete", "orders-value", "--version", "1", "--permanent"}, "", 0, []string{"subject orders-value: version 1 deleted for good\n"}, ""},
		{"delete a referenced subject", []string{"delete", "com.acme.Address"}, "", 1, nil, "(42206)"},
		{"delete the latest", []string{"delete", "orders-value", "--version", "latest"}, "", 0, []string{"subject orders-value: version 2 soft-deleted"}, ""},
		{"list subjects with the deleted", []string{"list", "--deleted"}, "", 0, []string{"orders-value       yes\n"}, ""},
		{"delete a subject", []string{"delete", "orders-json-value"}, "", 0, []string{"subject orders-json-value: version 1 soft-deleted"}, ""},
		{"delete it again", []string{"delete", "orders-json-value"}, "", 1, nil, `subject "orders-json-value" was soft-deleted (40404) (` + "`strata schema list --deleted` shows it;"},
		{"delete it for good", []string{"delete", "orders-json-value", "--permanent"}, "", 0, []string{"subject orders-json-value: version 1 deleted for good\n"}, ""},
	} {
		code, stdout, stderr := runCLI(t, step.stdin, append(append([]string{"schema"}, step.args...), "--registry", registryURL)...)
		ok := code == step.code
		for _, want := range step.stdout {
			ok = ok && strings.Contains(stdout, want)
		}
		if step.stderr == "" {
			ok = ok && stderr == ""
		} else {
			ok = ok && strings.Contains(stderr, step.stderr) && strings.Count(stderr, "\n") == 1
		}
		if !ok {
			t.Errorf("%s: strata schema %q: exit %d, stdout:\n%s\nstderr: %q\nwant exit %d, stdout with %q, stderr with %q",
				step.name, step.args, code, stdout, stderr, step.code, step.stdout, step.stderr)
		}
	}
}

// TestSchemaCommandsJSON reads the commands' --json output.
func TestSchemaCommandsJSON(t *testing.T) {
	t.Parallel()
	registryURL := startRegistry(t)
	dir := writeSchemaFiles(t, map[string]string{"order1.avsc": orderV1, "bad.avsc": orderNoDefault})
	cli := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "", append(append([]string{"schema"}, args...), "--registry", registryURL, "--json")...)
		if code != wantCode {
			t.Fatalf("strata schema %q --json: exit %d, stdout %s, stderr %s; want exit %d", args, code, stdout, stderr, wantCode)
		}
		return stdout, stderr
	}
	decode := func(data string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(data), v); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
	}
	var registered schemaVersionDocument
	out, _ := cli(0, "register", "orders-value", "--file", filepath.Join(dir, "order1.avsc"))
	decode(out, &registered)
	if registered.Subject != "orders-value" || registered.Version != 1 || registered.ID != 1 || registered.Type != "AVRO" || registered.Schema != "" {
		t.Errorf("register --json: %+v", registered)
	}
	var got schemaVersionDocument
	out, _ = cli(0, "get", "orders-value")
	decode(out, &got)
	if got.Schema != orderV1 || got.ID != 1 || got.References == nil {
		t.Errorf("get --json: %+v", got)
	}
	var subjects []map[string]any
	out, _ = cli(0, "list")
	decode(out, &subjects)
	if len(subjects) != 1 || subjects[0]["subject"] != "orders-value" {
		t.Errorf("list --json: %s", out)
	}
	var check struct {
		Compatible bool     `json:"compatible"`
		Messages   []string `json:"messages"`
	}
	out, stderr := cli(1, "check", "orders-value", "--file", filepath.Join(dir, "bad.avsc"))
	decode(out, &check)
	var failure errorJSON
	decode(stderr, &failure)
	if check.Compatible || len(check.Messages) == 0 || failure.Command != "schema check" || failure.ExitCode != 1 || !strings.Contains(failure.Hint, "--set LEVEL") {
		t.Errorf("check --json: stdout %s, stderr %s", out, stderr)
	}
	var setting map[string]any
	out, _ = cli(0, "config", "orders-value")
	decode(out, &setting)
	if setting["compatibility"] != "BACKWARD_TRANSITIVE" || setting["global"] != true || setting["subject"] != "orders-value" {
		t.Errorf("config --json: %s", out)
	}
	_, stderr = cli(1, "get", "nope")
	decode(stderr, &failure)
	if failure.Error != `subject "nope" not found (40401)` || !strings.Contains(failure.Hint, "strata schema list") {
		t.Errorf("get nope --json: %s", stderr)
	}
}

// TestSchemaCommandLines: command lines the CLI refuses before it sends
// anything exit 2 with one line saying why.
func TestSchemaCommandLines(t *testing.T) {
	t.Parallel()
	dir := writeSchemaFiles(t, map[string]string{"a.avsc": orderV1, "empty.avsc": "\n"})
	schemaFile := filepath.Join(dir, "a.avsc")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"register", "s"}, "give the schema with --file FILE"},
		{[]string{"register", "--file", schemaFile}, "give exactly one subject"},
		{[]string{"register", "", "--file", schemaFile}, "the subject is empty"},
		{[]string{"register", "s", "--file", filepath.Join(dir, "empty.avsc")}, "holds no schema"},
		{[]string{"register", "s", "--file", filepath.Join(dir, "missing")}, "--file: open "},
		{[]string{"register", "s", "--file", schemaFile, "--type", "xml"}, `--type "xml": want AVRO, PROTOBUF or JSON`},
		{[]string{"register", "s", "--file", schemaFile, "--reference", "a=b"}, `--reference "a=b": want NAME=SUBJECT:VERSION`},
		{[]string{"register", "s", "--file", schemaFile, "--reference", "a=b:0"}, "the version is a number from 1, or latest"},
		{[]string{"get"}, "give a subject, or --id ID"},
		{[]string{"get", "s", "--id", "3"}, "give a subject or --id, not both"},
		{[]string{"get", "--id", "3", "--version", "2"}, "--version goes with a subject"},
		{[]string{"get", "--id", "0"}, "schema ids go from 1"},
		{[]string{"get", "s", "--version", "x"}, `--version "x": give a version number from 1, or latest`},
		{[]string{"check", "s", "--file", schemaFile, "--version", "0"}, `--version "0"`},
		{[]string{"list", "a", "b"}, "give one subject, or none"},
		{[]string{"config", "--set", "sideways"}, `--set "sideways": want NONE, BACKWARD`},
		{[]string{"config", "--reset"}, "--reset drops a subject's own compatibility: give the subject"},
		{[]string{"config", "s", "--set", "FULL", "--reset"}, "--set and --reset: give one of them"},
		{[]string{"mode", "--set", "IMPORT"}, `--set "IMPORT": want READWRITE or READONLY`},
		{[]string{"list", "--registry", "ftp://x"}, "the scheme is http or https"},
		{[]string{"list", "--registry", " , "}, "--registry is empty"},
		{[]string{"list", "--sasl-password-file", schemaFile}, "--sasl-password-file needs a user"},
		{[]string{"list", "--sasl-user", "alice"}, "--sasl-user alice has no password"},
		{[]string{"delete"}, "give exactly one subject"},
	} {
		args := append([]string{"schema"}, tc.args...)
		code, stdout, stderr := runCLI(t, "", args...)
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("strata %q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", args, code, stdout, stderr, tc.want)
		}
	}
	code, _, stderr := runCLI(t, "", "consume", "t", "--registry", "127.0.0.1:1", "--bootstrap", "127.0.0.1:1")
	if code != exitBadArgs || !strings.Contains(stderr, "--registry and --admin-token-file are for --decode") {
		t.Errorf("consume --registry without --decode: exit %d, stderr %q", code, stderr)
	}
}

// TestSchemaRegistryUnreachable: a registry that is not there, one that
// asks for a credential, one that refuses the one given, and one that is
// not a registry each get a line saying so and what to do.
func TestSchemaRegistryUnreachable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedAddr := closed.Listener.Addr().String()
	closed.Close()

	var (
		mu   sync.Mutex
		seen []string // each request's credential
	)
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s:%s:%v:%s", user, password, ok, r.Header.Get("Authorization")))
		if ok && user == "alice" && password == "right" {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.Write([]byte(`["orders-value"]`))
			return
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error_code":40101,"message":"Unauthorized: give a credential"}`))
	}))
	t.Cleanup(auth.Close)
	notRegistry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>nothing here</html>", http.StatusNotFound)
	}))
	t.Cleanup(notRegistry.Close)
	dir := writeSchemaFiles(t, map[string]string{"right": "right\n", "wrong": "wrong\n", "token": " the-token\n"})

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"refused", []string{"--registry", closedAddr}, 1, "cannot reach the schema registry at " + closedAddr + ": dial tcp " + closedAddr + ": connect: connection refused (start `strata server`, which serves it"},
		{"no credential", []string{"--registry", auth.URL}, 1, "the schema registry at " + auth.URL + " asks for a credential: Unauthorized: give a credential (give --sasl-user and its password"},
		{"wrong password", []string{"--registry", auth.URL, "--sasl-user", "alice", "--sasl-password-file", filepath.Join(dir, "wrong")}, 1,
			`the schema registry at ` + auth.URL + ` refused user "alice": Unauthorized: give a credential (check the user and its password`},
		{"not a registry", []string{"--registry", notRegistry.URL}, 1, "answered 404, not as a schema registry does: <html>nothing here</html> (check that --registry names a schema registry"},
		{"right password", []string{"--registry", auth.URL, "--sasl-user", "alice", "--sasl-password-file", filepath.Join(dir, "right")}, 0, ""},
	} {
		code, stdout, stderr := runCLI(t, "", append([]string{"schema", "list"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || (tc.code == 0 && !strings.Contains(stdout, "orders-value")) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", tc.name, code, stdout, stderr, tc.code, tc.want)
		}
	}
	runCLI(t, "", "schema", "list", "--registry", auth.URL, "--admin-token-file", filepath.Join(dir, "token"))
	mu.Lock()
	defer mu.Unlock()
	if last := seen[len(seen)-1]; last != "::false:Bearer the-token" {
		t.Errorf("with --admin-token-file, the request carried %q; want the token as a bearer token", last)
	}
}

// fakeSchemas is a schemaSource over fixed schemas, counting requests.
type fakeSchemas struct {
	byID      map[int]sr.Schema
	byVersion map[sr.SubjectVersion]sr.SubjectSchema
	down      bool
	requests  int
}

func (f *fakeSchemas) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	f.requests++
	if f.down {
		return sr.Schema{}, &url.Error{Op: "Get", URL: "http://registry", Err: errors.New("connection refused")}
	}
	s, ok := f.byID[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: "Schema not found"}
	}
	return s, nil
}

func (f *fakeSchemas) SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error) {
	f.requests++
	s, ok := f.byVersion[sr.SubjectVersion{Subject: subject, Version: version}]
	if !ok {
		return sr.SubjectSchema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40402, Message: "Version not found"}
	}
	return s, nil
}

// wire frames payload in the registry's wire format for schema id.
func wire(id int, payload ...byte) []byte {
	return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, payload...)
}

func testSchemas() *fakeSchemas {
	return &fakeSchemas{
		byID: map[int]sr.Schema{
			1: {Schema: orderV1},
			5: {Schema: customerSchema, References: []sr.SchemaReference{{Name: "com.acme.Address", Subject: "com.acme.Address", Version: 1}}},
			6: {Schema: customerSchema, References: []sr.SchemaReference{{Name: "com.acme.Address", Subject: "gone", Version: 1}}},
			7: {Schema: jsonSchemaOrder, Type: sr.TypeJSON},
			8: {Schema: `{"type":`},
		},
		byVersion: map[sr.SubjectVersion]sr.SubjectSchema{
			{Subject: "com.acme.Address", Version: 1}: {Subject: "com.acme.Address", Version: 1, ID: 4, Schema: sr.Schema{Schema: addressSchema}},
		},
	}
}

// TestRecordDecoder decodes keys and values through a fake registry:
// references resolved, one fetch per id, and each way a record can fail
// to decode told apart from a registry that cannot be reached.
func TestRecordDecoder(t *testing.T) {
	t.Parallel()
	source := testSchemas()
	d := newRecordDecoder(source, time.Second, nil)
	ctx := t.Context()
	customer := wire(5, 4, 'A', 'l', 8, 'O', 's', 'l', 'o')
	for _, tc := range []struct {
		name string
		data []byte
		json string
		id   int
		bad  string // in the undecodableError
	}{
		{"avro", wire(1, 0x54), `{"id":42}`, 1, ""},
		{"a reference", customer, `{"name":"Al","address":{"city":"Oslo"}}`, 5, ""},
		{"JSON Schema", wire(7, []byte(`{ "id": 3 }`)...), `{"id":3}`, 7, ""},
		{"no wire format", []byte("plain text"), "", 0, ""},
		{"too short", []byte{0, 0, 0}, "", 0, ""},
		{"null", nil, "", 0, ""},
		{"unknown id", wire(99, 1), "", 99, "names schema id 99, which the registry does not have"},
		{"bytes remain", wire(1, 0x54, 0x54), "", 1, "does not decode with schema id 1: bytes remain after the value"},
		{"JSON Schema refuses", wire(7, []byte(`{"id":"x"}`)...), "", 7, "does not decode with schema id 7"},
		{"a missing reference", wire(6, 0), "", 6, `schema id 6: reference "com.acme.Address" names subject "gone" version 1, which the registry does not have`},
		{"a schema that does not parse", wire(8, 0), "", 8, "schema id 8 does not parse here"},
	} {
		out, id, err := d.decode(ctx, tc.data)
		var bad *undecodableError
		switch {
		case tc.bad != "":
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.bad) || id != tc.id {
				t.Errorf("%s: decode = %s, %d, %v; want an undecodableError saying %q", tc.name, out, id, err, tc.bad)
			}
		case err != nil || string(out) != tc.json || id != tc.id:
			t.Errorf("%s: decode = %s, %d, %v; want %s, id %d", tc.name, out, id, err, tc.json, tc.id)
		}
	}
	before := source.requests
	for range 3 {
		d.decode(ctx, customer)
		d.decode(ctx, wire(99, 1))
	}
	if source.requests != before {
		t.Errorf("decoding known ids again made %d registry requests; want none", source.requests-before)
	}
	down := &fakeSchemas{down: true}
	explained := newRecordDecoder(down, time.Second, func(err error, target registryTarget) error {
		return fmt.Errorf("explained %s: %w", target, err)
	})
	_, _, err := explained.decode(ctx, wire(1, 0x54))
	var bad *undecodableError
	if err == nil || errors.As(err, &bad) || !strings.Contains(err.Error(), "explained schema id 1: ") {
		t.Errorf("decode with the registry down: %v; want the explained error that stops the command", err)
	}
}

// TestConsumeDecodeOutput prints records through recordPrinter with a
// decoder: decoded as JSON, printed as they are without the wire format,
// named on standard error (or with key_error/value_error under --json)
// when they do not decode, and counted for the exit status.
func TestConsumeDecodeOutput(t *testing.T) {
	t.Parallel()
	records := []*kgo.Record{
		{Topic: "orders", Partition: 0, Offset: 0, Key: []byte("k0"), Value: wire(1, 0x54), Timestamp: time.UnixMilli(1000)},
		{Topic: "orders", Partition: 0, Offset: 1, Key: wire(7, []byte(`{"id":1}`)...), Value: []byte("not framed"), Timestamp: time.UnixMilli(1001)},
		{Topic: "orders", Partition: 0, Offset: 2, Key: []byte("k2"), Value: wire(99, 1), Timestamp: time.UnixMilli(1002)},
		{Topic: "orders", Partition: 1, Offset: 7, Key: nil, Value: nil, Timestamp: time.UnixMilli(1003)},
	}
	print := func(asJSON bool) (string, string, error) {
		var stdout, stderr bytes.Buffer
		out := bufio.NewWriter(&stdout)
		p := &recordPrinter{out: out, encoder: json.NewEncoder(out), stderr: &stderr, asJSON: asJSON, keySeparator: ":",
			decoder: newRecordDecoder(testSchemas(), time.Second, nil)}
		for _, r := range records {
			if err := p.print(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		out.Flush()
		return stdout.String(), stderr.String(), p.undecodableError()
	}
	stdout, stderr, err := print(false)
	if want := "k0:{\"id\":42}\n{\"id\":1}:not framed\n:\n"; stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if want := "strata consume: orders[0] offset 2: value names schema id 99, which the registry does not have; not printed\n"; stderr != want {
		t.Errorf("stderr %q; want %q", stderr, want)
	}
	if err == nil || err.Error() != "1 record did not decode (each is named above, with why)" {
		t.Errorf("undecodableError = %v", err)
	}

	stdout, stderr, err = print(true)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := []string{
		`{"topic":"orders","partition":0,"offset":0,"timestamp":1000,"key":"k0","value":{"id":42},"value_schema_id":1}`,
		`{"topic":"orders","partition":0,"offset":1,"timestamp":1001,"key":{"id":1},"key_schema_id":7,"value":"not framed"}`,
		`{"topic":"orders","partition":0,"offset":2,"timestamp":1002,"key":"k2","value":"\u0000\u0000\u0000\u0000c\u0001","value_schema_id":99,"value_error":"names schema id 99, which the registry does not have"}`,
		`{"topic":"orders","partition":1,"offset":7,"timestamp":1003,"key":null,"value":null}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || stderr != "" {
		t.Errorf("--json stdout:\n%s\nwant:\n%s\nstderr %q", stdout, strings.Join(want, "\n"), stderr)
	}
	if err == nil || !strings.Contains(err.Error(), "key_error or value_error") {
		t.Errorf("--json undecodableError = %v", err)
	}
}
