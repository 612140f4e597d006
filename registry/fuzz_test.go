package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// FuzzRegisterBody sends arbitrary bodies to arbitrary paths, with the
// registration endpoint (POST /subjects/x/versions) first among them: the
// handler must never panic, and must answer every request as Confluent's
// registry does (answerProblem): JSON with its content type, an error as
// {"error_code","message"} with the status the code starts with, and
// never a server error.
//
// A method byte from 128 up posts body as a schema's text instead, as
// {"schema": body, "schemaType": AVRO, JSON or PROTOBUF by the byte}, to
// path or, when path is empty, /subjects/x/versions: the fuzzer then
// reaches the parsers and the compatibility rules without having to learn
// JSON string escaping.
//
//	go test ./registry -run '^$' -fuzz FuzzRegisterBody -fuzztime 30s
//
// The registry runs over a metadata node of the fuzzer's own (each fuzz
// worker starts one), since inputs may change its global level and mode.
func FuzzRegisterBody(f *testing.F) {
	avroBody := `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}"}`
	for _, seed := range []struct {
		method byte
		path   string
		body   string
	}{
		{1, "/subjects/x/versions", avroBody},
		{1, "/subjects/x/versions", `{"schema":"\"string\""}`},
		{1, "/subjects/x/versions", `{"schema":"{\"type\":\"object\"}","schemaType":"JSON"}`},
		{1, "/subjects/x/versions", `{"schema":"syntax = \"proto3\"; message M { int32 a = 1; }","schemaType":"PROTOBUF"}`},
		{1, "/subjects/x/versions", `{"schema":"\"int\"","references":[{"name":"a","subject":"x","version":1}]}`},
		{1, "/subjects/x/versions", `{"schema":"{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":\"r\",\"type\":\"R\"}]}","references":[{"name":"R","subject":"x","version":1}]}`},
		{1, "/subjects/x/versions", `{"schema":"\"int\"","references":[{"name":"a","subject":"x","version":2147483647}]}`},
		{1, "/subjects/x/versions", `{"schema":"\"int\"","schemaType":"avro","id":5,"version":9}`},
		{1, "/subjects/x/versions", `{"schema":7}`},
		{1, "/subjects/x/versions", `[]`},
		{1, "/subjects/x/versions", `null`},
		{1, "/subjects/x/versions", `{"schema":"{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[]}"}`},
		{1, "/subjects/x/versions", `{"schema":"{\"type\":\"array\",\"items\":{\"type\":\"map\",\"values\":\"x\"}}"}`},
		{1, "/subjects/x/versions", `{"schema":"{\"$ref\":\"#/definitions/a\",\"definitions\":{\"a\":{\"$ref\":\"#/definitions/a\"}}}","schemaType":"JSON"}`},
		{1, "/subjects/x/versions", "{\"schema\":\"\\u0000\"}"},
		{1, "/subjects/x", avroBody},
		{1, "/subjects/x?deleted=true", avroBody},
		{1, "/compatibility/subjects/x/versions/latest?verbose=true", avroBody},
		{1, "/compatibility/subjects/x/versions", avroBody},
		{0, "/subjects/x/versions/latest", ""},
		{0, "/subjects/x/versions/-1/schema", ""},
		{0, "/subjects/x/versions/1/referencedby", ""},
		{0, "/subjects/x/versions/2147483648", ""},
		{0, "/subjects?deleted=true&subjectPrefix=x", ""},
		{0, "/schemas/ids/1", ""},
		{0, "/schemas/ids/1/schema", ""},
		{0, "/schemas/ids/1/versions?deleted=true", ""},
		{0, "/schemas/ids/-1/subjects", ""},
		{0, "/schemas/types", ""},
		{0, "/config/x?defaultToGlobal=true", ""},
		{0, "/mode", ""},
		{0, "/", ""},
		{0, "/subjects/%2F/versions", ""},
		{0, "//subjects", ""},
		{0, "/no/such/thing", ""},
		{2, "/config/x", `{"compatibility":"FULL_TRANSITIVE"}`},
		{2, "/config", `{"compatibility":"none"}`},
		{2, "/mode/x", `{"mode":"READONLY"}`},
		{2, "/mode/x", `{"mode":"IMPORT"}`},
		{3, "/subjects/x/versions/1", ""},
		{3, "/subjects/x/versions/latest?permanent=true", ""},
		{3, "/subjects/x?permanent=true", ""},
		{3, "/subjects/x", ""},
		{3, "/config/x", ""},
		{3, "/mode/x", ""},
		{4, "/subjects", ""},
		{128, "", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`},
		{128, "", `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`},
		{128, "", `{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":4}`},
		{128, "/compatibility/subjects/x/versions/latest?verbose=true", `{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"]}]}`},
		{129, "", `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`},
		{129, "", `{"oneOf":[{"type":"string"},{"type":"null"}],"$ref":"#"}`},
		{130, "", "syntax = \"proto3\";\nmessage M {\n  int32 a = 1;\n  repeated string b = 2;\n  map<string, M> c = 3;\n}\n"},
		{130, "", "syntax = \"proto2\";\nimport \"google/protobuf/timestamp.proto\";\nmessage M { optional google.protobuf.Timestamp t = 1; extensions 100 to max; }\n"},
		{130, "/subjects/x", "syntax = \"proto3\"; message M { int32 a = 1; }"},
	} {
		f.Add(seed.method, seed.path, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method byte, path string, body []byte) {
		handler := fuzzHandler(t)
		methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"}
		m := methods[int(method)%len(methods)]
		if method >= 128 {
			m = "POST"
			if path == "" {
				path = "/subjects/x/versions"
			}
			wrapped, err := json.Marshal(schemaRequest{Schema: string(body), SchemaType: []string{"AVRO", "JSON", "PROTOBUF"}[method%3]})
			if err != nil {
				t.Fatal(err)
			}
			body = wrapped
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, m, "http://registry"+path, bytes.NewReader(body))
		if err != nil {
			t.Skip() // not a request a client could send
		}
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		start := time.Now()
		handler.ServeHTTP(w, req)
		// Nothing a request does should take long: a hang would show here
		// before the context's deadline.
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%s %q with %q took %v: %d %s", m, path, body, took, w.Code, w.Body.Bytes())
		}
		resp := w.Result()
		if problem := answerProblem(m, req.URL.Path, resp.StatusCode, resp.Header, w.Body.Bytes()); problem != "" {
			t.Fatalf("%s %q with %q: %d %s\n%s", m, path, body, resp.StatusCode, problem, w.Body.Bytes())
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %q with %q: a server error: %s", m, path, body, w.Body.Bytes())
		}
	})
}

var fuzzMeta struct {
	once sync.Once
	node *meta.Node
	dir  string
	api  http.Handler
	err  error
}

// fuzzHandler is the fuzzer's registry's API, over a node of its own,
// started on first use and stopped by TestMain.
func fuzzHandler(t *testing.T) http.Handler {
	fuzzMeta.once.Do(func() {
		fuzzMeta.dir, fuzzMeta.err = os.MkdirTemp(fastDir(), "registry-fuzz-")
		if fuzzMeta.err != nil {
			return
		}
		fuzzMeta.node, fuzzMeta.err = startMeta(metaConfig(fuzzMeta.dir, nil))
		if fuzzMeta.err != nil {
			return
		}
		var reg *Registry
		if reg, fuzzMeta.err = New(fuzzMeta.node, nil, nil); fuzzMeta.err == nil {
			fuzzMeta.api = reg.Handler()
		}
	})
	if fuzzMeta.err != nil {
		t.Fatalf("starting meta: %v", fuzzMeta.err)
	}
	return fuzzMeta.api
}
