package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/registry"
	"github.com/stratalog/strata/sasl"
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
	srv := httptest.NewServer(newRegistryServer(reg.Handler(), adminSecurity{Required: true}, token, acl.Authorizer{SuperUsers: []string{"User:admin"}}, node.State, slog.New(slog.DiscardHandler)).server.Handler)
	t.Cleanup(srv.Close)

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
	} {
		var body io.Reader
		if tc.method != "GET" {
			body = strings.NewReader(`{"schema":"\"string\""}`)
		}
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, body)
		if err != nil {
			t.Fatal(err)
		}
		tc.login(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
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
