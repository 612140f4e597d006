package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// adminAuthFixture is an admin server over TLS from tlstest, asking for
// client certificates, with a token file the test rewrites, and clients
// with and without a certificate.
type adminAuthFixture struct {
	t         *testing.T
	url       string // https://127.0.0.1:port
	tokenFile string
	anonymous *http.Client
	withCert  *http.Client // CN=operator, a super user
	// otherCert holds a certificate the same CA signed for CN=app1, a
	// principal that may Describe the cluster, not Alter it; stranger's
	// for CN=stranger, which may do neither.
	otherCert, stranger *http.Client
}

// startSecureAdmin serves the admin mux on loopback with sec, into which
// it puts the TLS configuration (when tlsOn) and the token file it writes
// holding token.
func startSecureAdmin(t *testing.T, sec adminSecurity, tlsOn bool, token string) *adminAuthFixture {
	t.Helper()
	dir := t.TempDir()
	pki := tlstest.Write(t, filepath.Join(dir, "pki"), "127.0.0.1")
	f := &adminAuthFixture{t: t, tokenFile: filepath.Join(dir, "admin.token")}
	f.writeToken(token)
	sec.TokenFile = f.tokenFile

	scheme := "http"
	f.anonymous, f.withCert, f.otherCert, f.stranger = &http.Client{}, &http.Client{}, &http.Client{}, &http.Client{}
	if sec.Authorize == nil {
		sec.Authorize = func(principal, host string, op acl.Operation) bool {
			return host == "127.0.0.1" && (principal == "User:CN=operator" || principal == "User:CN=app1" && op == acl.OpDescribe)
		}
	}
	if tlsOn {
		scheme = "https"
		server, err := tlsfiles.NewServer(tlsfiles.Files{CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore, CAFile: pki.CAFile}, tlsfiles.ClientAuthRequested, nil)
		if err != nil {
			t.Fatal(err)
		}
		sec.TLS = server.Config()
		certFile, keyFile := pki.Client("operator")
		f.anonymous.Transport = &http.Transport{TLSClientConfig: clientTLS(t, tlsfiles.Files{CAFile: pki.CAFile})}
		f.withCert.Transport = &http.Transport{TLSClientConfig: clientTLS(t, tlsfiles.Files{CAFile: pki.CAFile, CertFile: certFile, KeyFile: keyFile})}
		otherFile, otherKey := pki.Client("app1")
		f.otherCert.Transport = &http.Transport{TLSClientConfig: clientTLS(t, tlsfiles.Files{CAFile: pki.CAFile, CertFile: otherFile, KeyFile: otherKey})}
		strangerFile, strangerKey := pki.Client("stranger")
		f.stranger.Transport = &http.Transport{TLSClientConfig: clientTLS(t, tlsfiles.Files{CAFile: pki.CAFile, CertFile: strangerFile, KeyFile: strangerKey})}
	}
	t.Cleanup(f.anonymous.CloseIdleConnections)
	t.Cleanup(f.withCert.CloseIdleConnections)
	t.Cleanup(f.otherCert.CloseIdleConnections)
	t.Cleanup(f.stranger.CloseIdleConnections)

	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_test_total", Help: "A counter."}))
	admin := newAdminServer(adminHandlers{
		gatherer: registry,
		ready:    func() error { return nil },
		status:   func(context.Context) (any, error) { return map[string]string{"leader": "1"}, nil },
		drain:    func(context.Context, int32, bool) error { return nil },
	}, slog.New(slog.DiscardHandler))
	if err := admin.secure(sec); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- admin.serve(ln) }()
	t.Cleanup(func() {
		admin.shutdown(context.Background())
		if err := <-done; err != nil {
			t.Errorf("admin serve: %v", err)
		}
	})
	f.url = scheme + "://" + ln.Addr().String()
	return f
}

func clientTLS(t *testing.T, files tlsfiles.Files) *tls.Config {
	t.Helper()
	c, err := tlsfiles.Client(files, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeToken replaces the token file by a rename, as a rotation does, and
// moves its modification time on so that no clock granularity hides it.
func (f *adminAuthFixture) writeToken(token string) {
	f.t.Helper()
	tmp := f.tokenFile + ".new"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		f.t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(token)) * time.Second)
	if err := os.Chtimes(tmp, later, later); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.tokenFile); err != nil {
		f.t.Fatal(err)
	}
}

// answer is a response's status, WWW-Authenticate header and body.
type answer struct {
	status       int
	authenticate string
	body         string
}

// do requests path with client, and the bearer token when not "".
func (f *adminAuthFixture) do(client *http.Client, method, path, token string) answer {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)}
}

const adminTestToken = "s3cret-admin-token"

// TestAdminAuth checks who the admin address answers once security is on:
// health and readiness for anyone, /metrics per OpenMetrics, and the rest
// only with the bearer token or a verified client certificate, over TLS
// and over plain HTTP.
func TestAdminAuth(t *testing.T) {
	t.Parallel()
	for _, setup := range []struct {
		name        string
		tls         bool
		openMetrics bool
	}{
		{"TLS, metrics open", true, true},
		{"TLS, metrics closed", true, false},
		{"plain HTTP, metrics closed", false, false},
	} {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			f := startSecureAdmin(t, adminSecurity{OpenMetrics: setup.openMetrics, Required: true}, setup.tls, adminTestToken+"\n")
			metrics := http.StatusUnauthorized
			if setup.openMetrics {
				metrics = http.StatusOK
			}
			type request struct {
				name   string
				client *http.Client
				method string
				path   string
				token  string
				status int
			}
			requests := []request{
				{"health, no credential", f.anonymous, "GET", "/healthz", "", http.StatusOK},
				{"readiness, no credential", f.anonymous, "GET", "/readyz", "", http.StatusOK},
				{"metrics, no credential", f.anonymous, "GET", "/metrics", "", metrics},
				{"metrics, token", f.anonymous, "GET", "/metrics", adminTestToken, http.StatusOK},
				{"status, no credential", f.anonymous, "GET", statusPath, "", http.StatusUnauthorized},
				{"status, token", f.anonymous, "GET", statusPath, adminTestToken, http.StatusOK},
				{"status, wrong token", f.anonymous, "GET", statusPath, "wrong-token-12345", http.StatusUnauthorized},
				{"status, token prefix", f.anonymous, "GET", statusPath, adminTestToken[:5], http.StatusUnauthorized},
				{"pprof, no credential", f.anonymous, "GET", "/debug/pprof/", "", http.StatusUnauthorized},
				{"drain, no credential", f.anonymous, "POST", "/v1/brokers/1/drain", "", http.StatusUnauthorized},
				{"drain, token", f.anonymous, "POST", "/v1/brokers/1/drain", adminTestToken, http.StatusOK},
				{"wrong method on an open path", f.anonymous, "POST", "/healthz", "", http.StatusUnauthorized},
				{"unknown path", f.anonymous, "GET", "/v1/nothing", "", http.StatusUnauthorized},
			}
			if setup.tls {
				requests = append(requests,
					request{"status, client certificate", f.withCert, "GET", statusPath, "", http.StatusOK},
					request{"pprof, client certificate", f.withCert, "GET", "/debug/pprof/", "", http.StatusOK},
					request{"metrics, client certificate", f.withCert, "GET", "/metrics", "", http.StatusOK},
					request{"status, client certificate and a wrong token", f.withCert, "GET", statusPath, "wrong-token-12345", http.StatusOK},
					// Any certificate the CA signed used to be an admin.
					request{"status, a certificate that may Describe", f.otherCert, "GET", statusPath, "", http.StatusOK},
					request{"drain, a certificate that may Describe", f.otherCert, "POST", "/v1/brokers/1/drain", "", http.StatusForbidden},
					request{"drain, a certificate that may Describe and the token", f.otherCert, "POST", "/v1/brokers/1/drain", adminTestToken, http.StatusOK},
					request{"status, a stranger's certificate", f.stranger, "GET", statusPath, "", http.StatusForbidden},
					request{"pprof, a stranger's certificate", f.stranger, "GET", "/debug/pprof/", "", http.StatusForbidden},
				)
			}
			for _, r := range requests {
				got := f.do(r.client, r.method, r.path, r.token)
				if got.status != r.status {
					t.Errorf("%s: %s %s: %d %q, want %d", r.name, r.method, r.path, got.status, got.body, r.status)
					continue
				}
				if got.status == http.StatusForbidden && !strings.HasPrefix(got.body, "forbidden: User:CN=") || strings.HasPrefix(got.body, "forbidden: User:CN=app1") && !strings.Contains(got.body, "it needs Alter on the cluster") {
					t.Errorf("%s: body %q, want the principal and the ACL it needs", r.name, got.body)
				}
				if got.status != http.StatusUnauthorized {
					continue
				}
				if !strings.HasPrefix(got.authenticate, "Bearer") {
					t.Errorf("%s: WWW-Authenticate %q, want Bearer", r.name, got.authenticate)
				}
				if !strings.HasPrefix(got.body, "unauthorized: ") || strings.Count(got.body, "\n") != 1 {
					t.Errorf("%s: body %q, want one line starting unauthorized:", r.name, got.body)
				}
				if r.token != "" && (strings.Contains(got.body, r.token) || strings.Contains(got.authenticate, r.token)) {
					t.Errorf("%s: the answer echoes the token: %q", r.name, got.body)
				}
			}
			if got := f.do(f.anonymous, "GET", statusPath, adminTestToken); !strings.Contains(got.body, `"leader": "1"`) {
				t.Errorf("status with the token: %q", got.body)
			}
		})
	}
}

// TestAdminAuthTokenRotation rewrites the token file and checks that the
// new token is taken and the old one refused from the next request, and
// that an emptied file accepts no token at all.
func TestAdminAuthTokenRotation(t *testing.T) {
	t.Parallel()
	f := startSecureAdmin(t, adminSecurity{Required: true}, true, adminTestToken)
	if got := f.do(f.anonymous, "GET", statusPath, adminTestToken); got.status != http.StatusOK {
		t.Fatalf("first token: %d %q", got.status, got.body)
	}
	const rotated = "rotated-admin-token-2"
	f.writeToken("  " + rotated + "\n")
	if got := f.do(f.anonymous, "GET", statusPath, adminTestToken); got.status != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %d, want 401", got.status)
	}
	if got := f.do(f.anonymous, "GET", statusPath, rotated); got.status != http.StatusOK {
		t.Errorf("new token after rotation: %d %q, want 200", got.status, got.body)
	}

	f.writeToken("\n")
	if got := f.do(f.anonymous, "GET", statusPath, rotated); got.status != http.StatusUnauthorized {
		t.Errorf("token after the file was emptied: %d, want 401", got.status)
	}
	if err := os.Remove(f.tokenFile); err != nil {
		t.Fatal(err)
	}
	if got := f.do(f.anonymous, "GET", statusPath, rotated); got.status != http.StatusUnauthorized {
		t.Errorf("token after the file was removed: %d, want 401", got.status)
	}
	if got := f.do(f.withCert, "GET", statusPath, ""); got.status != http.StatusOK {
		t.Errorf("client certificate without a token file: %d, want 200", got.status)
	}
	const restored = "restored-admin-token-33"
	f.writeToken(restored)
	if got := f.do(f.anonymous, "GET", statusPath, restored); got.status != http.StatusOK {
		t.Errorf("token once the file is back: %d %q, want 200", got.status, got.body)
	}

	// Rewritten in place, same length: the modification time tells.
	const inPlace = "in-place-admin-token-44"
	if err := os.WriteFile(f.tokenFile, []byte(inPlace), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f.tokenFile, later, later); err != nil {
		t.Fatal(err)
	}
	if got := f.do(f.anonymous, "GET", statusPath, inPlace); got.status != http.StatusOK {
		t.Errorf("token rewritten in place: %d %q, want 200", got.status, got.body)
	}
}

// TestAdminAuthOff checks that without Required every endpoint answers
// without a credential, over TLS when given.
func TestAdminAuthOff(t *testing.T) {
	t.Parallel()
	f := startSecureAdmin(t, adminSecurity{}, true, adminTestToken)
	for _, path := range []string{"/healthz", "/metrics", statusPath, "/debug/pprof/"} {
		if got := f.do(f.anonymous, "GET", path, ""); got.status != http.StatusOK {
			t.Errorf("GET %s: %d %q, want 200", path, got.status, got.body)
		}
	}
}

// TestAdminSecureErrors checks that a token file that cannot serve is
// refused when security is set, and that security on with no credential
// possible leaves only the open endpoints.
func TestAdminSecureErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"missing": filepath.Join(dir, "missing"), "empty": empty, "a directory": dir} {
		admin := newAdminServer(adminHandlers{gatherer: prometheus.NewRegistry()}, slog.New(slog.DiscardHandler))
		err := admin.secure(adminSecurity{TokenFile: file, Required: true})
		if !errors.Is(err, errAdminToken) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s token file: %v, want errAdminToken naming %s", name, err, file)
		}
	}

	admin := newAdminServer(adminHandlers{
		gatherer: prometheus.NewRegistry(),
		ready:    func() error { return nil },
		status:   func(context.Context) (any, error) { return "status", nil },
	}, slog.New(slog.DiscardHandler))
	if err := admin.secure(adminSecurity{Required: true, OpenMetrics: true}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, statusPath: 401} {
		req, err := http.NewRequest("GET", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer anything")
		w := httptest.NewRecorder()
		admin.server.Handler.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("no credential possible: GET %s: %d, want %d", path, w.Code, want)
		}
	}
}
