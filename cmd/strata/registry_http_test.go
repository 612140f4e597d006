package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/registry"
	"github.com/stratalog/strata/sasl"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// TestRegistryAuthentication: with security on, the registry answers a
// SCRAM user's password by HTTP Basic and the admin token as a bearer
// token, and refuses anything else with 401 and Confluent's error body.
func TestRegistryAuthentication(t *testing.T) {
	t.Parallel()
	node := startMetaNode(t)
	for _, user := range []string{"alice", "bob", "admin"} {
		cred, err := sasl.FromPassword(sasl.ScramSHA512, user+"-secret", 4096)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := node.Propose(t.Context(), &meta.AlterScramCredential{User: user, Upsert: []sasl.Credential{cred}}); err != nil {
			t.Fatal(err)
		}
	}
	// bob may change the registry: Alter on the cluster.
	alter := acl.Binding{ResourceType: acl.Cluster, ResourceName: acl.ClusterName, PatternType: acl.PatternLiteral,
		Principal: "User:bob", Host: "*", Operation: acl.OpAlter, Permission: acl.Allow}
	if _, err := node.Propose(t.Context(), &meta.CreateACLs{Bindings: []acl.Binding{alter}}); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(node, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := writeSchemaFiles(t, map[string]string{"token": "the-token\n"})
	token, err := readAdminToken(filepath.Join(dir, "token"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	basic := func(user string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, user+"-secret") }
	}
	// A client certificate names its principal as a password does: the
	// CA that signs clients' certificates is not a list of those who may
	// change the registry.
	pki := tlstest.Write(t, filepath.Join(t.TempDir(), "pki"), "127.0.0.1")
	certificate := func(cn string) func(*http.Request) {
		certFile, _ := pki.Client(cn)
		data, err := os.ReadFile(certFile)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return func(r *http.Request) { r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}} }
	}
	authz := clusterAuthorizer(acl.Authorizer{SuperUsers: []string{"User:admin", "User:CN=operator"}}, node.State)
	handler := newRegistryServer(reg.Handler(), adminSecurity{Required: true, Authorize: authz}, token, node.State, slog.New(slog.DiscardHandler)).server.Handler

	for _, tc := range []struct {
		name   string
		method string
		path   string
		login  func(*http.Request)
		want   int
	}{
		{"nothing", "GET", "/subjects", func(*http.Request) {}, http.StatusUnauthorized},
		{"the user's password", "GET", "/subjects", basic("alice"), http.StatusOK},
		{"a wrong password", "GET", "/subjects", func(r *http.Request) { r.SetBasicAuth("alice", "guess") }, http.StatusUnauthorized},
		{"an unknown user", "GET", "/subjects", func(r *http.Request) { r.SetBasicAuth("mallory", "alice-secret") }, http.StatusUnauthorized},
		{"the admin token", "GET", "/subjects", func(r *http.Request) { r.Header.Set("Authorization", "Bearer the-token") }, http.StatusOK},
		{"a wrong token", "GET", "/subjects", func(r *http.Request) { r.Header.Set("Authorization", "Bearer other") }, http.StatusUnauthorized},
		{"a user without Alter registering", "POST", "/subjects/s-value/versions", basic("alice"), http.StatusForbidden},
		{"a user without Alter deleting", "DELETE", "/subjects/s-value", basic("alice"), http.StatusForbidden},
		{"a user without Alter setting the mode", "PUT", "/mode", basic("alice"), http.StatusForbidden},
		{"a user without Alter checking compatibility", "POST", "/compatibility/subjects/s-value/versions", basic("alice"), http.StatusOK},
		{"a user with Alter registering", "POST", "/subjects/s-value/versions", basic("bob"), http.StatusOK},
		{"a user without Alter looking up", "POST", "/subjects/s-value", basic("alice"), http.StatusOK},
		{"a super user registering", "POST", "/subjects/t-value/versions", basic("admin"), http.StatusOK},
		{"the admin token registering", "POST", "/subjects/u-value/versions", func(r *http.Request) { r.Header.Set("Authorization", "Bearer the-token") }, http.StatusOK},
		{"a certificate reading", "GET", "/subjects", certificate("app1"), http.StatusOK},
		{"a certificate without Alter deleting", "DELETE", "/subjects/s-value", certificate("app1"), http.StatusForbidden},
		{"a certificate without Alter setting the level", "PUT", "/config", certificate("app1"), http.StatusForbidden},
		{"a super user's certificate registering", "POST", "/subjects/v-value/versions", certificate("operator"), http.StatusOK},
		{"a certificate without Alter and a user with it registering", "POST", "/subjects/w-value/versions",
			func(r *http.Request) { certificate("app1")(r); basic("bob")(r) }, http.StatusOK},
	} {
		var body io.Reader
		if tc.method != "GET" {
			body = strings.NewReader(`{"schema":"\"string\""}`)
		}
		req := httptest.NewRequest(tc.method, tc.path, body)
		tc.login(req)
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, req)
		resp := recorder.Result()
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer := string(data)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d (%s), want %d", tc.name, resp.StatusCode, answer, tc.want)
		}
		if tc.want == http.StatusUnauthorized && (!strings.Contains(answer, `"error_code":40101`) || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic")) {
			t.Errorf("%s: refused with %q and WWW-Authenticate %q; want error_code 40101 and a Basic challenge", tc.name, answer, resp.Header.Get("WWW-Authenticate"))
		}
		if tc.want == http.StatusForbidden && !strings.Contains(answer, `"error_code":40301`) {
			t.Errorf("%s: refused with %q; want error_code 40301 naming the ACL to give", tc.name, answer)
		}
	}
}
