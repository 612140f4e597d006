package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

// registryServer serves the schema registry's REST API (package registry)
// on --schema.registry.listen, with the admin address's security: over
// TLS when the admin address is, and, once a listener authenticates,
// only to a caller with the admin token as a bearer token, a client
// certificate the TLS configuration verified, or a user's name and
// password by HTTP Basic authentication (what Confluent's clients send as
// basic.auth.user.info), checked against the user's SCRAM credential
// (registryAuth says who may change what).
type registryServer struct {
	server *http.Server
	tls    *tls.Config
}

func newRegistryServer(api http.Handler, sec adminSecurity, token *adminToken, state func() *meta.State, log *slog.Logger) *registryServer {
	h := api
	if sec.Required {
		h = registryAuth(api, token, sec.Authorize, newRegistryLogins(state, sec.FailedAuthDelay), log)
	}
	return &registryServer{
		server: &http.Server{
			Handler: h, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			// A client holds a connection no longer than it needs:
			// a body of the registry's largest in a minute, two
			// minutes idle between requests.
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		},
		tls: sec.TLS,
	}
}

// registryAuth asks every request for a credential. The admin token may
// do anything. A principal, named by a verified client certificate or
// by a user's password, reads, and changes the registry (a registration,
// a delete, a setting) only if it may Alter the cluster (an ACL, or
// super.users), as a serializer that registers its schemas must.
func registryAuth(api http.Handler, token *adminToken, authorize func(principal, host string, op acl.Operation) bool, logins *registryLogins, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer, ok := bearerToken(r); ok && token != nil && token.matches(bearer) {
			api.ServeHTTP(w, r)
			return
		}
		// A certificate and a password may both be given: each names a
		// principal, and either may do what it is allowed.
		var principals []string
		if principal, ok := certificatePrincipal(r); ok {
			principals = append(principals, principal)
		}
		if user, password, given := r.BasicAuth(); given && logins.check(r.Context(), remoteHost(r), user, password) {
			principals = append(principals, "User:"+user)
		}
		if len(principals) == 0 {
			log.Debug("schema registry request refused: no valid credential", "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Basic realm="strata schema registry"`)
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error_code":40101,"message":"Unauthorized: give a user's name and password (HTTP Basic, the user's SCRAM credential), the admin token as a bearer token, or a client certificate over TLS"}` + "\n"))
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead || registryRead(r) ||
			authorize != nil && slices.ContainsFunc(principals, func(p string) bool { return authorize(p, remoteHost(r), acl.OpAlter) }) {
			api.ServeHTTP(w, r)
			return
		}
		principal := principals[len(principals)-1]
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 40301, "message": fmt.Sprintf(
			"%s may read the schema registry but not change it: changes need Alter on the cluster (strata acl create --allow %s --operation Alter --cluster) or super.users", principal, principal)})
	})
}

// registryRead reports the POSTs that change nothing: a lookup
// (POST /subjects/{s}) and a compatibility check.
func registryRead(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	path := strings.Trim(r.URL.Path, "/")
	return strings.HasPrefix(path, "compatibility/") || strings.HasPrefix(path, "subjects/") && strings.Count(path, "/") == 1
}

// serve answers on ln until shutdown; it owns ln.
func (s *registryServer) serve(ln net.Listener) error { return serveHTTP(s.server, ln, s.tls) }

func (s *registryServer) shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }
