package main

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
)

// registryServer serves the schema registry's REST API (package registry)
// on --schema.registry.listen, with the admin address's security: over
// TLS when the admin address is, and, once a listener authenticates,
// only to a caller with a client certificate the TLS configuration
// verified, the admin token as a bearer token, or a user's name and
// password by HTTP Basic authentication (what Confluent's clients send as
// basic.auth.user.info), checked against the user's SCRAM credential.
type registryServer struct {
	server *http.Server
	tls    *tls.Config
}

func newRegistryServer(api http.Handler, sec adminSecurity, token *adminToken, state func() *meta.State, log *slog.Logger) *registryServer {
	h := api
	if sec.Required {
		h = registryAuth(api, token, state, log)
	}
	return &registryServer{
		server: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		tls:    sec.TLS,
	}
}

// registryAuth asks every request for a credential.
func registryAuth(api http.Handler, token *adminToken, state func() *meta.State, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			api.ServeHTTP(w, r)
			return
		}
		if bearer, ok := bearerToken(r); ok && token != nil && token.matches(bearer) {
			api.ServeHTTP(w, r)
			return
		}
		if user, password, ok := r.BasicAuth(); ok && sasl.CheckPassword(state(), user, password) {
			api.ServeHTTP(w, r)
			return
		}
		log.Debug("schema registry request refused: no valid credential", "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Basic realm="strata schema registry"`)
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error_code":40101,"message":"Unauthorized: give a user's name and password (HTTP Basic, the user's SCRAM credential), the admin token as a bearer token, or a client certificate over TLS"}` + "\n"))
	})
}

// serve answers on ln until shutdown; it owns ln.
func (s *registryServer) serve(ln net.Listener) error {
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	if err := s.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *registryServer) shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }
