package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/tlsfiles"
)

// adminSecurity is the admin address's security: TLS (with optional client
// certificates) and who may call it.
type adminSecurity struct {
	// TLS serves the admin address over TLS (tls.NewListener); nil: plain
	// HTTP. A client certificate it verifies is a credential.
	TLS *tls.Config
	// TokenFile holds the bearer token, trimmed of surrounding space; it is
	// read again when the file changes, so the token can be rotated. "":
	// no token accepted.
	TokenFile string
	// token is TokenFile read already (the server reads it with its other
	// settings, before it binds anything); nil: secure reads TokenFile.
	token *adminToken
	// OpenMetrics serves /metrics without a credential.
	OpenMetrics bool
	// Required asks every endpoint but /healthz, /readyz and (with
	// OpenMetrics) /metrics for a credential (security on).
	Required bool
	// Authorize asks the cluster's authorizer whether principal, from
	// host, may perform op on the cluster (an ACL, or super.users). A
	// client certificate is the credential of the principal it names,
	// which the admin address serves reads only if it may Describe the
	// cluster and changes only if it may Alter it; nil: no certificate is
	// a credential.
	Authorize func(principal, host string, op acl.Operation) bool
	// FailedAuthDelay is connection.failed.authentication.delay.ms: the
	// schema registry's failed password logins wait that long, doubled
	// for each failure from the host within a minute.
	FailedAuthDelay time.Duration
}

// adminOpenRoutes are the mux patterns that answer without a credential:
// a load balancer or an orchestrator probes them with none.
var adminOpenRoutes = []string{"GET /healthz", "GET /readyz"}

// adminMetricsRoute is the Prometheus route, open with
// adminSecurity.OpenMetrics.
const adminMetricsRoute = "GET /metrics"

// secure sets the admin address's security; it is called once, before
// serve. With Required, a request for any other route than the open ones
// (see adminSecurity) is served only with the admin token as a bearer
// token, or with a client certificate the TLS configuration verified
// whose principal may Describe the cluster (a GET) or Alter it (a
// change); a certificate of any other principal is answered 403 (the CA
// that signs the clients' certificates is not a list of administrators).
// It is otherwise answered 401 with
// WWW-Authenticate: Bearer. A request the mux would not route (a wrong
// method, an unclean path) asks for a credential too. With Required and
// neither a token file nor client certificates, only the open routes
// answer.
//
// A token file that cannot be read or holds only space is an error, as is
// one that later reads so: until it is fixed, no token is accepted (a
// token is never kept past its file).
func (a *adminServer) secure(sec adminSecurity) error {
	a.tls = sec.TLS
	a.token = sec.token
	a.authorize = sec.Authorize
	if a.token == nil && sec.TokenFile != "" {
		token, err := readAdminToken(sec.TokenFile, a.log)
		if err != nil {
			return err
		}
		a.token = token
	}
	if !sec.Required {
		return nil
	}
	open := map[string]bool{}
	for _, route := range adminOpenRoutes {
		open[route] = true
	}
	if sec.OpenMetrics {
		open[adminMetricsRoute] = true
	}
	a.server.Handler = a.requireCredential(open)
	return nil
}

