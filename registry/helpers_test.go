package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/meta"
)

// Shared test fixtures: one single-voter metadata node for the package
// (each test takes subjects and topics named after itself), fresh nodes
// for tests that change the registry's global settings or restart it, and
// franz-go's schema registry client over httptest, through a transport
// that holds every answer to Confluent's conventions.

const brokerID = 1

var shared struct {
	once sync.Once
	node *meta.Node
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.node != nil {
		shared.node.Close()
	}
	if fuzzMeta.node != nil {
		fuzzMeta.node.Close()
	}
	for _, dir := range []string{shared.dir, fuzzMeta.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// testMeta returns the package's metadata node, starting it on first use.
// Tests on it must not change the registry's global level or mode.
func testMeta(t testing.TB) *meta.Node {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp(fastDir(), "registry-meta-")
		if shared.err == nil {
			shared.node, shared.err = startMeta(metaConfig(shared.dir, nil))
		}
	})
	if shared.err != nil {
		t.Fatalf("starting meta: %v", shared.err)
	}
	return shared.node
}

// newMeta starts a metadata node of the test's own, closed when it ends,
// and returns it with its config (for a restart, see reopenMeta).
func newMeta(t testing.TB, tweak func(*meta.Config)) (*meta.Node, meta.Config) {
	t.Helper()
	dir, err := os.MkdirTemp(fastDir(), "registry-meta-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := metaConfig(dir, tweak)
	node, err := startMeta(cfg)
	if err != nil {
		t.Fatalf("starting meta: %v", err)
	}
	t.Cleanup(func() { node.Close() })
	return node, cfg
}

// reopenMeta opens a closed node again on its address and data.
func reopenMeta(t testing.TB, cfg meta.Config) *meta.Node {
	t.Helper()
	cfg.Listener = nil
	node, err := meta.Open(cfg)
	if err != nil {
		t.Fatalf("reopening meta: %v", err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := node.WaitReady(ctx); err != nil {
		t.Fatalf("reopened meta: %v", err)
	}
	return node
}

// metaConfig is a one-voter node on a loopback port the OS picks, with
// short Raft timeouts.
func metaConfig(dir string, tweak func(*meta.Config)) meta.Config {
	cfg := meta.DefaultConfig()
	cfg.NodeID = "registry-test"
	cfg.DataDir = dir
	cfg.HeartbeatTimeout = 200 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.CommitTimeout = 5 * time.Millisecond
	// The tests do not heartbeat: the broker must never be fenced.
	cfg.BrokerSessionTimeout = 24 * time.Hour
	if tweak != nil {
		tweak(&cfg)
	}
	return cfg
}

// startMeta opens a node with cfg (on a new loopback listener) and
// registers broker 1, so that topics can be created.
func startMeta(cfg meta.Config) (*meta.Node, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg.Listener = l
	cfg.BindAddr = l.Addr().String()
	node, err := meta.Open(cfg)
	if err != nil {
		l.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = node.WaitReady(ctx)
	if err == nil {
		_, err = node.Propose(ctx, meta.RegisterBroker{ID: brokerID, Listeners: []meta.Listener{
			{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}})
	}
	if err != nil {
		node.Close()
		return nil, err
	}
	return node, nil
}

// fastDir is tmpfs when there is one: meta fsyncs on every commit.
func fastDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// createTopic creates a one-partition topic with configs.
func createTopic(t testing.TB, node *meta.Node, name string, configs map[string]string) meta.Topic {
	t.Helper()
	_, err := node.Propose(t.Context(), meta.CreateTopic{ID: uuid.New(), Name: name, Replicas: [][]int32{{brokerID}}, Configs: configs})
	if err != nil {
		t.Fatalf("creating topic %q: %v", name, err)
	}
	topic, ok := node.State().Topic(name)
	if !ok {
		t.Fatalf("topic %q is not in the state", name)
	}
	return topic
}

// served is a registry over a node, served over HTTP, with franz-go's
// client pointed at it.
type served struct {
	reg     *Registry
	metrics *prometheus.Registry
	url     string
	http    *http.Client // checks every answer (conventionChecker)
	client  *sr.Client
}

// serve starts the registry's handler over node, stopped when the test
// ends.
func serve(t testing.TB, node Meta) *served {
	t.Helper()
	metrics := prometheus.NewRegistry()
	reg, err := New(node, nil, metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: &conventionChecker{t: t, next: http.DefaultTransport}, Timeout: 30 * time.Second}
	cl, err := sr.NewClient(sr.URLs(srv.URL), sr.HTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return &served{reg: reg, metrics: metrics, url: srv.URL, http: hc, client: cl}
}

// conventionChecker fails the test on an answer that breaks Confluent's
// conventions: every answer has the registry's content type and, but a
// raw schema text, is JSON, and an error answers with the status its
// error_code starts with.
type conventionChecker struct {
	t    testing.TB
	next http.RoundTripper
}

func (c *conventionChecker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if problem := answerProblem(req.Method, req.URL.Path, resp.StatusCode, resp.Header, body); problem != "" {
		c.t.Errorf("%s %s: %s", req.Method, req.URL, problem)
	}
	return resp, nil
}

// rawSchemaPath matches the endpoints that answer a schema's text as it
// is.
var rawSchemaPath = regexp.MustCompile(`^/(subjects/[^/]+/versions/[^/]+|schemas/ids/[^/]+)/schema$`)

// answerProblem says how an answer breaks the registry's conventions, or
// "" when it keeps them.
func answerProblem(method, path string, status int, header http.Header, body []byte) string {
	if status >= 300 && status < 400 {
		// ServeMux cleans paths ("//x", "/a/../b") by redirecting.
		if header.Get("Location") == "" {
			return "redirect without a Location"
		}
		return ""
	}
	ct := header.Get("Content-Type")
	if ct != contentType {
		return "Content-Type " + ct + ", want " + contentType
	}
	if status < 300 && rawSchemaPath.MatchString(path) {
		return "" // the raw schema text, JSON for Avro and JSON Schema only
	}
	if !json.Valid(body) {
		return "body is not JSON: " + string(body)
	}
	if status < 300 {
		if method == http.MethodPost && status != http.StatusOK {
			return "success with status " + http.StatusText(status)
		}
		return ""
	}
	var e struct {
		Code    *int    `json:"error_code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Code == nil || e.Message == nil {
		return "error body without error_code and message: " + string(body)
	}
	if want := httpStatus(*e.Code); status != want {
		return "status " + http.StatusText(status) + " for error_code " + strconv.Itoa(*e.Code)
	}
	return ""
}

// httpStatus is the first three digits of a Confluent error code.
func httpStatus(code int) int {
	for code >= 1000 {
		code /= 10
	}
	return code
}

// wantCode fails unless err is the registry's error with code.
func wantCode(t testing.TB, err error, code int) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want error_code %d", err, err, code)
	}
	if re.ErrorCode != code {
		t.Fatalf("error_code %d (%s), want %d", re.ErrorCode, re.Message, code)
	}
	if re.StatusCode != httpStatus(code) {
		t.Fatalf("HTTP status %d for error_code %d", re.StatusCode, code)
	}
}

// runs numbers test runs, so that names on the shared node stay apart
// under -count.
var runs struct {
	next atomic.Int64
	ids  sync.Map // testing.TB → int64
}

// subjectName is a subject (or, lowercased, topic) named after the test
// run, and suffix.
func subjectName(t testing.TB, suffix string) string {
	id, _ := runs.ids.LoadOrStore(t, runs.next.Add(1))
	name := strings.NewReplacer("/", "-", "#", "-").Replace(t.Name()) + "-" + strconv.FormatInt(id.(int64), 10)
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// uniqueName is an Avro name of the test run's own, for a schema no other
// test or run registers.
func uniqueName(t testing.TB, name string) string {
	id, _ := runs.ids.LoadOrStore(t, runs.next.Add(1))
	return name + "_" + strconv.FormatInt(id.(int64), 10)
}

// do sends a request to the registry and returns the status and body.
func (s *served) do(t testing.TB, method, path, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// errorCode is the error_code of an error body (0 for none).
func errorCode(body []byte) int {
	var e struct {
		Code int `json:"error_code"`
	}
	json.Unmarshal(body, &e)
	return e.Code
}

// avroRecord is an Avro record schema named name with fields given as
// JSON objects.
func avroRecord(name string, fields ...string) string {
	return `{"type":"record","name":"` + name + `","namespace":"com.example","fields":[` + strings.Join(fields, ",") + `]}`
}

func avroSchema(text string) sr.Schema { return sr.Schema{Schema: text} }
