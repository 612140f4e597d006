package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

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
	cred, err := sasl.FromPassword(sasl.ScramSHA512, "alice-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Propose(t.Context(), &meta.AlterScramCredential{User: "alice", Upsert: []sasl.Credential{cred}}); err != nil {
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
	srv := httptest.NewServer(newRegistryServer(reg.Handler(), adminSecurity{Required: true}, token, node.State, slog.New(slog.DiscardHandler)).server.Handler)
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name  string
		login func(*http.Request)
		want  int
	}{
		{"nothing", func(*http.Request) {}, http.StatusUnauthorized},
		{"the user's password", func(r *http.Request) { r.SetBasicAuth("alice", "alice-secret") }, http.StatusOK},
		{"a wrong password", func(r *http.Request) { r.SetBasicAuth("alice", "guess") }, http.StatusUnauthorized},
		{"an unknown user", func(r *http.Request) { r.SetBasicAuth("mallory", "alice-secret") }, http.StatusUnauthorized},
		{"the admin token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer the-token") }, http.StatusOK},
		{"a wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer other") }, http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/subjects", nil)
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
		body := string(data)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d (%s), want %d", tc.name, resp.StatusCode, body, tc.want)
		}
		if tc.want == http.StatusUnauthorized && (!strings.Contains(body, `"error_code":40101`) || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic")) {
			t.Errorf("%s: refused with %q and WWW-Authenticate %q; want error_code 40101 and a Basic challenge", tc.name, body, resp.Header.Get("WWW-Authenticate"))
		}
	}
}