// requireCredential is the admin mux behind a check that a request for a
// route not in open carries a credential.
func (a *adminServer) requireCredential(open map[string]bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, route := a.mux.Handler(r); open[route] {
			a.mux.ServeHTTP(w, r)
			return
		}
		token, given := bearerToken(r)
		if given && a.token != nil && a.token.matches(token) {
			a.mux.ServeHTTP(w, r)
			return
		}
		if principal, ok := certificatePrincipal(r); ok {
			// Reads (status, metrics, pprof, tier status, lag) need
			// Describe on the cluster, which Alter implies; a change
			// (drain, undrain) needs Alter.
			op, opName := acl.OpAlter, "Alter"
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				op, opName = acl.OpDescribe, "Describe"
			}
			if a.authorize != nil && a.authorize(principal, remoteHost(r), op) {
				a.mux.ServeHTTP(w, r)
				return
			}
			a.log.Debug("admin request refused: the certificate's principal may not do it", "path", r.URL.Path, "remote", r.RemoteAddr, "principal", principal, "needs", opName)
			http.Error(w, fmt.Sprintf("forbidden: %s may not %s the admin address's %s: it needs %s on the cluster (strata acl create --allow %s --operation %s --cluster) or super.users, or give the admin token",
				principal, strings.ToLower(r.Method), r.URL.Path, opName, principal, opName), http.StatusForbidden)
			return
		}
		// The presented token is never written back, nor logged.
		if given {
			a.log.Debug("admin request refused: wrong bearer token", "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="strata admin", error="invalid_token"`)
			http.Error(w, "unauthorized: the bearer token is not the admin token", http.StatusUnauthorized)
			return
		}
		a.log.Debug("admin request refused: no credential", "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="strata admin"`)
		http.Error(w, "unauthorized: give the admin token as Authorization: Bearer <token> (--admin.token.file), or a client certificate over TLS", http.StatusUnauthorized)
	})
}

// clusterAuthorizer is adminSecurity.Authorize by authz over the
// metadata's ACLs.
func clusterAuthorizer(authz acl.Authorizer, state func() *meta.State) func(principal, host string, op acl.Operation) bool {
	return func(principal, host string, op acl.Operation) bool {
		return authz.Authorize(state(), acl.Request{Principal: principal, Host: host, Operation: op, Type: acl.Cluster, Name: acl.ClusterName})
	}
}

// certificatePrincipal is the principal of the client certificate the
// TLS configuration verified on r's connection, if there is one.
func certificatePrincipal(r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return "", false
	}
	return tlsfiles.Principal(*r.TLS), true
}

// remoteHost is r's client address without the port, as ACLs name hosts.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bearerToken is the token of an "Authorization: Bearer <token>" header
// (the scheme in any case), and whether one was given.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// adminToken is the bearer token in a file, read again when the file is
// replaced or its modification time or size changes, and at every use
// while it cannot be read.
type adminToken struct {
	file string
	log  *slog.Logger
	mu   struct {
		sync.Mutex
		// read is the file as last read; nil: read it again.
		read os.FileInfo
		// sum is the SHA-256 of the token, which err, when not nil, says
		// the file does not hold now: then no token matches.
		sum [sha256.Size]byte
		err error
	}
}

// errAdminToken is an admin token file that holds no token to accept.
var errAdminToken = errors.New("admin token file")

// readAdminToken reads the token in file, which must hold one.
func readAdminToken(file string, log *slog.Logger) (*adminToken, error) {
	t := &adminToken{file: file, log: log}
	if err := t.refreshLocked(); err != nil {
		return nil, err
	}
	return t, nil
}

// matches reports, in time independent of the tokens, whether presented
// is the token in the file now.
func (t *adminToken) matches(presented string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refreshLocked() != nil {
		return false
	}
	// Digests are compared so that the time taken tells nothing of the
	// token's length either.
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], t.mu.sum[:]) == 1
}

// refreshLocked reads the file again unless it is the one last read, and
// returns whether it holds a token; a change of that is logged. Lock
// should be held (or t not yet shared).
func (t *adminToken) refreshLocked() error {
	info, err := os.Stat(t.file)
	if prev := t.mu.read; err == nil && prev != nil && os.SameFile(prev, info) && prev.ModTime().Equal(info.ModTime()) && prev.Size() == info.Size() {
		return t.mu.err
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(t.file)
	}
	t.mu.read = nil
	switch token := strings.TrimSpace(string(data)); {
	case err != nil:
		err = fmt.Errorf("%w: %w", errAdminToken, err)
	case token == "":
		t.mu.read = info
		err = fmt.Errorf("%w %s holds no token", errAdminToken, t.file)
	default:
		t.mu.read = info
		t.mu.sum = sha256.Sum256([]byte(token))
	}
	prev := t.mu.err
	t.mu.err = err
	switch {
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		t.log.Warn("no admin bearer token is accepted until the token file holds one", "file", t.file, "error", err)
	case err == nil:
		t.log.Info("admin token read", "file", t.file)
	}
	return err
}
